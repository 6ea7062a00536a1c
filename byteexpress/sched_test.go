package byteexpress_test

import (
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
)

// TestRoundRobinHoLBound: n backlogged sockets on one engine are served one
// fragment per turn in round-robin order, so between two fragments of a
// socket at most (n-1)S bytes of other sockets are scheduled (§6.1). Writes
// go to pre-exposed buffers so every socket is continuously sendable.
func TestRoundRobinHoLBound(t *testing.T) {
	const nsock, msgs, size, frag = 5, 4, 64 << 10, 4 << 10
	type fragEv struct {
		sock  uint64
		bytes int
	}
	var trace []fragEv
	cfg := byteexpress.Config{FragSize: frag, Trace: func(ev byteexpress.TraceEvent) {
		if ev.Kind == byteexpress.TraceFragment || ev.Kind == byteexpress.TraceSmall {
			trace = append(trace, fragEv{ev.Socket, ev.Bytes})
		}
	}}
	c := newCluster(t, fakeverbsCfg())
	a := c.addNode("a", cfg)
	b := c.addNode("b", byteexpress.Config{})
	var accepted []*byteexpress.Socket
	var got int
	b.onEvent = func(n *node, ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvAccepted:
			accepted = append(accepted, ev.Socket)
		case byteexpress.EvMessage:
			got++
			n.ep.Free(ev.Buf)
		}
	}
	var socks []*byteexpress.Socket
	for range nsock {
		s, _ := a.ep.Dial("b")
		socks = append(socks, s)
		sendPattern(t, a, s, 8, 0) // opens the socket at b
	}
	c.run(func() bool { return got == nsock }, time.Second)
	// accepted[i] is the peer of socks[i] (OPENs arrive in Dial order).
	var rbs [nsock][]byteexpress.RemoteBuffer
	for i, s := range accepted {
		for range msgs {
			buf, _ := b.pool.Allocate(size)
			rb, err := s.Expose(buf)
			if err != nil {
				t.Fatal(err)
			}
			rbs[i] = append(rbs[i], rb)
		}
	}
	trace = trace[:0]
	for k := range msgs {
		for i, s := range socks {
			buf, _ := a.ep.Allocate(size)
			if err := s.SendTo(buf, size, rbs[i][k]); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.run(func() bool { return got == nsock+nsock*msgs }, time.Second)

	per := size / frag * msgs // fragments per socket
	if len(trace) != nsock*per {
		t.Fatalf("%d fragments traced, want %d", len(trace), nsock*per)
	}
	left := map[uint64]int{}
	for _, s := range socks {
		left[s.ID()] = per
	}
	last := map[uint64]int{}
	activeAfter := make([]int, len(trace)) // backlogged sockets after fragment i
	for i, f := range trace {
		if f.bytes > frag {
			t.Fatalf("fragment of %d bytes above S=%d", f.bytes, frag)
		}
		if j, ok := last[f.sock]; ok {
			between := 0
			for _, g := range trace[j+1 : i] {
				between += g.bytes
			}
			if n := activeAfter[j]; between > (n-1)*frag {
				t.Fatalf("socket %d waited for %d bytes of others with %d backlogged sockets: bound (n-1)S = %d",
					f.sock, between, n, (n-1)*frag)
			}
		}
		last[f.sock] = i
		left[f.sock]--
		for _, n := range left {
			if n > 0 {
				activeAfter[i]++
			}
		}
	}
	c.shutdown()
}

// TestDoorbellBatchingAndSignalling: prepared WRs go out with one post per
// batch and only the batch's last WR is signalled; completions of a
// signalled WR free the earlier unsignalled slots.
func TestDoorbellBatchingAndSignalling(t *testing.T) {
	var posts []int
	cfg := byteexpress.Config{Trace: func(ev byteexpress.TraceEvent) {
		if ev.Kind == byteexpress.TracePost {
			posts = append(posts, ev.WRs)
		}
	}}
	c, a, b, sa, _ := pair(t, cfg)
	var got []rxMsg
	collect(b, &got)
	posts = posts[:0]
	before := c.net.Stats()
	// 8 messages of 64 KiB each = 128 fragments of 4 KiB once the metadata
	// is back; the ring (32) fills and drains in batches.
	for k := range 8 {
		sendPattern(t, a, sa, 64<<10, uint64(k))
	}
	c.run(func() bool { return len(got) == 8 }, time.Second)
	after := c.net.Stats()
	wrs := after.SendWRs - before.SendWRs
	doorbells := after.PostSendCalls - before.PostSendCalls
	if after.BadSignalChains != 0 {
		t.Errorf("%d chains not signalled exactly at their last WR", after.BadSignalChains)
	}
	if sig := after.SignalledWRs - before.SignalledWRs; sig != doorbells {
		t.Errorf("%d signalled WRs for %d doorbells", sig, doorbells)
	}
	maxBatch := 0
	for _, p := range posts {
		maxBatch = max(maxBatch, p)
	}
	if maxBatch < 8 || wrs < 128 {
		t.Errorf("largest batch %d WRs, %d WRs in %d doorbells: no doorbell batching", maxBatch, wrs, doorbells)
	}
	if st := a.ep.Stats(); st.MaxRingOccupancy != 32 {
		t.Errorf("ring occupancy peaked at %d, want the SQ depth 32 (completions free whole batches)", st.MaxRingOccupancy)
	}
	t.Logf("%d WRs in %d doorbells, largest batch %d", wrs, doorbells, maxBatch)
	for k, g := range got {
		if err := checkPayload(g.buf.Bytes()[:g.n], 99, uint64(k)); err != nil {
			t.Fatal(err)
		}
		b.ep.Free(g.buf)
	}
	c.shutdown()
}

// TestSRQRNR: with a small per-thread SRQ and no credits, bursts exhaust
// the shared receives: RNR NAKs occur (the trade-off of §6.2.2), and the
// RNR timer/retry setting (7 = retry forever) still delivers everything.
func TestSRQRNR(t *testing.T) {
	cfg := byteexpress.Config{UseSRQ: true, SRQDepth: 8, MinRNRTimer: 1}
	c := newCluster(t, fakeverbsCfg())
	a := c.addNode("a", cfg)
	b := c.addNode("b", cfg)
	w := newWorkload(c)
	var flows []*flow
	for range 6 {
		// 3-4 KiB: two messages per SEND, so the burst is ~120 SENDs.
		flows = append(flows, w.addFlow(a, b, logUniformSizes(rngFor(3), 40, 3000, 4000)))
	}
	c.run(func() bool { return w.rxCount() == 6 }, time.Second) // hellos
	// The receiving thread stalls for 50 us while a burst arrives.
	b.paused = true
	for _, f := range flows {
		for range f.sizes {
			w.sendNext(f)
		}
	}
	c.runFor(50 * time.Microsecond)
	b.paused = false
	c.run(w.done, 10*time.Second)
	if c.net.Stats().RNRNaks == 0 {
		t.Errorf("no RNR with an 8-entry SRQ under a burst: the test does not exercise SRQ mode")
	}
	t.Logf("RNR NAKs: %d", c.net.Stats().RNRNaks)
	c.shutdown()
}
