package e2e

import (
	"strings"
	"testing"

	"github.com/besim/besim/scenarios"
)

// TestFlowsScenario replays besim's incast flow scenario (cut to 3
// senders into host 3 and the victim into host 4, the victim at 1 Gb/s)
// on five agent processes over loopback TCP: every flow's bytes are
// received and acknowledged, the sized incast flows complete, and the
// report carries every flow/ and flows/ metric besim's simulation of the
// same file has.
func TestFlowsScenario(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := tokenFile(t, dir)
	data, err := scenarios.Builtin("incast")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.NewReplacer("hosts: 18 ", "hosts: 5 ", "src: 0-15\n    dst: 16", "src: 0-2\n    dst: 3",
		"dst: 17\n    prio: 3\n    rate: 10Gbps", "dst: 4\n    prio: 3\n    rate: 1Gbps").Replace(string(data)))
	for _, want := range []string{"hosts: 5 ", "src: 0-2\n    dst: 3", "dst: 4\n    prio: 3\n    rate: 1Gbps"} {
		if !strings.Contains(string(scen), want) {
			t.Fatalf("the incast scenario changed: cannot cut it down (%q)", want)
		}
	}
	var agents []*agentProc
	for _, n := range []string{"h0", "h1", "h2", "h3", "h4"} {
		agents = append(agents, startAgent(t, n, "127.0.0.1:0", tok))
	}
	wait, _ := startControllerArgs(t, dir, string(scen), hostsFile(agents...), tok, []string{"--duration", "500ms"})
	r := wait()
	rf := r.rf
	if r.code != 0 || rf.Status != "ok" {
		t.Fatalf("exit %d, status %s, failures %v\n%s\n%s", r.code, rf.Status, rf.Failures, r.stdout, r.stderr.String())
	}
	for i := range 4 {
		id := "f" + itoa(i)
		sent, got := metric(t, rf, id+"-tx", "bytes"), metric(t, rf, id+"-rx", "bytes")
		if sent <= 0 || sent != got || metric(t, rf, id+"-tx", "completed") != 1 {
			t.Errorf("%s: sent %v bytes, received %v, completed %v", id, sent, got, rf.Role(id + "-tx").Metrics["completed"])
		}
		if i < 3 && sent != 256<<10 {
			t.Errorf("%s: an incast flow of 256 KiB sent %v bytes", id, sent)
		}
	}
	simr, hw, _ := besimVsBerun(t, r.stdout, "incast", scen)
	n := 0
	for _, sm := range simr.Metrics {
		if !strings.HasPrefix(sm.Name, "flow/") && !strings.HasPrefix(sm.Name, "flows/") {
			continue
		}
		n++
		if v, ok := hw.Metric(sm.Name); !ok || !(v.Value > 0) {
			t.Errorf("berun's report: %s = %+v (present %v), want > 0", sm.Name, v, ok)
		}
	}
	if n != 6 {
		t.Errorf("besim's result has %d flow metrics, want 6 (4 goodputs, sent, delivered)", n)
	}
	if v, _ := hw.Metric("flows/incomplete"); v.Value != 0 {
		t.Errorf("flows/incomplete = %v", v.Value)
	}
}
