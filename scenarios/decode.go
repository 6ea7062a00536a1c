package scenarios

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxFileSize bounds a scenario file; real ones are a few KiB.
const maxFileSize = 1 << 20

// MaxFile is the largest scenario file, in bytes, Load and Parse accept.
const MaxFile = maxFileSize

// maxNodes bounds the nodes the schema check visits, counting alias
// expansions, so that an alias bomb fails fast instead of eating memory.
const maxNodes = 200_000

// maxHostEntries bounds the host indices all host lists of a file expand to
// (a range like 0-65535 is 65536), for the same reason.
const maxHostEntries = 1 << 20

// source remembers where each field of a parsed scenario was written.
type source struct {
	file   string
	lines  map[string]int // field path -> line of its value ("" = the document)
	sha256 string         // hex SHA-256 of the bytes parsed
}

// Parse decodes, defaults and validates one scenario. filename is used only
// in error messages. Loading is strict: unknown keys, wrong kinds of value,
// bad units, duplicate keys, YAML merge keys and multiple documents are
// errors, each positioned "FILE:LINE: FIELD: ...".
//
// It runs three passes: a schema check over the YAML node tree (which gives
// the precise messages and records each field's line), the decode proper by
// gopkg.in/yaml.v3 with KnownFields(true), then ApplyDefaults and Validate.
// All problems are reported at once: when the schema check refuses keys,
// the rest of the file is still decoded, defaulted and validated, and what
// those passes find in other fields is reported with them, by line.
func Parse(filename string, data []byte) (*Scenario, error) {
	if len(data) > maxFileSize {
		return nil, &Error{File: filename, Msg: fmt.Sprintf("file is %d bytes; a scenario may be at most %d", len(data), maxFileSize)}
	}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := safeDecode(dec, &doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: filename, Line: 1, Msg: "empty scenario (at least name, duration, fabric.topology and flows are needed)"}
		}
		return nil, yamlErrors(filename, err).err()
	}
	var extra yaml.Node
	if err := safeDecode(dec, &extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, yamlErrors(filename, err).err()
		}
		return nil, &Error{File: filename, Line: extra.Line, Msg: "a second YAML document: a scenario file holds exactly one (remove the ---)"}
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	c := &checker{src: &source{file: filename, lines: map[string]int{}}, budget: maxNodes, drop: map[*yaml.Node]bool{}}
	rootOK := c.walk("", root, reflect.TypeFor[Scenario](), 0)
	sum := sha256.Sum256(data)
	c.src.sha256 = hex.EncodeToString(sum[:])
	if len(c.errs) > 0 {
		// Report every problem of the file in one pass: decode what the
		// schema check accepted (the refused keys left out), default and
		// validate that, and add what those passes find in other fields.
		if rootOK && c.budget >= 0 && c.hosts <= maxHostEntries {
			s := new(Scenario)
			if decodeNode(prune(root, c.drop, map[*yaml.Node]*yaml.Node{}), s) == nil {
				s.src = c.src
				c.errs.merge(s.ApplyDefaults(), c.covered...)
				c.errs.merge(s.Validate(), c.covered...)
			}
		}
		return nil, c.errs.err()
	}

	s := new(Scenario)
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := safeDecode(strict, s); err != nil {
		// The schema check should have caught it; report what yaml says.
		return nil, c.position(yamlErrors(filename, err)).err()
	}
	s.src = c.src
	var errs ErrorList
	errs.merge(s.ApplyDefaults())
	errs.merge(s.Validate())
	if err := errs.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// prune copies the node tree without the mapping entries whose key is in
// drop (the keys the schema check refused). Anchored nodes are copied once
// and aliases point at the copy, so the copy is no larger than the tree.
func prune(n *yaml.Node, drop map[*yaml.Node]bool, done map[*yaml.Node]*yaml.Node) *yaml.Node {
	if n == nil {
		return nil
	}
	if c, ok := done[n]; ok {
		return c
	}
	c := new(yaml.Node)
	done[n] = c
	*c = *n
	c.Alias = prune(n.Alias, drop, done)
	c.Content = nil
	for i := 0; i < len(n.Content); i++ {
		if n.Kind == yaml.MappingNode && i+1 < len(n.Content) && drop[n.Content[i]] {
			i++
			continue
		}
		c.Content = append(c.Content, prune(n.Content[i], drop, done))
	}
	return c
}

// decodeNode decodes a node tree, turning a panic inside yaml.v3 into an
// error.
func decodeNode(n *yaml.Node, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: cannot decode this input (%v)", r)
		}
	}()
	return n.Decode(v)
}

// safeDecode runs a yaml.v3 decode, turning a panic inside the library into
// an error: bad input must never crash a run.
func safeDecode(dec *yaml.Decoder, v any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("yaml: cannot parse this input (%v)", r)
		}
	}()
	return dec.Decode(v)
}

// checker walks the node tree against the Go types, reporting unknown
// keys, wrong kinds and bad scalars with their field paths.
type checker struct {
	src    *source
	errs   ErrorList
	budget int // nodes left to visit; the walk stops below 0
	hosts  int // host indices expanded so far
	// drop holds the key nodes of mapping entries the check refused (an
	// unknown key, or a value that is wrong at its own level), which the
	// later passes leave out.
	drop map[*yaml.Node]bool
	// covered holds the fields an unknown key was probably meant to be.
	covered []string
}

var unmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()

func (c *checker) fail(path string, line int, format string, args ...any) {
	c.errs.add(&Error{File: c.src.file, Line: line, Field: path, Msg: fmt.Sprintf(format, args...)})
}

// position fills in the field of errors that yaml.v3 found, from the line.
func (c *checker) position(l ErrorList) ErrorList {
	for _, e := range l {
		if e.Field != "" || e.Line == 0 {
			continue
		}
		best := ""
		for p, line := range c.src.lines {
			if line == e.Line && len(p) > len(best) {
				best = p
			}
		}
		e.Field = best
	}
	return l
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// fieldInfo is one YAML key of a struct.
type fieldInfo struct {
	key  string
	typ  reflect.Type
	name string // the Go field's
}

func structKeys(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, fieldInfo{name, f.Type, f.Name})
	}
	return out
}

// walk checks node n against type t at path. keyLine is the line of the key
// that introduced n (0 for the root and list items). It returns false if n
// itself is refused (so the later passes must leave it out); problems
// inside a mapping leave out only the entries they are about.
func (c *checker) walk(path string, n *yaml.Node, t reflect.Type, keyLine int) bool {
	c.budget--
	if c.budget < 0 {
		if c.budget == -1 {
			c.fail(path, n.Line, "document too large or aliases expand too far (at most %d values)", maxNodes)
		}
		return false
	}
	for depth := 0; n.Kind == yaml.AliasNode; depth++ {
		if n.Alias == nil || depth > 100 {
			c.fail(path, n.Line, "unresolvable alias")
			return false
		}
		n = n.Alias
	}
	line := n.Line
	if keyLine > 0 && n.Kind != yaml.ScalarNode {
		line = keyLine // "links:" rather than the first key under it
	}
	if _, seen := c.src.lines[path]; !seen {
		c.src.lines[path] = line
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		c.fail(path, n.Line, "empty value (give a value, or remove the key to get the default)")
		return false
	}
	if n.Kind == 0 {
		c.fail(path, line, "empty value")
		return false
	}

	// workload.rpc is a boolean or a mapping: a mapping gets the field
	// checks (and the lines) of any other mapping.
	if reflect.PointerTo(t).Implements(unmarshalerType) && !(t == reflect.TypeFor[RPC]() && n.Kind == yaml.MappingNode) {
		u := reflect.New(t).Interface().(yaml.Unmarshaler)
		ok := true
		if err := u.UnmarshalYAML(n); err != nil {
			ok = false
			var e *Error
			if errors.As(err, &e) {
				c.fail(path, e.Line, "%s", e.Msg)
			} else {
				c.fail(path, n.Line, "%v", err)
			}
		}
		if hs, ok := u.(*HostSet); ok {
			c.hosts += len(*hs)
			if c.hosts > maxHostEntries {
				c.fail(path, n.Line, "the host lists of this file expand to more than %d hosts", maxHostEntries)
				c.budget = -2 // stop the walk
				ok = false
			}
		}
		return ok
	}

	switch t.Kind() {
	case reflect.Pointer:
		return c.walk(path, n, t.Elem(), keyLine)
	case reflect.Struct:
		return c.walkStruct(path, n, t)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			c.fail(path, n.Line, "expected a list, got %s", kindName(n))
			return false
		}
		// A refused item leaves out the whole list (dropping one item
		// would renumber the others' fields).
		ok := true
		for i, item := range n.Content {
			ok = c.walk(fmt.Sprintf("%s[%d]", path, i), item, t.Elem(), 0) && ok
		}
		return ok
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			c.fail(path, n.Line, "%s is not a boolean (allowed: true, false)", kindName(n))
			return false
		}
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			c.fail(path, n.Line, "%s is not an integer", kindName(n))
			return false
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			if t.Kind() == reflect.Uint64 || t.Kind() == reflect.Uint32 {
				c.fail(path, n.Line, "%q is out of range (allowed: 0 to %d)", n.Value, maxUint(t))
			} else {
				c.fail(path, n.Line, "%q is out of range for an integer", n.Value)
			}
			return false
		}
	case reflect.Float64:
		var f float64
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") || n.Decode(&f) != nil ||
			math.IsNaN(f) || math.IsInf(f, 0) {
			c.fail(path, n.Line, "%s is not a number", kindName(n))
			return false
		}
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			c.fail(path, n.Line, "expected a string, got %s", kindName(n))
			return false
		}
	default:
		c.fail(path, n.Line, "internal error: no schema check for %s", t)
		return false
	}
	return true
}

func maxUint(t reflect.Type) uint64 {
	if t.Kind() == reflect.Uint32 {
		return 1<<32 - 1
	}
	return 1<<64 - 1
}

func (c *checker) walkStruct(path string, n *yaml.Node, t reflect.Type) bool {
	keys := structKeys(t)
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.key
	}
	allowed := strings.Join(names, ", ")
	if n.Kind != yaml.MappingNode {
		c.fail(path, n.Line, "expected a mapping, got %s (allowed keys: %s)", kindName(n), allowed)
		return false
	}
	first := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			c.fail(path, k.Line, "keys must be plain names, got %s (allowed keys: %s)", kindName(k), allowed)
			c.drop[k] = true
			continue
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			c.fail(joinPath(path, "<<"), k.Line, "YAML merge keys are not supported (use an alias for the whole value, e.g. ecn: *common_ecn)")
			c.drop[k] = true
			continue
		}
		kp := joinPath(path, k.Value)
		if l, dup := first[k.Value]; dup {
			c.fail(kp, k.Line, "duplicate key (first set on line %d)", l)
			c.drop[k] = true
			continue
		}
		first[k.Value] = k.Line
		var ft reflect.Type
		for _, f := range keys {
			if f.key == k.Value {
				ft = f.typ
				break
			}
		}
		if ft == nil {
			msg := fmt.Sprintf("unknown key %q", k.Value)
			if s := suggest(k.Value, names); s != "" {
				msg += fmt.Sprintf(", did you mean %q?", s)
				c.covered = append(c.covered, joinPath(path, s))
			}
			c.fail(kp, k.Line, "%s (allowed keys: %s)", msg, allowed)
			c.drop[k] = true
			continue
		}
		if !c.walk(kp, v, ft, k.Line) {
			c.drop[k] = true
		}
	}
	return true
}

// suggest returns the allowed name closest to key if it is a likely typo.
func suggest(key string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToLower(key), n); d < bestD {
			best, bestD = n, d
		}
	}
	if bestD > 0 && bestD <= 2 && len(key) > 2 {
		return best
	}
	return ""
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// ---- positions for the semantic passes -------------------------------------

// line returns the line of field path, or of its nearest ancestor that has
// one; 0 if the scenario was not parsed.
func (s *Scenario) line(path string) int {
	if s.src == nil {
		return 0
	}
	for {
		if l, ok := s.src.lines[path]; ok {
			return l
		}
		if path == "" {
			return 0
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			path = ""
		} else {
			path = path[:i]
		}
	}
}

// present reports whether field path was written in the parsed file.
func (s *Scenario) present(path string) bool {
	if s.src == nil {
		return false
	}
	_, ok := s.src.lines[path]
	return ok
}

// Errorf returns an error positioned at field (a path such as
// "fabric.links.rate" or "flows[2].src"), for runners that find a problem
// the loader could not: "FILE:LINE: FIELD: message". When the field was
// not written (it was defaulted), the line is its nearest written parent's.
func (s *Scenario) Errorf(field, format string, args ...any) *Error {
	e := &Error{Field: field, Line: s.line(field), Msg: fmt.Sprintf(format, args...)}
	if s.src != nil {
		e.File = s.src.file
	}
	return e
}

// File is the file name the scenario was parsed from ("" if built in Go).
func (s *Scenario) File() string {
	if s.src == nil {
		return ""
	}
	return s.src.file
}

// fieldPath helpers keep path spelling in one place.
func idx(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }
