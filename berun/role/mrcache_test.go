package role

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// mrcacheSpecs are the roles of mr-cache cut to 256 buffers of 4 KiB in
// 256 KiB blocks (4 blocks), with a set-up of 200 ms and a warm-up of 20 ms.
func mrcacheSpecs(t *testing.T) []Spec {
	t.Helper()
	data, err := scenarios.Builtin("mr-cache")
	if err != nil {
		t.Fatal(err)
	}
	small := strings.NewReplacer("buffers: 2048", "buffers: 256", "block: 4MiB", "block: 256KiB", "warmup: 5ms", "warmup: 20ms").Replace(string(data))
	for _, want := range []string{"buffers: 256", "block: 256KiB", "warmup: 20ms"} {
		if !strings.Contains(small, want) {
			t.Fatalf("mr-cache changed: cannot cut it down (%s)", want)
		}
	}
	params := func() map[string]string { return map[string]string{"setup": "200ms"} }
	return []Spec{
		{ID: "mrcache-target", Role: "mrcache-target", Bind: "127.0.0.1:0", From: []string{"mrcache-sender"}, Params: params(), Scenario: []byte(small)},
		{ID: "mrcache-sender", Role: "mrcache-sender", Bind: "127.0.0.1:0", Peers: []string{"mrcache-target"}, Params: params(), Scenario: []byte(small)},
	}
}

// Over verbs (in-memory NICs): each registration runs on its own QP,
// every WRITE posted completes, the regions are the ones the workload
// names (4 blocks, 256 buffers, or those in flight), per-message
// registration registers once per WRITE and leaves no region behind, and
// the throughput is measured for each.
func TestMRCacheRolesOverVerbs(t *testing.T) {
	fnet := useFakeNICs(t)
	before := fnet.Stats()
	// 3 points of 400 ms: 220 ms of set-up and warm-up, 140 ms measured.
	out := runAll(t, 1200*time.Millisecond, 5*time.Second, mrcacheSpecs(t)...)
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		t.Logf("%s: %v", id, in.res.Metrics)
	}
	tx := out["mrcache-sender"].res.Metrics
	measured := 0.0
	for reg, regions := range map[string][2]float64{"block": {4, 4}, "buffer": {256, 256}, "message": {0, 16}} {
		k := "/" + reg
		if w, c := tx["writes"+k], tx["completions"+k]; w == 0 || w != c {
			t.Errorf("%s: %v WRITEs posted, %v completed", reg, w, c)
		}
		measured += tx["completed"+k]
		if !(tx["mmps"+k] >= 0) || !(tx["gbps"+k] >= 0) || tx["completed"+k] > tx["completions"+k] {
			t.Errorf("%s: %v Mmsg/s, %v Gb/s, %v of %v completions measured", reg, tx["mmps"+k], tx["gbps"+k], tx["completed"+k], tx["completions"+k])
		}
		if g := tx["regions"+k]; g < regions[0] || g > regions[1] {
			t.Errorf("%s: %v regions at the end of the warm-up, want %v..%v", reg, g, regions[0], regions[1])
		}
		if reg == "message" {
			if tx["reg_mrs"+k] == 0 || !(tx["reg_mr_us"+k] > 0) || !(tx["reg_share"+k] > 0) {
				t.Errorf("message: %v registrations in the interval, %v us each, share %v", tx["reg_mrs"+k], tx["reg_mr_us"+k], tx["reg_share"+k])
			}
		} else if tx["reg_mrs"+k] != 0 {
			t.Errorf("%s: %v registrations on the data path, want none", reg, tx["reg_mrs"+k])
		}
	}
	// A registration may measure nothing when a loaded machine stalls
	// the run for its whole interval; the run as a whole must not.
	if !(measured > 0) {
		t.Error("no WRITE completed in any measured interval")
	}
	// Every region registered was deregistered, but the target's slots
	// (until Close); per message, one registration per WRITE.
	st := fnet.Stats()
	regs := st.RegMRs - before.RegMRs
	if want := 1 + 4 + 256 + int(tx["writes/message"]); regs != want {
		t.Errorf("%d regions registered, want %d (the target's, 4 blocks, 256 buffers, one per message WRITE)", regs, want)
	}
	if open := fnet.OpenMRs(); open != 1 {
		t.Errorf("%d regions left registered after the run, want the target's 1", open)
	}
}

// The roles refuse what they cannot run: no mrcache benchmark, a sender
// without its target, a run too short for the set-up and warm-up.
func TestMRCacheRoleErrors(t *testing.T) {
	specs := mrcacheSpecs(t)
	s := specs[1]
	s.Peers = nil
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "needs one peer") {
		t.Errorf("sender without peer: %v", err)
	}
	s = specs[0]
	s.Scenario, _ = scenarios.Builtin("fig13")
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "no mrcache benchmark") {
		t.Errorf("fig13: %v", err)
	}
	s = specs[0]
	s.Scenario = []byte(strings.Replace(string(s.Scenario), "depth: 16", "depth: 512", 1))
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "depth") {
		t.Errorf("depth 512 > 256 buffers: %v", err)
	}
	s = specs[0]
	s.Duration = 600 * time.Millisecond // 3 slots of 200 ms, shorter than set-up and warm-up
	r, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Prepare(t.Context(), s); err == nil || !strings.Contains(err.Error(), "no measured interval") {
		t.Errorf("too short: %v", err)
	}
}
