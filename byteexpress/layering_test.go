package byteexpress_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestLayering enforces the core's import rule (docs/ARCHITECTURE.md): the core (this package and
// every package below it, tests included) depends only on verbs, the
// byteexpress tree itself (bemalloc, internal helpers) and the standard
// library, and never on the simulator packages. Tests may also use the
// in-memory verbs backend (verbs/fakeverbs, which imports only verbs) and
// the trace harness's datadriven.
func TestLayering(t *testing.T) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Skip("go command not found")
		}
	}
	const mod = "github.com/besim/besim/"
	cmd := exec.Command(gobin, "list", "-deps", "-test",
		"-f", "{{if not .Standard}}{{.ImportPath}}{{\"\\n\"}}{{end}}", "./...")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{"sim", "rnic", "fabric", "pfc", "dcqcn"}
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line) // "path" or "path [pkg.test]"
		if len(f) == 0 {
			continue
		}
		seen++
		p := strings.TrimSuffix(strings.TrimSuffix(f[0], ".test"), "_test")
		for _, bad := range forbidden {
			if p == mod+bad || strings.HasPrefix(p, mod+bad+"/") {
				t.Errorf("byteexpress depends on %s", p)
			}
		}
		switch {
		case p == mod+"verbs", strings.HasPrefix(p, mod+"byteexpress"):
		case strings.HasPrefix(p, "github.com/google/go-cmp/"): // allowed in tests
		case p == mod+"verbs/fakeverbs", testOnly[p]: // tests only: checked below
		default:
			t.Errorf("byteexpress depends on %s (allowed: verbs, byteexpress/..., the standard library)", p)
		}
	}
	if seen == 0 {
		t.Fatal("go list returned no packages")
	}
	// The fake NIC is for tests: no non-test package may depend on it.
	out, err = exec.Command(gobin, "list", "-deps", "-f", "{{.ImportPath}}", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == mod+"verbs/fakeverbs" || testOnly[p] {
			t.Errorf("non-test code of byteexpress depends on %s", p)
		}
	}
}

// testOnly are the third-party packages the core's tests may use (the
// protocol traces); non-test code may not.
var testOnly = map[string]bool{
	"github.com/cockroachdb/datadriven":     true,
	"github.com/pmezard/go-difflib/difflib": true,
}
