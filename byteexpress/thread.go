package byteexpress

import (
	"fmt"
	"time"

	"github.com/besim/besim/byteexpress/bemalloc"
	"github.com/besim/besim/verbs"
)

// IOThread is one I/O thread (paper §6.2): it owns a set of engines, one CQ
// shared by their send and receive queues (polled in batches, dispatched by
// WC.QPN), one thread domain, and optionally one SRQ.
//
// It is a driven, single-owner state machine: nothing happens except inside
// Poll, and Poll must not be called concurrently with itself or with
// Endpoint.Close. The Endpoint and Socket API queue commands that the next
// Poll carries out. Without a Mailbox (the simulator) the API must be
// called from the goroutine that polls, or between polls; with one
// (package realtime installs it) from any goroutine.
type IOThread struct {
	ep    *Endpoint
	idx   int
	cfg   Config
	alloc Allocator

	td  verbs.TD
	cq  verbs.CQ
	srq verbs.SRQ
	wc  []verbs.WC

	byQPN   qpnTable
	engines []*engine
	dirty   []*engine
	timers  timerHeap
	cqUsed  int

	// SRQ mode: one receive buffer per SRQ entry.
	srqMem      Buffer
	srqBytes    []byte
	srqDepth    int
	srqPost     []verbs.RecvWR // the WRs of a re-post (repostSRQ)
	srqPostSGEs []verbs.SGE
	srqReturn   []uint32 // consumed, waiting to be re-posted

	wrs wrScratch // the work requests of the post in progress (wrRing.chain)

	inbox  []cmd // commands queued by the polling goroutine's own API calls
	spare  []cmd
	mb     Mailbox // commands from other goroutines (nil: there are none)
	mbuf   []Command
	closed bool
	wake   func()

	now     time.Duration
	events  []Event
	ops     Ops
	stats   Stats
	msgFree *outMsg
}

// Stats are an I/O thread's cumulative counters.
type Stats struct {
	Ops                  // totals over all steps
	Engines          int // live engines now
	EngineErrors     int // engines failed (QP error, keepalive, connect)
	MessagesSent     int // messages completely handed to the NIC and completed
	SmallSent        int // of which inline in SENDs (counted when copied)
	LargeSent        int // of which with the metadata exchange
	PrebuiltSent     int // of which into pre-known remote buffers
	MetaRequests     int // metadata requests sent
	MetaResponses    int // metadata responses sent
	CreditUpdates    int // standalone credit-update SENDs
	CreditsReturned  int // credits reported to peers (piggybacked or not)
	CreditStalls     int // times a WR waited for a credit
	WindowStalls     int // times a WR waited for the send window
	RingStalls       int // times a WR waited for a free ring slot
	KeepalivesSent   int // keepalive records sent
	KeepalivesRecv   int // keepalive records received
	Dropped          int // received data for a closed socket, or not allocatable
	FreeErrors       int // Deallocate errors (double or foreign free: a core bug)
	StrayCQEs        int // completions for QPs already destroyed
	MinCredits       int // lowest credit count seen after taking a credit
	MaxRingOccupancy int // most WRs in flight+pending seen at a post
	MaxInflightBytes int // most bytes in flight seen at a post
}

func newThread(ep *Endpoint, idx int) (*IOThread, error) {
	t := &IOThread{ep: ep, idx: idx, cfg: ep.cfg, alloc: ep.p.Allocator}
	t.stats.MinCredits = maxInt
	switch a := ep.p.Allocator.(type) {
	case *bemalloc.Pool:
		t.alloc = a.NewHeap()
	case ThreadHeaps:
		t.alloc = a.ThreadHeap(idx)
	}
	var err error
	if !t.cfg.NoThreadDomains {
		if t.td, err = ep.p.Context.AllocTD(); err != nil {
			return nil, fmt.Errorf("byteexpress: thread %d: alloc TD: %w", idx, err)
		}
	}
	if t.cq, err = ep.p.Context.CreateCQ(t.cfg.CQDepth, t.td); err != nil {
		return nil, fmt.Errorf("byteexpress: thread %d: create CQ: %w", idx, err)
	}
	t.wc = make([]verbs.WC, t.cfg.PollBatch)
	t.wrs.init(t.cfg.SQDepth)
	if t.cfg.UseSRQ {
		if err := t.setupSRQ(); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Index is the thread's position in Endpoint.Threads.
func (t *IOThread) Index() int { return t.idx }

// SetWakeup installs f, called after a command is queued for this thread
// without a Mailbox: the simulator adapter schedules a Poll. f must not
// call Poll itself. Call it before the thread is used.
func (t *IOThread) SetWakeup(f func()) { t.wake = f }

// Poll runs one step at time now (the caller's monotonic clock; earlier
// values than a previous call are treated as that call's time):
//
//  1. take the commands queued by the API and the Connector;
//  2. drain the CQ in batches of PollBatch (at most MaxPollRounds polls),
//     dispatching each completion to its engine by QPN;
//  3. fire due timers (keepalive send and timeout, connect timeout);
//  4. for each engine with work: re-post receives and report credits, write
//     control records, run the round-robin scheduler over its sockets and
//     post the prepared WRs with one doorbell.
//
// The returned Ready lists the events for the application, the time by
// which Poll must run again, and the operation counts of this step.
func (t *IOThread) Poll(now time.Duration) Ready {
	if now < t.now {
		now = t.now
	}
	t.now = now
	clear(t.events)
	t.events = t.events[:0]
	t.ops = Ops{Steps: 1}
	if t.closed {
		return Ready{Next: Never, Ops: t.ops}
	}
	more := false
	for round := 0; round < 4; round++ {
		t.drainInbox()
		if round == 0 {
			more = t.pollCQ()
			t.fireTimers()
		}
		t.runDirty()
		if !t.hasPending() {
			break
		}
	}
	next := Never
	if len(t.timers) > 0 {
		next = max(t.timers[0].timerAt, now)
	}
	if more || t.hasPending() {
		next = now
	}
	t.stats.Ops.add(&t.ops)
	return Ready{Events: t.events, Next: next, Ops: t.ops}
}

func (t *IOThread) createEngine(e *engine, c *cmd) {
	if e.state != engPending {
		return
	}
	e.listIdx = len(t.engines)
	t.engines = append(t.engines, e)
	e.heapIdx = -1
	if c.kind == cmdCreatePassive {
		e.reply = c.conn.reply
	}
	if err := e.setup(); err != nil {
		e.fail(err)
		return
	}
	local := e.localInfo()
	e.connDead = t.now + t.cfg.ConnectTimeout
	if c.kind == cmdCreatePassive {
		if err := e.connect(c.conn.info); err != nil {
			e.fail(err)
			return
		}
		e.state = engWaitHello
		e.updateTimer()
		r := e.reply
		e.reply = nil
		r(local, nil)
		return
	}
	e.state = engConnecting
	e.updateTimer()
	done := func(info ConnInfo, err error) {
		if !e.connectOnce.CompareAndSwap(false, true) {
			return
		}
		t.push(cmd{kind: cmdConnectDone, e: e, conn: &connArgs{info: info, err: err}})
	}
	e.ep.p.Connector.Connect(e.ep.p.Local, e.remote, local, done)
}

func (t *IOThread) removeEngine(e *engine) {
	i := e.listIdx
	if i < 0 || i >= len(t.engines) || t.engines[i] != e {
		return
	}
	last := len(t.engines) - 1
	t.engines[i] = t.engines[last]
	t.engines[i].listIdx = i
	t.engines[last] = nil
	t.engines = t.engines[:last]
	e.listIdx = -1
}

// pollCQ drains the CQ; true if it stopped at the round limit.
func (t *IOThread) pollCQ() bool {
	for range t.cfg.MaxPollRounds {
		n := t.cq.Poll(t.wc)
		t.ops.CQPolls++
		t.ops.CQEs += n
		for i := 0; i < n; i++ {
			t.dispatch(&t.wc[i])
		}
		if n < len(t.wc) {
			return false
		}
	}
	return true
}

func (t *IOThread) dispatch(wc *verbs.WC) {
	e := t.byQPN.get(wc.QPN)
	if wc.WRID&wrRecv == 0 {
		if e == nil {
			t.stats.StrayCQEs++
			return
		}
		if wc.Status != verbs.WCSuccess {
			e.fail(fmt.Errorf("byteexpress: send completion on QP %d: %v", wc.QPN, wc.Status))
			return
		}
		e.completeTo(wc.WRID)
		return
	}
	idx := int(wc.WRID &^ (wrRecv | wrSRQ))
	if wc.WRID&wrSRQ != 0 {
		if idx >= t.srqDepth {
			t.stats.StrayCQEs++
			return
		}
		if e != nil && wc.Status == verbs.WCSuccess {
			size := t.cfg.RecvBufSize
			e.onRecv(wc, recvData(wc, t.srqBytes[idx*size:idx*size+size]))
		} else if e != nil {
			e.fail(fmt.Errorf("byteexpress: receive completion on QP %d: %v", wc.QPN, wc.Status))
		} else {
			t.stats.StrayCQEs++
		}
		t.srqReturn = append(t.srqReturn, uint32(idx))
		if len(t.srqReturn) >= t.cfg.SRQDepth/2 {
			t.repostSRQ()
		}
		return
	}
	if e == nil {
		t.stats.StrayCQEs++
		return
	}
	if wc.Status != verbs.WCSuccess {
		e.fail(fmt.Errorf("byteexpress: receive completion on QP %d: %v", wc.QPN, wc.Status))
		return
	}
	if !e.cred.expectRecv(idx) {
		e.fail(fmt.Errorf("byteexpress: receive completion %d out of order on QP %d", idx, wc.QPN))
		return
	}
	if e.drq == nil || e.drq.bytes == nil {
		e.fail(fmt.Errorf("byteexpress: receive completion %d on QP %d, which has no receive queue of its own", idx, wc.QPN))
		return
	}
	size := t.cfg.RecvBufSize
	e.onRecv(wc, recvData(wc, e.drq.bytes[idx*size:idx*size+size]))
}

// recvData is the bytes a receive completion delivered: those the provider
// handed with it (wc.Data: a simulated NIC that keeps SEND bytes out of the
// receive buffers) or else the receive buffer's first ByteLen.
func recvData(wc *verbs.WC, buf []byte) []byte {
	if wc.Data != nil {
		return wc.Data[:min(int(wc.ByteLen), len(wc.Data), len(buf))]
	}
	return buf[:min(int(wc.ByteLen), len(buf))]
}

func (t *IOThread) fireTimers() {
	for len(t.timers) > 0 && t.timers[0].timerAt <= t.now {
		t.timers[0].onTimer()
	}
}

func (t *IOThread) runDirty() {
	for i := 0; i < len(t.dirty); i++ {
		e := t.dirty[i]
		e.dirty = false
		if e.state == engUp {
			e.fill()
		}
	}
	clear(t.dirty)
	t.dirty = t.dirty[:0]
}

// ---- helpers ----

func (t *IOThread) emit(ev Event) { t.events = append(t.events, ev) }

func (t *IOThread) deliver(s *Socket, buf Buffer, n int) {
	t.ops.Messages++
	t.emit(Event{Kind: EvMessage, Socket: s, Remote: s.eng.remote, Buf: buf, Len: n})
}

func (t *IOThread) allocate(n int) (Buffer, error) {
	t.ops.Allocs++
	return t.alloc.Allocate(n)
}

func (t *IOThread) dealloc(b Buffer) {
	if b.IsZero() {
		return
	}
	t.ops.Frees++
	if err := t.alloc.Deallocate(b); err != nil {
		t.stats.FreeErrors++
	}
}

func (t *IOThread) newMsg() *outMsg {
	m := t.msgFree
	if m == nil {
		return &outMsg{}
	}
	t.msgFree = m.next
	m.next = nil
	return m
}

func (t *IOThread) freeMsg(m *outMsg) {
	*m = outMsg{next: t.msgFree}
	t.msgFree = m
}

// fragSize is the effective fragment size S: FragSize, capped by Cwnd.
func (t *IOThread) fragSize() int {
	if t.cfg.Cwnd > 0 {
		return min(t.cfg.FragSize, t.cfg.Cwnd)
	}
	return t.cfg.FragSize
}

// Stats returns the thread's cumulative counters (call between Polls).
func (t *IOThread) Stats() Stats {
	s := t.stats
	s.Engines = len(t.engines)
	return s
}

// CheckInvariants verifies the engine invariants the paper's mechanisms
// promise (call between Polls): credits never negative nor above the
// initial count, bytes in flight within Cwnd, ring occupancy within the SQ
// depth and the ring's byte accounting consistent.
func (t *IOThread) CheckInvariants() error {
	for _, e := range t.engines {
		if e.state != engUp {
			continue
		}
		if e.cred.on && (e.cred.credits < 0 || e.cred.credits > e.cred.initial) {
			return fmt.Errorf("engine %d to %s: credits %d outside [0,%d]", e.id, e.remote, e.cred.credits, e.cred.initial)
		}
		if err := e.ring.check(); err != nil {
			return fmt.Errorf("engine %d: %w", e.id, err)
		}
		if err := e.win.check(e.ring.bytes()); err != nil {
			return fmt.Errorf("engine %d: %w", e.id, err)
		}
		if err := e.cred.check(); err != nil {
			return fmt.Errorf("engine %d: %w", e.id, err)
		}
		if e.nactive < 0 || (e.nactive == 0) != (e.rr == nil) {
			return fmt.Errorf("engine %d: round-robin ring of %d sockets, cursor %v", e.id, e.nactive, e.rr != nil)
		}
	}
	return nil
}

// shutdown destroys everything the thread owns. Buffers the core holds go
// back to the allocator, including unsent messages and exposed buffers.
func (t *IOThread) shutdown() {
	t.closed = true
	cmds := t.inbox
	t.inbox = nil
	if t.mb != nil {
		for _, c := range t.mb.Close() {
			cmds = append(cmds, c.c)
		}
	}
	for i := range cmds {
		c := &cmds[i]
		switch c.kind {
		case cmdSend, cmdSendTo:
			t.dealloc(c.buf)
		case cmdCreatePassive:
			c.e.state = engFailed
			c.conn.reply(ConnInfo{}, ErrClosed)
		case cmdCreate:
			c.e.state = engFailed
		}
	}
	for len(t.engines) > 0 {
		t.engines[len(t.engines)-1].teardown(ErrClosed, true)
	}
	if t.srq != nil {
		_ = t.srq.Destroy()
		t.srq = nil
		t.dealloc(t.srqMem)
		t.srqMem, t.srqBytes = Buffer{}, nil
	}
	if c, ok := t.alloc.(interface{ Close() error }); ok && t.alloc != t.ep.p.Allocator {
		_ = c.Close()
	}
	if t.cq != nil {
		_ = t.cq.Destroy()
		t.cq = nil
	}
	if t.td != nil {
		_ = t.td.Dealloc()
		t.td = nil
	}
}

// qpnTable maps the QP numbers of a thread's engines to them: a slice
// indexed by QP number for the small ones (providers that number QPs densely
// from a low base, as the simulated NIC does), a map for the others.
type qpnTable struct {
	dense  []*engine
	sparse map[uint32]*engine
}

// qpnDense bounds the QP numbers kept in the slice (8 bytes a number up to
// the largest in use, per thread).
const qpnDense = 1 << 16

func (m *qpnTable) get(qpn uint32) *engine {
	if qpn < uint32(len(m.dense)) {
		return m.dense[qpn]
	}
	return m.sparse[qpn] // a nil map reads as empty
}

func (m *qpnTable) set(qpn uint32, e *engine) {
	if qpn < qpnDense {
		if int(qpn) >= len(m.dense) {
			m.dense = append(m.dense, make([]*engine, int(qpn)+1-len(m.dense))...)
		}
		m.dense[qpn] = e
		return
	}
	if m.sparse == nil {
		m.sparse = make(map[uint32]*engine)
	}
	m.sparse[qpn] = e
}

func (m *qpnTable) remove(qpn uint32) {
	if qpn < uint32(len(m.dense)) {
		m.dense[qpn] = nil
		return
	}
	delete(m.sparse, qpn)
}
