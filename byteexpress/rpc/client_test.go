package rpc

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// fakeNet is a pair of transports whose nodes can be taken down; sends to a
// down node vanish (as on a crashed host), others are recorded.
type fakeNet struct {
	down  map[NodeID]bool
	sends []fakeSend
}

type fakeSend struct {
	node NodeID
	path int
	tcp  bool
	hdr  Header
	n    int
}

type fakeTrans struct {
	net *fakeNet
	tcp bool
}

type fakeConn struct {
	t          *fakeTrans
	node       NodeID
	path       int
	closed     bool
	refuseDial bool
}

func (t *fakeTrans) Dial(n NodeID, path int) (Conn, error) {
	if !t.tcp && t.net.down[n] {
		return nil, errors.New("connect timeout")
	}
	return &fakeConn{t: t, node: n, path: path}, nil
}

func (c *fakeConn) Send(hdr []byte, n int) error {
	h, err := ParseHeader(hdr)
	if err != nil {
		return err
	}
	if c.closed {
		return errors.New("send on a closed conn")
	}
	if !c.t.tcp && c.t.net.down[c.node] {
		return nil // lost
	}
	c.t.net.sends = append(c.t.net.sends, fakeSend{c.node, c.path, c.t.tcp, h, n})
	return nil
}

func (c *fakeConn) Close() { c.closed = true }

func newTestClient(t *testing.T, withTCP bool) (*Client, *fakeNet) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.RetryProb = 1 // deterministic: always retry while attempts last
	cfg.MaxAttempts = 10
	p, err := NewPolicy(cfg, svc3(), 0, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	net := &fakeNet{down: map[NodeID]bool{}}
	var tcp Dialer
	if withTCP {
		tcp = &fakeTrans{net: net, tcp: true}
	}
	return NewClient(p, &fakeTrans{net: net}, tcp), net
}

// answer delivers a response to every recorded send not yet answered and
// returns the completions.
func answer(c *Client, net *fakeNet, now time.Duration) []Completion {
	var out []Completion
	for _, s := range net.sends {
		if comp, ok := c.OnResponse(s.hdr, now); ok {
			out = append(out, comp)
		}
	}
	net.sends = net.sends[:0]
	return out
}

func TestClientCallAndResponse(t *testing.T) {
	c, net := newTestClient(t, false)
	id, err := c.Call(Request{Shard: 0, Idempotent: true}, 7, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(net.sends) != 1 || net.sends[0].node != 10 || net.sends[0].hdr.Call != id || net.sends[0].hdr.Op != 7 || net.sends[0].n != 100 {
		t.Fatalf("sends %+v", net.sends)
	}
	dup := net.sends[0].hdr
	got := answer(c, net, time.Millisecond)
	if len(got) != 1 || got[0].ID != id || got[0].Err != nil || got[0].Attempts != 1 || c.Outstanding() != 0 {
		t.Fatalf("completions %+v", got)
	}
	if _, ok := c.OnResponse(dup, 2*time.Millisecond); ok || c.Stale != 1 {
		t.Fatal("a duplicate response completed a call twice")
	}
	if _, err := c.Call(Request{Shard: 0}, 0, HeaderSize-1, 0); err == nil {
		t.Fatal("a request shorter than the header was accepted")
	}
}

// A crashed replica: the engine error re-sends idempotent calls down the
// ladder (path change first), timeouts keep walking it, and the call ends
// on another replica; a non-idempotent call is not re-sent and fails after
// Tr with ErrNotRetried.
func TestClientFailover(t *testing.T) {
	c, net := newTestClient(t, false)
	fetch, _ := c.Call(Request{Shard: 0, Idempotent: true}, 0, 64, 0)
	push, _ := c.Call(Request{Shard: 0}, 1, 64, 0)
	net.sends = net.sends[:0]
	net.down[10] = true
	now := time.Millisecond
	c.OnEngineError(10, now) // path change: same node, other path, lost
	if c.Resent != 1 {
		t.Fatalf("resent %d, want 1 (only the idempotent call)", c.Resent)
	}
	var failed []Completion
	for c.Outstanding() > 0 && now < 2*time.Second {
		now = max(now, c.NextDeadline())
		for _, comp := range c.Tick(now) {
			failed = append(failed, comp)
		}
		for _, comp := range answer(c, net, now) {
			if comp.ID != fetch || comp.Shard != 0 || comp.Attempts < 2 {
				t.Fatalf("completion %+v", comp)
			}
			if n := c.Policy.Selector.Pick(0, now).Node; n == 10 {
				t.Fatal("still on the crashed replica")
			}
		}
	}
	if c.Outstanding() != 0 {
		t.Fatalf("%d calls outstanding", c.Outstanding())
	}
	if len(failed) != 1 || failed[0].ID != push || !errors.Is(failed[0].Err, ErrNotRetried) {
		t.Fatalf("failed %+v", failed)
	}
}

// With every RDMA replica down, the client falls back to TCP.
func TestClientTCPFallback(t *testing.T) {
	for _, withTCP := range []bool{true, false} {
		c, net := newTestClient(t, withTCP)
		for _, n := range []NodeID{10, 11, 12} {
			net.down[n] = true
		}
		now := time.Duration(0)
		id, err := c.Call(Request{Shard: 0, Idempotent: true}, 0, 64, now)
		if !withTCP {
			// Every RDMA dial fails at once: no replica is left to try.
			if !errors.Is(err, ErrNoReplica) || c.Outstanding() != 0 {
				t.Errorf("without TCP: %v, %d outstanding", err, c.Outstanding())
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		var done []Completion
		for c.Outstanding() > 0 && now < 5*time.Second {
			now = max(now+time.Microsecond, c.NextDeadline())
			done = append(done, c.Tick(now)...)
			done = append(done, answer(c, net, now)...)
		}
		if len(done) != 1 || done[0].ID != id {
			t.Fatalf("tcp %v: completions %+v", withTCP, done)
		}
		if done[0].Err != nil || c.TCPSends == 0 || done[0].Transport != TCP {
			t.Errorf("with TCP: %+v, %d TCP sends", done[0], c.TCPSends)
		}
	}
}
