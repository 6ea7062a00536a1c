package e2e

import (
	"strings"
	"testing"

	"github.com/besim/besim/scenarios"
)

// TestIncastScenario replays besim's fig14-incast scenario (cut to 8
// servers) on three agent processes over loopback TCP: the workers' pulls
// are all answered and counted by the servers, the victim runs as a
// tcp-bulk pair, and the report in besim's format lines up with besim's
// simulation of the same file in compare.
func TestIncastScenario(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := tokenFile(t, dir)
	data, err := scenarios.Builtin("fig14-incast")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.Replace(string(data), "servers: 64", "servers: 8", 1))
	var agents []*agentProc
	for _, n := range []string{"h1", "h2", "h3"} {
		agents = append(agents, startAgent(t, n, "127.0.0.1:0", tok))
	}
	wait, _ := startControllerArgs(t, dir, string(scen), hostsFile(agents...), tok, []string{"--duration", "1s"})
	r := wait()
	rf := r.rf
	if r.code != 0 || rf.Status != "ok" {
		t.Fatalf("exit %d, status %s, failures %v\n%s\n%s", r.code, rf.Status, rf.Failures, r.stdout, r.stderr.String())
	}
	var served float64
	for i := range 8 {
		served += metric(t, rf, "server"+itoa(i), "pulls")
	}
	sent, got := metric(t, rf, "worker0", "requests"), metric(t, rf, "worker0", "responses")
	if sent < 100 || sent != got || served != sent {
		t.Errorf("worker0 sent %v pulls, got %v answers; servers answered %v", sent, got, served)
	}
	if v := metric(t, rf, "victim-rx", "bytes"); v <= 0 {
		t.Errorf("victim sink received %v bytes", v)
	}
	_, hw, rows := besimVsBerun(t, r.stdout, "fig14-incast", scen)
	for _, want := range []string{"pull/count", "pull/p50 (us)", "pull/p99 (us)", "worker/goodput (Gbps)", "victim/goodput (Gbps)", "workload/servers"} {
		if !rows[want] {
			t.Errorf("compare has no row %q", want)
		}
	}
	if v, _ := hw.Metric("pull/count"); v.Value < 1 {
		t.Errorf("pull/count %v", v.Value)
	}
}
