package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// TestFragsizeScenario replays besim's fig10 (cut to 4 KiB and 16 KiB
// fragments of 64 KiB messages) through berun's agents and controller
// over the core on verbs (in-memory NICs, 100 Gb/s ports, one of fig10's
// rates): every message of every fragment size is answered, and the
// report's fragsize/ metrics are names besim's simulation of the same
// file has.
func TestFragsizeScenario(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("fig10")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.NewReplacer("fragments: [512, 1KiB, 2KiB, 4KiB, 8KiB, 16KiB, 32KiB, 64KiB]", "fragments: [4KiB, 16KiB]",
		"message: 1MiB", "message: 64KiB", "warmup: 6.7108864ms", "warmup: 100ms").Replace(string(data)))
	if !strings.Contains(string(scen), "fragments: [4KiB, 16KiB]") || !strings.Contains(string(scen), "warmup: 100ms") {
		t.Fatal("fig10 changed: cannot cut it down")
	}
	rf, hw := runInProcess(t, "fig10", scen, 2, 500*time.Millisecond)
	tx := rf.Role("fragsize-sender")
	for _, k := range []string{"4096B", "16384B"} {
		if sent, got := tx.Metrics["requests/"+k], tx.Metrics["responses/"+k]; sent == 0 || sent != got {
			t.Errorf("%s: %v messages sent, %v answered", k, sent, got)
		}
	}
	sim, _ := besimVs(t, hw, "fig10", scen)
	n := 0
	for _, m := range hw.Metrics {
		if !strings.HasPrefix(m.Name, "fragsize/") {
			continue
		}
		n++
		if _, ok := sim.Metric(m.Name); !ok {
			t.Errorf("besim's fig10 has no %s", m.Name)
		}
		if !(m.Value > 0) {
			t.Errorf("%s = %v", m.Name, m.Value)
		}
	}
	if n != 2 {
		t.Errorf("berun's report has %d fragsize/ metrics, want 2", n)
	}
}

// TestPerftestScenario replays besim's table2 (RC only) through berun's
// agents and controller on verbs (in-memory NICs at 100 Gb/s, MTU 4096,
// one of table2's points): the client's SENDs all complete, and the
// report's perftest/ metrics are names besim's simulation of the same
// file has.
func TestPerftestScenario(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("table2")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.Replace(string(data), "transports: [rc, ud]", "transports: [rc]", 1))
	if !strings.Contains(string(scen), "transports: [rc]") {
		t.Fatal("table2 changed: cannot cut it to RC")
	}
	_, hw := runInProcess(t, "table2", scen, 2, 300*time.Millisecond)
	sim, _ := besimVs(t, hw, "table2", scen)
	n := 0
	for _, m := range hw.Metrics {
		if !strings.HasPrefix(m.Name, "perftest/") {
			continue
		}
		n++
		if _, ok := sim.Metric(m.Name); !ok {
			t.Errorf("besim's table2 has no %s", m.Name)
		}
		if strings.HasSuffix(m.Name, "/gbps") && !(m.Value > 0) {
			t.Errorf("%s = %v", m.Name, m.Value)
		}
	}
	if n == 0 {
		t.Error("berun's report has no perftest/ metric")
	}
}

// TestVerbsWithoutDevice: on a host without an RDMA device (this one; the
// agents are built without -tags rdma) a scenario whose roles need verbs
// fails at prepare, before the start, with a reason that says there is no
// device and how to build for one, never silently.
func TestVerbsWithoutDevice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := tokenFile(t, dir)
	data, err := scenarios.Builtin("fig13")
	if err != nil {
		t.Fatal(err)
	}
	a, b := startAgent(t, "h1", "127.0.0.1:0", tok), startAgent(t, "h2", "127.0.0.1:0", tok)
	wait, _ := startControllerArgs(t, dir, string(data), hostsFile(a, b), tok, []string{"--duration", "100ms"})
	r := wait()
	if r.code == 0 || r.rf.Status != "failed" || len(r.rf.Failures) == 0 {
		t.Fatalf("exit %d, status %s, failures %+v", r.code, r.rf.Status, r.rf.Failures)
	}
	f := r.rf.Failures[0]
	if f.Phase != "prepare" || !strings.Contains(f.Reason, "no RDMA device") || !strings.Contains(f.Reason, "-tags rdma") {
		t.Errorf("failure %+v: want the prepare phase, no RDMA device, and -tags rdma", f)
	}
}
