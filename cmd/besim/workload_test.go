package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkloadSearchCommand is a reduced Table 4 search: without a software
// window fig14-incast's one worker admits about 21 servers before PFC, so
// the bisection in [1, 64] ends inside the range; "none" reaches the
// window key through the YAML node tree.
func TestWorkloadSearchCommand(t *testing.T) {
	f := filepath.Join(t.TempDir(), "s.json")
	out, _ := besim(t, "sweep", "fig14-incast", "--search", "workload.servers=1..64", "--until", "pfc/frames_tx>0",
		"--set", "workload.window=none", "-o", f)
	if !strings.Contains(out, "workload.window=none") {
		t.Fatalf("output:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "workload.window=none") {
			fs := strings.Fields(line)
			if len(fs) < 3 || fs[1] == "64" || fs[1] == "1" || fs[2] == "-" {
				t.Errorf("no crossing inside [1, 64]: %q", line)
			}
		}
	}
}

// TestSchemaCommand: besim schema prints the committed scenarios/schema.json.
func TestSchemaCommand(t *testing.T) {
	out, _ := besim(t, "schema")
	want, err := os.ReadFile("../../scenarios/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("besim schema differs from scenarios/schema.json (regenerate: go run ./cmd/besim schema > scenarios/schema.json)")
	}
}
