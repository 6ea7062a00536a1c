package byteexpress

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/besim/besim/verbs"
)

// engine owns one RC QP and its transport state (paper §5.4, Figure 7): the
// send work-request ring, the receive buffers and credits, the send window,
// the sockets multiplexed on it and its keepalive timers. An engine belongs
// to exactly one I/O thread. th and the block "Set at creation" are
// immutable once the engine exists, exp is written from any goroutine and
// nextSID and connectOnce are atomics; every other field is touched only by
// that thread's Poll.
type engine struct {
	// The fields are ordered by use, for the cache: what a completion,
	// a received record and a fill read first (the thread, the QP, the
	// state and flags, the ring, window and credits), then the staging,
	// sizes, sockets, records and timers; what is set at creation or used
	// at connection time last.
	th           *IOThread
	qp           verbs.QP
	qpn          uint32
	psn          uint32
	state        engState
	dirty        bool
	curOpen      bool // the WR at tail-1 is a SEND that records may extend
	helloPending bool
	curFill      int
	rr           *Socket // round-robin cursor over sendable sockets
	nactive      int

	ring wrRing       // the send work requests (§5.4.1)
	win  sendWindow   // bytes in flight against Cwnd (§6.3)
	cred creditLedger // receive credits, both directions (§5.4.2)

	// The SEND being filled with records, and the staging memory behind
	// the ring: one sendBuf-byte SEND buffer per ring slot.
	stagingBytes []byte
	sendBuf      int

	// Peer-dependent sizes, fixed when the QP connects.
	sendCap  int // largest SEND: min(local staging, peer receive buffer, Cwnd)
	frag     int // effective fragment size S
	smallMax int // largest inline message
	peerFrag int // the peer's S, for pre-known buffer lengths

	// The dedicated receive queue (nil in SRQ mode, where a server holds
	// one engine per client host: out of line, it costs those engines one
	// pointer instead of 96 bytes).
	drq *dedicatedRQ

	// Sockets.
	mine   map[uint32]*Socket // opened here
	theirs map[uint32]*Socket // opened by the peer

	ctrl []ctrlRec

	// Keepalive (§7.2) and connect timers.
	ka      keepalive
	timerAt time.Duration
	heapIdx int

	// Large messages (§5.3.2): sender tokens and receiver slots.
	toks tokenTable
	in   slotTable

	// Set at creation (under Endpoint.mu), immutable afterwards.
	ep      *Endpoint
	id      uint64
	remote  Addr
	label   uint32 // flow label of the QP's path (DialPath; 0: not pinned)
	active  bool   // this side dialed (sends HELLO first)
	nextSID atomic.Uint32

	// Exposed buffers (§5.3.2 pre-known remote buffers): written by
	// Socket.Expose from any goroutine, consumed by the thread.
	exp exposureTable

	err         error
	staging     Buffer
	waiting     []*Socket // dialed before the engine was up
	connDead    time.Duration
	listIdx     int
	connectOnce atomic.Bool
	reply       func(ConnInfo, error)
}

// dedicatedRQ is an engine's own receive queue: RQDepth buffers of
// RecvBufSize bytes and their work requests.
type dedicatedRQ struct {
	mem   Buffer
	bytes []byte
	wrs   []verbs.RecvWR
	sges  []verbs.SGE
}

type engState uint8

const (
	engPending    engState = iota // created by Dial/HandleConnect; thread has not set it up
	engConnecting                 // active: QP in INIT, out-of-band exchange running
	engWaitHello                  // passive: QP in RTS, waiting for the dialer's first SEND
	engUp
	engFailed
)

var engStateNames = [...]string{"pending", "connecting", "wait-hello", "up", "failed"}

func (s engState) String() string { return engStateNames[s] }

type ctrlRec struct {
	kind   uint8
	ref    uint32
	tok    uint32
	status uint8
	slot   uint32
	addr   uint64
	rkey   uint32
}

const (
	recSlotFree  = 8
	sizeSlotFree = 5

	wrRecv = 1 << 63
	wrSRQ  = 1 << 62
)

// ---- setup ----

// setup creates the QP (INIT), the ring and the receive buffers. Called by
// the owning thread.
func (e *engine) setup() error {
	t := e.th
	cfg := &t.cfg
	if t.cqUsed+cfg.perEngineCQEs() > cfg.CQDepth-cfg.srqCQEs() {
		return ErrThreadFull
	}
	attr := verbs.QPInitAttr{Type: verbs.RC, SendCQ: t.cq, RecvCQ: t.cq, SRQ: t.srq, TD: t.td,
		MaxSendWR: cfg.SQDepth, MaxSGE: 1}
	if t.srq == nil {
		attr.MaxRecvWR = cfg.RQDepth
	}
	qp, err := e.ep.p.PD.CreateQP(attr)
	if err != nil {
		return fmt.Errorf("byteexpress: create QP: %w", err)
	}
	e.qp, e.qpn = qp, qp.QPN()
	e.psn = (e.qpn * 2654435761) & 0xffffff
	t.cqUsed += cfg.perEngineCQEs()
	t.byQPN.set(e.qpn, e)
	init := verbs.QPAttr{State: verbs.StateInit, Port: cfg.Port,
		AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite}
	if err := qp.Modify(&init, verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		return fmt.Errorf("byteexpress: QP to INIT: %w", err)
	}

	e.ring.init(cfg.SQDepth)
	e.ka.interval, e.ka.timeout = cfg.KeepaliveInterval, cfg.KeepaliveTimeout
	e.sendBuf = cfg.RecvBufSize
	if cfg.Cwnd > 0 && cfg.Cwnd < e.sendBuf {
		e.sendBuf = cfg.Cwnd
	}
	if e.staging, err = t.allocate(cfg.SQDepth * e.sendBuf); err != nil {
		return err
	}
	e.stagingBytes = e.staging.Bytes()
	e.mine = make(map[uint32]*Socket)
	e.theirs = make(map[uint32]*Socket)

	if t.srq == nil {
		d := cfg.RQDepth
		e.cred.rqDepth = d
		r := &dedicatedRQ{}
		e.drq = r
		if r.mem, err = t.allocate(d * cfg.RecvBufSize); err != nil {
			return err
		}
		r.bytes = r.mem.Bytes()
		r.wrs = make([]verbs.RecvWR, d)
		r.sges = make([]verbs.SGE, d)
		for i := range r.wrs {
			r.sges[i] = verbs.SGE{Addr: r.mem.Addr() + uintptr(i*cfg.RecvBufSize),
				Length: uint32(cfg.RecvBufSize), LKey: r.mem.LKey()}
			r.wrs[i].SGL = r.sges[i : i+1 : i+1]
			r.wrs[i].ID = wrRecv | uint64(i)
			if i+1 < d {
				r.wrs[i].Next = &r.wrs[i+1]
			}
		}
		t.ops.PostRecvs++
		t.ops.RecvWRs += d
		if _, err := qp.PostRecv(&r.wrs[0]); err != nil {
			return fmt.Errorf("byteexpress: post receives: %w", err)
		}
		r.wrs[d-1].Next = nil
	}
	return nil
}

// localInfo is what this engine tells its peer.
func (e *engine) localInfo() ConnInfo {
	attr := e.ep.p.Context.Attr()
	mtu := attr.PortMTU
	if !mtu.Valid() {
		mtu = 1024
	}
	ci := ConnInfo{QP: verbs.QPInfo{QPN: e.qpn, PSN: e.psn, GID: attr.GID, MTU: mtu},
		RecvBufSize: uint32(e.th.cfg.RecvBufSize), FragSize: uint32(e.th.fragSize()), FlowLabel: e.label}
	if e.th.srq == nil {
		ci.RecvDepth = uint32(e.th.cfg.RQDepth)
	}
	return ci
}

// connect moves the QP to RTR and RTS towards peer and adopts its sizes.
func (e *engine) connect(peer ConnInfo) error {
	cfg := &e.th.cfg
	mtu := e.ep.p.Context.Attr().PortMTU
	if !mtu.Valid() {
		mtu = 1024
	}
	if peer.QP.MTU.Valid() && peer.QP.MTU < mtu {
		mtu = peer.QP.MTU
	}
	rtr := verbs.QPAttr{State: verbs.StateRTR, PathMTU: mtu, DestQPN: peer.QP.QPN, RQPSN: peer.QP.PSN,
		MaxDestRdAtomic: 1, MinRNRTimer: cfg.MinRNRTimer,
		AH: verbs.AHAttr{DGID: peer.QP.GID, SGIDIndex: cfg.GIDIndex, HopLimit: 64, TrafficClass: cfg.TrafficClass,
			ServiceLevel: cfg.ServiceLevel, PortNum: cfg.Port, FlowLabel: e.label}}
	if err := e.qp.Modify(&rtr, verbs.AttrState|verbs.AttrAV|verbs.AttrPathMTU|verbs.AttrDestQPN|
		verbs.AttrRQPSN|verbs.AttrMaxDestRdAtomic|verbs.AttrMinRNRTimer); err != nil {
		return fmt.Errorf("byteexpress: QP to RTR: %w", err)
	}
	rts := verbs.QPAttr{State: verbs.StateRTS, Timeout: cfg.AckTimeout, RetryCnt: cfg.RetryCnt,
		RNRRetry: cfg.RNRRetry, SQPSN: e.psn, MaxRdAtomic: 1}
	if err := e.qp.Modify(&rts, verbs.AttrState|verbs.AttrTimeout|verbs.AttrRetryCnt|
		verbs.AttrRNRRetry|verbs.AttrSQPSN|verbs.AttrMaxQPRdAtomic); err != nil {
		return fmt.Errorf("byteexpress: QP to RTS: %w", err)
	}
	e.cred.start(int(peer.RecvDepth))
	e.win.cwnd = cfg.Cwnd
	e.sendCap = min(e.sendBuf, int(peer.RecvBufSize))
	e.frag = e.th.fragSize()
	e.smallMax = min(cfg.SmallMsgMax, e.sendCap-hdrSize-sizeDataHdr)
	e.peerFrag = int(peer.FragSize)
	return nil
}

// up marks the engine established: sockets waiting for it connect.
func (e *engine) up() {
	t := e.th
	e.state = engUp
	if e.active {
		e.helloPending = true
	}
	e.ka.start(t.now)
	e.connDead = Never
	e.updateTimer()
	for _, s := range e.waiting {
		if s.state == sockGone {
			continue
		}
		e.openSocket(s)
		for m := s.qhead; m != nil; m = m.next {
			e.classify(s, m)
		}
		e.rrUpdate(s)
	}
	e.waiting = e.waiting[:0]
	e.markDirty()
}

// openSocket announces a dialed socket to the peer and reports it connected.
func (e *engine) openSocket(s *Socket) {
	s.state = sockOpen
	e.mine[s.id] = s
	e.ctrl = append(e.ctrl, ctrlRec{kind: recOpen, ref: e.ref(s)})
	e.th.emit(Event{Kind: EvConnected, Socket: s, Remote: e.remote})
}

// ---- timers ----

func (e *engine) updateTimer() {
	at := Never
	if e.state == engConnecting || e.state == engWaitHello {
		at = e.connDead
	} else if e.state == engUp && e.ka.on() {
		at = e.ka.next()
	}
	e.timerAt = at
	e.th.timers.update(e)
}

func (e *engine) onTimer() {
	t := e.th
	now := t.now
	t.ops.Timers++
	switch e.state {
	case engConnecting, engWaitHello:
		if now >= e.connDead {
			e.fail(ErrConnectTimeout)
			return
		}
	case engUp:
		expired, send := e.ka.tick(now)
		if expired {
			e.fail(ErrKeepaliveTimeout)
			return
		}
		if send {
			e.markDirty()
		}
	}
	e.updateTimer()
}

func (e *engine) markDirty() {
	if !e.dirty {
		e.dirty = true
		e.th.dirty = append(e.th.dirty, e)
	}
}

func (e *engine) ref(s *Socket) uint32 {
	if s.local {
		return s.id | sockOpener
	}
	return s.id
}

func (e *engine) lookup(ref uint32) *Socket {
	if ref&sockOpener != 0 {
		return e.theirs[ref&^sockOpener]
	}
	return e.mine[ref]
}
