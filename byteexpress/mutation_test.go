package byteexpress

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestTracesCatchMutants rebuilds the package with one protocol rule broken
// (go test -overlay swaps a source file) and requires that the protocol
// traces notice: the traces check the rules, not just today's output.
func TestTracesCatchMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilds the package")
	}
	for _, m := range []struct {
		name, file, from, to, script string
	}{
		// The repost rule: a SEND without a credit return may take the last credit.
		{"last credit to any SEND", "credits.go", "	need := 2\n", "	need := 1\n", "credits"},
		// Re-posting in batches of k = d/2 (one post call, one report).
		{"re-post every receive", "credits.go", "	k = c.rqDepth / 2\n", "	k = 1\n", "credits"},
	} {
		t.Run(m.name, func(t *testing.T) {
			runMutant(t, m.file, m.from, m.to, "TestTraces/"+m.script)
		})
	}
}

// runMutant runs this package's TestTraces with file's from replaced by to
// and fails unless the named subtest fails.
func runMutant(t *testing.T, file, from, to, subtest string) {
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(src), from) != 1 {
		t.Fatalf("%s: the mutated line %q is not there exactly once (update the mutant)", file, from)
	}
	dir := t.TempDir()
	mut := filepath.Join(dir, file)
	if err := os.WriteFile(mut, []byte(strings.Replace(string(src), from, to, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	ov, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: mut}})
	overlay := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlay, ov, 0o644); err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	cmd := exec.Command(gobin, "test", "-overlay", overlay, "-count=1", "-run", "^TestTraces$", ".")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--- FAIL: "+subtest) {
		t.Errorf("mutant %s (%q -> %q): %s did not fail:\n%s", file, from, to, subtest, out)
	}
}
