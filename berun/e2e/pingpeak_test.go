package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/berun/controller"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// cutFig8 is fig8 cut to 32-byte and 8 KiB messages (one on each side of
// the core's 4 KiB zero-copy limit) at the point mtu, with besim's
// measured interval 300us and a warm-up warm for berun's slots.
func cutFig8(t *testing.T, mtu, warm string) []byte {
	t.Helper()
	data, err := scenarios.Builtin("fig8")
	if err != nil {
		t.Fatal(err)
	}
	scen := strings.NewReplacer("messages: [32, 64, 128, 256, 512, 1KiB, 2KiB, 4KiB, 8KiB, 16KiB]", "messages: [32, 8KiB]",
		"duration: 2ms ", "duration: 300us ", "warmup: 200us", "warmup: "+warm, "{rate: 100Gbps, mtu: 1024}", "{rate: 100Gbps, mtu: "+mtu+"}").Replace(string(data))
	for _, want := range []string{"messages: [32, 8KiB]", "duration: 300us", "warmup: " + warm, "mtu: " + mtu + "}"} {
		if !strings.Contains(scen, want) {
			t.Fatalf("fig8 changed: cannot cut it down (%s)", want)
		}
	}
	return []byte(scen)
}

// checkPingpongRun: every message of each size was answered and the
// server answered exactly those and the clock-offset probes; berun's
// pingpong/ metrics are the names besim's result sim has, all of them,
// each measured.
func checkPingpongRun(t *testing.T, rf *controller.ResultFile, hw, sim *report.Result) {
	t.Helper()
	tx := rf.Role("pingpong-sender").Metrics
	var sent float64
	for _, k := range []string{"32B", "8192B"} {
		if req, resp := tx["requests/"+k], tx["responses/"+k]; req == 0 || req != resp {
			t.Errorf("%s: %v messages sent, %v answered", k, req, resp)
		}
		sent += tx["requests/"+k]
	}
	probes := tx["offset_probes"]
	if probes < 1 {
		t.Error("no clock-offset probe answered")
	}
	if got := rf.Role("pingpong-server").Metrics["messages"]; got != sent+probes {
		t.Errorf("the server answered %v messages, the sender sent %v and %v probes", got, sent, probes)
	}
	n := 0
	for _, m := range sim.Metrics {
		if !strings.HasPrefix(m.Name, "pingpong/") {
			continue
		}
		n++
		if v, ok := hw.Metric(m.Name); !ok || !(v.Value > 0) {
			t.Errorf("berun's report: %s = %+v (present %v), want > 0", m.Name, v, ok)
		}
	}
	for _, m := range hw.Metrics {
		if _, ok := sim.Metric(m.Name); strings.HasPrefix(m.Name, "pingpong/") && !ok {
			t.Errorf("besim's fig8 has no %s", m.Name)
		}
	}
	if n != 6 {
		t.Errorf("besim's result has %d pingpong/ metrics, want 3 for each of 2 sizes", n)
	}
}

// TestPingpongScenario replays besim's fig8 (cut to two sizes) on two
// agent processes with `berun run` over loopback kernel TCP (the default
// transport; the link is not read, so the run is named after the
// scenario's one point).
func TestPingpongScenario(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := tokenFile(t, dir)
	scen := cutFig8(t, "1024", "20ms")
	a, b := startAgent(t, "h1", "127.0.0.1:0", tok), startAgent(t, "h2", "127.0.0.1:0", tok)
	wait, _ := startControllerArgs(t, dir, string(scen), hostsFile(a, b), tok, []string{"--duration", "150ms"})
	r := wait()
	if r.code != 0 || r.rf.Status != "ok" {
		t.Fatalf("exit %d, status %s, failures %v\n%s\n%s", r.code, r.rf.Status, r.rf.Failures, r.stdout, r.stderr.String())
	}
	if r.rf.Role("pingpong-sender").Metrics["verbs"] != 0 {
		t.Error("the sender did not run over kernel TCP")
	}
	sim, hw, _ := besimVsBerun(t, r.stdout, "fig8", scen)
	checkPingpongRun(t, r.rf, hw, sim)
}

// TestPingpongScenarioVerbs replays the same over the ByteExpress core on
// verbs (in-memory NICs, whose ports are 100 Gb/s at MTU 4096: the cut
// scenario's point).
func TestPingpongScenarioVerbs(t *testing.T) {
	useFakeNICs(t)
	scen := cutFig8(t, "4096", "100ms")
	rf, hw := runInProcessOn(t, "fig8", scen, 2, 200*time.Millisecond, true)
	if rf.Role("pingpong-sender").Metrics["verbs"] != 1 {
		t.Error("the sender did not run over verbs")
	}
	sim, _ := besimVs(t, hw, "fig8", scen)
	checkPingpongRun(t, rf, hw, sim)
}

// TestPeakScenario replays besim's fig9 (cut to the point 100G/4096B of
// the in-memory NICs, RC only: fakeverbs has no UD, 64 KiB messages in
// 16 KiB fragments) through berun's agents and controller on verbs:
// every ByteExpress message is answered, the RC perftest's SENDs are
// received, and the report's peak/ metrics are the names besim's
// simulation of the same file has, ByteExpress and RC measured.
func TestPeakScenario(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("fig9")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.NewReplacer("    - {rate: 25Gbps, mtu: 1024}\n", "", "    - {rate: 100Gbps, mtu: 1024}\n", "", "    - {rate: 200Gbps, mtu: 4096}\n", "",
		"transports: [rc, ud]", "transports: [rc]", "message: 1MiB", "message: 64KiB", "fragment: 64KiB", "fragment: 16KiB",
		"duration: 5ms ", "duration: 1ms ", "warmup: 2ms", "warmup: 50ms").Replace(string(data)))
	for _, want := range []string{"transports: [rc]", "message: 64KiB", "fragment: 16KiB", "duration: 1ms", "warmup: 50ms"} {
		if !strings.Contains(string(scen), want) || strings.Contains(string(scen), "25Gbps") {
			t.Fatalf("fig9 changed: cannot cut it down (%s)", want)
		}
	}
	rf, hw := runInProcess(t, "fig9", scen, 2, 200*time.Millisecond)
	tx := rf.Role("peak-sender").Metrics
	if sent, got := tx["requests/16384B"], tx["responses/16384B"]; sent == 0 || sent != got {
		t.Errorf("ByteExpress: %v messages sent, %v answered", sent, got)
	}
	if sent, got := rf.Role("peak-perftest-client").Metrics["rc_sent"], rf.Role("peak-perftest-server").Metrics["rc_msgs"]; got == 0 || sent < got {
		t.Errorf("RC perftest: %v SENDs posted, %v received in the interval", sent, got)
	}
	sim, _ := besimVs(t, hw, "fig9", scen)
	n := 0
	for _, m := range sim.Metrics {
		if !strings.HasPrefix(m.Name, "peak/") {
			continue
		}
		n++
		v, ok := hw.Metric(m.Name)
		switch {
		case !ok:
			t.Errorf("berun's report has no %s", m.Name)
		case strings.HasSuffix(m.Name, "/ud/gbps") && v.Value != -1:
			t.Errorf("%s = %v: UD is not in the scenario, want -1 as besim", m.Name, v.Value)
		case !strings.HasSuffix(m.Name, "/ud/gbps") && !(v.Value > 0):
			t.Errorf("%s = %v, want > 0", m.Name, v.Value)
		}
	}
	if n != 3 {
		t.Errorf("besim's result has %d peak/ metrics, want 3", n)
	}
}
