package pfc

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestTracesCatchMutants rebuilds the package with the XON offset broken
// (go test -overlay swaps ingress.go) and requires that the PFC traces
// notice.
func TestTracesCatchMutants(t *testing.T) {
	if testing.Short() {
		t.Skip("rebuilds the package")
	}
	for _, m := range []struct{ name, from, to, script string }{
		{"XON offset ignored", "x := g.XOFF() - g.t.XONOffset.Bytes()", "x := g.XOFF()", "xoff-xon-dynamic"},
		{"XON offset added", "x := g.XOFF() - g.t.XONOffset.Bytes()", "x := g.XOFF() + g.t.XONOffset.Bytes()", "xoff-xon-dynamic"},
		{"no hysteresis", "g.Shared <= g.XON()", "g.Shared < g.XOFF()", "xoff-xon-static"},
	} {
		t.Run(m.name, func(t *testing.T) {
			src, err := os.ReadFile("ingress.go")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Count(string(src), m.from) != 1 {
				t.Fatalf("ingress.go: %q is not there exactly once (update the mutant)", m.from)
			}
			dir := t.TempDir()
			mut := filepath.Join(dir, "ingress.go")
			if err := os.WriteFile(mut, []byte(strings.Replace(string(src), m.from, m.to, 1)), 0o644); err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs("ingress.go")
			ov, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: mut}})
			overlay := filepath.Join(dir, "overlay.json")
			if err := os.WriteFile(overlay, ov, 0o644); err != nil {
				t.Fatal(err)
			}
			gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
			out, err := exec.Command(gobin, "test", "-overlay", overlay, "-count=1", "-run", "^TestTraces$", ".").CombinedOutput()
			if err == nil || !strings.Contains(string(out), "--- FAIL: TestTraces/"+m.script) {
				t.Errorf("mutant %q -> %q: TestTraces/%s did not fail:\n%s", m.from, m.to, m.script, out)
			}
		})
	}
}
