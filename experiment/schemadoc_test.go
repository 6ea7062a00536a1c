package experiment

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/besim/besim/scenarios"
)

// schemaDefaults reads the default column of SCHEMA.md's tables in the
// given sections (the first whose heading starts with col): key path -> the
// default as written (the backquoted value). A row of several keys
// ("`cpu.poll`, `cpu.poll_per_cqe`") pairs them with as many backquoted
// defaults; a row of one key takes the first (the rest are sources, such as
// a firmware parameter's name); cells that are prose (required, derived
// from another key) are left out.
func schemaDefaults(t *testing.T, col string, sections ...string) map[string]string {
	t.Helper()
	b, err := os.ReadFile("../scenarios/SCHEMA.md")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, s := range sections {
		want[s] = true
	}
	code := regexp.MustCompile("`([^`]*)`")
	out := map[string]string{}
	section, defCol := "", -1
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			section, defCol = strings.TrimSpace(h), -1
			continue
		}
		if strings.HasPrefix(line, "### ") {
			section, defCol = "", -1
			continue
		}
		if !want[section] || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(strings.ReplaceAll(line, `\|`, "\x00"), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(strings.ReplaceAll(cells[i], "\x00", "|"))
		}
		if cells[0] == "Key" {
			for i, c := range cells {
				if strings.HasPrefix(c, col) && defCol < 0 {
					defCol = i
				}
			}
			continue
		}
		if defCol < 0 || defCol >= len(cells) || strings.HasPrefix(cells[0], "---") {
			continue
		}
		var keys, defs []string
		for _, m := range code.FindAllStringSubmatch(cells[0], -1) {
			keys = append(keys, m[1])
		}
		for _, m := range code.FindAllStringSubmatch(cells[defCol], -1) {
			defs = append(defs, m[1])
		}
		if len(keys) == 1 && len(defs) > 1 {
			defs = defs[:1]
		}
		if len(keys) == 0 || len(keys) != len(defs) || strings.Contains(cells[defCol], "**required**") {
			continue
		}
		for i, k := range keys {
			out[section+"."+k] = defs[i]
		}
	}
	return out
}

// lookup returns the scalar at a dotted path of a decoded YAML mapping.
func lookup(m map[string]any, path string) (string, bool) {
	var cur any = m
	for _, p := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return "", false
		}
		if cur, ok = mm[p]; !ok {
			return "", false
		}
	}
	switch v := cur.(type) {
	case map[string]any, []any:
		return "", false
	default:
		b, _ := yaml.Marshal(v)
		return strings.TrimSpace(string(b)), true
	}
}

// TestSchemaDefaultsAreTheModels: every default SCHEMA.md states for the
// fabric, hosts, rnic and dcqcn keys is the value the loader fills in
// (besim validate --print), and for dcqcn's connectx column the value it
// fills in with dcqcn.profile: connectx. The rnic and dcqcn values come
// from the models' Configs (ModelDefaults; TestModelConfigsHaveEveryDefault
// fails when a Config loses one), so SCHEMA.md is tested against the
// models: a model default changed leaves SCHEMA.md behind and fails here.
// The fabric defaults the format shares with fabric.DefaultConfig come
// from it too (TestFabricDefaultsAreTheModel); the others are the format's
// own choices: strict priority rather than DWRR, egress alpha 1/8 rather
// than 1, uplinks at the host rate rather than 100 Gbps, the XON offset two
// MTUs rather than 3 KiB, watchdog restore 100 ms rather than 200 ms.
func TestSchemaDefaultsAreTheModels(t *testing.T) {
	const text = "name: d\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}, priorities: [{prio: 3, lossless: true}], pfc: {watchdog: {}}}\nhosts: {nic: rnic}\nrnic: {cc: dcqcn}\nflows: [{src: 0, dst: 1, prio: 3}]\n"
	docs := schemaDefaults(t, "Default", "fabric.links", "fabric.switch", "fabric.pfc", "hosts", "rnic", "dcqcn")
	if len(docs) < 50 {
		t.Fatalf("only %d defaults read from SCHEMA.md: %v", len(docs), docs)
	}
	// Defaults that are another key's value, or apply only to a setting
	// the test scenario does not have.
	notHere := map[string]string{
		"fabric.links.host_rate":     "the value of rate",
		"fabric.links.uplink_rate":   "the value of rate, leaf-spine and fat-tree only",
		"fabric.switch.dwrr_weights": "dwrr only",
		"hosts.nic":                  "set to rnic above",
		"rnic.cc":                    "set to dcqcn above",
		"dcqcn.profile":              "empty means dcqcn-paper",
	}
	checkSchemaDocs(t, parse(t, "d", text), docs, notHere, dcqcnProfile(nil, 25e9))

	cx := schemaDefaults(t, "Default (`connectx`", "dcqcn")
	if len(cx) < len(dcqcnKnobs) {
		t.Fatalf("only %d connectx defaults read from SCHEMA.md: %v", len(cx), cx)
	}
	s := parse(t, "d", strings.Replace(text, "rnic: {cc: dcqcn}", "rnic: {cc: dcqcn}\ndcqcn: {profile: connectx}", 1))
	checkSchemaDocs(t, s, cx, nil, dcqcnProfile(s.DCQCN, 25e9))
}

// checkSchemaDocs compares the defaults docs states with what the resolved
// scenario s shows; a dcqcn knob left out of it (a zero model value, which
// prints absent) is compared with the model's value in m.
func checkSchemaDocs(t *testing.T, s *scenarios.Scenario, docs, notHere map[string]string, m dcqcnModel) {
	t.Helper()
	text, err := s.YAML()
	if err != nil {
		t.Fatal(err)
	}
	var resolved map[string]any
	if err := yaml.Unmarshal(text, &resolved); err != nil {
		t.Fatal(err)
	}
	for key, doc := range docs {
		if _, skip := notHere[key]; skip {
			continue
		}
		got, ok := lookup(resolved, key)
		if !ok && doc == "0" {
			continue // a zero is left out of the printed scenario
		}
		if !ok {
			for _, k := range dcqcnKnobs {
				if "dcqcn."+k.key == key && k.isZero(&m) {
					got, ok = fmt.Sprint(k.value(&m)), true
				}
			}
		}
		if !ok {
			t.Errorf("SCHEMA.md gives %s a default (%s) but the resolved scenario has no such value", key, doc)
			continue
		}
		if !sameValue(got, doc) {
			t.Errorf("%s: SCHEMA.md says the default is %s, the loader (and the model) fill in %s", key, doc, got)
		}
	}
}

// sameValue compares two written values: equal text, or equal once parsed
// as a size, rate, duration, fraction or ratio ("1024" and "1KiB").
func sameValue(a, b string) bool {
	a, b = strings.Trim(a, `"'`), strings.Trim(b, `"'`)
	if a == b {
		return true
	}
	if x, err := scenarios.ParseSize(a); err == nil {
		y, err := scenarios.ParseSize(b)
		return err == nil && x == y
	}
	if x, err := scenarios.ParseRate(a); err == nil {
		y, err := scenarios.ParseRate(b)
		return err == nil && x == y
	}
	if x, err := scenarios.ParseDuration(a); err == nil {
		y, err := scenarios.ParseDuration(b)
		return err == nil && x == y
	}
	if x, err := scenarios.ParseRatio(a); err == nil {
		y, err := scenarios.ParseRatio(b)
		return err == nil && x.Float64() == y.Float64()
	}
	return false
}
