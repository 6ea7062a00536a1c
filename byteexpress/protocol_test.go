package byteexpress_test

import (
	"errors"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
)

// pair sets up a -> b with one connected socket (and b's accepted socket).
func pair(t *testing.T, cfg byteexpress.Config) (c *cluster, a, b *node, sa, sb *byteexpress.Socket) {
	t.Helper()
	c = newCluster(t, fakeverbsCfg())
	a = c.addNode("a", cfg)
	b = c.addNode("b", cfg)
	b.onEvent = func(n *node, ev byteexpress.Event) {
		if ev.Kind == byteexpress.EvAccepted {
			sb = ev.Socket
		}
	}
	connected := false
	a.onEvent = func(n *node, ev byteexpress.Event) {
		if ev.Kind == byteexpress.EvConnected {
			connected = true
		}
	}
	var err error
	if sa, err = a.ep.Dial("b"); err != nil {
		t.Fatal(err)
	}
	c.run(func() bool { return connected && sb != nil }, time.Second)
	return
}

type rxMsg struct {
	at  int64
	buf byteexpress.Buffer
	n   int
}

// collect records messages arriving at n.
func collect(n *node, into *[]rxMsg) {
	prev := n.onEvent
	n.onEvent = func(nn *node, ev byteexpress.Event) {
		if ev.Kind == byteexpress.EvMessage {
			*into = append(*into, rxMsg{at: nn.c.now, buf: ev.Buf, n: ev.Len})
			return
		}
		if prev != nil {
			prev(nn, ev)
		}
	}
}

func sendPattern(t *testing.T, n *node, s *byteexpress.Socket, size int, k uint64) int64 {
	t.Helper()
	buf, err := n.ep.Allocate(size)
	if err != nil {
		t.Fatal(err)
	}
	fillPayload(buf.Bytes(), 99, k)
	if err := s.Send(buf, size); err != nil {
		t.Fatal(err)
	}
	return n.c.now
}

// TestPreknownRemoteBuffer: a buffer the receiver exposed in advance is
// written directly (no metadata request/response, one RTT less), the length
// is recovered from the immediate, and the message is delivered in the
// exposed buffer itself.
func TestPreknownRemoteBuffer(t *testing.T) {
	for _, size := range []int{1, 4096, 4097, 3*4096 + 1000, 1 << 20} {
		c, a, b, sa, sb := pair(t, byteexpress.Config{})
		var got []rxMsg
		collect(b, &got)

		// Baseline: ordinary large-message path.
		t0 := sendPattern(t, a, sa, size+(5<<10), 1) // always large
		c.run(func() bool { return len(got) == 1 }, time.Second)
		normal := got[0].at - t0
		metaBefore := a.ep.Stats().MetaRequests
		if metaBefore != 1 {
			t.Fatalf("ordinary large send made %d metadata requests, want 1", metaBefore)
		}

		dst, err := b.pool.Allocate(size + 123)
		if err != nil {
			t.Fatal(err)
		}
		rb, err := sb.Expose(dst)
		if err != nil {
			t.Fatal(err)
		}
		buf, _ := a.ep.Allocate(size)
		fillPayload(buf.Bytes(), 99, 2)
		t1 := c.now
		if err := sa.SendTo(buf, size, rb); err != nil {
			t.Fatal(err)
		}
		c.run(func() bool { return len(got) == 2 }, time.Second)
		pre := got[1].at - t1

		if st := a.ep.Stats(); st.MetaRequests != metaBefore || st.PrebuiltSent != 1 {
			t.Errorf("size %d: pre-known send made %d extra metadata requests (prebuilt %d)", size, st.MetaRequests-metaBefore, st.PrebuiltSent)
		}
		if b.ep.Stats().MetaResponses != 1 {
			t.Errorf("size %d: receiver answered %d metadata requests, want 1 (the baseline)", size, b.ep.Stats().MetaResponses)
		}
		m := got[1]
		if m.buf.Addr() != dst.Addr() || m.n != size {
			t.Fatalf("size %d: delivered %d bytes at %#x, want %d in the exposed buffer %#x", size, m.n, m.buf.Addr(), size, dst.Addr())
		}
		if err := checkPayload(m.buf.Bytes()[:m.n], 99, 2); err != nil {
			t.Fatalf("size %d: %v", size, err)
		}
		if err := checkPayload(got[0].buf.Bytes()[:got[0].n], 99, 1); err != nil {
			t.Fatalf("baseline: %v", err)
		}
		// One RTT (2 x 1 us) saved, minus the serialization difference.
		if pre >= normal-1500 {
			t.Errorf("size %d: pre-known delivery took %d ns, ordinary %d ns: no RTT saved", size, pre, normal)
		}
		for _, g := range got {
			b.ep.Free(g.buf)
		}
		c.shutdown()
	}
}

// TestKeepaliveSilentPeer: a peer that stops running (its process hangs or
// its host dies while the NIC still acknowledges) is detected within the
// keepalive timeout; the engine errors, the upper layer is told, sockets
// fail, queued messages come back and the QP and buffers are reclaimed.
func TestKeepaliveSilentPeer(t *testing.T) {
	const interval, timeout = 100 * time.Microsecond, 500 * time.Microsecond
	cfg := byteexpress.Config{KeepaliveInterval: interval, KeepaliveTimeout: timeout, RQDepth: 8}
	c, a, b, sa, _ := pair(t, cfg)
	var got []rxMsg
	collect(b, &got)
	var failed []byteexpress.Event
	var engErr *byteexpress.Event
	a.onEvent = func(n *node, ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvEngineError:
			e := ev
			engErr = &e
		case byteexpress.EvSendFailed, byteexpress.EvSocketFailed:
			failed = append(failed, ev)
			n.ep.Free(ev.Buf)
		}
	}
	// Healthy for a while: keepalives flow, nothing fires.
	c.runFor(3 * timeout)
	if engErr != nil {
		t.Fatalf("engine failed while the peer was alive: %v", engErr.Err)
	}
	if a.ep.Stats().KeepalivesRecv < 10 {
		t.Fatalf("only %d keepalives received in %v", a.ep.Stats().KeepalivesRecv, 3*timeout)
	}
	// The peer goes silent; a keeps sending (more than its credits allow).
	b.paused = true
	paused := c.now
	for k := range 20 { // two per SEND: more SENDs than credits
		sendPattern(t, a, sa, 4000, uint64(k))
	}
	c.run(func() bool { return engErr != nil }, time.Second)
	detected := c.now - paused
	if !errors.Is(engErr.Err, byteexpress.ErrKeepaliveTimeout) {
		t.Fatalf("engine error %v, want keepalive timeout", engErr.Err)
	}
	// The deadline runs from the arrival of the peer's last keepalive, sent
	// at most one interval before the pause and delivered one-way latency
	// (1 us) later.
	const slack = 5 * time.Microsecond
	if detected > int64(timeout+slack) || detected < int64(timeout-interval) {
		t.Errorf("silent peer detected after %v, want within [timeout-interval, timeout+latency] = [%v, %v]",
			time.Duration(detected), timeout-interval, timeout+slack)
	}
	var sendFailed, sockFailed int
	for _, ev := range failed {
		switch ev.Kind {
		case byteexpress.EvSendFailed:
			sendFailed++
		case byteexpress.EvSocketFailed:
			sockFailed++
			if ev.Socket != sa {
				t.Errorf("failed socket %d, want %d", ev.Socket.ID(), sa.ID())
			}
		}
	}
	if sockFailed != 1 || sendFailed == 0 || sendFailed > 20 {
		t.Errorf("%d socket failures and %d send failures, want 1 and some of the 20 queued", sockFailed, sendFailed)
	}
	if len(a.ep.Threads()[0].Engines()) != 0 {
		t.Errorf("engine still present after the error: %+v", a.ep.Threads()[0].Engines())
	}
	// a's QP is destroyed; only b's (paused) remains.
	if q := c.net.OpenQPs(); q != 1 {
		t.Errorf("%d QPs open, want 1 (the silent peer's)", q)
	}
	if k := a.pool.Outstanding(); k != 0 {
		t.Errorf("%d buffers not reclaimed on the failed side", k)
	}
	late, _ := a.ep.Allocate(10)
	if err := sa.Send(late, 10); !errors.Is(err, byteexpress.ErrClosed) {
		t.Errorf("send on a failed socket: %v, want ErrClosed", err)
	}
	a.ep.Free(late)
	// The silent peer wakes up much later and finds its engine dead too.
	b.paused = false
	bFailed := false
	b.onEvent = func(n *node, ev byteexpress.Event) {
		if ev.Kind == byteexpress.EvEngineError {
			bFailed = true
		}
		if ev.Kind == byteexpress.EvMessage || ev.Kind == byteexpress.EvSendFailed {
			n.ep.Free(ev.Buf)
		}
	}
	c.run(func() bool { return bFailed }, time.Second)
	for _, g := range got {
		b.ep.Free(g.buf)
	}
	c.shutdown()
}

// TestPeerCrash: a crashed host's NIC answers nothing: RC retries run out,
// the completion error fails the engine and everything is reclaimed.
func TestPeerCrash(t *testing.T) {
	c, a, b, sa, _ := pair(t, byteexpress.Config{KeepaliveInterval: -1})
	var engErr error
	var sendFailed int
	a.onEvent = func(n *node, ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvEngineError:
			engErr = ev.Err
		case byteexpress.EvSendFailed:
			sendFailed++
			n.ep.Free(ev.Buf)
		}
	}
	b.ctx.Crash()
	b.paused = true
	for k := range 5 {
		sendPattern(t, a, sa, 100000, uint64(k))
	}
	c.run(func() bool { return engErr != nil }, time.Second)
	if sendFailed != 5 {
		t.Errorf("%d messages returned, want 5", sendFailed)
	}
	if k := a.pool.Outstanding(); k != 0 {
		t.Errorf("%d buffers not reclaimed", k)
	}
	t.Logf("engine error: %v", engErr)
	c.shutdown()
}

// TestConnectFailures: unknown host, peer not listening, connect timeout.
func TestConnectFailures(t *testing.T) {
	c := newCluster(t, fakeverbsCfg())
	a := c.addNode("a", byteexpress.Config{ConnectTimeout: 50 * time.Microsecond})
	b := c.addNode("b", byteexpress.Config{})
	var errs []error
	a.onEvent = func(n *node, ev byteexpress.Event) {
		if ev.Kind == byteexpress.EvSocketFailed {
			errs = append(errs, ev.Err)
		}
		if ev.Kind == byteexpress.EvSendFailed {
			n.ep.Free(ev.Buf)
		}
	}
	// Unknown host.
	s, _ := a.ep.Dial("nowhere")
	sendPattern(t, a, s, 10, 0)
	c.run(func() bool { return len(errs) == 1 }, time.Second)
	if !errors.Is(errs[0], errNoHost) {
		t.Errorf("dial to unknown host: %v", errs[0])
	}
	// Not listening: the peer refuses the engine.
	c.addQuietNode("quiet", byteexpress.Config{})
	a.ep.Dial("quiet")
	c.run(func() bool { return len(errs) == 2 }, time.Second)
	if !errors.Is(errs[1], byteexpress.ErrRefused) {
		t.Errorf("dial to a non-listening endpoint: %v", errs[1])
	}
	// Connect timeout: the side channel is slower than the timeout.
	c.oobDelay = 1e6
	a.ep.Dial("b")
	c.run(func() bool { return len(errs) == 3 }, time.Second)
	if !errors.Is(errs[2], byteexpress.ErrConnectTimeout) {
		t.Errorf("slow exchange: %v, want connect timeout", errs[2])
	}
	c.oobDelay = 5000
	// b's half-open engine (it answered, a had given up) times out waiting
	// for HELLO, and is reclaimed.
	c.runFor(3 * time.Second)
	if n := len(b.ep.Threads()[0].Engines()); n != 0 {
		t.Errorf("b still has %d engines", n)
	}
	c.shutdown()
}

// TestSocketClose: Close sends what is queued, then the peer sees EvClosed;
// the engine stays for new sockets.
func TestSocketClose(t *testing.T) {
	c, a, b, sa, _ := pair(t, byteexpress.Config{})
	var got []rxMsg
	collect(b, &got)
	closedB, closedA := false, false
	prevB := b.onEvent
	b.onEvent = func(n *node, ev byteexpress.Event) {
		if ev.Kind == byteexpress.EvClosed {
			closedB = true
		}
		prevB(n, ev)
	}
	a.onEvent = func(n *node, ev byteexpress.Event) {
		if ev.Kind == byteexpress.EvClosed {
			closedA = true
		}
	}
	for k := range 5 {
		sendPattern(t, a, sa, 1000+k*30000, uint64(k))
	}
	if err := sa.Close(); err != nil {
		t.Fatal(err)
	}
	late, _ := a.ep.Allocate(10)
	if err := sa.Send(late, 10); !errors.Is(err, byteexpress.ErrClosed) {
		t.Errorf("send after close: %v, want ErrClosed", err)
	}
	a.ep.Free(late)
	c.run(func() bool { return closedA && closedB }, time.Second)
	if len(got) != 5 {
		t.Fatalf("%d of 5 messages delivered before close", len(got))
	}
	for k, g := range got {
		if err := checkPayload(g.buf.Bytes()[:g.n], 99, uint64(k)); err != nil {
			t.Errorf("message %d: %v", k, err)
		}
		b.ep.Free(g.buf)
	}
	got = got[:0]
	// A new socket reuses the engine.
	s2, _ := a.ep.Dial("b")
	sendPattern(t, a, s2, 10, 7)
	c.run(func() bool { return len(got) == 1 }, time.Second)
	if n := len(a.ep.Threads()[0].Engines()); n != 1 {
		t.Errorf("%d engines, want the one reused", n)
	}
	b.ep.Free(got[0].buf)
	c.shutdown()
}

// TestReceiverOutOfMemory: a receiver that cannot allocate the destination
// of a large message fails that message on the sender (EvSendFailed with
// ErrNoMemory) and the socket carries on.
func TestReceiverOutOfMemory(t *testing.T) {
	c, a, b, sa, _ := pair(t, byteexpress.Config{})
	var got []rxMsg
	collect(b, &got)
	var failed []error
	a.onEvent = func(n *node, ev byteexpress.Event) {
		if ev.Kind == byteexpress.EvSendFailed {
			failed = append(failed, ev.Err)
			n.ep.Free(ev.Buf)
		}
	}
	b.pool.Fail.Store(true)
	sendPattern(t, a, sa, 1<<20, 0)
	c.run(func() bool { return len(failed) == 1 }, time.Second)
	if !errors.Is(failed[0], byteexpress.ErrNoMemory) {
		t.Errorf("got %v, want ErrNoMemory", failed[0])
	}
	b.pool.Fail.Store(false)
	sendPattern(t, a, sa, 1<<20, 1)
	c.run(func() bool { return len(got) == 1 }, time.Second)
	if err := checkPayload(got[0].buf.Bytes()[:got[0].n], 99, 1); err != nil {
		t.Error(err)
	}
	b.ep.Free(got[0].buf)
	c.shutdown()
}

// TestReverseDialReusesEngine: the connection table is keyed by remote
// address, so once a has an engine to b, b's Dial to a attaches to the
// (passive) engine b already has instead of creating a second QP.
func TestReverseDialReusesEngine(t *testing.T) {
	c, a, b, _, _ := pair(t, byteexpress.Config{})
	var got []rxMsg
	collect(a, &got)
	connected := false
	b.onEvent = func(n *node, ev byteexpress.Event) {
		if ev.Kind == byteexpress.EvConnected {
			connected = true
		}
	}
	sb, err := b.ep.Dial("a")
	if err != nil {
		t.Fatal(err)
	}
	sendPattern(t, b, sb, 50000, 3)
	c.run(func() bool { return connected && len(got) == 1 }, time.Second)
	if err := checkPayload(got[0].buf.Bytes()[:got[0].n], 99, 3); err != nil {
		t.Error(err)
	}
	if na, nb := a.ep.Stats().Engines, b.ep.Stats().Engines; na != 1 || nb != 1 {
		t.Errorf("engines a=%d b=%d, want 1 each (one QP pair)", na, nb)
	}
	if q := c.net.OpenQPs(); q != 2 {
		t.Errorf("%d QPs, want 2", q)
	}
	a.ep.Free(got[0].buf)
	c.shutdown()
}

// TestThreadCQCapacity: a thread whose CQ cannot hold another engine's
// worst-case completions refuses it (ErrThreadFull) instead of risking a CQ
// overrun.
func TestThreadCQCapacity(t *testing.T) {
	cfg := byteexpress.Config{SQDepth: 8, RQDepth: 8, CQDepth: 40} // room for 2 engines of 16
	c := newCluster(t, fakeverbsCfg())
	a := c.addNode("a", cfg)
	for _, n := range []string{"b", "c", "d"} {
		c.addNode(n, byteexpress.Config{})
	}
	var errs []error
	var ok int
	a.onEvent = func(n *node, ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvSocketFailed:
			errs = append(errs, ev.Err)
		case byteexpress.EvConnected:
			ok++
		}
	}
	for _, n := range []byteexpress.Addr{"b", "c", "d"} {
		a.ep.Dial(n)
	}
	c.run(func() bool { return ok+len(errs) == 3 }, time.Second)
	if ok != 2 || len(errs) != 1 || !errors.Is(errs[0], byteexpress.ErrThreadFull) {
		t.Errorf("%d connected, errors %v; want 2 and one ErrThreadFull", ok, errs)
	}
	c.shutdown()
}

// TestEnginePerSocket: by default four sockets dialled to one destination
// share one engine (one QP pair, §6.1); with Config.EnginePerSocket each
// gets its own engine and QP pair on both sides, and every socket still
// delivers its message.
func TestEnginePerSocket(t *testing.T) {
	for _, per := range []bool{false, true} {
		cfg := byteexpress.Config{EnginePerSocket: per}
		c := newCluster(t, fakeverbsCfg())
		a := c.addNode("a", cfg)
		b := c.addNode("b", cfg)
		var got []rxMsg
		collect(b, &got)
		connected := 0
		a.onEvent = func(n *node, ev byteexpress.Event) {
			if ev.Kind == byteexpress.EvConnected {
				connected++
			}
		}
		const socks = 4
		for k := range socks {
			s, err := a.ep.Dial("b")
			if err != nil {
				t.Fatal(err)
			}
			sendPattern(t, a, s, 3000, uint64(k))
		}
		c.run(func() bool { return connected == socks && len(got) == socks }, time.Second)
		want := 1
		if per {
			want = socks
		}
		if na, nb := a.ep.Stats().Engines, b.ep.Stats().Engines; na != want || nb != want {
			t.Errorf("engine per socket %v: engines a=%d b=%d, want %d each", per, na, nb, want)
		}
		if q := c.net.OpenQPs(); q != 2*want {
			t.Errorf("engine per socket %v: %d QPs, want %d", per, q, 2*want)
		}
		for _, m := range got {
			b.ep.Free(m.buf)
		}
		c.shutdown()
	}
}
