package scenarios

import (
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

// maxErrors bounds how many problems one load reports.
const maxErrors = 50

func (l *ErrorList) add(e *Error) {
	if len(*l) < maxErrors {
		*l = append(*l, e)
	}
}

// err returns nil, the single *Error, or the list sorted by line (stable,
// so problems on one line keep the order they were found in).
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
	return out
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
