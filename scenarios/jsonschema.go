package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
)

// SchemaFile is where the JSON Schema of scenarios is committed, relative
// to the repository root; `besim schema` prints it and a test in this
// package fails when the file is stale.
const SchemaFile = "scenarios/schema.json"

// SchemaRegenerate is the command that rewrites SchemaFile.
const SchemaRegenerate = "go run ./cmd/besim schema > " + SchemaFile

// JSONSchema returns a JSON Schema (draft 2020-12) of the scenario file
// format, generated from the Scenario struct by reflection: every key the
// loader accepts (the yaml tags), its JSON type (unit values such as sizes
// and durations are strings or numbers, enumerations list their values),
// unknown keys forbidden. It is structural: it checks key names and types
// but not the semantic rules (which keys a kind allows, ranges, host
// indices), which the loader reports. Editors use it for completion and
// checks through the yaml-language-server comment (SCHEMA.md). The output
// is deterministic: indented, keys sorted.
func JSONSchema() ([]byte, error) {
	g := &schemaGen{defs: map[string]any{}}
	root, err := g.schema(reflect.TypeFor[Scenario](), "")
	if err != nil {
		return nil, err
	}
	doc := map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"title":   "besim scenario",
		"description": fmt.Sprintf("A besim scenario file (schema version %d). Generated from the Go types of package scenarios "+
			"by `besim schema`; scenarios/SCHEMA.md documents every key. Structural only: `besim validate` checks the rest.", SchemaVersion),
		"$defs": g.defs,
	}
	for k, v := range root {
		doc[k] = v
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type schemaGen struct {
	defs map[string]any
}

// scalarSchemas are the types with their own YAML syntax (UnmarshalYAML):
// what JSON type each accepts, and its values or examples. A type that
// implements yaml.Unmarshaler and is missing here is an error of
// JSONSchema, so a new one cannot slip through untyped.
var scalarSchemas = map[reflect.Type]map[string]any{
	reflect.TypeFor[Size]():         unitSchema([]string{"integer", "string"}, "a size in bytes: "+sizeExamples),
	reflect.TypeFor[Rate]():         unitSchema([]string{"integer", "string"}, "a rate: "+rateExamples+" (0 needs no unit)"),
	reflect.TypeFor[Duration]():     unitSchema([]string{"integer", "string"}, "a duration: "+durationExamples+" (0 needs no unit)"),
	reflect.TypeFor[Fraction]():     unitSchema([]string{"number", "string"}, "a fraction: a percentage like 1% or a number from 0 to 1 like 0.01"),
	reflect.TypeFor[Ratio]():        unitSchema([]string{"number", "string"}, "a non-negative ratio, e.g. 1/8, 0.125, 2"),
	reflect.TypeFor[FlowRate]():     unitSchema([]string{"string"}, "line, or a rate: "+rateExamples),
	reflect.TypeFor[Threshold]():    unitSchema([]string{"integer", "string"}, "dynamic, or a size: "+sizeExamples),
	reflect.TypeFor[AutoSize]():     unitSchema([]string{"integer", "string"}, "auto, or a size: "+sizeExamples),
	reflect.TypeFor[AutoDuration](): unitSchema([]string{"integer", "string"}, "auto, or a duration: "+durationExamples),
	reflect.TypeFor[Window]():       unitSchema([]string{"integer", "string"}, "none (or 0), or a size: "+sizeExamples),
	reflect.TypeFor[HostSet](): {
		"description": "hosts: " + hostSetHint,
		"anyOf": []any{
			map[string]any{"type": []string{"integer", "string"}},
			map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"type": []string{"integer", "string"}}},
		},
	},
	reflect.TypeFor[TopologyKind]():      enumSchema(topologyKinds),
	reflect.TypeFor[Scheduler]():         enumSchema(schedulers),
	reflect.TypeFor[NICModel]():          enumSchema(nicModels),
	reflect.TypeFor[Transport]():         enumSchema(transports),
	reflect.TypeFor[MsgRateThrough]():    enumSchema(msgRateThroughs),
	reflect.TypeFor[Op]():                enumSchema(ops),
	reflect.TypeFor[CCKind]():            enumSchema(ccKinds),
	reflect.TypeFor[PayloadMode]():       enumSchema(payloadModes),
	reflect.TypeFor[SeriesMode]():        enumSchema(seriesModes),
	reflect.TypeFor[BenchmarkKind]():     enumSchema(benchmarkKinds),
	reflect.TypeFor[WorkloadKind]():      enumSchema(workloadKinds),
	reflect.TypeFor[DistName]():          enumSchema(distNames),
	reflect.TypeFor[WorkloadTransport](): enumSchema(workloadTransports),
	reflect.TypeFor[FaultKind]():         enumSchema(faultKinds),
	reflect.TypeFor[LossFrames]():        enumSchema(lossFrames),
	reflect.TypeFor[LossDirection]():     enumSchema(lossDirections),
}

func unitSchema(types []string, desc string) map[string]any {
	var t any = types
	if len(types) == 1 {
		t = types[0]
	}
	return map[string]any{"type": t, "description": desc}
}

func enumSchema(values []string) map[string]any {
	return map[string]any{"type": "string", "enum": values}
}

// schema returns the schema of type t at path (for errors); structs go
// into $defs under their type name and are referenced.
func (g *schemaGen) schema(t reflect.Type, path string) (map[string]any, error) {
	if s, ok := scalarSchemas[t]; ok {
		g.defs[t.Name()] = s
		return map[string]any{"$ref": "#/$defs/" + t.Name()}, nil
	}
	if t == reflect.TypeFor[RPC]() {
		// workload.rpc: true, false, or a mapping of RPC's keys.
		ref, err := g.structRef(t, path)
		if err != nil {
			return nil, err
		}
		return map[string]any{"description": "true, false, or a mapping of RPC settings", "anyOf": []any{map[string]any{"type": "boolean"}, ref}}, nil
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil, fmt.Errorf("scenarios: JSONSchema: %s (%s) has its own YAML syntax but no entry in scalarSchemas", path, t)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem(), path)
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Slice:
		items, err := g.schema(t.Elem(), path+"[]")
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Struct:
		return g.structRef(t, path)
	}
	return nil, fmt.Errorf("scenarios: JSONSchema: %s: type %s (kind %s) has no JSON Schema mapping", path, t, t.Kind())
}

func (g *schemaGen) structRef(t reflect.Type, path string) (map[string]any, error) {
	name := t.Name()
	ref := map[string]any{"$ref": "#/$defs/" + name}
	if _, done := g.defs[name]; done {
		return ref, nil
	}
	g.defs[name] = nil // placeholder: recursion stops here
	props := map[string]any{}
	for _, f := range structKeys(t) {
		s, err := g.schema(f.typ, joinPath(path, f.key))
		if err != nil {
			return nil, err
		}
		if d := fieldDocs[t.Name()+"."+f.name]; d != "" {
			s = maps.Clone(s)
			s["description"] = d
		}
		props[f.key] = s
	}
	g.defs[name] = map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	return ref, nil
}

// ---- a structural checker ---------------------------------------------------

// CheckSchema checks a decoded YAML or JSON value (maps, lists, strings,
// numbers, booleans, as yaml.v3 or encoding/json decode into any) against
// the subset of JSON Schema that JSONSchema writes: $ref into $defs, type,
// enum, properties, required, additionalProperties false, items, minItems,
// minimum and anyOf (JSONSchema writes no required; report's result schema
// does). It returns one message per problem, each with the key path.
func CheckSchema(schema map[string]any, v any) []string {
	c := &schemaChecker{root: schema}
	c.check(schema, v, "")
	return c.errs
}

type schemaChecker struct {
	root map[string]any
	errs []string
}

func (c *schemaChecker) failf(path, format string, args ...any) {
	if path == "" {
		path = "(top level)"
	}
	c.errs = append(c.errs, path+": "+fmt.Sprintf(format, args...))
}

func (c *schemaChecker) resolve(s map[string]any) map[string]any {
	for depth := 0; depth < 32; depth++ {
		ref, ok := s["$ref"].(string)
		if !ok {
			return s
		}
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		defs, _ := c.root["$defs"].(map[string]any)
		d, ok2 := defs[name].(map[string]any)
		if !ok || !ok2 {
			c.failf("", "schema: unresolvable $ref %q", ref)
			return map[string]any{}
		}
		s = d
	}
	return s
}

// jsonType is the JSON Schema type of a decoded value ("integer" for a
// whole number).
func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "integer"
	case float32:
		if float32(int64(x)) == x {
			return "integer"
		}
		return "number"
	case float64:
		if float64(int64(x)) == x {
			return "integer"
		}
		return "number"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func typeOK(want any, got string) bool {
	var ws []string
	switch w := want.(type) {
	case string:
		ws = []string{w}
	case []any:
		for _, x := range w {
			if s, ok := x.(string); ok {
				ws = append(ws, s)
			}
		}
	case []string:
		ws = w
	default:
		return true
	}
	for _, w := range ws {
		if w == got || w == "number" && got == "integer" {
			return true
		}
	}
	return false
}

func (c *schemaChecker) check(s map[string]any, v any, path string) {
	s = c.resolve(s)
	if alts, ok := s["anyOf"].([]any); ok {
		// If no alternative matches, report the errors inside the one of
		// the value's type (a mapping with a bad key), else that none does.
		var inner []string
		for _, a := range alts {
			am, _ := a.(map[string]any)
			sub := &schemaChecker{root: c.root}
			sub.check(am, v, path)
			if len(sub.errs) == 0 {
				return
			}
			if t, ok := c.resolve(am)["type"]; ok && typeOK(t, jsonType(v)) && jsonType(v) == "object" && inner == nil {
				inner = sub.errs
			}
		}
		if inner != nil {
			c.errs = append(c.errs, inner...)
			return
		}
		c.failf(path, "%s %v matches none of the allowed forms (%v)", jsonType(v), v, s["description"])
		return
	}
	got := jsonType(v)
	if t, ok := s["type"]; ok && !typeOK(t, got) {
		c.failf(path, "expected %v, got %s %v", t, got, v)
		return
	}
	if enum, ok := s["enum"]; ok {
		found := false
		var allowed []string
		for _, e := range toList(enum) {
			allowed = append(allowed, fmt.Sprint(e))
			if fmt.Sprint(e) == fmt.Sprint(v) {
				found = true
			}
		}
		if !found {
			c.failf(path, "%v is not one of %s", v, strings.Join(allowed, ", "))
		}
	}
	if m, ok := s["minimum"]; ok {
		if f, ok := toFloat(v); ok {
			if mf, _ := toFloat(m); f < mf {
				c.failf(path, "%v is below the minimum %v", v, m)
			}
		}
	}
	switch x := v.(type) {
	case map[string]any:
		props, _ := s["properties"].(map[string]any)
		closed := s["additionalProperties"] == false
		for _, k := range sortedKeys(x) {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if closed {
					c.failf(joinPath(path, k), "unknown key (allowed: %s)", strings.Join(sortedKeys(props), ", "))
				}
				continue
			}
			c.check(ps, x[k], joinPath(path, k))
		}
		for _, k := range toList(s["required"]) {
			if _, ok := x[fmt.Sprint(k)]; !ok {
				c.failf(joinPath(path, fmt.Sprint(k)), "missing (required)")
			}
		}
	case []any:
		if n, ok := toFloat(s["minItems"]); ok && float64(len(x)) < n {
			c.failf(path, "needs at least %v items", s["minItems"])
		}
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range x {
				c.check(items, e, fmt.Sprintf("%s[%d]", path, i))
			}
		}
	}
}

func toList(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case []string:
		out := make([]any, len(x))
		for i := range x {
			out[i] = x[i]
		}
		return out
	}
	return nil
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
