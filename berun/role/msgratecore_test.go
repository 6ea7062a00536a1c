package role

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// msgrateCoreSpecs are the roles of fig11-core cut to 2 I/O threads on 2
// and 4 QPs, with a set-up of 400 ms (generous: a loaded machine under
// -race once took 240 ms to connect two engines) and a warm-up of 20 ms.
func msgrateCoreSpecs(t *testing.T) []Spec {
	t.Helper()
	data, err := scenarios.Builtin("fig11-core")
	if err != nil {
		t.Fatal(err)
	}
	small := strings.NewReplacer("threads: 8", "threads: 2", "qps: [8, 16, 32, 64, 128, 256, 512]", "qps: [2, 4]",
		"warmup: 200us", "warmup: 20ms").Replace(string(data))
	for _, want := range []string{"threads: 2", "qps: [2, 4]", "warmup: 20ms"} {
		if !strings.Contains(small, want) {
			t.Fatalf("fig11-core changed: cannot cut it down (%s)", want)
		}
	}
	params := func() map[string]string { return map[string]string{"setup": "400ms"} }
	return []Spec{
		{ID: "msgrate-core-target", Role: "msgrate-core-target", Bind: "127.0.0.1:0", From: []string{"msgrate-core-sender"}, Params: params(), Scenario: []byte(small)},
		{ID: "msgrate-core-sender", Role: "msgrate-core-sender", Bind: "127.0.0.1:0", Peers: []string{"msgrate-core-target"}, Params: params(), Scenario: []byte(small)},
	}
}

// Over verbs (in-memory NICs): every point opens one engine per QP, all
// connect within the set-up, every message sent is answered, and the
// target counts messages in each point's measured interval (the rate).
func TestMsgrateCoreRolesOverVerbs(t *testing.T) {
	useFakeNICs(t)
	// 4 points of 600 ms: 420 ms of set-up and warm-up, 120 ms measured.
	out := runAll(t, 2400*time.Millisecond, 5*time.Second, msgrateCoreSpecs(t)...)
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		t.Logf("%s: %v", id, in.res.Metrics)
	}
	tx, rx := out["msgrate-core-sender"].res.Metrics, out["msgrate-core-target"].res.Metrics
	measured := 0.0
	for _, k := range []string{"no_td/2", "td/2", "no_td/4", "td/4"} {
		q := map[string]float64{"no_td/2": 2, "td/2": 2, "no_td/4": 4, "td/4": 4}[k]
		if tx["connected/"+k] != q || !(tx["setup_s/"+k] > 0) {
			t.Errorf("%s: %v of %v engines connected (set-up %vs)", k, tx["connected/"+k], q, tx["setup_s/"+k])
		}
		sent, got := tx["requests/"+k], tx["responses/"+k]
		if sent < 16*q || got != sent {
			t.Errorf("%s: %v messages sent (at least 16 per engine), %v answered", k, sent, got)
		}
		measured += rx["messages/"+k]
		if m := rx["messages/"+k]; !(m >= 0) || m > sent || !(rx["mmps/"+k] >= 0) {
			t.Errorf("%s: the target counted %v messages (of %v sent), %v Mmsg/s", k, m, sent, rx["mmps/"+k])
		}
	}
	// A point may measure nothing when a loaded machine stalls the run for
	// its whole interval; the run as a whole must not.
	if !(measured > 0) {
		t.Error("the target counted no message in any measured interval")
	}
}

// The roles refuse a scenario they cannot run: no msgrate benchmark, one
// through the NIC (the msgrate roles'), a sender without its target.
func TestMsgrateCoreRoleErrors(t *testing.T) {
	specs := msgrateCoreSpecs(t)
	s := specs[1]
	s.Peers = nil
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "needs one peer") {
		t.Errorf("sender without peer: %v", err)
	}
	s = specs[0]
	s.Scenario, _ = scenarios.Builtin("fig11")
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "through is not core") {
		t.Errorf("fig11 (through the NIC): %v", err)
	}
	s.Scenario, _ = scenarios.Builtin("fig13")
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "no msgrate benchmark") {
		t.Errorf("fig13: %v", err)
	}
	s = specs[0]
	s.Params = map[string]string{"setup": "soon"}
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "setup") {
		t.Errorf("setup=soon: %v", err)
	}
	// The msgrate roles refuse through: core, naming these.
	s = msgrateSpecs(t)[0]
	s.Scenario = specs[0].Scenario
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "msgrate-core-sender") {
		t.Errorf("msgrate-target on fig11-core: %v", err)
	}
}
