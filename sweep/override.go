package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/besim/besim/internal/fileio"
	"github.com/besim/besim/scenarios"
)

// Base is the source text of a scenario, the thing overrides apply to.
type Base struct {
	File string // name used in error messages (a path, or scenarios/builtin/NAME.yaml)
	Data []byte
	// Scenario is the base parsed without overrides.
	Scenario *scenarios.Scenario
}

// Load reads a scenario's source like scenarios.Load (a file if one
// exists, else an embedded scenario) and checks that it is valid as it
// stands, so that errors in the file itself are reported with their
// file:line before any override is applied.
func Load(nameOrPath string) (*Base, error) {
	var file string
	var data []byte
	if _, err := os.Stat(nameOrPath); err == nil {
		if data, err = fileio.ReadFile(nameOrPath, scenarios.MaxFile, "scenario"); err != nil {
			return nil, err
		}
		file = nameOrPath
	} else {
		b, err := scenarios.Builtin(nameOrPath)
		if err != nil {
			return nil, err
		}
		data = b
		file = path.Join("scenarios", "builtin", strings.TrimSuffix(nameOrPath, ".yaml")+".yaml")
	}
	return NewBase(file, data)
}

// NewBase is Load for source text already in memory.
func NewBase(file string, data []byte) (*Base, error) {
	s, err := scenarios.Parse(file, data)
	if err != nil {
		return nil, err
	}
	return &Base{File: file, Data: data, Scenario: s}, nil
}

// Override sets one scenario key: Key is a dotted YAML path and Value the
// YAML text of its new value.
//
// Paths: map keys separated by dots, list items by [i] (fabric.links.rate,
// flows[0].size, fabric.priorities[0].ecn.kmin, seed). A list of mappings
// with a name key may also be indexed by name: flows[victim].rate.
//
// Modifier #len: on a host list (flows[0].src#len=4) the value is a count
// N and the list becomes its first N hosts as written in the scenario
// (0-15 with #len=4 is 0-3). This turns "how many senders" into an integer
// that Search can bisect.
type Override struct {
	Key   string
	Value string
}

func (o Override) String() string { return o.Key + "=" + o.Value }

// lenSuffix is the host-count modifier.
const lenSuffix = "#len"

type step struct {
	key   string // map key; "" for a list index step
	index int    // list index, or -1 when by name
	name  string // list item selected by its name key
}

var keyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parsePath splits a key into steps; lenMod reports a #len suffix.
func parsePath(key string) (steps []step, lenMod bool, err error) {
	p, lenMod := strings.CutSuffix(key, lenSuffix)
	if p == "" {
		return nil, false, fmt.Errorf("empty key (write a dotted path like fabric.links.rate or flows[0].size)")
	}
	for _, part := range strings.Split(p, ".") {
		name, rest, _ := strings.Cut(part, "[")
		if !keyRE.MatchString(name) {
			return nil, false, fmt.Errorf("%q is not a key path (write a dotted path like fabric.links.rate or flows[0].size)", key)
		}
		steps = append(steps, step{key: name})
		if rest == "" && !strings.Contains(part, "[") {
			continue
		}
		rest = "[" + rest
		for rest != "" {
			if rest[0] != '[' {
				return nil, false, fmt.Errorf("%q: bad index syntax (write flows[0] or flows[name])", key)
			}
			end := strings.IndexByte(rest, ']')
			if end < 2 {
				return nil, false, fmt.Errorf("%q: bad index syntax (write flows[0] or flows[name])", key)
			}
			idx := rest[1:end]
			if i, err := strconv.Atoi(idx); err == nil {
				if i < 0 {
					return nil, false, fmt.Errorf("%q: negative index %d", key, i)
				}
				steps = append(steps, step{index: i})
			} else {
				steps = append(steps, step{index: -1, name: idx})
			}
			rest = rest[end+1:]
		}
	}
	return steps, lenMod, nil
}

// ValidKey reports whether key is well-formed (it may still name a key the
// scenario does not have; applying it says so).
func ValidKey(key string) error {
	_, _, err := parsePath(key)
	return err
}

// docRoot returns the top mapping of a parsed document.
func docRoot(doc *yaml.Node) *yaml.Node {
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0]
	}
	return doc
}

func deepCopy(n *yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	c := *n
	c.Content = make([]*yaml.Node, len(n.Content))
	for i, x := range n.Content {
		c.Content[i] = deepCopy(x)
	}
	return &c
}

// slot is a place in the tree holding one value node.
type slot struct {
	parent *yaml.Node
	i      int // index in parent.Content of the value
}

func (s slot) get() *yaml.Node  { return s.parent.Content[s.i] }
func (s slot) set(n *yaml.Node) { s.parent.Content[s.i] = n }

// resolve finds (creating missing map keys) the value node at steps.
// structural reports that the tree's shape changed (a key was created or an
// alias was copied), so the source text cannot simply be spliced.
// field is the path as the loader spells it (list items by number), and
// created the paths of the keys it added.
func resolve(root *yaml.Node, steps []step) (sl slot, structural bool, field string, created []string, err error) {
	cur := slot{parent: &yaml.Node{Content: []*yaml.Node{root}}, i: 0}
	where := ""
	for si, st := range steps {
		n := cur.get()
		if n.Kind == yaml.AliasNode {
			n = deepCopy(n.Alias) // change only this use of the anchor
			n.Anchor = ""
			cur.set(n)
			structural = true
		}
		if st.key != "" {
			if n.Kind != yaml.MappingNode {
				return slot{}, false, "", nil, fmt.Errorf("%s is %s, not a mapping with key %q", orTop(where), kindName(n), st.key)
			}
			found := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == st.key {
					found = i + 1
				}
			}
			if found < 0 {
				// Create it; the strict loader rejects keys the schema lacks.
				var v *yaml.Node
				if si == len(steps)-1 {
					v = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null"}
				} else if steps[si+1].key != "" {
					v = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
				} else {
					return slot{}, false, "", nil, fmt.Errorf("%s has no key %q (a list cannot be created by an override)", orTop(where), st.key)
				}
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: st.key}, v)
				found = len(n.Content) - 1
				structural = true
				created = append(created, joinKey(where, st.key))
			}
			cur = slot{n, found}
			where = joinKey(where, st.key)
			continue
		}
		if n.Kind != yaml.SequenceNode {
			return slot{}, false, "", nil, fmt.Errorf("%s is %s, not a list", orTop(where), kindName(n))
		}
		if st.index >= 0 {
			if st.index >= len(n.Content) {
				return slot{}, false, "", nil, fmt.Errorf("%s has %d items (indices 0-%d), no [%d]", where, len(n.Content), len(n.Content)-1, st.index)
			}
			cur = slot{n, st.index}
			where += "[" + strconv.Itoa(st.index) + "]"
			continue
		}
		found := -1
		var names []string
		for i, item := range n.Content {
			if item.Kind == yaml.AliasNode && item.Alias != nil {
				item = item.Alias
			}
			if item.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(item.Content); j += 2 {
				if item.Content[j].Value == "name" {
					names = append(names, item.Content[j+1].Value)
					if item.Content[j+1].Value == st.name && found < 0 {
						found = i
					}
				}
			}
		}
		if found < 0 {
			return slot{}, false, "", nil, fmt.Errorf("%s has no item named %q (names: %s)", where, st.name, strings.Join(names, ", "))
		}
		cur = slot{n, found}
		where += "[" + strconv.Itoa(found) + "]"
	}
	return cur, structural, where, created, nil
}

func orTop(where string) string {
	if where == "" {
		return "the scenario"
	}
	return where
}

func joinKey(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "empty"
		}
		return "a scalar (" + strconv.Quote(n.Value) + ")"
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "not a value"
}

// valueNode parses an override's value as YAML text.
func valueNode(text string) (*yaml.Node, error) {
	if strings.TrimSpace(text) == "" {
		return nil, fmt.Errorf("empty value")
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, fmt.Errorf("value is not YAML: %v", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return nil, fmt.Errorf("empty value")
	}
	n := doc.Content[0]
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return nil, fmt.Errorf("anchors and aliases are not allowed in an override")
	}
	clearPos(n)
	return n, nil
}

func clearPos(n *yaml.Node) {
	n.Line, n.Column = 0, 0
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		clearPos(c)
	}
}

// sameTree compares two node trees by content, ignoring positions, styles
// and comments.
func sameTree(a, b *yaml.Node) bool {
	if a.Kind != b.Kind || len(a.Content) != len(b.Content) || a.Anchor != b.Anchor {
		return false
	}
	switch a.Kind {
	case yaml.ScalarNode:
		if a.Value != b.Value || a.ShortTag() != b.ShortTag() {
			return false
		}
	case yaml.AliasNode:
		return a.Value == b.Value
	}
	for i := range a.Content {
		if !sameTree(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}

// splice is one in-place replacement of source bytes.
type splice struct {
	off, n int
	text   string
}

// sourceSpan finds the bytes of a single-line scalar in the source: its
// offset and length, or ok=false when its written form is not simply its
// value (folded, escaped, tagged), in which case the caller re-encodes.
func sourceSpan(data []byte, n *yaml.Node) (off, length int, ok bool) {
	if n.Kind != yaml.ScalarNode || n.Line < 1 || n.Column < 1 || n.Style&yaml.TaggedStyle != 0 {
		return 0, 0, false
	}
	off = 0
	for line := 1; line < n.Line; line++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return 0, 0, false
		}
		off += i + 1
	}
	for col := 1; col < n.Column; col++ {
		if off >= len(data) || data[off] == '\n' {
			return 0, 0, false
		}
		_, w := utf8.DecodeRune(data[off:])
		off += w
	}
	var want string
	switch n.Style {
	case 0:
		want = n.Value
	case yaml.DoubleQuotedStyle:
		want = `"` + n.Value + `"`
	case yaml.SingleQuotedStyle:
		want = "'" + n.Value + "'"
	default:
		return 0, 0, false
	}
	if want == "" || strings.ContainsAny(want, "\n\r") || !bytes.HasPrefix(data[off:], []byte(want)) {
		return 0, 0, false
	}
	return off, len(want), true
}

// Apply returns the base scenario with the overrides applied, loaded by
// scenarios.Parse so that every schema and semantic check applies. When
// each override replaces a value already written on one line, the source
// is edited in place and positions elsewhere stay true; otherwise the YAML
// tree is re-encoded and errors lose their line. An error caused by an
// override names it: "--set fabric.links.rate=25Gbs: "25Gbs" is not a
// rate ...".
func (b *Base) Apply(set []Override) (*scenarios.Scenario, error) {
	l, err := b.load(set)
	if err != nil {
		return nil, err
	}
	return l.s, nil
}

// loaded is a scenario under overrides, with what is needed to explain
// errors found later (by experiment.Build) the way Apply explains its own.
type loaded struct {
	s         *scenarios.Scenario
	set       []Override
	fields    []string
	madeBy    map[string]int
	linesTrue bool
}

// explain rewrites an error about the loaded scenario.
func (l *loaded) explain(err error) error {
	if err == nil || len(l.set) == 0 {
		return err
	}
	return explain(err, l.set, l.fields, l.madeBy, l.linesTrue)
}

func (b *Base) load(set []Override) (*loaded, error) {
	if len(set) == 0 {
		s, err := scenarios.Parse(b.File, b.Data)
		return &loaded{s: s, linesTrue: true}, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b.Data, &doc); err != nil {
		return nil, err // NewBase parsed it already
	}
	root := docRoot(&doc)
	var splices []splice
	canSplice := true
	seen := map[string]bool{}
	var fields []string        // loader spelling of each override's key
	madeBy := map[string]int{} // keys created by an override -> its index
	for _, o := range set {
		steps, lenMod, err := parsePath(o.Key)
		if err != nil {
			return nil, &Error{Set: []Override{o}, Err: err}
		}
		canon := strings.TrimSuffix(o.Key, lenSuffix)
		if seen[canon] {
			return nil, &Error{Set: []Override{o}, Err: fmt.Errorf("%s is set twice", canon)}
		}
		seen[canon] = true
		sl, structural, field, created, err := resolve(root, steps)
		if err != nil {
			return nil, &Error{Set: []Override{o}, Err: err}
		}
		fields = append(fields, field)
		for _, c := range created {
			madeBy[c] = len(fields) - 1
		}
		text := strings.TrimSpace(o.Value)
		if lenMod {
			if text, err = hostPrefix(sl.get(), text, canon); err != nil {
				return nil, &Error{Set: []Override{o}, Err: err}
			}
		}
		nv, err := valueNode(text)
		if err != nil {
			return nil, &Error{Set: []Override{o}, Err: err}
		}
		old := sl.get()
		if canSplice && !structural && nv.Kind == yaml.ScalarNode {
			if off, n, ok := sourceSpan(b.Data, old); ok {
				splices = append(splices, splice{off, n, text})
			} else {
				canSplice = false
			}
		} else {
			canSplice = false
		}
		nv.HeadComment, nv.LineComment, nv.FootComment = old.HeadComment, old.LineComment, old.FootComment
		sl.set(nv)
	}

	if canSplice {
		out := spliceAll(b.Data, splices)
		var check yaml.Node
		if yaml.Unmarshal(out, &check) == nil && sameTree(docRoot(&check), root) {
			l := &loaded{set: set, fields: fields, madeBy: madeBy, linesTrue: true}
			s, err := scenarios.Parse(b.File, out)
			l.s = s
			return l, l.explain(err)
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, &Error{Set: set, Err: err}
	}
	enc.Close()
	l := &loaded{set: set, fields: fields, madeBy: madeBy}
	s, err := scenarios.Parse(b.File, buf.Bytes())
	l.s = s
	return l, l.explain(err)
}

func spliceAll(data []byte, sp []splice) []byte {
	// Apply from the end so earlier offsets stay valid (several values
	// may sit on one line, as in {rate: 25Gbps, delay: 1us}).
	out := bytes.Clone(data)
	for len(sp) > 0 {
		last := 0
		for i := range sp {
			if sp[i].off > sp[last].off {
				last = i
			}
		}
		s := sp[last]
		out = append(out[:s.off:s.off], append([]byte(s.text), out[s.off+s.n:]...)...)
		sp = append(sp[:last], sp[last+1:]...)
	}
	return out
}

// hostPrefix implements #len: the first n hosts of the host list at node.
func hostPrefix(node *yaml.Node, text, key string) (string, error) {
	n, err := strconv.Atoi(text)
	if err != nil {
		return "", fmt.Errorf("%s%s wants a host count, not %q", key, lenSuffix, text)
	}
	var hs scenarios.HostSet
	if err := hs.UnmarshalYAML(node); err != nil {
		return "", fmt.Errorf("%s%s: %s is not a host list: %v", key, lenSuffix, key, err)
	}
	if n < 1 || n > len(hs) {
		return "", fmt.Errorf("%s%s=%d: the scenario lists %d hosts there (%s); use 1..%d", key, lenSuffix, n, len(hs), hs, len(hs))
	}
	return hs[:n].String(), nil
}

// Error is a scenario error under overrides: Set are the overrides
// responsible (the one whose key the error is about, or all of a point's).
type Error struct {
	Set []Override
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	for i, o := range e.Set {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString("--set " + o.String())
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// explain rewrites loader errors after overrides. An error at an
// overridden field is reported as the override's (its file position is of
// text the user did not write). Others keep "FILE:LINE" when the source
// was spliced in place (lines are true) and lose the line otherwise.
func explain(err error, set []Override, fields []string, madeBy map[string]int, linesTrue bool) error {
	if err == nil {
		return nil
	}
	var list []*scenarios.Error
	var one *scenarios.Error
	var many scenarios.ErrorList
	switch {
	case errors.As(err, &many):
		list = many
	case errors.As(err, &one):
		list = []*scenarios.Error{one}
	default:
		return &Error{Set: set, Err: err}
	}
	var msgs []string
	for _, e := range list {
		c := *e
		i, ok := overrideFor(c.Field, fields)
		if j, made := madeBy[c.Field]; made && !ok {
			i, ok = j, true
		}
		if ok {
			o := set[i]
			c.File, c.Line = "", 0
			if c.Field == fields[i] {
				c.Field = ""
			}
			msgs = append(msgs, (&Error{Set: []Override{o}, Err: &c}).Error())
			continue
		}
		if !linesTrue {
			c.Line = 0
		}
		msgs = append(msgs, (&Error{Set: set, Err: &c}).Error())
	}
	return &joined{msg: strings.Join(msgs, "\n"), orig: err}
}

// joined is the rewritten text of loader errors, wrapping the originals
// for errors.As.
type joined struct {
	msg  string
	orig error
}

func (j *joined) Error() string { return j.msg }
func (j *joined) Unwrap() error { return j.orig }

// overrideFor finds the override a loader error's field is about: the
// field itself or the deepest overridden field above it.
func overrideFor(field string, fields []string) (int, bool) {
	if field == "" {
		return -1, false
	}
	best, bestLen := -1, -1
	for i, k := range fields {
		if (field == k || strings.HasPrefix(field, k+".") || strings.HasPrefix(field, k+"[")) && len(k) > bestLen {
			best, bestLen = i, len(k)
		}
	}
	return best, best >= 0
}
