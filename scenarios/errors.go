package scenarios

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Error is one problem in a scenario, positioned at the offending YAML node.
// Its text is "FILE:LINE: FIELD: what is wrong (allowed: ...)"; parts that
// are unknown (a scenario built in Go has no file) are left out.
type Error struct {
	File  string // as given to Parse; "" for a scenario built in Go
	Line  int    // 1-based; 0 if unknown
	Field string // dotted path, e.g. "fabric.links.rate" or "flows[2].src"
	Msg   string
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// ErrorList is several problems, in file order. errors.As finds the first
// *Error in it.
type ErrorList []*Error

func (l ErrorList) Error() string {
	s := make([]string, len(l))
	for i, e := range l {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

// Unwrap returns the errors for errors.Is and errors.As.
func (l ErrorList) Unwrap() []error {
	out := make([]error, len(l))
	for i, e := range l {
		out[i] = e
	}
	return out
}

// maxErrors bounds how many problems one load reports: the first maxErrors
// by line, then one "and N more problems" entry.
const maxErrors = 20

// maxCollected bounds how many problems a load keeps while it runs.
const maxCollected = 10_000

func (l *ErrorList) add(e *Error) {
	if len(*l) < maxCollected {
		*l = append(*l, e)
	}
}

// overlaps reports whether fields a and b are the same, or one is inside
// the other ("fabric.links" and "fabric.links.rate", "flows" and
// "flows[2].src"). The empty field (the whole document) overlaps all.
func overlaps(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	if a == "" || a == b {
		return true
	}
	return strings.HasPrefix(b, a) && (b[len(a)] == '.' || b[len(a)] == '[')
}

// merge appends to l the problems of a later pass whose field is not
// already reported, nor in covered (a field the schema check refused was
// left out of the later pass, so what the later pass says of it is an echo;
// so is "duration: missing" after "duraton: unknown key, did you mean
// duration?").
func (l *ErrorList) merge(later error, covered ...string) {
	if later == nil {
		return
	}
	var list ErrorList
	var one *Error
	switch {
	case errors.As(later, &list):
	case errors.As(later, &one):
		list = ErrorList{one}
	default:
		l.add(&Error{Msg: later.Error()})
		return
	}
	earlier := len(*l)
next:
	for _, e := range list {
		for _, f := range (*l)[:earlier] {
			if overlaps(e.Field, f.Field) {
				continue next
			}
		}
		for _, f := range covered {
			if overlaps(e.Field, f) {
				continue next
			}
		}
		l.add(e)
	}
}

// err returns nil, the single *Error, or the list sorted by line (stable,
// so problems on one line keep the order they were found in), cut to the
// first maxErrors with a last entry "and N more problems".
func (l ErrorList) err() error {
	switch len(l) {
	case 0:
		return nil
	case 1:
		return l[0]
	}
	out := append(ErrorList(nil), l...)
	sort.SliceStable(out, func(i, j int) bool {
		li, lj := out[i].Line, out[j].Line
		if li == 0 || lj == 0 {
			return li != 0 && lj == 0 // unknown lines last
		}
		return li < lj
	})
	if len(out) > maxErrors {
		more, least := len(out)-maxErrors, ""
		if len(out) >= maxCollected {
			least = "at least "
		}
		out = append(out[:maxErrors:maxErrors], &Error{File: out[0].File,
			Msg: fmt.Sprintf("and %s%d more problem%s (the first %d by line are shown)", least, more, plural(more), maxErrors)})
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

var yamlLineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// yamlErrors converts an error from gopkg.in/yaml.v3 ("yaml: line 3: ...",
// or a TypeError listing "line 3: ..." entries) into positioned Errors.
func yamlErrors(file string, err error) ErrorList {
	var lines []string
	msg := err.Error()
	if strings.HasPrefix(msg, "yaml: unmarshal errors:\n") {
		for _, l := range strings.Split(strings.TrimPrefix(msg, "yaml: unmarshal errors:\n"), "\n") {
			lines = append(lines, strings.TrimSpace(l))
		}
	} else {
		lines = []string{msg}
	}
	var out ErrorList
	for _, l := range lines {
		e := &Error{File: file}
		if m := yamlLineRE.FindStringSubmatch(l); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = "yaml: " + m[2]
		} else {
			e.Msg = l
			if !strings.HasPrefix(l, "yaml: ") {
				e.Msg = "yaml: " + l
			}
		}
		out.add(e)
	}
	return out
}
