package byteexpress

import (
	"testing"
	"time"

	"github.com/besim/besim/verbs"
)

// Tests of the engine's parts on their own: the WR ring, the send window,
// the credit ledger, keepalive and the large-message tables.

func TestRingSegments(t *testing.T) {
	var r wrRing
	r.init(4)
	if r.full() || r.occupancy() != 0 {
		t.Fatalf("new ring: full %v occupancy %d", r.full(), r.occupancy())
	}
	for want := uint64(0); want < 4; want++ {
		i := r.push()
		if idx := r.tail - 1; idx != want || i != want {
			t.Fatalf("push %d: got index %d position %d", want, idx, i)
		}
		r.slots[i] = wrSlot{kind: slotSend, bytes: 10 * int(want+1)}
		if s, ok := r.takeStage(i); !ok || uint64(s) != want {
			t.Fatalf("push %d: staging slot %d (ok %v), want the lowest free, %d", want, s, ok, want)
		}
	}
	if _, ok := r.takeStage(0); ok {
		t.Fatal("a fifth staging slot was handed out by a full ring of 4 SENDs")
	}
	if !r.full() || r.pendingWRs() != 4 || r.inFlight() != 0 {
		t.Fatalf("after 4 pushes: full %v pending %d in flight %d", r.full(), r.pendingWRs(), r.inFlight())
	}
	var sc wrScratch
	sc.init(4)
	first, n := r.chain(&sc)
	if n != 4 || first != &sc.wrs[0] {
		t.Fatalf("chain: %d WRs from %p, want 4 from %p", n, first, &sc.wrs[0])
	}
	// One doorbell: a linked list, only the last signalled, SEND lengths set.
	for i := 0; i < 4; i++ {
		wr := &sc.wrs[i]
		last := i == 3
		if (wr.Flags == verbs.FlagSignaled) != last || (wr.Next == nil) != last {
			t.Errorf("WR %d: flags %v next %v", i, wr.Flags, wr.Next)
		}
		if wr.ID != uint64(i) || len(wr.SGL) != 1 || wr.SGL[0].Length != uint32(10*(i+1)) {
			t.Errorf("WR %d: ID %d, SGL %v, want ID %d and one SGE of length %d", i, wr.ID, wr.SGL, i, 10*(i+1))
		}
	}
	if _, n := r.chain(&sc); n != 0 {
		t.Fatalf("second chain posted %d WRs, want none", n)
	}
	if in, pend := r.bytes(); in != 100 || pend != 0 {
		t.Fatalf("bytes in flight/pending %d/%d, want 100/0", in, pend)
	}
	if err := r.checkCompletion(4); err == nil {
		t.Fatal("completion for an unposted WR accepted")
	}
	sl := r.popHead()
	if sl.bytes != 10 || r.slots[0] != (wrSlot{}) || r.head != 1 {
		t.Fatalf("popHead: %+v, stored %+v, head %d", sl, r.slots[0], r.head)
	}
	if err := r.checkCompletion(0); err == nil {
		t.Fatal("completion for an already completed WR accepted")
	}
	// The free slot wraps: index 4 lives at position 0.
	if i := r.push(); r.tail-1 != 4 || i != 0 {
		t.Fatalf("wrapped push: index %d position %d", r.tail-1, i)
	}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	// A staging slot held twice, or held and marked free, is reported.
	r.slots[0] = wrSlot{kind: slotSend, stage: 1}
	if err := r.check(); err == nil {
		t.Fatal("two SENDs on one staging slot not reported")
	}
	r.slots[0] = wrSlot{kind: slotSend, stage: 0} // 0 came back with popHead
	if err := r.check(); err == nil {
		t.Fatal("a SEND on a staging slot marked free not reported")
	}
	if s, ok := r.takeStage(0); !ok || s != 0 {
		t.Fatalf("wrapped SEND: staging slot %d (ok %v), want 0", s, ok)
	}
	if err := r.check(); err != nil {
		t.Fatal(err)
	}
	r.head = r.pend + 1
	if err := r.check(); err == nil {
		t.Fatal("head beyond pend not reported")
	}
}

// TestRingStagingLowestFree: a SEND takes the lowest free staging slot, not
// the one at its ring position, so an engine that keeps one SEND in flight
// cycles through the ring but reuses one staging slot; WRITEs take none.
// Depth 70 exercises the second word of the free bitmap.
func TestRingStagingLowestFree(t *testing.T) {
	var r wrRing
	r.init(70)
	var sc wrScratch
	sc.init(70)
	for n := 0; n < 200; n++ {
		i := r.push()
		r.slots[i] = wrSlot{kind: slotSend, bytes: 1}
		if s, ok := r.takeStage(i); !ok || s != 0 {
			t.Fatalf("SEND %d alone in the ring: staging slot %d (ok %v), want 0", n, s, ok)
		}
		i = r.push()
		r.slots[i] = wrSlot{kind: slotWrite, bytes: 1}
		r.chain(&sc)
		if err := r.check(); err != nil {
			t.Fatal(err)
		}
		r.popHead()
		r.popHead()
	}
	for want := uint32(0); want < 70; want++ {
		i := r.push()
		r.slots[i] = wrSlot{kind: slotSend}
		if s, ok := r.takeStage(i); !ok || s != want {
			t.Fatalf("SEND %d: staging slot %d (ok %v), want %d", want, s, ok, want)
		}
	}
	r.chain(&sc)
	// Free 3 and 66 (positions of the SENDs that took them), take again.
	r.freeStage(66)
	r.freeStage(3)
	if s, _ := r.takeStage(0); s != 3 {
		t.Fatalf("after freeing 3 and 66: took %d, want 3", s)
	}
	if s, _ := r.takeStage(0); s != 66 {
		t.Fatalf("then took %d, want 66", s)
	}
	r.reset()
	if err := r.check(); err != nil {
		t.Fatalf("after reset: %v", err)
	}
	// The check runs after every Poll with simhost's CheckInvariants: at
	// SQDepth <= 64 it allocates nothing.
	var s wrRing
	s.init(8)
	if n := testing.AllocsPerRun(20, func() { _ = s.check() }); n != 0 {
		t.Fatalf("check of a depth-8 ring: %v allocations, want 0", n)
	}
}

func TestRingLastWrite(t *testing.T) {
	var r wrRing
	r.init(8)
	for k, addr := range []uintptr{0x1000, 0x2000, 0x1800, 0x5000} {
		i := r.push()
		r.slots[i] = wrSlot{kind: slotWrite, bytes: k + 1}
		r.slots[i].sge.Addr = addr
	}
	if sl := r.lastWrite(0x1000, 0x2000); sl != &r.slots[2] {
		t.Fatalf("lastWrite found %p, want the newest WRITE in range %p", sl, &r.slots[2])
	}
	if sl := r.lastWrite(0x6000, 0x7000); sl != nil {
		t.Fatalf("lastWrite found %+v outside every WRITE", *sl)
	}
}

func TestWindow(t *testing.T) {
	w := sendWindow{cwnd: 100}
	if !w.fits(100) || w.fits(101) {
		t.Fatal("empty window of 100: fits(100) and not fits(101)")
	}
	w.add(60)
	if w.fits(41) || !w.fits(40) {
		t.Fatal("pending bytes count against the window")
	}
	if got := w.post(); got != 60 || w.pending != 0 {
		t.Fatalf("post: %d in flight, %d pending", got, w.pending)
	}
	w.add(40)
	if w.fits(1) {
		t.Fatal("full window admits a byte")
	}
	w.complete(60)
	if !w.fits(60) || w.fits(61) {
		t.Fatal("completion does not return exactly its bytes")
	}
	if err := w.check(0, 40); err != nil {
		t.Fatal(err)
	}
	if err := w.check(0, 39); err == nil {
		t.Fatal("ring/window byte mismatch not reported")
	}
	w.inflight = 70
	if err := w.check(70, 40); err == nil {
		t.Fatal("window overrun not reported")
	}
	off := sendWindow{}
	off.add(1 << 40)
	if !off.fits(1 << 40) {
		t.Fatal("a window of 0 is no window")
	}
}

func TestCreditRepostRule(t *testing.T) {
	var c creditLedger
	c.start(4)
	for c.credits > 1 {
		if !c.canSend() || !c.canWriteImm() {
			t.Fatalf("%d credits: cannot send", c.credits)
		}
		c.take()
	}
	// One credit left: kept for a SEND that reports credits.
	if c.canSend() || c.canWriteImm() {
		t.Fatal("the last credit went to a WR without a credit return")
	}
	c.owe(2)
	if !c.canSend() {
		t.Fatal("a credit update cannot take the last credit")
	}
	if c.canWriteImm() {
		t.Fatal("a WRITE_WITH_IMM took the last credit")
	}
	if n := c.claimReturn(); n != 2 || c.toReturn != 0 {
		t.Fatalf("claimReturn %d, left %d", n, c.toReturn)
	}
	if left := c.take(); left != 0 {
		t.Fatalf("credits after the update: %d", left)
	}
	if err := c.onReturn(4); err != nil {
		t.Fatal(err)
	}
	if err := c.onReturn(1); err == nil {
		t.Fatal("credits above the peer's depth not reported")
	}
	var srq creditLedger
	srq.start(0)
	if !srq.canSend() || !srq.canWriteImm() || srq.take() != 0 || srq.onReturn(9) != nil {
		t.Fatal("a peer with an SRQ is not counted")
	}
}

func TestCreditRepostBatches(t *testing.T) {
	c := creditLedger{rqDepth: 8}
	for i := 0; i < 3; i++ {
		if !c.expectRecv(i) {
			t.Fatalf("receive %d out of order", i)
		}
		c.consume()
	}
	if _, _, ok := c.batch(); ok {
		t.Fatal("a batch before k = d/2 receives were consumed")
	}
	if c.expectRecv(5) {
		t.Fatal("receive 5 accepted when 3 is next")
	}
	c.consume()
	first, k, ok := c.batch()
	if !ok || first != 0 || k != 4 {
		t.Fatalf("batch: first %d k %d ok %v, want 0 4 true", first, k, ok)
	}
	if err := c.check(); err == nil {
		t.Fatal("a full batch waiting not reported")
	}
	c.reposted(k)
	c.owe(k)
	if c.toReturn != 4 || c.consumed != 0 || !c.expectRecv(4) {
		t.Fatalf("after the batch: owe %d consumed %d", c.toReturn, c.consumed)
	}
	for i := 0; i < 4; i++ {
		c.consume()
	}
	if first, _, _ := c.batch(); first != 4 {
		t.Fatalf("second batch starts at %d, want 4", first)
	}
}

func TestKeepalive(t *testing.T) {
	ms := time.Millisecond
	k := keepalive{interval: 10 * ms, timeout: 30 * ms}
	k.start(100 * ms)
	if k.next() != 110*ms {
		t.Fatalf("next %v, want 110ms", k.next())
	}
	if exp, send := k.tick(105 * ms); exp || send || k.due {
		t.Fatal("tick before the interval did something")
	}
	if exp, send := k.tick(110 * ms); exp || !send || !k.due || k.next() != 120*ms {
		t.Fatalf("tick at the interval: expired %v send %v next %v", exp, send, k.next())
	}
	if k.nextSeq() != 1 || k.due || k.nextSeq() != 2 {
		t.Fatal("sequence numbers do not increase")
	}
	if !k.heard(5) {
		t.Fatal("a new peer number not heard")
	}
	k.extend(125 * ms)
	if k.heard(5) || k.heard(4) {
		t.Fatal("a repeated or stale peer number extends the deadline")
	}
	if exp, _ := k.tick(154 * ms); exp {
		t.Fatal("expired before the extended deadline")
	}
	if exp, _ := k.tick(155 * ms); !exp {
		t.Fatal("not expired at the deadline")
	}
	if (&keepalive{}).on() {
		t.Fatal("an interval of 0 is on")
	}
}

func TestLargeTables(t *testing.T) {
	var toks tokenTable
	a, b := &outMsg{n: 1}, &outMsg{n: 2}
	ta, tb := toks.alloc(a), toks.alloc(b)
	if ta == tb {
		t.Fatal("two messages share a token")
	}
	if toks.take(ta) != a || toks.take(ta) != nil || toks.take(99) != nil {
		t.Fatal("token take: not exactly once")
	}
	if tc := toks.alloc(&outMsg{}); tc != ta {
		t.Fatalf("freed token %d not reused (got %d)", ta, tc)
	}

	var slots slotTable
	s0, ok := slots.alloc(inSlot{n: 7})
	if !ok || !slots.in[s0].used {
		t.Fatal("slot alloc")
	}
	if sl, ok := slots.take(s0); !ok || sl.n != 7 {
		t.Fatal("slot take")
	}
	if _, ok := slots.take(s0); ok {
		t.Fatal("a slot taken twice")
	}
	if s1, _ := slots.alloc(inSlot{}); s1 != s0 {
		t.Fatalf("freed slot %d not reused (got %d)", s0, s1)
	}

	var ex exposureTable
	s1, s2 := &Socket{uid: 1}, &Socket{uid: 2}
	e1, _ := ex.add(Buffer{}, s1)
	ex.add(Buffer{}, s2)
	ex.add(Buffer{}, s1)
	if got := ex.takeAll(s1); len(got) != 2 {
		t.Fatalf("takeAll(s1) returned %d exposures, want 2", len(got))
	}
	if _, ok := ex.take(e1); ok {
		t.Fatal("an exposure returned twice")
	}
	if got := ex.takeAll(nil); len(got) != 1 || got[0].sock != s2 {
		t.Fatalf("takeAll(nil) = %v", got)
	}
}
