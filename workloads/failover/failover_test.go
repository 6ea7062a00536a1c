package failover

import (
	"testing"

	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/sim"
)

// TestRateRecoveryBounds: the reduction never indexes past its bins,
// whatever the fault time (after the end, in the last bin, before the
// first, none) and however few bins the run had.
func TestRateRecoveryBounds(t *testing.T) {
	ms := sim.Millisecond
	for _, tc := range []struct {
		bins    []int
		faultAt sim.Time
		base    float64
		after   sim.Time
	}{
		{[]int{4, 4}, 5 * ms, 0, 0},            // fault after the end (the old panic)
		{[]int{4, 4}, 2 * ms, 4, 0},            // at the end: no bin after it
		{nil, 3 * ms, 0, 0},                    // no bins at all
		{[]int{4, 4, 0, 4}, -1, 0, 0},          // no fault
		{[]int{4, 4, 0, 4}, ms / 2, 0, 0},      // before the first full bin
		{[]int{4, 4, 0, 4}, 2 * ms, 4, 2 * ms}, // dips, back in bin 3
		{[]int{4, 4, 0, 0}, 2 * ms, 4, -1},     // never back
	} {
		base, after := RateRecovery(tc.bins, ms, tc.faultAt)
		if base != tc.base || after != tc.after {
			t.Errorf("bins %v fault %v: %v, %v; want %v, %v", tc.bins, tc.faultAt, base, after, tc.base, tc.after)
		}
	}
	if b, a := RateRecovery([]int{1}, 0, ms); b != 0 || a != 0 {
		t.Errorf("zero bin: %v %v", b, a)
	}
}

// fakeDialer records every request the RPC layer sends, by node.
type fakeDialer struct{ sent []sent }

type sent struct {
	node rpc.NodeID
	hdr  rpc.Header
	n    int
}

type fakeConn struct {
	d    *fakeDialer
	node rpc.NodeID
}

func (d *fakeDialer) Dial(n rpc.NodeID, _ int) (rpc.Conn, error) { return fakeConn{d, n}, nil }

func (c fakeConn) Send(hdr []byte, n int) error {
	h, err := rpc.ParseHeader(hdr)
	c.d.sent = append(c.d.sent, sent{c.node, h, n})
	return err
}

func (fakeConn) Close() {}

// TestClientMachine drives one client by hand: it keeps Outstanding
// fetches in flight, answers start the next, an engine error on replica A
// is detected and moves its fetches on, and the stats say so.
func TestClientMachine(t *testing.T) {
	cfg := Config{Seed: 1, Shards: 2, Clients: 1, Outstanding: 3}
	if err := cfg.Prepare(); err != nil {
		t.Fatal(err)
	}
	if a, b := cfg.ReplicaA(1), cfg.ReplicaB(1); a != 3 || b != 5 {
		t.Fatalf("shard 1 on hosts %d and %d, want 3 and 5 (L = 2)", a, b)
	}
	p, err := NewPolicy(&cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := &fakeDialer{}
	st := NewStats(3 * cfg.Hosts())
	c := NewClient(&cfg, 0, rpc.NewClient(p, d, nil), st)
	ms := sim.Millisecond
	c.Start(0)
	if st.Started != 3 || len(d.sent) != 3 {
		t.Fatalf("started %d, sent %d; want 3", st.Started, len(d.sent))
	}
	if at, ok := c.Deadline(0); !ok || at != SimTime(cfg.RPC.RequestTimeout) {
		t.Errorf("deadline %v %v, want Tr %v", at, ok, cfg.RPC.RequestTimeout)
	}
	st.SetFault(2*ms, cfg.ReplicaA(0))
	st.SetBins(0, ms, 10)
	// Answer the first fetch: counted in bin 0, and a new one goes out.
	s0 := d.sent[0]
	c.Response(s0.hdr, int(s0.node), ms/2)
	if st.Completed != 1 || st.Started != 4 || st.Bins[0] != 1 || st.Served[s0.node] != 1 || st.LastServed[s0.node] != ms/2 {
		t.Errorf("after one answer: %+v", st)
	}
	c.Response(s0.hdr, int(s0.node), ms) // a late duplicate is ignored
	if st.Completed != 1 {
		t.Errorf("a duplicate answer counted: %d completed", st.Completed)
	}
	// Replica A of every shard fails at 3 ms: its outstanding fetches go
	// out again elsewhere, and the failure is detected 1 ms after the fault.
	before := len(d.sent)
	for s := range cfg.Shards {
		c.EngineError(cfg.ReplicaA(s), 3*ms)
	}
	if st.DetectedAfter != ms {
		t.Errorf("detected after %v, want 1ms", st.DetectedAfter)
	}
	if len(d.sent) == before {
		t.Fatal("an engine error re-sent nothing")
	}
	last := d.sent[len(d.sent)-1]
	c.Response(last.hdr, int(last.node), 4*ms)
	if last.node != rpc.NodeID(cfg.ReplicaA(0)) && st.RecoveredAfter != 2*ms {
		t.Errorf("re-sent fetch answered by host %d at 4 ms: recovered after %v, want 2ms", last.node, st.RecoveredAfter)
	}
	c.Stop()
	n := st.Started
	c.Response(d.sent[1].hdr, int(d.sent[1].node), 5*ms)
	if st.Started != n {
		t.Error("a fetch started after Stop")
	}
	if err := EchoHeader(make([]byte, 4), make([]byte, 64)); err == nil {
		t.Error("EchoHeader into 4 bytes: no error")
	}
}
