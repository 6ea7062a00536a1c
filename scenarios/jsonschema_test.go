package scenarios

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestSchemaFileUpToDate: the committed schema.json is what JSONSchema
// generates from the current types.
func TestSchemaFileUpToDate(t *testing.T) {
	want, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatalf("%v; generate it from the repository root with: %s", err, SchemaRegenerate)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is out of date with the scenario types; regenerate it from the repository root with: %s", SchemaFile, SchemaRegenerate)
	}
}

func committedSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	return s
}

func decodeAny(t *testing.T, name string, b []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// TestEmbeddedScenariosMatchSchema: every embedded scenario, as written and
// normalised (every default filled in, as validate --print writes it),
// validates structurally against the committed schema.
func TestEmbeddedScenariosMatchSchema(t *testing.T) {
	schema := committedSchema(t)
	list := List()
	if len(list) < 10 {
		t.Fatalf("only %d embedded scenarios", len(list))
	}
	for _, info := range list {
		b, err := Builtin(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range CheckSchema(schema, decodeAny(t, info.Name, b)) {
			t.Errorf("%s: %s", builtinFile(info.Name), e)
		}
		s, err := loadBuiltin(info.Name)
		if err != nil {
			t.Fatalf("%s: %v", info.Name, err)
		}
		norm, err := s.YAML()
		if err != nil {
			t.Fatalf("%s: %v", info.Name, err)
		}
		for _, e := range CheckSchema(schema, decodeAny(t, info.Name, norm)) {
			t.Errorf("%s (normalised): %s", info.Name, e)
		}
	}
}

// TestSchemaCatchesMistakes: the checker (and so the schema) rejects
// unknown keys, wrong types and values outside an enumeration, each with
// its key path; the loader rejects the same files.
func TestSchemaCatchesMistakes(t *testing.T) {
	schema := committedSchema(t)
	base := "version: 1\nname: x\nduration: 1ms\n"
	tests := []struct{ doc, want string }{
		{"fabric: {links: {rate: 25Gbps, nope: 1}}", "fabric.links.nope: unknown key (allowed: delay, host_rate, rate, uplink_rate)"},
		{"seed: seven", "seed: expected integer, got string seven"},
		{"fabric: {topology: {kind: ring}}", "fabric.topology.kind: ring is not one of star, leaf-spine, fat-tree"},
		{"fabric: {priorities: [{prio: 3, lossless: yes-please}]}", "fabric.priorities[0].lossless: expected boolean"},
		{"flows: [{name: a, src: [], dst: 1}]", "flows[0].src: array [] matches none of the allowed forms"},
		{"workload: {kind: ps-cluster, rpc: 3}", "workload.rpc: integer 3 matches none of the allowed forms"},
		{"workload: {kind: ps-cluster, rpc: {request_timeout: 1ms, retries: 2}}", "workload.rpc.retries: unknown key"},
		{"fabric: {switch: {buffer: [1]}}", "fabric.switch.buffer: expected [integer string], got array"},
	}
	for _, tc := range tests {
		doc := base + tc.doc + "\n"
		errs := CheckSchema(schema, decodeAny(t, tc.doc, []byte(doc)))
		if !strings.Contains(strings.Join(errs, "\n"), tc.want) {
			t.Errorf("%s: schema errors %q, want %q", tc.doc, errs, tc.want)
		}
		if _, err := Parse("x.yaml", []byte(doc)); err == nil {
			t.Errorf("%s: the loader accepts what the schema rejects", tc.doc)
		}
	}
}
