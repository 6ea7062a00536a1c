// Package fakeverbs is a deliberately simple, functional, in-memory verbs
// backend, the test double under the verbs port (paper §2.2, §5.4): the
// ByteExpress core's tests and berun's ps roles over verbs run the core on
// it in one process where no RDMA device exists. It is also the reference
// model of the conformance suite verbs/verbstest: it passes every case but
// the UD ones (it implements RC only), and its TestSuiteCatchesBugs plants
// one bug at a time to check that the suite notices.
//
// A Network joins any number of Contexts. Delivery is step-driven in integer
// nanoseconds: PostSend queues operations, and Advance(t) executes every
// operation due by t. The model keeps only what the core's correctness
// depends on:
//
//   - RC ordering: a QP's operations execute at the responder strictly in
//     post order, and requester completions come back in the same order;
//   - WRITE and WRITE_WITH_IMM place data into registered memory, and READ
//     fetches it, after an rkey, bounds and access check; SEND/SEND_WITH_IMM and WRITE_WITH_IMM
//     consume a receive (dedicated RQ or SRQ) and produce a receive
//     completion carrying the responder's QPN (shared-CQ dispatch);
//   - RNR: with no receive posted the operation blocks the QP's head of line
//     and is retried after the responder's min_rnr_timer, up to the
//     requester's rnr_retry (7 = forever); every RNR NAK is counted;
//   - selective signalling: successful WRs complete only when FlagSignaled or
//     SigAll; errors always complete, move the QP to ERR and flush the rest;
//   - a crashed context (Crash) answers nothing: requesters see "retry
//     exceeded" after RetryTimeout.
//
// Payload bytes are read from the requester's memory when the operation
// executes, not when it is posted, so a core that reuses a send buffer before
// its completion corrupts the delivered data and tests catch it.
//
// Memory is addressed by real process addresses: RegMR views [addr,
// addr+len) directly, so callers must register memory that does not move and
// stays mapped (mmap, as bemalloc does). All methods are safe for concurrent
// use (one lock per Network), which lets the wall-clock adapter be tested.
package fakeverbs

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/besim/besim/verbs"
)

// plant names one deliberate bug (empty: none). Only this package's tests
// set it, to check that the verbstest suite, whose reference model this
// package is, notices each bug (TestSuiteCatchesBugs).
var plant string

// Config parameterises a Network. Zero fields take the defaults noted.
type Config struct {
	// Latency is the one-way delay in ns between contexts (default 1000).
	Latency int64
	// BytesPerNs is each context's egress rate (0: infinite). 12.5 is 100 Gb/s.
	BytesPerNs float64
	// RetryTimeout is how long a requester waits before reporting "retry
	// exceeded" for an operation to a crashed or missing peer (default 100 us).
	RetryTimeout int64
	// MTU reported by the ports (default 4096).
	MTU verbs.MTU
}

// Stats are network-wide counters used by tests.
type Stats struct {
	PostSendCalls   int // doorbells
	SendWRs         int // WRs posted
	PostRecvCalls   int
	RecvWRs         int
	SignalledWRs    int
	BadSignalChains int // chains whose signalled WRs are not exactly "the last one"
	RNRNaks         int // receiver-not-ready events
	BytesMoved      int64
	Executed        int // operations executed at a responder
	Errors          int // error completions (not flushes)
	Flushes         int
	CQOverflows     int
	RegMRs          int // memory regions registered
	DeregMRs        int // memory regions deregistered
}

// Network connects contexts. Create with New.
type Network struct {
	mu      sync.Mutex
	cfg     Config
	now     int64
	seq     uint64
	events  []event
	qps     map[uint32]*QP
	ctxs    []*Context
	nextQPN uint32
	nextKey uint32
	freeOps []*op
	stats   Stats
}

// New returns an empty network at time 0.
func New(cfg Config) *Network {
	if cfg.Latency == 0 {
		cfg.Latency = 1000
	}
	if cfg.RetryTimeout == 0 {
		cfg.RetryTimeout = 100_000
	}
	if cfg.MTU == 0 {
		cfg.MTU = 4096
	}
	return &Network{cfg: cfg, qps: make(map[uint32]*QP), nextQPN: 0x100, nextKey: 0x1000}
}

// Stats returns a snapshot of the counters.
func (n *Network) Stats() Stats {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.stats
}

// Now is the network's current time in ns.
func (n *Network) Now() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.now
}

// Next returns the time of the earliest pending operation, if any.
func (n *Network) Next() (int64, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.events) == 0 {
		return 0, false
	}
	return n.events[0].at, true
}

// Advance executes everything due at or before t and sets the clock to t
// (time never goes backwards).
func (n *Network) Advance(t int64) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for len(n.events) > 0 && n.events[0].at <= t {
		ev := n.pop()
		if ev.at > n.now {
			n.now = ev.at
		}
		n.handle(ev)
	}
	if t > n.now {
		n.now = t
	}
}

// OpenQPs counts QPs not destroyed, across all contexts.
func (n *Network) OpenQPs() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.qps)
}

// OpenMRs counts memory regions registered and not deregistered, across
// all contexts.
func (n *Network) OpenMRs() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	k := 0
	for _, c := range n.ctxs {
		k += len(c.mrs)
	}
	return k
}

// ---- events ----

type evKind uint8

const (
	evArrive evKind = iota // try to execute the head of qp's send queue
	evAck                  // requester completion of op
	evRetry                // RNR or not-ready retry: unblock the head and retry
)

type event struct {
	at   int64
	seq  uint64
	kind evKind
	qp   *QP
	op   *op
	gen  uint64
}

func (n *Network) push(ev event) {
	n.seq++
	ev.seq = n.seq
	n.events = append(n.events, ev)
	i := len(n.events) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !less(&n.events[i], &n.events[p]) {
			break
		}
		n.events[i], n.events[p] = n.events[p], n.events[i]
		i = p
	}
}

func less(a, b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (n *Network) pop() event {
	h := n.events
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = event{}
	h = h[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		m := l
		if r := l + 1; r < len(h) && less(&h[r], &h[l]) {
			m = r
		}
		if !less(&h[m], &h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	n.events = h
	return top
}

// ---- operations ----

const maxSGE = 4

type op struct {
	gen      uint64
	id       uint64
	opcode   verbs.Opcode
	flags    verbs.SendFlags
	imm      uint32
	raddr    uint64
	rkey     uint32
	sge      [maxSGE]verbs.SGE
	nsge     int
	length   int64
	arriveAt int64
	rnrLeft  int // -1: infinite
	tries    int // for a peer that is not ready yet
	status   verbs.WCStatus
	executed bool
}

func (n *Network) newOp() *op {
	if k := len(n.freeOps); k > 0 {
		o := n.freeOps[k-1]
		n.freeOps = n.freeOps[:k-1]
		return o
	}
	return &op{}
}

func (n *Network) freeOp(o *op) {
	g := o.gen + 1
	*o = op{gen: g}
	n.freeOps = append(n.freeOps, o)
}

func (n *Network) handle(ev event) {
	switch ev.kind {
	case evArrive:
		if ev.qp.destroyed {
			return
		}
		ev.qp.progress()
	case evRetry:
		if ev.qp.destroyed {
			return
		}
		ev.qp.blocked = false
		ev.qp.progress()
	case evAck:
		if ev.op.gen != ev.gen || ev.qp.destroyed {
			return
		}
		ev.qp.ack(ev.op)
	}
}

// ---- Context ----

// Context is a fake device; it implements verbs.Context.
type Context struct {
	n       *Network
	name    string
	gid     verbs.GID
	mrs     map[uint32]*MR // by lkey == rkey
	txFree  int64
	crashed bool
	closed  bool
}

var _ verbs.Context = (*Context)(nil)

// NewContext opens a device on the network.
func (n *Network) NewContext(name string) *Context {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := &Context{n: n, name: name, mrs: make(map[uint32]*MR)}
	idx := len(n.ctxs) + 1
	c.gid[10], c.gid[11] = 0xff, 0xff
	c.gid[12], c.gid[13], c.gid[14], c.gid[15] = 10, 0, byte(idx>>8), byte(idx)
	n.ctxs = append(n.ctxs, c)
	return c
}

// Crash makes the context silent: nothing it posts executes and nothing
// addressed to it is answered (power loss / kernel panic).
func (c *Context) Crash() {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	c.crashed = true
}

// Name implements verbs.Context.
func (c *Context) Name() string { return c.name }

// Attr implements verbs.Context.
func (c *Context) Attr() verbs.DeviceAttr {
	return verbs.DeviceAttr{MaxQPWR: 16384, MaxSGE: maxSGE, MaxCQE: 1 << 22, MaxMR: 1 << 20,
		MaxSRQWR: 1 << 16, PortRate: 100e9, PortMTU: c.n.cfg.MTU, GID: c.gid}
}

// AllocPD implements verbs.Context.
func (c *Context) AllocPD() (verbs.PD, error) { return &PD{c: c}, nil }

// AllocTD implements verbs.Context.
func (c *Context) AllocTD() (verbs.TD, error) { return &TD{}, nil }

// CreateCQ implements verbs.Context.
func (c *Context) CreateCQ(depth int, td verbs.TD) (verbs.CQ, error) {
	if depth <= 0 {
		return nil, errors.New("fakeverbs: CQ depth must be positive")
	}
	return &CQ{n: c.n, ring: make([]verbs.WC, depth)}, nil
}

// Close implements verbs.Context.
func (c *Context) Close() error { c.closed = true; return nil }

// OpenMRs counts registered regions of this context.
func (c *Context) OpenMRs() int {
	c.n.mu.Lock()
	defer c.n.mu.Unlock()
	return len(c.mrs)
}

// TD is a fake thread domain.
type TD struct{}

// Dealloc implements verbs.TD.
func (*TD) Dealloc() error { return nil }

// PD is a fake protection domain.
type PD struct{ c *Context }

// MR is a fake memory region viewing process memory.
type MR struct {
	c      *Context
	addr   uintptr
	view   []byte
	key    uint32
	access verbs.Access
}

// view returns the n bytes at addr. Converting through a pointer to the
// uintptr keeps vet's unsafeptr check quiet; it is correct only for memory
// that does not move and stays mapped, which RegMR's contract requires.
func view(addr uintptr, n int) []byte {
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

// RegMR implements verbs.PD.
func (p *PD) RegMR(addr uintptr, length int, access verbs.Access) (verbs.MR, error) {
	if addr == 0 || length <= 0 {
		return nil, fmt.Errorf("fakeverbs: bad MR %#x+%d", addr, length)
	}
	n := p.c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nextKey++
	mr := &MR{c: p.c, addr: addr, view: view(addr, length), key: n.nextKey, access: access}
	p.c.mrs[mr.key] = mr
	n.stats.RegMRs++
	return mr, nil
}

// CreateQP implements verbs.PD.
func (p *PD) CreateQP(attr verbs.QPInitAttr) (verbs.QP, error) {
	if attr.Type != verbs.RC {
		return nil, verbs.ErrNotSupported
	}
	scq, ok1 := attr.SendCQ.(*CQ)
	rcq, ok2 := attr.RecvCQ.(*CQ)
	if !ok1 || !ok2 {
		return nil, errors.New("fakeverbs: QP needs fakeverbs CQs")
	}
	var srq *SRQ
	if attr.SRQ != nil {
		s, ok := attr.SRQ.(*SRQ)
		if !ok {
			return nil, errors.New("fakeverbs: foreign SRQ")
		}
		srq = s
	}
	if attr.MaxSendWR <= 0 || (srq == nil && attr.MaxRecvWR <= 0) {
		return nil, errors.New("fakeverbs: queue depths must be positive")
	}
	n := p.c.n
	n.mu.Lock()
	defer n.mu.Unlock()
	n.nextQPN++
	qp := &QP{n: n, c: p.c, qpn: n.nextQPN, scq: scq, rcq: rcq, srq: srq,
		maxSend: attr.MaxSendWR, maxRecv: attr.MaxRecvWR, sigAll: attr.SigAll}
	n.qps[qp.qpn] = qp
	return qp, nil
}

// CreateSRQ implements verbs.PD.
func (p *PD) CreateSRQ(attr verbs.SRQInitAttr) (verbs.SRQ, error) {
	if attr.MaxWR <= 0 {
		return nil, errors.New("fakeverbs: SRQ depth must be positive")
	}
	return &SRQ{n: p.c.n, max: attr.MaxWR}, nil
}

// CreateAH implements verbs.PD.
func (p *PD) CreateAH(verbs.AHAttr) (verbs.AH, error) { return nil, verbs.ErrNotSupported }

// Dealloc implements verbs.PD.
func (p *PD) Dealloc() error { return nil }

// Addr implements verbs.MR.
func (m *MR) Addr() uintptr { return m.addr }

// Len implements verbs.MR.
func (m *MR) Len() int { return len(m.view) }

// LKey implements verbs.MR.
func (m *MR) LKey() uint32 { return m.key }

// RKey implements verbs.MR.
func (m *MR) RKey() uint32 { return m.key }

// Access implements verbs.MR.
func (m *MR) Access() verbs.Access { return m.access }

// Dereg implements verbs.MR. A region deregistered twice is an error
// (ibv_dereg_mr on a freed MR is undefined on a real device).
func (m *MR) Dereg() error {
	m.c.n.mu.Lock()
	defer m.c.n.mu.Unlock()
	if m.c.mrs[m.key] != m {
		return fmt.Errorf("fakeverbs: MR %#x (key %#x) deregistered twice", m.addr, m.key)
	}
	delete(m.c.mrs, m.key)
	m.c.n.stats.DeregMRs++
	return nil
}

// slice resolves [addr, addr+n) inside the MR with key, or nil.
func (c *Context) slice(key uint32, addr uint64, n int64, need verbs.Access) []byte {
	mr := c.mrs[key]
	if mr == nil || mr.access&need != need {
		return nil
	}
	base := uint64(mr.addr)
	if addr < base || addr+uint64(n) > base+uint64(len(mr.view)) || n < 0 {
		return nil
	}
	off := addr - base
	return mr.view[off : off+uint64(n)]
}

// anyMR resolves [addr, addr+n) in whichever MR holds it, whatever its key
// and access (the "ignore-rkey" planted bug).
func (c *Context) anyMR(addr uint64, n int64) []byte {
	for _, mr := range c.mrs {
		base := uint64(mr.addr)
		if addr >= base && addr+uint64(n) <= base+uint64(len(mr.view)) {
			return mr.view[addr-base : addr-base+uint64(n)]
		}
	}
	return nil
}

// ---- CQ ----

// CQ is a fixed-depth completion ring.
type CQ struct {
	n        *Network
	ring     []verbs.WC
	head     int
	count    int
	overflow bool
}

func (q *CQ) add(wc verbs.WC) {
	if q.count == len(q.ring) {
		q.overflow = true
		q.n.stats.CQOverflows++
		return
	}
	q.ring[(q.head+q.count)%len(q.ring)] = wc
	q.count++
}

// Poll implements verbs.CQ.
func (q *CQ) Poll(wc []verbs.WC) int {
	q.n.mu.Lock()
	defer q.n.mu.Unlock()
	k := 0
	for k < len(wc) && q.count > 0 {
		wc[k] = q.ring[q.head]
		q.head = (q.head + 1) % len(q.ring)
		q.count--
		k++
	}
	return k
}

// Depth implements verbs.CQ.
func (q *CQ) Depth() int { return len(q.ring) }

// Destroy implements verbs.CQ.
func (q *CQ) Destroy() error { return nil }

// Overflowed reports whether a completion was ever dropped for lack of room.
func (q *CQ) Overflowed() bool {
	q.n.mu.Lock()
	defer q.n.mu.Unlock()
	return q.overflow
}

// ---- receive queues ----

type recv struct {
	id   uint64
	sge  [maxSGE]verbs.SGE
	nsge int
}

type recvQueue struct {
	q    []recv
	head int
}

func (r *recvQueue) len() int { return len(r.q) - r.head }

func (r *recvQueue) push(c *Context, wr *verbs.RecvWR) error {
	if len(wr.SGL) > maxSGE {
		return fmt.Errorf("fakeverbs: %d SGEs exceed %d", len(wr.SGL), maxSGE)
	}
	if r.head > 0 && r.head == len(r.q) {
		r.q = r.q[:0]
		r.head = 0
	}
	var e recv
	e.id = wr.ID
	e.nsge = copy(e.sge[:], wr.SGL)
	r.q = append(r.q, e)
	return nil
}

func (r *recvQueue) pop() (recv, bool) {
	if r.len() == 0 {
		return recv{}, false
	}
	e := r.q[r.head]
	r.head++
	return e, true
}

// SRQ is a fake shared receive queue.
type SRQ struct {
	n   *Network
	max int
	rq  recvQueue
}

// PostRecv implements verbs.SRQ.
func (s *SRQ) PostRecv(wr *verbs.RecvWR) (*verbs.RecvWR, error) {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	s.n.stats.PostRecvCalls++
	for ; wr != nil; wr = wr.Next {
		if s.rq.len() >= s.max {
			return wr, errors.New("fakeverbs: SRQ full")
		}
		if err := s.rq.push(nil, wr); err != nil {
			return wr, err
		}
		s.n.stats.RecvWRs++
	}
	return nil, nil
}

// Destroy implements verbs.SRQ.
func (s *SRQ) Destroy() error { return nil }

// Posted is the number of receives waiting in the SRQ.
func (s *SRQ) Posted() int {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	return s.rq.len()
}

// ---- QP ----

// QP is a fake RC queue pair.
type QP struct {
	n         *Network
	c         *Context
	qpn       uint32
	state     verbs.QPState
	scq, rcq  *CQ
	srq       *SRQ
	maxSend   int
	maxRecv   int
	sigAll    bool
	destQPN   uint32
	rnrRetry  uint8
	minRNR    uint8
	rq        recvQueue
	sq        []*op // posted, not yet completed, in order
	exec      int   // index in sq of the next op to execute
	blocked   bool  // head is waiting for an RNR retry
	destroyed bool
}

var _ verbs.QP = (*QP)(nil)

// QPN implements verbs.QP.
func (q *QP) QPN() uint32 { return q.qpn }

// Type implements verbs.QP.
func (q *QP) Type() verbs.QPType { return verbs.RC }

// State implements verbs.QP.
func (q *QP) State() verbs.QPState {
	q.n.mu.Lock()
	defer q.n.mu.Unlock()
	return q.state
}

// Modify implements verbs.QP, validating like the kernel does.
func (q *QP) Modify(attr *verbs.QPAttr, mask verbs.AttrMask) error {
	q.n.mu.Lock()
	defer q.n.mu.Unlock()
	if q.destroyed {
		return errors.New("fakeverbs: QP destroyed")
	}
	if err := verbs.CheckModify(verbs.RC, q.state, attr, mask); err != nil && plant != "no-check-modify" {
		return err
	}
	if mask&verbs.AttrDestQPN != 0 {
		q.destQPN = attr.DestQPN
	}
	if mask&verbs.AttrRNRRetry != 0 {
		q.rnrRetry = attr.RNRRetry
	}
	if mask&verbs.AttrMinRNRTimer != 0 {
		q.minRNR = attr.MinRNRTimer
	}
	if mask&verbs.AttrState != 0 {
		if attr.State == verbs.StateErr && q.state != verbs.StateErr && plant != "no-flush" {
			q.toError()
		}
		q.state = attr.State
		if attr.State == verbs.StateReset {
			q.dropAll()
		}
	}
	return nil
}

// PostSend implements verbs.QP: one doorbell for the whole chain.
func (q *QP) PostSend(wr *verbs.SendWR) (*verbs.SendWR, error) {
	n := q.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if q.destroyed {
		return wr, errors.New("fakeverbs: QP destroyed")
	}
	if q.state != verbs.StateRTS && q.state != verbs.StateErr {
		return wr, fmt.Errorf("fakeverbs: post_send in state %v", q.state)
	}
	n.stats.PostSendCalls++
	signalled, count, lastSig := 0, 0, false
	for w := wr; w != nil; w = w.Next {
		if len(w.SGL) > maxSGE {
			return w, fmt.Errorf("fakeverbs: %d SGEs exceed %d", len(w.SGL), maxSGE)
		}
		if len(q.sq) >= q.maxSend && plant != "no-sq-limit" {
			return w, errors.New("fakeverbs: send queue full")
		}
		switch w.Opcode {
		case verbs.OpWrite, verbs.OpWriteImm, verbs.OpSend, verbs.OpSendImm, verbs.OpRead:
		default:
			return w, verbs.ErrNotSupported
		}
		o := n.newOp()
		o.id, o.opcode, o.flags, o.imm = w.ID, w.Opcode, w.Flags, w.Imm
		o.raddr, o.rkey = w.RemoteAddr, w.RKey
		o.nsge = copy(o.sge[:], w.SGL)
		o.length = w.Len()
		o.rnrLeft = int(q.rnrRetry)
		if q.rnrRetry == 7 && plant != "finite-rnr" {
			o.rnrLeft = -1
		}
		count++
		n.stats.SendWRs++
		sig := w.Flags&verbs.FlagSignaled != 0
		if sig {
			signalled++
			n.stats.SignalledWRs++
		}
		lastSig = sig
		if q.state == verbs.StateErr {
			o.status = verbs.WCWRFlushErr
			q.complete(o, true)
			n.freeOp(o)
			continue
		}
		depart := max(n.now, q.c.txFree)
		var ser int64
		if n.cfg.BytesPerNs > 0 {
			ser = int64(float64(o.length)/n.cfg.BytesPerNs) + 1
		}
		q.c.txFree = depart + ser
		o.arriveAt = depart + ser + n.cfg.Latency
		q.sq = append(q.sq, o)
		n.push(event{at: o.arriveAt, kind: evArrive, qp: q})
	}
	if !q.sigAll && count > 0 && (signalled != 1 || !lastSig) {
		n.stats.BadSignalChains++
	}
	return nil, nil
}

// PostRecv implements verbs.QP (dedicated receive queue).
func (q *QP) PostRecv(wr *verbs.RecvWR) (*verbs.RecvWR, error) {
	q.n.mu.Lock()
	defer q.n.mu.Unlock()
	if q.srq != nil {
		return wr, errors.New("fakeverbs: QP uses an SRQ")
	}
	if q.destroyed || q.state == verbs.StateReset {
		return wr, fmt.Errorf("fakeverbs: post_recv in state %v", q.state)
	}
	q.n.stats.PostRecvCalls++
	for ; wr != nil; wr = wr.Next {
		if q.rq.len() >= q.maxRecv {
			return wr, errors.New("fakeverbs: receive queue full")
		}
		if q.state == verbs.StateErr {
			q.rcq.add(verbs.WC{WRID: wr.ID, Status: verbs.WCWRFlushErr, QPN: q.qpn})
			q.n.stats.Flushes++
			continue
		}
		if err := q.rq.push(q.c, wr); err != nil {
			return wr, err
		}
		q.n.stats.RecvWRs++
	}
	return nil, nil
}

// Destroy implements verbs.QP. Pending operations vanish without completions.
func (q *QP) Destroy() error {
	q.n.mu.Lock()
	defer q.n.mu.Unlock()
	if q.destroyed {
		return errors.New("fakeverbs: QP destroyed twice")
	}
	q.dropAll()
	q.destroyed = true
	delete(q.n.qps, q.qpn)
	return nil
}

// PostedRecvs is the number of receives in the QP's dedicated queue.
func (q *QP) PostedRecvs() int {
	q.n.mu.Lock()
	defer q.n.mu.Unlock()
	return q.rq.len()
}

func (q *QP) dropAll() {
	for _, o := range q.sq {
		q.n.freeOp(o)
	}
	q.sq = q.sq[:0]
	q.exec = 0
	q.rq = recvQueue{}
}

// progress executes the ready head operations in order.
func (q *QP) progress() {
	n := q.n
	for !q.blocked && q.exec < len(q.sq) && q.state == verbs.StateRTS && !q.c.crashed {
		o := q.sq[q.exec]
		if o.arriveAt > n.now {
			return
		}
		if !q.execute(o) {
			return
		}
		q.exec++
	}
}

// execute runs o at the responder; false means the QP's head is blocked.
func (q *QP) execute(o *op) bool {
	n := q.n
	peer := n.qps[q.destQPN]
	if peer == nil || peer.c.crashed || peer.destroyed {
		o.status = verbs.WCRetryExcErr
		o.executed = true
		n.push(event{at: n.now + n.cfg.RetryTimeout, kind: evAck, qp: q, op: o, gen: o.gen})
		q.blocked = true // nothing behind it can pass
		return false
	}
	if peer.state != verbs.StateRTR && peer.state != verbs.StateRTS {
		// The responder is not ready yet (or in error): the transport
		// retransmits until its retry budget runs out.
		if peer.state == verbs.StateErr || o.tries >= 7 {
			o.status = verbs.WCRetryExcErr
			o.executed = true
			n.push(event{at: n.now + n.cfg.RetryTimeout, kind: evAck, qp: q, op: o, gen: o.gen})
			q.blocked = true
			return false
		}
		o.tries++
		q.blocked = true
		n.push(event{at: n.now + n.cfg.RetryTimeout/8, kind: evRetry, qp: q})
		return false
	}
	// Resolve the local gather list.
	var src [maxSGE][]byte
	for i := 0; i < o.nsge; i++ {
		s := o.sge[i]
		b := q.c.slice(s.LKey, uint64(s.Addr), int64(s.Length), 0)
		if b == nil {
			return q.fail(o, verbs.WCLocProtErr)
		}
		src[i] = b
	}
	var dst []byte
	switch o.opcode {
	case verbs.OpWrite, verbs.OpWriteImm:
		dst = peer.c.slice(o.rkey, o.raddr, o.length, verbs.AccessRemoteWrite)
		if dst == nil && plant == "ignore-rkey" {
			dst = peer.c.anyMR(o.raddr, o.length)
		}
	case verbs.OpRead:
		dst = peer.c.slice(o.rkey, o.raddr, o.length, verbs.AccessRemoteRead)
	}
	if dst == nil && (o.opcode == verbs.OpWrite || o.opcode == verbs.OpWriteImm || o.opcode == verbs.OpRead) {
		return q.fail(o, verbs.WCRemAccessErr)
	}
	var r recv
	if o.opcode.ConsumesRecv() || (o.opcode == verbs.OpWrite && plant == "write-consumes-recv") {
		var ok bool
		rq := &peer.rq
		if peer.srq != nil {
			rq = &peer.srq.rq
		}
		r, ok = rq.pop()
		if !ok {
			n.stats.RNRNaks++
			if o.rnrLeft == 0 {
				return q.fail(o, verbs.WCRNRRetryExcErr)
			}
			if o.rnrLeft > 0 {
				o.rnrLeft--
			}
			q.blocked = true
			n.push(event{at: n.now + verbs.RNRTimerNS(peer.minRNR), kind: evRetry, qp: q})
			return false
		}
	}
	switch o.opcode {
	case verbs.OpWrite, verbs.OpWriteImm:
		off := 0
		for i := 0; i < o.nsge && !(o.opcode == verbs.OpWriteImm && plant == "write-imm-drops-data"); i++ {
			off += copy(dst[off:], src[i])
		}
	case verbs.OpRead: // the remote range into the local scatter list
		off := 0
		for i := 0; i < o.nsge && plant != "read-zero"; i++ {
			off += copy(src[i], dst[off:])
		}
	case verbs.OpSend, verbs.OpSendImm:
		var room int64
		var dsts [maxSGE][]byte
		for i := 0; i < r.nsge; i++ {
			s := r.sge[i]
			b := peer.c.slice(s.LKey, uint64(s.Addr), int64(s.Length), verbs.AccessLocalWrite)
			if b == nil {
				peer.rcq.add(verbs.WC{WRID: r.id, Status: verbs.WCLocProtErr, QPN: peer.qpn})
				return q.fail(o, verbs.WCRemOpErr)
			}
			dsts[i] = b
			room += int64(len(b))
		}
		if room < o.length {
			peer.rcq.add(verbs.WC{WRID: r.id, Status: verbs.WCLocLenErr, QPN: peer.qpn})
			return q.fail(o, verbs.WCRemInvReqErr)
		}
		di, doff := 0, 0
		for i := 0; i < o.nsge; i++ {
			b := src[i]
			for len(b) > 0 {
				c := copy(dsts[di][doff:], b)
				b = b[c:]
				doff += c
				if doff == len(dsts[di]) {
					di, doff = di+1, 0
				}
			}
		}
	}
	n.stats.BytesMoved += o.length
	n.stats.Executed++
	if o.opcode.ConsumesRecv() {
		wc := verbs.WC{WRID: r.id, Status: verbs.WCSuccess, ByteLen: uint32(o.length),
			QPN: peer.qpn, SrcQP: q.qpn}
		if plant == "recv-qpn-of-sender" {
			wc.QPN = q.qpn
		}
		switch o.opcode {
		case verbs.OpSend:
			wc.Opcode = verbs.WCRecv
		case verbs.OpSendImm:
			wc.Opcode, wc.Flags, wc.Imm = verbs.WCRecv, verbs.WCWithImm, o.imm
		case verbs.OpWriteImm:
			wc.Opcode, wc.Flags, wc.Imm = verbs.WCRecvRDMAImm, verbs.WCWithImm, o.imm
		}
		peer.rcq.add(wc)
	}
	o.executed = true
	o.status = verbs.WCSuccess
	n.push(event{at: n.now + n.cfg.Latency, kind: evAck, qp: q, op: o, gen: o.gen})
	return true
}

func (q *QP) fail(o *op, st verbs.WCStatus) bool {
	o.status = st
	o.executed = true
	q.n.push(event{at: q.n.now + q.n.cfg.Latency, kind: evAck, qp: q, op: o, gen: o.gen})
	q.blocked = true
	return false
}

// ack is the requester-side completion of o, always the oldest in sq.
func (q *QP) ack(o *op) {
	if len(q.sq) == 0 || q.sq[0] != o {
		return
	}
	copy(q.sq, q.sq[1:])
	q.sq[len(q.sq)-1] = nil
	q.sq = q.sq[:len(q.sq)-1]
	q.exec--
	if o.status != verbs.WCSuccess {
		q.n.stats.Errors++
		q.complete(o, true)
		q.n.freeOp(o)
		q.state = verbs.StateErr
		q.toError()
		return
	}
	q.complete(o, false)
	q.n.freeOp(o)
}

// complete reports o on the send CQ if it must be.
func (q *QP) complete(o *op, force bool) {
	if !force && !q.sigAll && o.flags&verbs.FlagSignaled == 0 && plant != "signal-all" {
		return
	}
	wc := verbs.WC{WRID: o.id, Status: o.status, QPN: q.qpn, ByteLen: uint32(o.length)}
	switch o.opcode {
	case verbs.OpSend, verbs.OpSendImm:
		wc.Opcode = verbs.WCSend
	case verbs.OpRead:
		wc.Opcode = verbs.WCRDMARead
	default:
		wc.Opcode = verbs.WCRDMAWrite
	}
	q.scq.add(wc)
}

// toError flushes every outstanding send and receive.
func (q *QP) toError() {
	n := q.n
	for _, o := range q.sq {
		o.status = verbs.WCWRFlushErr
		q.complete(o, true)
		n.stats.Flushes++
		n.freeOp(o)
	}
	q.sq = q.sq[:0]
	q.exec = 0
	q.blocked = false
	for {
		r, ok := q.rq.pop()
		if !ok {
			break
		}
		q.rcq.add(verbs.WC{WRID: r.id, Status: verbs.WCWRFlushErr, QPN: q.qpn})
		n.stats.Flushes++
	}
}

// RunClock advances the network to now() every period in a goroutine, for
// tests that drive the core in real time (byteexpress/realtime, berun):
// the in-memory NIC then moves data as a device would while the I/O
// threads poll. The returned stop ends the goroutine and waits for it.
func (n *Network) RunClock(now func() int64, period time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			n.Advance(now())
			time.Sleep(period)
		}
	}()
	return func() { close(done); wg.Wait() }
}
