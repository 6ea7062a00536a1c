package rnic

import (
	"errors"
	"fmt"

	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
)

// QPStats are a QP's counters.
type QPStats struct {
	TxPackets, TxBytes uint64
	TxPayload          uint64 // payload bytes of data packets sent (requests and READ responses)
	RxPackets, RxBytes uint64
	RxPayload          uint64 // payload accepted in order (responder data, READ responses)
	CacheHits          uint64 // QP context cache lookups (TX and RX) that hit
	CacheMisses        uint64
	Retransmits        uint64
	SeqNAKs            uint64 // NAK sequence errors received (requester)
	RNRNAKs            uint64 // RNR NAKs received (requester)
	Timeouts           uint64
	CNPsSent           uint64     // by this QP's notification point
	CNPsHandled        uint64     // by this QP's reaction point
	Rate               units.Rate // current DCQCN rate (line rate without DCQCN)
}

// swqe is a send WQE as the NIC holds it.
type swqe struct {
	id       uint64
	op       verbs.Opcode
	signaled bool
	inline   bool
	bf       bool // posted alone to an idle SQ: the WQE came with the doorbell
	imm      uint32
	raddr    uint64
	rkey     uint32
	// The scatter list is q.sges[pos*maxSGE:][:nsge] (QP.wsgl): the WQE's
	// position in the SQ is fixed, so it needs no slice header of its own
	// (24 bytes a WQE, 192 a QP at the training scenario's 8 send WRs).
	pos    uint16
	nsge   uint8
	length int64
	msgOff int64 // SendWR.MsgOffset (RDMAHead counts from the message start)
	avail  sim.Time
	// UD destination.
	dnode fabric.NodeID
	dqpn  uint32
	qkey  uint32
	dprio uint8
	// RC progress.
	firstPSN uint32
	npkts    uint32
	readRcvd uint32
}

// readJob is an RDMA READ the responder is serving.
type readJob struct {
	psn    uint32
	npkts  uint32
	sent   uint32
	addr   uint64
	length int64
	mr     *MR
}

// inlineData holds the payload copies of a QP's inline WQEs, data[pos]
// for the WQE at SQ position pos (cap maxInline once used). Few QPs post
// inline WQEs (the ByteExpress core posts none), so a QP holds this only
// from its first: 24 bytes a WQE fewer for the others.
type inlineData struct {
	data [][]byte
}

// QP is a queue pair. Its methods implement verbs.QP. Its one-byte fields
// are kept together (flags), so that padding does not round the QP up a
// size class: 85,808 of them in the training scenario.
type QP struct {
	// The fields are ordered by use, for the cache: what the NIC's transmit
	// arbiter reads at every visit (nextData, hasTX, prepare, build) first,
	// with the flags; then what a received packet reads (Receive, respond,
	// onAck); then the rest. A visit to a cold QP then misses on few lines.

	// Transmit arbiter and requester (cache lines 0-2).
	nic              *NIC
	actNext, actPrev *QP
	qpn              uint32
	flow             uint32
	// lruAt stamps the last use of the context cache entry (0: not cached).
	lruAt uint64
	// cacheHits counts the context cache hits (QPStats.CacheHits), here
	// beside lruAt, which every lookup reads, rather than in st.
	cacheHits uint64
	rdN       int32 // READs queued at the responder (reads)
	readsOut  int32
	maxRd     int32

	// Send queue: counters, index = counter mod len(sq).
	sq                             []swqe
	sqHead, sqCur, sqNext, sqTail  uint32
	sndPSN, maxPSN, unaPSN, hiSent uint32
	destNode                       fabric.NodeID
	destQPN                        uint32

	// Transmit engine.
	readyAt, nextTxAt, rnrUntil sim.Time
	mtu                         int64
	// Congestion control (Config.CC). A DCQCN reaction point before its
	// first CNP runs at line rate and does nothing else (no timer, no byte
	// counter), so a QP holds none until then: ccOn says one is due, cc
	// is nil until the first CNP allocates it, and ccNow is the latest
	// time the reaction point would have seen (its clock is monotone).
	// That is 288 bytes fewer per QP for the QPs that never see a CNP
	// (most of the training scenario's 85,808).
	cc    dcqcn.Controller
	ccNow sim.Time

	sges []verbs.SGE // the WQEs' scatter lists, maxSGE each
	pd   *PD
	scq  *CQ
	unit int

	// flags: the one-byte fields, by group.
	typ                  verbs.QPType
	path                 uint8 // fabric.Packet.Path of the QP's frames (AH flow label)
	dead                 bool
	state                verbs.QPState
	sigAll               bool
	prio                 uint8 // attributes
	retryCnt             uint8
	rnrRetry             uint8
	minRNR               uint8
	gapSet               bool // send queue
	winWait              bool // a WQE waits for the PSN window (maxUnacked)
	prepared             bool // transmit engine
	warm                 bool
	ccOn                 bool
	nakSent              bool // responder
	curActive, curBad    bool
	wrActive, ackPending bool
	ackSyn, ackCode      uint8
	npOn                 bool
	inAct, inCtrl, inCNP bool // NIC lists

	hiAcked uint32 // PSN after the highest the responder acknowledged
	gapPSN  uint32

	// Responder.
	ePSN     uint32
	ackPSN   uint32
	access   verbs.Access
	qkey     uint32
	rcq      *CQ
	srq      *SRQ
	rq       *recvQueue // its own receive queue; nil on an SRQ
	cur      rwqe
	curOff   int64
	curView  []byte // RecvView: the bytes of the receive in progress
	wrMR     *MR
	wrLen    int64
	ackAt    sim.Time
	ctrlNext *QP
	cnpNext  *QP
	timeout  sim.Time // 0: none
	rexmit   sim.Timer

	st QPStats

	np         dcqcn.NotificationPoint
	retryLeft  int
	rnrLeft    int
	readDataAt sim.Time
	reads      []readJob
	rdHead     int
	readsCap   int // len(reads) once allocated (on the first READ served)
	deferred   fabric.Queue
	inl        *inlineData // inline payload copies; nil until the first inline WQE

	// Attributes and resources.
	ctx       *Context
	td        *TD
	bf        *bfreg
	maxSend   int
	maxSGE    int
	maxDestRd int
	sqPSN     uint32
	rqPSN     uint32
}

var errState = errors.New("rnic: QP state does not allow this")

// CreateQP creates an RC or UD QP in RESET.
func (pd *PD) CreateQP(attr verbs.QPInitAttr) (verbs.QP, error) {
	if pd.dead || pd.ctx.closed {
		return nil, errClosed
	}
	c := pd.ctx
	n := c.nic
	if attr.Type != verbs.RC && attr.Type != verbs.UD {
		return nil, fmt.Errorf("rnic: QP type %v: %w", attr.Type, verbs.ErrNotSupported)
	}
	scq, ok1 := attr.SendCQ.(*CQ)
	rcq, ok2 := attr.RecvCQ.(*CQ)
	if !ok1 || !ok2 || scq == nil || rcq == nil || scq.ctx != c || rcq.ctx != c || scq.dead || rcq.dead {
		return nil, fmt.Errorf("rnic: CreateQP needs send and receive CQs of this context")
	}
	var srq *SRQ
	if attr.SRQ != nil {
		s, ok := attr.SRQ.(*SRQ)
		if !ok || s.pd.ctx != c || s.dead {
			return nil, errForeign
		}
		srq = s
	}
	var td *TD
	if attr.TD != nil {
		t, ok := attr.TD.(*TD)
		if !ok || t.ctx != c || t.dead {
			return nil, errForeign
		}
		td = t
	}
	if attr.MaxSendWR < 1 || attr.MaxSendWR > maxQPWR {
		return nil, fmt.Errorf("rnic: MaxSendWR %d out of 1..%d", attr.MaxSendWR, maxQPWR)
	}
	if srq == nil && (attr.MaxRecvWR < 0 || attr.MaxRecvWR > maxQPWR) {
		return nil, fmt.Errorf("rnic: MaxRecvWR %d out of 0..%d", attr.MaxRecvWR, maxQPWR)
	}
	if attr.MaxSGE > maxSGE {
		return nil, fmt.Errorf("rnic: MaxSGE %d above %d", attr.MaxSGE, maxSGE)
	}
	if len(n.qps) >= 1<<24-qpnBase {
		return nil, fmt.Errorf("rnic: out of QP numbers")
	}
	q := &QP{nic: n, ctx: c, pd: pd, typ: attr.Type, scq: scq, rcq: rcq, srq: srq, td: td,
		sigAll: attr.SigAll, maxSend: attr.MaxSendWR, maxSGE: max(attr.MaxSGE, 1)}
	q.qpn = uint32(qpnBase + len(n.qps))
	n.qps = append(n.qps, q)
	if n.lruAt != nil {
		n.lruAt = append(n.lruAt, 0)
	}
	q.unit = int(q.qpn) % n.cfg.Units
	q.flow = uint32(n.node)*0x9e3779b1 ^ q.qpn
	q.sq = make([]swqe, attr.MaxSendWR)
	q.sges = make([]verbs.SGE, len(q.sq)*q.maxSGE) // one backing array for every WQE's SGL
	for i := range q.sq {
		q.sq[i].pos = uint16(i)
	}
	if srq == nil {
		q.rq = new(recvQueue)
		q.rq.init(max(attr.MaxRecvWR, 1), q.maxSGE)
		if attr.MaxRecvWR == 0 {
			q.rq.ring = q.rq.ring[:0]
		}
	} else {
		srq.users++
	}
	// q.cur.sgl grows on the first receive it takes (from the RQ or an SRQ,
	// whose SGE limits differ), and q.reads, the READ responder's table, on
	// the first READ served: a QP that serves none holds neither.
	q.readsCap = 16
	q.rexmit.Init(n.k, q, 0)
	q.prio = n.cfg.TrafficPrio
	if td != nil {
		q.bf = td.bf
		q.bf.users++
		td.users++
	} else {
		q.bf = c.qpBFReg()
	}
	scq.users++
	rcq.users++
	pd.users++
	q.resetTransport()
	return q, nil
}

// QPN is the QP number.
func (q *QP) QPN() uint32 { return q.qpn }

// Type is the transport.
func (q *QP) Type() verbs.QPType { return q.typ }

// State is the current state.
func (q *QP) State() verbs.QPState { return q.state }

// SendQueueCap is the send queue capacity (exactly MaxSendWR).
func (q *QP) SendQueueCap() int { return q.maxSend }

// SharesDoorbell reports whether the QP rings a doorbell register shared
// with other QPs under the provider's lock (paper §6.2.1).
func (q *QP) SharesDoorbell() bool { return q.bf.shared }

// Stats returns the QP's counters.
func (q *QP) Stats() QPStats {
	s := q.st
	s.CacheHits = q.cacheHits
	s.Rate = q.Rate()
	return s
}

// RxPayload is the payload bytes the QP has received in order: Stats().RxPayload
// without copying the other counters (a sampler reads it every tick).
func (q *QP) RxPayload() uint64 { return q.st.RxPayload }

// Rate is the QP's current sending rate limit: the DCQCN reaction point's
// rate, or the port rate without congestion control.
func (q *QP) Rate() units.Rate {
	if q.cc != nil {
		return min(q.cc.Rate(), q.nic.rate)
	}
	if q.ccOn {
		return min(q.nic.dcqcnCfg.LineRate, q.nic.rate)
	}
	return q.nic.rate
}

// Modify changes state and attributes (ibv_modify_qp), validated by
// verbs.CheckModify.
func (q *QP) Modify(attr *verbs.QPAttr, mask verbs.AttrMask) error {
	if q.dead {
		return errDestroy
	}
	if err := verbs.CheckModify(q.typ, q.state, attr, mask); err != nil {
		return err
	}
	n := q.nic
	var node fabric.NodeID
	if mask&verbs.AttrAV != 0 {
		var ok bool
		if node, ok = NodeOf(attr.AH.DGID); !ok {
			return fmt.Errorf("rnic: DGID %v is not a simulated port", attr.AH.DGID)
		}
	}
	if mask&verbs.AttrPathMTU != 0 && attr.PathMTU > n.cfg.PortMTU {
		return fmt.Errorf("rnic: path MTU %d above the port MTU %d", attr.PathMTU, n.cfg.PortMTU)
	}
	if mask&verbs.AttrAccessFlags != 0 {
		q.access = attr.AccessFlags
	}
	if mask&verbs.AttrQKey != 0 {
		q.qkey = attr.QKey
	}
	if mask&verbs.AttrAV != 0 {
		q.destNode = node
		q.prio = n.prioOf(attr.AH)
		if l := attr.AH.FlowLabel & 0xfffff; l != 0 {
			// A flow label pins the path (RoCEv2 NICs derive the UDP
			// source port, the fabric's ECMP entropy, from it): its high
			// 12 bits are the entropy, its low 8 bits the path index
			// (fabric.Packet.Path). 0 keeps the per-QP entropy.
			q.flow, q.path = uint32(n.node)*0x9e3779b1^(l>>8), uint8(l)
		}
	}
	if mask&verbs.AttrPathMTU != 0 {
		q.mtu = int64(attr.PathMTU)
	}
	if mask&verbs.AttrDestQPN != 0 {
		q.destQPN = attr.DestQPN
	}
	if mask&verbs.AttrRQPSN != 0 {
		q.rqPSN = attr.RQPSN & psnMask
	}
	if mask&verbs.AttrSQPSN != 0 {
		q.sqPSN = attr.SQPSN & psnMask
	}
	if mask&verbs.AttrTimeout != 0 {
		q.timeout = 0
		if ns := verbs.AckTimeoutNS(attr.Timeout); ns > 0 {
			q.timeout = sim.Time(ns) * sim.Nanosecond
		}
	}
	if mask&verbs.AttrRetryCnt != 0 {
		q.retryCnt = attr.RetryCnt
	}
	if mask&verbs.AttrRNRRetry != 0 {
		q.rnrRetry = attr.RNRRetry
	}
	if mask&verbs.AttrMinRNRTimer != 0 {
		q.minRNR = attr.MinRNRTimer
	}
	if mask&verbs.AttrMaxQPRdAtomic != 0 {
		q.maxRd = int32(attr.MaxRdAtomic)
	}
	if mask&verbs.AttrMaxDestRdAtomic != 0 {
		q.maxDestRd = int(attr.MaxDestRdAtomic)
	}
	if mask&verbs.AttrState == 0 {
		return nil
	}
	from, to := q.state, attr.State
	switch to {
	case verbs.StateReset:
		q.drop()
		q.resetTransport()
		q.state = verbs.StateReset
	case verbs.StateInit:
		q.state = verbs.StateInit
	case verbs.StateRTR:
		q.ePSN = q.rqPSN
		if k := max(16, 2*q.maxDestRd); k > q.readsCap {
			q.readsCap = k
			if q.reads != nil {
				q.reads = make([]readJob, k)
			}
		}
		q.state = verbs.StateRTR
		if q.typ == verbs.RC && n.cfg.CC == CCDCQCN {
			q.np = dcqcn.NewNotificationPoint(n.cfg.CNPInterval)
			q.npOn = true
		}
	case verbs.StateRTS:
		if from == verbs.StateRTR {
			q.sndPSN, q.maxPSN, q.unaPSN, q.hiSent, q.hiAcked = q.sqPSN, q.sqPSN, q.sqPSN, q.sqPSN, q.sqPSN
			q.retryLeft, q.rnrLeft = int(q.retryCnt), int(q.rnrRetry)
			q.cc, q.ccOn, q.ccNow = nil, q.nic.cfg.CC == CCDCQCN, 0
			if q.typ == verbs.UD {
				q.mtu = int64(n.cfg.PortMTU)
			}
		}
		q.state = verbs.StateRTS
		n.kick(q)
	case verbs.StateErr:
		q.fail(n.k.Now(), 0, false)
	}
	return nil
}

// newCC returns the QP's congestion controller (Config.CC), on its first
// CNP: a reaction point at line rate whose clock is at the latest time it
// would have seen. A further algorithm (HPCC, TIMELY) is a
// dcqcn.Controller and a case here (and in the line-rate paths while cc
// is nil: Rate, transmit).
func (q *QP) newCC() dcqcn.Controller {
	switch q.nic.cfg.CC {
	case CCDCQCN:
		rp := new(dcqcn.ReactionPoint)
		if err := rp.Init(q.nic.dcqcnCfg); err == nil { // validated by the NIC
			rp.OnTimer(q.ccNow) // nothing due before a CNP: sets the clock only
			return rp
		}
	}
	return nil
}

// resetTransport clears all transport state (RESET).
func (q *QP) resetTransport() {
	q.sqHead, q.sqCur, q.sqNext, q.sqTail = 0, 0, 0, 0
	q.readsOut = 0
	q.winWait = false
	q.rnrUntil, q.readDataAt = 0, 0
	q.prepared, q.warm = false, false
	q.readyAt, q.nextTxAt = 0, 0
	q.cc, q.ccOn, q.ccNow, q.npOn = nil, false, 0, false
	if q.rq != nil {
		q.rq.head, q.rq.n = 0, 0
	}
	q.nakSent, q.curActive, q.wrActive, q.ackPending = false, false, false, false
	q.rdHead, q.rdN = 0, 0
	q.wrMR = nil
	q.mtu = int64(q.nic.cfg.PortMTU)
}

// drop forgets queued work without completions (leaving a QP to RESET or
// destroying it) and takes the QP off the NIC's lists.
func (q *QP) drop() {
	n := q.nic
	q.rexmit.Stop()
	n.deactivate(q)
	q.ackPending = false
	for p := q.deferred.Pop(); p != nil; p = q.deferred.Pop() {
		n.pool.Put(p)
	}
}

// Destroy destroys the QP.
func (q *QP) Destroy() error {
	if q.dead {
		return errDestroy
	}
	n := q.nic
	q.drop()
	q.dead = true
	n.lruUnlink(q)
	n.qps[q.qpn-qpnBase] = nil
	q.ctx.releaseBFReg(q.bf, q.td)
	if q.td != nil {
		q.td.users--
	}
	if q.srq != nil {
		q.srq.users--
	}
	q.scq.users--
	q.rcq.users--
	q.pd.users--
	return nil
}

// fail moves the QP to ERR. With hasFail the oldest outstanding send WQE
// completes with status; every other send WQE and every posted receive is
// flushed (WCWRFlushErr), in order.
func (q *QP) fail(now sim.Time, status verbs.WCStatus, hasFail bool) {
	n := q.nic
	q.state = verbs.StateErr
	q.rexmit.Stop()
	n.deactivate(q)
	at := now + n.cfg.CQECost + n.cfg.DMAWriteLatency
	for ; q.sqHead != q.sqTail; q.sqHead++ {
		w := &q.sq[q.sqHead%uint32(len(q.sq))]
		st := verbs.WCWRFlushErr
		if hasFail {
			st, hasFail = status, false
		}
		q.scq.push(verbs.WC{WRID: w.id, Status: st, Opcode: wcOpcode(w.op), QPN: q.qpn}, at)
	}
	q.sqCur, q.sqNext = q.sqTail, q.sqTail
	q.sndPSN = q.maxPSN
	q.readsOut = 0
	if q.curActive {
		q.rcq.push(verbs.WC{WRID: q.cur.id, Status: verbs.WCWRFlushErr, Opcode: verbs.WCRecv, QPN: q.qpn}, at)
		q.curActive = false
	}
	if q.srq == nil {
		var w rwqe
		w.sgl = q.cur.sgl[:0]
		for q.rq.n > 0 {
			q.rq.pop(&w)
			q.rcq.push(verbs.WC{WRID: w.id, Status: verbs.WCWRFlushErr, Opcode: verbs.WCRecv, QPN: q.qpn}, at)
		}
	}
	q.rdHead, q.rdN = 0, 0
	q.wrActive = false
	for p := q.deferred.Pop(); p != nil; p = q.deferred.Pop() {
		n.pool.Put(p)
	}
	// A NAK already decided (the reason for a responder error) still goes
	// out; plain ACKs do not.
	if q.ackPending && q.ackSyn == synACK {
		q.ackPending = false
	}
}

func wcOpcode(op verbs.Opcode) verbs.WCOpcode {
	switch op {
	case verbs.OpWrite, verbs.OpWriteImm:
		return verbs.WCRDMAWrite
	case verbs.OpRead:
		return verbs.WCRDMARead
	}
	return verbs.WCSend
}

// PostSend posts a chain of send WRs with one doorbell. WRs are validated
// at post time (queue space, SGE count, opcode for the transport, UD length
// against the MTU, inline size); local keys are checked when the NIC
// executes the WQE, which then completes with WCLocProtErr.
func (q *QP) PostSend(wr *verbs.SendWR) (*verbs.SendWR, error) {
	if q.dead {
		return wr, errDestroy
	}
	if q.state != verbs.StateRTS && q.state != verbs.StateErr {
		return wr, fmt.Errorf("rnic: post send on a QP in %v: %w", q.state, errState)
	}
	c := q.ctx
	cpu := c.CPU()
	idle := q.sqTail == q.sqHead
	first := q.sqTail
	k := 0
	var bad *verbs.SendWR
	var err error
	for w := wr; w != nil; w = w.Next {
		if err = q.checkWR(w); err != nil {
			bad = w
			break
		}
		if int(q.sqTail-q.sqHead) >= q.maxSend {
			bad, err = w, fmt.Errorf("rnic: send queue full (%d WRs)", q.maxSend)
			break
		}
		s := &q.sq[q.sqTail%uint32(len(q.sq))]
		q.fillWQE(s, w)
		q.sqTail++
		k++
	}
	at := c.ringDoorbell(cpu, q.bf, k, q.td == nil)
	for i := 0; i < k; i++ {
		s := &q.sq[(first+uint32(i))%uint32(len(q.sq))]
		s.avail = at
		s.bf = idle && k == 1
	}
	if k > 0 {
		if q.state == verbs.StateErr {
			q.fail(cpu.Now(), 0, false)
		} else {
			q.nic.kick(q)
		}
	}
	return bad, err
}

// wdata is the inline payload copy of w, an inline WQE of q's SQ
// (payload mode).
func (q *QP) wdata(w *swqe) []byte { return q.inl.data[w.pos] }

// wsgl is the scatter list of w, a WQE of q's SQ.
func (q *QP) wsgl(w *swqe) []verbs.SGE {
	b := int(w.pos) * q.maxSGE
	return q.sges[b : b+int(w.nsge) : b+q.maxSGE]
}

func (q *QP) checkWR(w *verbs.SendWR) error {
	if len(w.SGL) > q.maxSGE {
		return fmt.Errorf("rnic: WR %#x has %d SGEs, QP allows %d", w.ID, len(w.SGL), q.maxSGE)
	}
	l := w.Len()
	if l > 1<<31 {
		return fmt.Errorf("rnic: WR %#x length %d above 2 GiB", w.ID, l)
	}
	if w.Flags&verbs.FlagInline != 0 && (l > maxInline || w.Opcode == verbs.OpRead) {
		return fmt.Errorf("rnic: inline WR %#x of %d bytes (max %d, not READ)", w.ID, l, maxInline)
	}
	switch q.typ {
	case verbs.RC:
		switch w.Opcode {
		case verbs.OpSend, verbs.OpSendImm, verbs.OpWrite, verbs.OpWriteImm, verbs.OpRead:
		default:
			return fmt.Errorf("rnic: opcode %v on RC", w.Opcode)
		}
	case verbs.UD:
		if w.Opcode != verbs.OpSend && w.Opcode != verbs.OpSendImm {
			return fmt.Errorf("rnic: opcode %v on UD", w.Opcode)
		}
		ah, ok := w.AH.(*AH)
		if !ok || ah == nil || ah.dead || ah.pd.ctx.nic != q.nic {
			return fmt.Errorf("rnic: UD WR %#x needs an address handle of this device", w.ID)
		}
		if l > int64(q.nic.cfg.PortMTU) {
			return fmt.Errorf("rnic: UD WR %#x of %d bytes exceeds the MTU %d", w.ID, l, q.nic.cfg.PortMTU)
		}
	}
	return nil
}

func (q *QP) fillWQE(s *swqe, w *verbs.SendWR) {
	s.id = w.ID
	s.op = w.Opcode
	s.signaled = q.sigAll || w.Flags&verbs.FlagSignaled != 0
	s.inline = w.Flags&verbs.FlagInline != 0
	s.imm = w.Imm
	s.raddr = w.RemoteAddr
	s.rkey = w.RKey
	s.length = w.Len()
	s.msgOff = int64(min(w.MsgOffset, 1<<62))
	s.nsge = uint8(copy(q.sges[int(s.pos)*q.maxSGE:(int(s.pos)+1)*q.maxSGE], w.SGL))
	s.firstPSN, s.npkts, s.readRcvd = 0, 0, 0
	if s.inline && !q.nic.cfg.SizesOnly {
		// Inline data is copied into the WQE at post time.
		if q.inl == nil {
			q.inl = &inlineData{data: make([][]byte, len(q.sq))}
		}
		d := q.inl.data[s.pos]
		if cap(d) < int(s.length) {
			d = make([]byte, s.length, maxInline)
		}
		d = d[:s.length]
		q.inl.data[s.pos] = d
		if !q.nic.sgeCopy(q.wsgl(s), 0, d, false) {
			s.inline = false // bad key: fault when executed
		}
	}
	if q.typ == verbs.UD {
		ah := w.AH.(*AH)
		s.dnode, s.dqpn, s.qkey, s.dprio = ah.node, w.RemoteQPN, w.RemoteQKey, ah.prio
	}
}

// PostRecv posts receives to the QP's own receive queue.
func (q *QP) PostRecv(wr *verbs.RecvWR) (*verbs.RecvWR, error) {
	if q.dead {
		return wr, errDestroy
	}
	if q.srq != nil {
		return wr, fmt.Errorf("rnic: QP %d receives from an SRQ", q.qpn)
	}
	if q.state == verbs.StateReset {
		return wr, fmt.Errorf("rnic: post receive on a QP in RESET: %w", errState)
	}
	bad, err := q.rq.post(q.ctx, wr)
	if q.state == verbs.StateErr {
		q.fail(q.ctx.CPU().Now(), 0, false)
	}
	return bad, err
}
