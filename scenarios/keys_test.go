package scenarios

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestKeys: every path Keys returns names a value of the JSON Schema (the
// same Go types), the well-known ones are there, and there is no
// duplicate.
func TestKeys(t *testing.T) {
	raw, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	defs := doc["$defs"].(map[string]any)
	resolve := func(s map[string]any) map[string]any {
		for {
			ref, ok := s["$ref"].(string)
			if !ok {
				if alts, ok := s["anyOf"].([]any); ok { // workload.rpc: bool or mapping
					for _, a := range alts {
						if am := a.(map[string]any); am["$ref"] != nil {
							s = am
						}
					}
					if _, ok := s["$ref"]; ok {
						continue
					}
				}
				return s
			}
			s = defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		}
	}
	keys := Keys()
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			t.Errorf("%s twice", k)
		}
		seen[k] = true
		cur := doc
		for _, part := range strings.Split(k, ".") {
			name, isItem := strings.CutSuffix(part, "[0]")
			props, _ := resolve(cur)["properties"].(map[string]any)
			next, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s: no property %q in the schema", k, name)
				break
			}
			cur = next
			if isItem {
				cur = resolve(cur)["items"].(map[string]any)
			}
		}
	}
	for _, k := range []string{"duration", "fabric.links.rate", "flows[0].src", "rnic.pcie.bandwidth", "dcqcn.g", "workload.rpc", "workload.rpc.request_timeout", "benchmark.mtus"} {
		if !seen[k] {
			t.Errorf("%s missing from Keys", k)
		}
	}
}
