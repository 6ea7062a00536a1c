package byteexpress

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/besim/besim/verbs"
)

// engine owns one RC QP and its transport state (paper §5.4, Figure 7): the
// send work-request ring, the receive buffers and credits, the send window,
// the sockets multiplexed on it and its keepalive timers. An engine belongs
// to exactly one I/O thread; every field below the first block is touched
// only by that thread's Poll.
type engine struct {
	// Set at creation (under Endpoint.mu), immutable afterwards.
	ep      *Endpoint
	th      *IOThread
	id      uint64
	remote  Addr
	active  bool // this side dialed (sends HELLO first)
	nextSID atomic.Uint32

	// Exposed buffers (§5.3.2 pre-known remote buffers): written by
	// Socket.Expose from any goroutine, consumed by the thread.
	expMu   sync.Mutex
	exp     []exposure
	expFree []uint32

	state engState
	err   error
	qp    verbs.QP
	qpn   uint32
	psn   uint32

	// Work-request ring of SQDepth entries (§5.4.1). Absolute indices:
	// [head, pend) in flight, [pend, tail) pending (prepared, not posted),
	// the rest free. The WR at index i lives in wrs[i%depth].
	depth         uint64
	wrs           []verbs.SendWR
	sges          []verbs.SGE
	slots         []wrSlot
	head          uint64
	pend          uint64
	tail          uint64
	inflightBytes int // bytes of posted, uncompleted WRs (the Cwnd quantity)
	pendingBytes  int
	curOpen       bool // the WR at tail-1 is a SEND that records may extend
	curFill       int
	staging       Buffer // SQDepth x sendBuf bytes, one SEND buffer per slot
	stagingBytes  []byte
	sendBuf       int

	// Peer-dependent sizes, fixed when the QP connects.
	sendCap  int // largest SEND: min(local staging, peer receive buffer, Cwnd)
	frag     int // effective fragment size S
	smallMax int // largest inline message
	peerFrag int // the peer's S, for pre-known buffer lengths
	cwnd     int

	// Receive credits (§5.4.2). credits: receives we may still consume at
	// the peer. toReturn: receives we re-posted and have not reported.
	creditsOn   bool
	credits     int
	initCredits int
	toReturn    int
	consumed    int // dedicated RQ: consumed, not yet re-posted
	rqDepth     int
	rqNext      uint64 // absolute index of the next receive to re-post
	recvMem     Buffer
	recvBytes   []byte
	rwrs        []verbs.RecvWR
	rsges       []verbs.SGE

	// Sockets.
	mine    map[uint32]*Socket // opened here
	theirs  map[uint32]*Socket // opened by the peer
	waiting []*Socket          // dialed before the engine was up
	rr      *Socket            // round-robin cursor over sendable sockets
	nactive int

	// Large messages: sender tokens and receiver slots.
	toks    []*outMsg
	tokFree []uint32
	in      []inSlot
	inFree  []uint32

	ctrl         []ctrlRec
	helloPending bool

	// Keepalive (§7.2) and connect timers.
	kaSeq       uint64
	peerSeq     uint64
	kaSendAt    time.Duration
	kaDeadline  time.Duration
	connDead    time.Duration
	kaDue       bool
	timerAt     time.Duration
	heapIdx     int
	dirty       bool
	listIdx     int
	connectOnce atomic.Bool
	reply       func(ConnInfo, error)
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

type slotKind uint8

const (
	slotSend slotKind = iota + 1
	slotWrite
)

// wrSlot is the bookkeeping of one ring entry.
type wrSlot struct {
	kind  slotKind
	bytes int
	msg   *outMsg // completion of this WR finishes msg (its last fragment)
}

type inSlot struct {
	buf  Buffer
	n    int
	sock *Socket
	used bool
}

type exposure struct {
	buf  Buffer
	sock *Socket
	used bool
}

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
	t.byQPN[e.qpn] = e
	init := verbs.QPAttr{State: verbs.StateInit, Port: cfg.Port,
		AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite}
	if err := qp.Modify(&init, verbs.AttrState|verbs.AttrPKeyIndex|verbs.AttrPort|verbs.AttrAccessFlags); err != nil {
		return fmt.Errorf("byteexpress: QP to INIT: %w", err)
	}

	e.depth = uint64(cfg.SQDepth)
	e.wrs = make([]verbs.SendWR, cfg.SQDepth)
	e.sges = make([]verbs.SGE, cfg.SQDepth)
	e.slots = make([]wrSlot, cfg.SQDepth)
	for i := range e.wrs {
		e.wrs[i].SGL = e.sges[i : i+1 : i+1]
	}
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
		e.rqDepth = d
		if e.recvMem, err = t.allocate(d * cfg.RecvBufSize); err != nil {
			return err
		}
		e.recvBytes = e.recvMem.Bytes()
		e.rwrs = make([]verbs.RecvWR, d)
		e.rsges = make([]verbs.SGE, d)
		for i := range e.rwrs {
			e.rsges[i] = verbs.SGE{Addr: e.recvMem.Addr() + uintptr(i*cfg.RecvBufSize),
				Length: uint32(cfg.RecvBufSize), LKey: e.recvMem.LKey()}
			e.rwrs[i].SGL = e.rsges[i : i+1 : i+1]
			e.rwrs[i].ID = wrRecv | uint64(i)
			if i+1 < d {
				e.rwrs[i].Next = &e.rwrs[i+1]
			}
		}
		t.ops.PostRecvs++
		t.ops.RecvWRs += d
		if _, err := qp.PostRecv(&e.rwrs[0]); err != nil {
			return fmt.Errorf("byteexpress: post receives: %w", err)
		}
		e.rwrs[d-1].Next = nil
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
		RecvBufSize: uint32(e.th.cfg.RecvBufSize), FragSize: uint32(e.th.fragSize())}
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
		AH: verbs.AHAttr{DGID: peer.QP.GID, HopLimit: 64, PortNum: cfg.Port}}
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
	e.creditsOn = peer.RecvDepth > 0
	e.credits = int(peer.RecvDepth)
	e.initCredits = e.credits
	e.cwnd = cfg.Cwnd
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
	if ka := t.cfg.KeepaliveInterval; ka > 0 {
		e.kaSendAt = t.now + ka
		e.kaDeadline = t.now + t.cfg.KeepaliveTimeout
	}
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
	} else if e.state == engUp && e.th.cfg.KeepaliveInterval > 0 {
		at = min(e.kaSendAt, e.kaDeadline)
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
		if now >= e.kaDeadline {
			e.fail(ErrKeepaliveTimeout)
			return
		}
		if now >= e.kaSendAt {
			e.kaDue = true
			e.kaSendAt = now + t.cfg.KeepaliveInterval
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

// ---- the send side: ring, credits, window ----

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

func (e *engine) ringFull() bool { return e.tail-e.head >= e.depth }

func (e *engine) cwndOK(n int) bool {
	return e.cwnd == 0 || e.inflightBytes+e.pendingBytes+n <= e.cwnd
}

// openSend starts a new SEND at the tail of the ring. A SEND that carries a
// credit return may take the last credit; any other needs two, so one
// credit is always kept for credit updates (see the package doc for why
// this cannot deadlock).
func (e *engine) openSend(need int) bool {
	st := &e.th.stats
	if e.ringFull() {
		st.RingStalls++
		return false
	}
	claim := e.toReturn > 0
	if e.creditsOn {
		min := 2
		if claim {
			min = 1
		}
		if e.credits < min {
			st.CreditStalls++
			return false
		}
	}
	if !e.cwndOK(hdrSize + need) {
		st.WindowStalls++
		return false
	}
	idx := e.tail
	e.tail++
	i := idx % e.depth
	if e.creditsOn {
		e.credits--
		if e.credits < st.MinCredits {
			st.MinCredits = e.credits
		}
	}
	sl := &e.slots[i]
	sl.kind, sl.bytes, sl.msg = slotSend, hdrSize, nil
	off := int(i) * e.sendBuf
	putHeader(e.stagingBytes[off:off+hdrSize], uint32(e.toReturn))
	if claim {
		st.CreditsReturned += e.toReturn
		e.toReturn = 0
	}
	wr := &e.wrs[i]
	wr.ID, wr.Opcode, wr.Imm, wr.RemoteAddr, wr.RKey = idx, verbs.OpSend, 0, 0, 0
	e.sges[i] = verbs.SGE{Addr: e.staging.Addr() + uintptr(off), LKey: e.staging.LKey()}
	e.pendingBytes += hdrSize
	e.curOpen, e.curFill = true, hdrSize
	return true
}

// record returns n bytes of room in the open SEND (opening one if needed),
// or nil if the ring, the credits or the window do not allow it.
func (e *engine) record(n int) []byte {
	if !e.curOpen || e.curFill+n > e.sendCap {
		if !e.openSend(n) {
			return nil
		}
	} else if !e.cwndOK(n) {
		e.th.stats.WindowStalls++
		return nil
	}
	i := (e.tail - 1) % e.depth
	off := int(i)*e.sendBuf + e.curFill
	b := e.stagingBytes[off : off+n : off+n]
	e.curFill += n
	e.slots[i].bytes += n
	e.pendingBytes += n
	e.th.ops.RecordsOut++
	return b
}

// openWrite prepares one WRITE (or, for the last fragment, WRITE_WITH_IMM)
// of m's next n bytes.
func (e *engine) openWrite(m *outMsg, n int, last bool) bool {
	st := &e.th.stats
	if e.ringFull() {
		st.RingStalls++
		return false
	}
	if last && e.creditsOn && e.credits < 2 {
		st.CreditStalls++
		return false
	}
	if !e.cwndOK(n) {
		st.WindowStalls++
		return false
	}
	idx := e.tail
	e.tail++
	i := idx % e.depth
	sl := &e.slots[i]
	sl.kind, sl.bytes, sl.msg = slotWrite, n, nil
	wr := &e.wrs[i]
	wr.ID, wr.Opcode, wr.Imm = idx, verbs.OpWrite, 0
	wr.RemoteAddr, wr.RKey = m.raddr+uint64(m.off), m.rkey
	e.sges[i] = verbs.SGE{Addr: m.buf.Addr() + uintptr(m.off), Length: uint32(n), LKey: m.buf.LKey()}
	if last {
		wr.Opcode, wr.Imm = verbs.OpWriteImm, m.imm
		sl.msg = m
		if e.creditsOn {
			e.credits--
			if e.credits < st.MinCredits {
				st.MinCredits = e.credits
			}
		}
	}
	e.pendingBytes += n
	e.curOpen = false
	m.off += n
	return true
}

// post rings one doorbell for all pending WRs; only the last is signalled.
func (e *engine) post() {
	if e.tail == e.pend || e.state != engUp {
		return
	}
	t := e.th
	for i := e.pend; i < e.tail; i++ {
		k := i % e.depth
		wr := &e.wrs[k]
		if e.slots[k].kind == slotSend {
			e.sges[k].Length = uint32(e.slots[k].bytes)
		}
		wr.Flags = 0
		if i+1 < e.tail {
			wr.Next = &e.wrs[(i+1)%e.depth]
		} else {
			wr.Next = nil
			wr.Flags = verbs.FlagSignaled
		}
	}
	n := int(e.tail - e.pend)
	first := &e.wrs[e.pend%e.depth]
	e.inflightBytes += e.pendingBytes
	e.pendingBytes = 0
	e.pend = e.tail
	e.curOpen = false
	t.ops.PostSends++
	t.ops.SendWRs += n
	t.ops.Signalled++
	st := &t.stats
	if occ := int(e.tail - e.head); occ > st.MaxRingOccupancy {
		st.MaxRingOccupancy = occ
	}
	if e.inflightBytes > st.MaxInflightBytes {
		st.MaxInflightBytes = e.inflightBytes
	}
	if tr := t.cfg.Trace; tr != nil {
		tr(TraceEvent{Kind: TracePost, Engine: e.id, WRs: n})
	}
	if _, err := e.qp.PostSend(first); err != nil {
		e.fail(fmt.Errorf("byteexpress: post_send: %w", err))
	}
}

// completeTo frees ring entries up to and including idx (a signalled WR
// completed, so all earlier unsignalled ones did too: RC completes in order).
func (e *engine) completeTo(idx uint64) {
	if idx < e.head || idx >= e.pend {
		e.fail(fmt.Errorf("byteexpress: completion for WR %d outside in-flight [%d,%d)", idx, e.head, e.pend))
		return
	}
	t := e.th
	for e.head <= idx {
		sl := &e.slots[e.head%e.depth]
		e.inflightBytes -= sl.bytes
		if m := sl.msg; m != nil {
			sl.msg = nil
			if m.failErr != nil {
				t.emit(Event{Kind: EvSendFailed, Socket: m.sock, Remote: e.remote, Buf: m.buf, Len: m.n, Err: m.failErr})
			} else {
				t.dealloc(m.buf)
				t.stats.MessagesSent++
			}
			t.freeMsg(m)
		}
		sl.bytes, sl.kind = 0, 0
		e.head++
	}
	e.markDirty()
}

// ---- scheduling ----

// fill runs one scheduling round: re-post receives, control records, then
// one turn per sendable socket while the ring has room, then posts.
func (e *engine) fill() {
	if e.state != engUp {
		return
	}
	e.repost()
	if e.helloPending {
		b := e.record(sizeHello)
		if b == nil {
			e.post()
			return
		}
		b[0] = recHello
		e.helloPending = false
	}
	if !e.flushCtrl() {
		e.post()
		return
	}
	if e.kaDue {
		if b := e.record(sizeKeepalive); b != nil {
			e.kaSeq++
			b[0] = recKeepalive
			le.PutUint64(b[1:], e.kaSeq)
			e.kaDue = false
			e.th.stats.KeepalivesSent++
		}
	}
	e.schedule()
	if e.toReturn > 0 && e.state == engUp && e.openSend(0) {
		e.th.stats.CreditUpdates++
	}
	e.post()
}

// flushCtrl writes queued control records; false if some remain.
func (e *engine) flushCtrl() bool {
	k := 0
	for ; k < len(e.ctrl); k++ {
		c := &e.ctrl[k]
		var b []byte
		switch c.kind {
		case recOpen, recClose, recSlotFree:
			if b = e.record(sizeOpen); b == nil {
				break
			}
			b[0] = c.kind
			le.PutUint32(b[1:], c.ref)
		case recMetaResp:
			if b = e.record(sizeMetaResp); b == nil {
				break
			}
			b[0] = recMetaResp
			le.PutUint32(b[1:], c.tok)
			b[5] = c.status
			le.PutUint32(b[6:], c.slot)
			le.PutUint64(b[10:], c.addr)
			le.PutUint32(b[18:], c.rkey)
			e.th.stats.MetaResponses++
		}
		if b == nil {
			break
		}
	}
	n := copy(e.ctrl, e.ctrl[k:])
	clear(e.ctrl[n:])
	e.ctrl = e.ctrl[:n]
	return n == 0
}

// schedule gives each sendable socket, in round-robin order, a turn of at
// most one fragment, until a whole pass makes no progress.
func (e *engine) schedule() {
	idle := 0
	for e.rr != nil && idle < e.nactive && e.state == engUp {
		if e.ringFull() && !e.curOpen {
			e.th.stats.RingStalls++
			return
		}
		s := e.rr
		next := s.rrNext // only s can leave the ring during its turn
		progressed := e.turn(s)
		e.rrUpdate(s)
		if e.nactive == 0 {
			e.rr = nil
		} else {
			e.rr = next
		}
		if progressed {
			idle = 0
		} else {
			idle++
		}
	}
}

// turn lets s prepare at most one metadata request and one fragment.
func (e *engine) turn(s *Socket) bool {
	t := e.th
	progressed := false
	if m := s.metaCur; m != nil && s.lookahead < t.cfg.MetaLookahead {
		if b := e.record(sizeMetaReq); b != nil {
			tok := e.allocTok(m)
			b[0] = recMetaReq
			le.PutUint32(b[1:], e.ref(s))
			le.PutUint32(b[5:], tok)
			le.PutUint64(b[9:], uint64(m.n))
			m.state, m.tok = msgMetaSent, tok
			s.lookahead++
			s.advanceMeta()
			t.stats.MetaRequests++
			progressed = true
		}
	}
	h := s.qhead
	if h == nil {
		if s.closing {
			if b := e.record(sizeClose); b != nil {
				b[0] = recClose
				le.PutUint32(b[1:], e.ref(s))
				e.dropSocket(s, EvClosed, nil)
				return true
			}
		}
		return progressed
	}
	switch h.state {
	case msgSmall:
		b := e.record(sizeDataHdr + h.n)
		if b == nil {
			return progressed
		}
		b[0] = recData
		le.PutUint32(b[1:], e.ref(s))
		le.PutUint32(b[5:], uint32(h.n))
		copy(b[sizeDataHdr:], h.buf.Bytes()[:h.n])
		t.ops.BytesCopied += int64(h.n)
		s.pop()
		if tr := t.cfg.Trace; tr != nil {
			tr(TraceEvent{Kind: TraceSmall, Engine: e.id, Socket: s.uid, Bytes: h.n})
		}
		t.dealloc(h.buf)
		t.freeMsg(h)
		t.stats.MessagesSent++
		t.stats.SmallSent++
		return true
	case msgReady:
		n := min(e.frag, h.n-h.off)
		last := h.off+n == h.n
		if !e.openWrite(h, n, last) {
			return progressed
		}
		if tr := t.cfg.Trace; tr != nil {
			tr(TraceEvent{Kind: TraceFragment, Engine: e.id, Socket: s.uid, Bytes: n})
		}
		if last {
			s.pop()
			if h.prebuilt {
				t.stats.PrebuiltSent++
			} else {
				s.lookahead--
				t.stats.LargeSent++
			}
		}
		return true
	}
	return progressed
}

// sendable reports whether a turn could do something for s now.
func (e *engine) sendable(s *Socket) bool {
	if s.state != sockOpen {
		return false
	}
	if s.metaCur != nil && s.lookahead < e.th.cfg.MetaLookahead {
		return true
	}
	h := s.qhead
	if h == nil {
		return s.closing
	}
	return h.state == msgSmall || h.state == msgReady
}

// rrUpdate puts s on or takes it off the round-robin ring.
func (e *engine) rrUpdate(s *Socket) {
	want := e.sendable(s)
	switch {
	case want && !s.inRR:
		s.inRR = true
		e.nactive++
		if e.rr == nil {
			s.rrNext, s.rrPrev = s, s
			e.rr = s
		} else {
			// Insert just before the cursor: s gets a turn after the others.
			p := e.rr.rrPrev
			s.rrPrev, s.rrNext = p, e.rr
			p.rrNext = s
			e.rr.rrPrev = s
		}
		e.markDirty()
	case !want && s.inRR:
		s.inRR = false
		e.nactive--
		if s.rrNext == s {
			e.rr = nil
		} else {
			s.rrPrev.rrNext = s.rrNext
			s.rrNext.rrPrev = s.rrPrev
			if e.rr == s {
				e.rr = s.rrNext
			}
		}
		s.rrNext, s.rrPrev = nil, nil
	}
}

// classify decides how a queued message travels, once the peer's sizes are
// known.
func (e *engine) classify(s *Socket, m *outMsg) {
	switch {
	case m.prebuilt:
		m.state = msgReady
		m.raddr, m.rkey = m.dst.Addr, m.dst.RKey
		last := (m.n - 1) / e.frag
		m.imm = immPrebuilt | m.dst.Token<<16 | uint32(last)
	case m.n <= e.smallMax:
		m.state = msgSmall
	default:
		m.state = msgNeedMeta
		if s.metaCur == nil {
			s.metaCur = m
		}
	}
}

// enqueue adds a message from the API to s.
func (e *engine) enqueue(s *Socket, m *outMsg) {
	s.enqueue(m)
	if e.state == engUp {
		e.classify(s, m)
		e.rrUpdate(s)
		e.markDirty()
	}
}

func (e *engine) allocTok(m *outMsg) uint32 {
	var tok uint32
	if k := len(e.tokFree); k > 0 {
		tok = e.tokFree[k-1]
		e.tokFree = e.tokFree[:k-1]
		e.toks[tok] = m
	} else {
		tok = uint32(len(e.toks))
		e.toks = append(e.toks, m)
	}
	return tok
}

// ---- the receive side ----

// repost re-posts consumed dedicated receives in batches of k = d/2, one
// post call per batch, and adds them to the credits to return (§5.4.2).
func (e *engine) repost() {
	if e.rqDepth == 0 {
		return
	}
	k := e.rqDepth / 2
	t := e.th
	for e.consumed >= k {
		d := uint64(e.rqDepth)
		first := e.rqNext % d
		for j := range uint64(k) {
			i := (e.rqNext + j) % d
			if j+1 < uint64(k) {
				e.rwrs[i].Next = &e.rwrs[(i+1)%d]
			} else {
				e.rwrs[i].Next = nil
			}
		}
		e.rqNext += uint64(k)
		e.consumed -= k
		t.ops.PostRecvs++
		t.ops.RecvWRs += k
		if _, err := e.qp.PostRecv(&e.rwrs[first]); err != nil {
			e.fail(fmt.Errorf("byteexpress: post_recv: %w", err))
			return
		}
		if e.creditsOnPeer() {
			e.toReturn += k
		}
	}
}

// creditsOnPeer: the peer counts credits towards us (we advertised a
// dedicated RQ).
func (e *engine) creditsOnPeer() bool { return e.rqDepth > 0 }

// onRecv handles a successful receive completion: a SEND's records, or the
// arrival of a large message (WRITE_WITH_IMM).
func (e *engine) onRecv(wc *verbs.WC, data []byte) {
	if e.rqDepth > 0 {
		e.consumed++
	}
	if wc.Opcode == verbs.WCRecvRDMAImm {
		e.onWriteImm(wc.Imm, int(wc.ByteLen))
	} else {
		e.onSend(data)
	}
	e.markDirty()
}

func (e *engine) protoErr(what string) {
	e.fail(fmt.Errorf("byteexpress: protocol error from %s: %s", e.remote, what))
}

func (e *engine) onSend(p []byte) {
	t := e.th
	if len(p) < hdrSize || le.Uint32(p[4:]) != wireMagic {
		e.protoErr("bad SEND header")
		return
	}
	if e.creditsOn {
		e.credits += int(le.Uint32(p))
		if e.credits > e.initCredits {
			e.protoErr("credit overflow")
			return
		}
	}
	p = p[hdrSize:]
	for len(p) > 0 && e.state != engFailed {
		t.ops.RecordsIn++
		switch p[0] {
		case recHello:
			p = p[sizeHello:]
			if e.state == engWaitHello {
				e.up()
			}
		case recOpen, recClose, recSlotFree:
			if len(p) < sizeOpen {
				e.protoErr("short record")
				return
			}
			kind, ref := p[0], le.Uint32(p[1:])
			p = p[sizeOpen:]
			switch kind {
			case recOpen:
				e.onOpen(ref)
			case recClose:
				if s := e.lookup(ref); s != nil {
					e.dropSocket(s, EvClosed, nil)
				}
			case recSlotFree:
				e.freeSlot(ref, true)
			}
		case recData:
			if len(p) < sizeDataHdr {
				e.protoErr("short record")
				return
			}
			ref, n := le.Uint32(p[1:]), int(le.Uint32(p[5:]))
			if len(p) < sizeDataHdr+n {
				e.protoErr("short data record")
				return
			}
			e.onData(ref, p[sizeDataHdr:sizeDataHdr+n])
			p = p[sizeDataHdr+n:]
		case recMetaReq:
			if len(p) < sizeMetaReq {
				e.protoErr("short record")
				return
			}
			e.onMetaReq(le.Uint32(p[1:]), le.Uint32(p[5:]), le.Uint64(p[9:]))
			p = p[sizeMetaReq:]
		case recMetaResp:
			if len(p) < sizeMetaResp {
				e.protoErr("short record")
				return
			}
			e.onMetaResp(le.Uint32(p[1:]), p[5], le.Uint32(p[6:]), le.Uint64(p[10:]), le.Uint32(p[18:]))
			p = p[sizeMetaResp:]
		case recKeepalive:
			if len(p) < sizeKeepalive {
				e.protoErr("short record")
				return
			}
			if seq := le.Uint64(p[1:]); seq > e.peerSeq {
				e.peerSeq = seq
				if e.state == engUp && t.cfg.KeepaliveInterval > 0 {
					e.kaDeadline = t.now + t.cfg.KeepaliveTimeout
					e.updateTimer()
				}
			}
			t.stats.KeepalivesRecv++
			p = p[sizeKeepalive:]
		default:
			e.protoErr(fmt.Sprintf("unknown record kind %d", p[0]))
			return
		}
	}
}

func (e *engine) onOpen(ref uint32) {
	if ref&sockOpener == 0 {
		e.protoErr("OPEN for a socket opened here")
		return
	}
	id := ref &^ sockOpener
	if e.theirs[id] != nil {
		return
	}
	if !e.ep.listening.Load() {
		e.ctrl = append(e.ctrl, ctrlRec{kind: recClose, ref: id})
		return
	}
	s := &Socket{id: id, eng: e, uid: e.ep.sockUID.Add(1), state: sockOpen}
	e.theirs[id] = s
	e.th.emit(Event{Kind: EvAccepted, Socket: s, Remote: e.remote})
}

func (e *engine) onData(ref uint32, payload []byte) {
	t := e.th
	s := e.lookup(ref)
	if s == nil || s.state != sockOpen {
		t.stats.Dropped++
		return
	}
	buf, err := t.allocate(len(payload))
	if err != nil {
		t.stats.Dropped++
		return
	}
	copy(buf.Bytes(), payload)
	t.ops.BytesCopied += int64(len(payload))
	t.deliver(s, buf, len(payload))
}

func (e *engine) onMetaReq(ref, tok uint32, n uint64) {
	t := e.th
	s := e.lookup(ref)
	rec := ctrlRec{kind: recMetaResp, tok: tok}
	switch {
	case s == nil || s.state != sockOpen:
		rec.status = metaNoSock
	case n == 0 || n > uint64(maxInt):
		rec.status = metaNoMem
	default:
		buf, err := t.allocate(int(n))
		if err != nil {
			rec.status = metaNoMem
			break
		}
		var slot uint32
		if k := len(e.inFree); k > 0 {
			slot = e.inFree[k-1]
			e.inFree = e.inFree[:k-1]
		} else if len(e.in) < maxSlots {
			slot = uint32(len(e.in))
			e.in = append(e.in, inSlot{})
		} else {
			t.dealloc(buf)
			rec.status = metaNoMem
			break
		}
		e.in[slot] = inSlot{buf: buf, n: int(n), sock: s, used: true}
		rec.slot, rec.addr, rec.rkey = slot, uint64(buf.Addr()), buf.RKey()
	}
	e.ctrl = append(e.ctrl, rec)
}

const maxInt = int(^uint(0) >> 1)

func (e *engine) onMetaResp(tok uint32, status uint8, slot uint32, addr uint64, rkey uint32) {
	t := e.th
	if int(tok) >= len(e.toks) || e.toks[tok] == nil {
		e.protoErr("metadata response for an unknown token")
		return
	}
	m := e.toks[tok]
	e.toks[tok] = nil
	e.tokFree = append(e.tokFree, tok)
	if m.sock == nil { // orphaned: its socket went away while we waited
		if status == metaOK {
			e.ctrl = append(e.ctrl, ctrlRec{kind: recSlotFree, ref: slot})
		}
		t.freeMsg(m)
		return
	}
	s := m.sock
	if status != metaOK {
		s.lookahead--
		s.remove(m)
		err := ErrNoMemory
		if status == metaNoSock {
			err = ErrClosed
		}
		t.emit(Event{Kind: EvSendFailed, Socket: s, Remote: e.remote, Buf: m.buf, Len: m.n, Err: err})
		t.freeMsg(m)
		e.rrUpdate(s)
		return
	}
	if slot&immPrebuilt != 0 {
		e.protoErr("slot number out of range")
		return
	}
	m.state = msgReady
	m.raddr, m.rkey, m.imm, m.slot, m.hasSlot = addr, rkey, slot, slot, true
	e.rrUpdate(s)
}

// onWriteImm: the last fragment of a large message arrived; the completion
// guarantees that all earlier fragments are visible (§5.3.2).
func (e *engine) onWriteImm(imm uint32, byteLen int) {
	t := e.th
	if imm&immPrebuilt != 0 {
		tok := (imm >> 16) & (maxExposeTokens - 1)
		n := int(imm&(maxPrebuiltFrag-1))*e.peerFrag + byteLen
		ex, ok := e.takeExposure(tok)
		if !ok {
			e.protoErr("write into an unexposed buffer")
			return
		}
		if n > ex.buf.Len() {
			e.protoErr("write beyond an exposed buffer")
			return
		}
		if ex.sock.state != sockOpen {
			t.emit(Event{Kind: EvBufferReturned, Socket: ex.sock, Remote: e.remote, Buf: ex.buf})
			return
		}
		t.deliver(ex.sock, ex.buf, n)
		return
	}
	if int(imm) >= len(e.in) || !e.in[imm].used {
		e.protoErr("write for an unknown slot")
		return
	}
	sl := e.in[imm]
	e.in[imm] = inSlot{}
	e.inFree = append(e.inFree, imm)
	if sl.sock.state != sockOpen {
		t.dealloc(sl.buf)
		t.stats.Dropped++
		return
	}
	t.deliver(sl.sock, sl.buf, sl.n)
}

// freeSlot releases a receiver slot the sender abandoned.
func (e *engine) freeSlot(slot uint32, fromPeer bool) {
	if int(slot) >= len(e.in) || !e.in[slot].used {
		if fromPeer {
			e.protoErr("SLOT_FREE for an unknown slot")
		}
		return
	}
	e.th.dealloc(e.in[slot].buf)
	e.in[slot] = inSlot{}
	e.inFree = append(e.inFree, slot)
}

// ---- exposure table ----

func (e *engine) expose(buf Buffer, s *Socket) (uint32, bool) {
	e.expMu.Lock()
	defer e.expMu.Unlock()
	var tok uint32
	if k := len(e.expFree); k > 0 {
		tok = e.expFree[k-1]
		e.expFree = e.expFree[:k-1]
	} else if len(e.exp) < maxExposeTokens {
		tok = uint32(len(e.exp))
		e.exp = append(e.exp, exposure{})
	} else {
		return 0, false
	}
	e.exp[tok] = exposure{buf: buf, sock: s, used: true}
	return tok, true
}

func (e *engine) takeExposure(tok uint32) (exposure, bool) {
	e.expMu.Lock()
	defer e.expMu.Unlock()
	if int(tok) >= len(e.exp) || !e.exp[tok].used {
		return exposure{}, false
	}
	ex := e.exp[tok]
	e.exp[tok] = exposure{}
	e.expFree = append(e.expFree, tok)
	return ex, true
}

// returnExposures hands back every buffer exposed on s (all if s is nil).
func (e *engine) returnExposures(s *Socket, shutdown bool) {
	e.expMu.Lock()
	var back []exposure
	for i := range e.exp {
		if ex := e.exp[i]; ex.used && (s == nil || ex.sock == s) {
			back = append(back, ex)
			e.exp[i] = exposure{}
			e.expFree = append(e.expFree, uint32(i))
		}
	}
	e.expMu.Unlock()
	for _, ex := range back {
		if shutdown {
			e.th.dealloc(ex.buf)
		} else {
			e.th.emit(Event{Kind: EvBufferReturned, Socket: ex.sock, Remote: e.remote, Buf: ex.buf})
		}
	}
}

// ---- socket teardown ----

// dropSocket removes s from the engine, failing what it still had queued.
// kind is EvClosed or EvSocketFailed.
func (e *engine) dropSocket(s *Socket, kind EventKind, err error) {
	if s.state == sockGone {
		return
	}
	t := e.th
	e.failQueue(s, ErrClosed, false)
	s.state = sockGone
	s.dead.Store(true)
	e.rrUpdate(s)
	if s.local {
		delete(e.mine, s.id)
	} else {
		delete(e.theirs, s.id)
	}
	e.returnExposures(s, false)
	t.emit(Event{Kind: kind, Socket: s, Remote: e.remote, Err: err})
}

// failQueue fails the messages queued on s. With the engine alive, a
// receiver slot already granted is released with SLOT_FREE (posted after any
// fragments already in flight, so RC ordering keeps the release behind
// them), a message whose metadata request is outstanding stays in the token
// table until its response arrives (then its slot is released), and a
// message with fragments in flight is reported when its last posted WR
// completes, so the buffer goes back only when the NIC no longer reads it.
func (e *engine) failQueue(s *Socket, err error, shutdown bool) {
	t := e.th
	alive := e.state == engUp
	for s.qhead != nil {
		m := s.pop()
		if m.hasSlot && alive {
			e.ctrl = append(e.ctrl, ctrlRec{kind: recSlotFree, ref: m.slot})
		}
		if m.off > 0 && alive {
			if sl := e.lastWriteSlot(m); sl != nil {
				m.failErr = err
				sl.msg = m
				continue
			}
		}
		if shutdown {
			t.dealloc(m.buf)
		} else {
			t.emit(Event{Kind: EvSendFailed, Socket: s, Remote: e.remote, Buf: m.buf, Len: m.n, Err: err})
		}
		if m.state == msgMetaSent {
			// Still referenced by e.toks: onMetaResp or teardown frees it.
			m.sock, m.buf = nil, Buffer{}
			continue
		}
		t.freeMsg(m)
	}
	s.metaCur = nil
	s.lookahead = 0
}

// lastWriteSlot finds the most recent uncompleted WRITE of m's buffer.
func (e *engine) lastWriteSlot(m *outMsg) *wrSlot {
	base, end := m.buf.Addr(), m.buf.Addr()+uintptr(m.n)
	for i := e.tail; i > e.head; i-- {
		k := (i - 1) % e.depth
		if e.slots[k].kind == slotWrite {
			if a := e.sges[k].Addr; a >= base && a < end {
				return &e.slots[k]
			}
		}
	}
	return nil
}

// ---- engine failure and reclamation ----

// fail puts the engine in the error state, tells the upper layer and
// reclaims everything (§7.2): the QP is destroyed first so the NIC no longer
// touches any buffer, then buffers go back to the allocator and sockets
// fail.
func (e *engine) fail(err error) { e.teardown(err, false) }

func (e *engine) teardown(err error, shutdown bool) {
	if e.state == engFailed {
		return
	}
	t := e.th
	e.state, e.err = engFailed, err
	e.ep.forget(e)
	t.timers.remove(e)
	t.removeEngine(e)
	if e.qp != nil {
		_ = e.qp.Modify(&verbs.QPAttr{State: verbs.StateErr}, verbs.AttrState)
		_ = e.qp.Destroy()
		delete(t.byQPN, e.qpn)
		t.cqUsed -= t.cfg.perEngineCQEs()
		e.qp = nil
	}
	if e.reply != nil {
		r := e.reply
		e.reply = nil
		r(ConnInfo{}, err)
	}
	// Messages whose last WR was posted but not completed.
	for i := e.head; i < e.tail; i++ {
		sl := &e.slots[i%e.depth]
		if m := sl.msg; m != nil {
			sl.msg = nil
			if shutdown {
				t.dealloc(m.buf)
			} else {
				ferr := err
				if m.failErr != nil {
					ferr = m.failErr
				}
				t.emit(Event{Kind: EvSendFailed, Socket: m.sock, Remote: e.remote, Buf: m.buf, Len: m.n, Err: ferr})
			}
			t.freeMsg(m)
		}
	}
	e.head, e.pend, e.tail = 0, 0, 0
	e.inflightBytes, e.pendingBytes = 0, 0
	socks := make([]*Socket, 0, len(e.mine)+len(e.theirs)+len(e.waiting))
	for _, s := range e.mine {
		socks = append(socks, s)
	}
	for _, s := range e.theirs {
		socks = append(socks, s)
	}
	socks = append(socks, e.waiting...)
	sortSockets(socks)
	for _, s := range socks {
		if s.state == sockGone {
			continue
		}
		e.failQueue(s, err, shutdown)
		s.state = sockGone
		s.dead.Store(true)
		e.returnExposures(s, shutdown)
		if !shutdown {
			t.emit(Event{Kind: EvSocketFailed, Socket: s, Remote: e.remote, Err: err})
		}
	}
	e.returnExposures(nil, shutdown)
	clear(e.mine)
	clear(e.theirs)
	e.waiting = nil
	e.rr, e.nactive = nil, 0
	for i, m := range e.toks {
		if m != nil {
			if m.sock != nil {
				if shutdown {
					t.dealloc(m.buf)
				} else {
					t.emit(Event{Kind: EvSendFailed, Socket: m.sock, Remote: e.remote, Buf: m.buf, Len: m.n, Err: err})
				}
			}
			t.freeMsg(m)
			e.toks[i] = nil
		}
	}
	for i := range e.in {
		if e.in[i].used {
			t.dealloc(e.in[i].buf)
			e.in[i] = inSlot{}
		}
	}
	e.ctrl = nil
	if !e.recvMem.IsZero() {
		t.dealloc(e.recvMem)
		e.recvMem, e.recvBytes = Buffer{}, nil
	}
	if !e.staging.IsZero() {
		t.dealloc(e.staging)
		e.staging, e.stagingBytes = Buffer{}, nil
	}
	if !shutdown {
		t.stats.EngineErrors++
		t.emit(Event{Kind: EvEngineError, Remote: e.remote, Err: err})
	}
}

func sortSockets(s []*Socket) {
	slices.SortFunc(s, func(a, b *Socket) int { return cmp.Compare(a.uid, b.uid) })
}
