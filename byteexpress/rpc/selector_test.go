package rpc

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
)

func svc3() Service {
	return Service{Shards: [][]Replica{
		{{Node: 10, MiniPod: 0}, {Node: 11, MiniPod: 1}, {Node: 12, MiniPod: 2}},
		{{Node: 20, MiniPod: 1}, {Node: 21, MiniPod: 2}, {Node: 22, MiniPod: 0}},
	}}
}

func TestServiceValidate(t *testing.T) {
	if err := svc3().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := Service{Shards: [][]Replica{{{Node: 1, MiniPod: 0}, {Node: 2, MiniPod: 0}}}}
	if bad.Validate() == nil {
		t.Fatal("two replicas in one mini-pod accepted")
	}
	if (Service{}).Validate() == nil || (Service{Shards: [][]Replica{{}}}).Validate() == nil {
		t.Fatal("empty service accepted")
	}
}

type step struct {
	act   Action
	node  NodeID
	path  int
	trans Transport
}

func TestRecoveryLadder(t *testing.T) {
	cfg := DefaultConfig() // PathTries 2, Paths 2
	sel := NewSelector(cfg, svc3(), 0, NewQuarantine(cfg))
	d := sel.Pick(0, 0)
	if d.Action != Use || d.Node != 10 || d.Transport != RDMA {
		t.Fatalf("first pick %+v", d)
	}
	want := []step{
		{PathChange, 10, 1, RDMA},
		{PathChange, 10, 0, RDMA},
		{SwitchReplica, 11, 0, RDMA},
		{PathChange, 11, 1, RDMA},
		{PathChange, 11, 0, RDMA},
		{SwitchReplica, 12, 0, RDMA},
		{PathChange, 12, 1, RDMA},
		{PathChange, 12, 0, RDMA},
		{TCPFallback, 10, 0, TCP},
		{TCPFallback, 11, 0, TCP}, // 10 failed over TCP: next nearest, still TCP
	}
	now := time.Duration(0)
	events := []func(int, Target, time.Duration) Decision{sel.OnConnectFailed, sel.OnRequestTimeout, sel.OnEngineError}
	for i, w := range want {
		now += time.Millisecond
		d = events[i%len(events)](0, d.Target(), now)
		if d.Action != w.act || d.Node != w.node || d.Path != w.path || d.Transport != w.trans {
			t.Fatalf("step %d: got %+v, want %+v", i, d, w)
		}
	}
	// Shard 1 is unaffected.
	if d := sel.Pick(1, now); d.Action != Use || d.Node != 22 || d.Transport != RDMA {
		t.Fatalf("shard 1 %+v", d)
	}
}

// With one path per destination (Config.Paths 1: one spine, one NIC
// port) the ladder skips the path change: the first failure of a replica
// moves the shard to the next one, each skip is counted, and no decision
// names a path other than 0. With Paths 3 the path changes cycle through
// 1, 2 and back to 0 (PathTries 3) before the replica switch.
func TestLadderPaths(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Paths = 1
	sel := NewSelector(cfg, svc3(), 0, NewQuarantine(cfg))
	d := sel.Pick(0, 0)
	for i, w := range []step{{SwitchReplica, 11, 0, RDMA}, {SwitchReplica, 12, 0, RDMA}, {TCPFallback, 10, 0, TCP}} {
		if d = sel.OnRequestTimeout(0, d.Target(), time.Duration(i+1)*time.Millisecond); d.Action != w.act || d.Node != w.node || d.Path != 0 || d.Transport != w.trans {
			t.Fatalf("one path, step %d: got %+v, want %+v", i, d, w)
		}
	}
	if sel.Stats.PathChanges != 0 || sel.Stats.PathSkips != 3 {
		t.Errorf("one path: %d path changes, %d skips; want 0 and one skip per RDMA replica", sel.Stats.PathChanges, sel.Stats.PathSkips)
	}

	cfg.Paths, cfg.PathTries = 3, 3
	sel = NewSelector(cfg, svc3(), 0, NewQuarantine(cfg))
	d = sel.Pick(0, 0)
	for i, w := range []step{{PathChange, 10, 1, RDMA}, {PathChange, 10, 2, RDMA}, {PathChange, 10, 0, RDMA}, {SwitchReplica, 11, 0, RDMA}} {
		if d = sel.OnRequestTimeout(0, d.Target(), time.Duration(i+1)*time.Millisecond); d.Action != w.act || d.Node != w.node || d.Path != w.path || d.Transport != w.trans {
			t.Fatalf("three paths, step %d: got %+v, want %+v", i, d, w)
		}
	}
	if sel.Stats.PathChanges != 3 || sel.Stats.PathSkips != 0 {
		t.Errorf("three paths: %d path changes, %d skips; want 3 and 0", sel.Stats.PathChanges, sel.Stats.PathSkips)
	}
}

func TestSuccessResetsPathBudget(t *testing.T) {
	cfg := DefaultConfig()
	sel := NewSelector(cfg, svc3(), 0, NewQuarantine(cfg))
	d := sel.Pick(0, 0)
	for i := 0; i < 5; i++ {
		if d = sel.OnRequestTimeout(0, d.Target(), 0); d.Action != PathChange {
			t.Fatalf("iteration %d: %v", i, d.Action)
		}
		sel.OnSuccess(10, 0)
	}
}

func TestNoPathChangeWhenDisabled(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PathTries = 0
	sel := NewSelector(cfg, svc3(), 0, NewQuarantine(cfg))
	sel.Pick(0, 0)
	if d := sel.OnConnectFailed(0, Target{Node: 10}, 0); d.Action != SwitchReplica || d.Node != 11 {
		t.Fatalf("%+v", d)
	}
}

func TestNearestReplicaFirst(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PathTries = 0
	cases := []struct {
		local      int
		first, nxt NodeID
	}{
		{0, 10, 11},
		{1, 11, 10}, // tie between pods 0 and 2 broken by replica index
		{2, 12, 11},
	}
	for _, tc := range cases {
		sel := NewSelector(cfg, svc3(), tc.local, NewQuarantine(cfg))
		if d := sel.Pick(0, 0); d.Node != tc.first {
			t.Errorf("local %d: first %v", tc.local, d.Node)
		}
		if d := sel.OnConnectFailed(0, Target{Node: tc.first}, 0); d.Action != SwitchReplica || d.Node != tc.nxt {
			t.Errorf("local %d: next %+v", tc.local, d)
		}
	}
}

func TestQuarantinedReplicaSkipped(t *testing.T) {
	cfg := DefaultConfig()
	q := NewQuarantine(cfg)
	sel := NewSelector(cfg, svc3(), 0, q)
	if d := sel.Pick(0, 0); d.Node != 10 {
		t.Fatalf("%+v", d)
	}
	for i := 0; i < 31; i++ {
		q.ConnFailed(10, time.Second)
	}
	if d := sel.Pick(0, time.Second); d.Action != Use || d.Node != 11 {
		t.Fatalf("quarantined replica not skipped: %+v", d)
	}
	// Failures reported through the selector feed the quarantine too.
	if d := sel.Pick(1, time.Second); d.Node != 22 {
		t.Fatalf("%+v", d)
	}
	sel.OnRequestTimeout(1, Target{Node: 22}, time.Second)
	sel.OnEngineError(1, Target{Node: 22}, time.Second)
	if c, r := q.Counts(22, time.Second); c != 1 || r != 1 {
		t.Fatal("selector failures not recorded in the quarantine")
	}
	// After the window slides, node 10 is preferred again on a fresh pick.
	later := time.Second + 5*time.Minute
	sel2 := NewSelector(cfg, svc3(), 0, q)
	if d := sel2.Pick(0, later); d.Node != 10 {
		t.Fatalf("after release %+v", d)
	}
}

func TestAllQuarantinedFails(t *testing.T) {
	cfg := DefaultConfig()
	q := NewQuarantine(cfg)
	sel := NewSelector(cfg, svc3(), 0, q)
	sel.Pick(0, 0)
	for _, n := range []NodeID{10, 11, 12} {
		for i := 0; i < 31; i++ {
			q.ConnFailed(n, 0)
		}
	}
	for name, d := range map[string]Decision{
		"pick":    sel.Pick(0, 0),
		"failure": sel.OnConnectFailed(0, Target{Node: 10}, 0),
	} {
		if d.Action != Fail || d.Replica != -1 || !strings.Contains(d.Reason, "all 3 replicas quarantined") {
			t.Errorf("%s: %+v", name, d)
		}
	}
}

func TestFallbackProbing(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PathTries = 0
	sel := NewSelector(cfg, Service{Shards: [][]Replica{{{Node: 1, MiniPod: 0}}}}, 0, NewQuarantine(cfg))
	if sel.NextDeadline() != byteexpress.Never {
		t.Fatal("deadline with nothing on TCP")
	}
	sel.Pick(0, 0)
	d := sel.OnEngineError(0, Target{Node: 1}, time.Second)
	if d.Action != TCPFallback || d.Node != 1 || d.Transport != TCP || !sel.OnTCP(1) {
		t.Fatalf("%+v", d)
	}
	probe := time.Second + cfg.ProbeInterval
	if sel.NextDeadline() != probe {
		t.Fatalf("probe deadline %v", sel.NextDeadline())
	}
	if p := sel.Tick(probe - 1); len(p) != 0 {
		t.Fatalf("early probe %v", p)
	}
	p := sel.Tick(probe)
	if len(p) != 1 || p[0].Action != Probe || p[0].Node != 1 {
		t.Fatalf("probe %v", p)
	}
	if sel.NextDeadline() != probe+cfg.ProbeInterval {
		t.Fatalf("next probe %v", sel.NextDeadline())
	}
	sel.OnProbe(1, false, probe)
	if !sel.OnTCP(1) || sel.Pick(0, probe).Transport != TCP {
		t.Fatal("failed probe returned to RDMA")
	}
	sel.OnProbe(1, true, probe+cfg.ProbeInterval)
	if sel.OnTCP(1) || sel.NextDeadline() != byteexpress.Never {
		t.Fatal("successful probe did not return to RDMA")
	}
	if d := sel.Pick(0, probe+cfg.ProbeInterval); d.Transport != RDMA || d.Action != Use {
		t.Fatalf("%+v", d)
	}
}

// A timeout reported after the shard moved on belongs to the node the
// attempt went to: it is charged there and does not move the shard again.
// The same holds for attempts on a path already abandoned.
func TestStaleFailureChargedToItsNode(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PathTries = 0
	q := NewQuarantine(cfg)
	sel := NewSelector(cfg, svc3(), 0, q)
	sel.Pick(0, 0)
	if d := sel.OnRequestTimeout(0, Target{Node: 10}, 0); d.Action != SwitchReplica || d.Node != 11 {
		t.Fatalf("first timeout %+v", d)
	}
	// Three more attempts that were in flight to 10 time out now.
	for i := 0; i < 3; i++ {
		if d := sel.OnRequestTimeout(0, Target{Node: 10}, 0); d.Action != Use || d.Node != 11 {
			t.Fatalf("stale timeout %d moved the shard: %+v", i, d)
		}
	}
	// Path: with two paths, the attempts on path 0 that time out after the
	// first one moved the shard to path 1 take no further step.
	cfg2 := DefaultConfig()
	sel2 := NewSelector(cfg2, svc3(), 0, NewQuarantine(cfg2))
	old := sel2.Pick(0, 0).Target()
	if d := sel2.OnRequestTimeout(0, old, 0); d.Action != PathChange || d.Path != 1 {
		t.Fatalf("path change %+v", d)
	}
	if d := sel2.OnRequestTimeout(0, old, 0); d.Action != Use || d.Node != 10 || d.Path != 1 {
		t.Fatalf("stale path timeout %+v", d)
	}
	c10, r10 := q.Counts(10, 0)
	c11, r11 := q.Counts(11, 0)
	if c10 != 0 || r10 != 4 || c11 != 0 || r11 != 0 {
		t.Fatalf("counts: node 10 %d/%d, node 11 %d/%d; want 0/4, 0/0", c10, r10, c11, r11)
	}
}
