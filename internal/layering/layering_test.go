package layering

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestRepository checks the rules on the repository's own packages
// (non-test dependencies, as the binaries link them).
func TestRepository(t *testing.T) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := exec.LookPath(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			t.Skip("go command not found")
		}
	}
	cmd := exec.Command(gobin, "list", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "github.com/besim/besim/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	g := Graph{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			g[f[0]] = f[1:]
		}
	}
	for _, p := range []string{"cmd/berun", "byteexpress", "simhost", "workloads/ps", "workloads/ps/pssim", "workloads/perftest", "workloads/perftest/perftestsim", "workloads/failover", "workloads/failover/failoversim",
		"workloads/fragsize", "workloads/fragsize/fragsizesim", "workloads/hol", "workloads/hol/holsim", "workloads/msgrate", "workloads/msgrate/msgratesim"} {
		if _, ok := g[Module+p]; !ok {
			t.Fatalf("go list has no %s: the rules check nothing", p)
		}
	}
	for _, v := range Check(g) {
		t.Error(v)
	}
}

// TestCheckFindsPlantedImports: each rule fails on a graph with one
// forbidden import planted, and passes without it.
func TestCheckFindsPlantedImports(t *testing.T) {
	// m makes module paths of everything but the standard library's fmt
	// and errors.
	m := func(ps ...string) []string {
		for i, p := range ps {
			if p != "fmt" && p != "errors" {
				ps[i] = Module + p
			}
		}
		return ps
	}
	clean := Graph{
		Module + "byteexpress":                    m("verbs", "fmt"),
		Module + "byteexpress/rpc":                m("byteexpress", "verbs", "errors"),
		Module + "simhost":                        m("byteexpress", "rnic", "fabric", "sim"),
		Module + "workloads/ps":                   m("sim", "scenarios", "workloads/app", "byteexpress"),
		Module + "workloads/ps/pssim":             m("workloads/ps", "simhost", "experiment"),
		Module + "berun/role":                     m("workloads/ps", "sim", "verbs"),
		Module + "cmd/berun":                      m("berun/role", "workloads/ps", "sim"),
		Module + "experiment":                     m("fabric", "scenarios"),
		Module + "workloads/app":                  m("scenarios", "byteexpress"),
		Module + "workloads/incast":               m("sim", "scenarios", "workloads/app"),
		Module + "workloads/incast/incastsim":     m("workloads/incast", "simhost", "experiment"),
		Module + "workloads/perftest":             m("sim", "scenarios", "verbs"),
		Module + "workloads/perftest/perftestsim": m("workloads/perftest", "rnic", "experiment"),
		Module + "workloads/failover":             m("sim", "scenarios", "byteexpress/rpc", "report"),
		Module + "workloads/failover/failoversim": m("workloads/failover", "simhost", "faults", "tcpsim", "experiment"),
		Module + "workloads/fragsize":             m("sim", "scenarios", "report"),
		Module + "workloads/fragsize/fragsizesim": m("workloads/fragsize", "simhost", "rnic", "experiment"),
		Module + "workloads/hol":                  m("sim", "scenarios", "report", "workloads/fragsize"),
		Module + "workloads/hol/holsim":           m("workloads/hol", "workloads/fragsize/fragsizesim", "simhost", "experiment"),
		Module + "workloads/msgrate":              m("sim", "scenarios", "report"),
		Module + "workloads/msgrate/msgratesim":   m("workloads/msgrate", "rnic", "experiment"),
	}
	if v := Check(clean); len(v) != 0 {
		t.Fatalf("clean graph: %v", v)
	}
	for _, c := range []struct {
		pkg, dep, want string
	}{
		{"byteexpress", "sim", "the core imports only verbs"},
		{"byteexpress/rpc", "gonum.org/v1/plot", "the core imports only verbs"},
		{"simhost", "workloads/incast", "a model imports no workload"},
		{"workloads/incast", "fabric", "simulator-free workload package"},
		{"cmd/berun", "workloads/incast/incastsim", "berun runs on real hosts"},
		{"simhost", "scenarios", "a model imports no workload, experiment or scenarios"},
		{"workloads/ps", "simhost", "simulator-free workload package"},
		{"workloads/ps", "experiment", "simulator-free workload package"},
		{"berun/role", "fabric", "berun runs on real hosts"},
		{"cmd/berun", "workloads/ps/pssim", "berun runs on real hosts"},
		{"cmd/berun", "faults", "berun runs on real hosts"},
		{"workloads/perftest", "rnic", "simulator-free workload package"},
		{"cmd/berun", "workloads/perftest/perftestsim", "berun runs on real hosts"},
		{"workloads/failover", "faults", "simulator-free workload package"},
		{"workloads/failover", "tcpsim", "simulator-free workload package"},
		{"cmd/berun", "workloads/failover/failoversim", "berun runs on real hosts"},
		{"workloads/fragsize", "simhost", "simulator-free workload package"},
		{"workloads/fragsize", "rnic", "simulator-free workload package"},
		{"workloads/hol", "simhost", "simulator-free workload package"},
		{"workloads/hol", "experiment", "simulator-free workload package"},
		{"berun/role", "workloads/fragsize/fragsizesim", "berun runs on real hosts"},
		{"cmd/berun", "workloads/hol/holsim", "berun runs on real hosts"},
		{"workloads/msgrate", "rnic", "simulator-free workload package"},
		{"cmd/berun", "workloads/msgrate/msgratesim", "berun runs on real hosts"},
		{"berun/internal/tcpx", "fabric", "berun runs on real hosts"},
	} {
		g := Graph{}
		for k, v := range clean {
			g[k] = append([]string(nil), v...)
		}
		dep := c.dep
		if !strings.Contains(strings.SplitN(dep, "/", 2)[0], ".") {
			dep = Module + dep
		}
		g[Module+c.pkg] = append(g[Module+c.pkg], dep)
		v := Check(g)
		if len(v) != 1 || !strings.Contains(v[0], c.pkg+" imports") || !strings.Contains(v[0], c.want) {
			t.Errorf("%s importing %s: %v", c.pkg, c.dep, v)
		}
	}
	g := Graph{Module + "workloads/newthing": nil}
	if v := Check(g); len(v) != 1 || !strings.Contains(v[0], "neither a simulator-free") {
		t.Errorf("unclassified workload package: %v", v)
	}
}
