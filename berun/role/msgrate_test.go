package role

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// msgrateSpecs are the roles of fig11 cut to 2 I/O threads on 4 and 8
// QPs, with a warm-up of 50 ms.
func msgrateSpecs(t *testing.T) []Spec {
	t.Helper()
	data, err := scenarios.Builtin("fig11")
	if err != nil {
		t.Fatal(err)
	}
	small := strings.NewReplacer("threads: 8", "threads: 2", "qps: [8, 16, 32, 64, 128, 256, 512]", "qps: [4, 8]",
		"warmup: 500us", "warmup: 50ms").Replace(string(data))
	for _, want := range []string{"threads: 2", "qps: [4, 8]", "warmup: 50ms"} {
		if !strings.Contains(small, want) {
			t.Fatalf("fig11 changed: cannot cut it down (%s)", want)
		}
	}
	return []Spec{
		{ID: "msgrate-target", Role: "msgrate-target", Bind: "127.0.0.1:0", From: []string{"msgrate-sender"}, Params: map[string]string{}, Scenario: []byte(small)},
		{ID: "msgrate-sender", Role: "msgrate-sender", Bind: "127.0.0.1:0", Peers: []string{"msgrate-target"}, Params: map[string]string{}, Scenario: []byte(small)},
	}
}

// Over verbs (in-memory NICs): every point creates its QPs (with thread
// domains where the point has them), exchanges them with the target,
// posts WRITEs in its measured interval and drains its signalled ones.
func TestMsgrateRolesOverVerbs(t *testing.T) {
	useFakeNICs(t)
	out := runAll(t, 1200*time.Millisecond, 5*time.Second, msgrateSpecs(t)...)
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		t.Logf("%s: %v", id, in.res.Metrics)
	}
	tx := out["msgrate-sender"].res.Metrics
	for _, k := range []string{"no_td/4", "td/4", "no_td/8", "td/8"} {
		if tx["posted/"+k] <= 0 || tx["mmps/"+k] <= 0 {
			t.Errorf("%s: %v WRITEs posted, %v Mmsg/s", k, tx["posted/"+k], tx["mmps/"+k])
		}
	}
}

// The roles refuse a scenario without a msgrate benchmark and a sender
// without its target.
func TestMsgrateRoleErrors(t *testing.T) {
	specs := msgrateSpecs(t)
	s := specs[1]
	s.Peers = nil
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "needs one peer") {
		t.Errorf("sender without peer: %v", err)
	}
	s = specs[0]
	s.Scenario, _ = scenarios.Builtin("fig13")
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "no msgrate benchmark") {
		t.Errorf("fig13: %v", err)
	}
}
