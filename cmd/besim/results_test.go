package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

// resultSchema is the committed JSON Schema of result files.
func resultSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "report", "result.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("report/result.schema.json: %v", err)
	}
	return s
}

func checkResult(t *testing.T, schema map[string]any, name string, b []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	for _, e := range scenarios.CheckSchema(schema, v) {
		t.Errorf("%s: %s", name, e)
	}
	// Provenance: the schema requires the fields; their values too.
	var r report.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if r.Format != report.Format || r.ToolVersion == "" || r.Revision == "" ||
		!regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(r.ScenarioSHA256) || len(r.ResolvedScenario) < 2 {
		t.Errorf("%s: provenance incomplete: format %q tool_version %q revision %q scenario_sha256 %q resolved_scenario %d bytes",
			name, r.Format, r.ToolVersion, r.Revision, r.ScenarioSHA256, len(r.ResolvedScenario))
	}
}

// TestResultsMatchSchema: a fresh run's result.json and every committed
// result validate against report/result.schema.json and carry provenance
// (format, tool version, revision, scenario digest, resolved scenario).
func TestResultsMatchSchema(t *testing.T) {
	schema := resultSchema(t)
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"run", "-q", "--set", "duration=200us", "--out", dir, "incast"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	b, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkResult(t, schema, "a fresh incast run", b)

	// The schema is not vacuous: a result without provenance or with a
	// sentinel for a missing value fails it.
	var v map[string]any
	json.Unmarshal(b, &v)
	delete(v, "scenario_sha256")
	v["metrics"].([]any)[0].(map[string]any)["value"] = "-"
	if errs := scenarios.CheckSchema(schema, v); len(errs) != 2 {
		t.Errorf("a broken result: want 2 problems, got %q", errs)
	}

	n := 0
	err = filepath.WalkDir(filepath.Join(repoRoot, "results"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".json") {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		checkResult(t, schema, rel, b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 15 {
		t.Errorf("only %d committed results found", n)
	}
}
