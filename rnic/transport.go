package rnic

import (
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
)

// BTH opcodes (IBTA vol. 1 table 38: RC 0x00-0x11, UD 0x64-0x65) and the
// RoCEv2 CNP opcode.
const (
	opSendFirst      = 0x00
	opSendMiddle     = 0x01
	opSendLast       = 0x02
	opSendLastImm    = 0x03
	opSendOnly       = 0x04
	opSendOnlyImm    = 0x05
	opWriteFirst     = 0x06
	opWriteMiddle    = 0x07
	opWriteLast      = 0x08
	opWriteLastImm   = 0x09
	opWriteOnly      = 0x0a
	opWriteOnlyImm   = 0x0b
	opReadReq        = 0x0c
	opReadRespFirst  = 0x0d
	opReadRespMiddle = 0x0e
	opReadRespLast   = 0x0f
	opReadRespOnly   = 0x10
	opAck            = 0x11
	opUDSend         = 0x64
	opUDSendImm      = 0x65
	opCNP            = 0x81
)

// Header bytes beyond fabric.RoCEv2Extra (IBTA extended transport headers).
const (
	hdrRETH  = 16
	hdrAETH  = 4
	hdrImm   = 4
	hdrDETH  = 8
	grhBytes = 40 // GRH placed in front of UD receive buffers
)

// Packet.Flags bits.
const flagAckReq = 1

// AETH syndromes carried in Packet.Aux (low byte); the RNR timer code or NAK
// reason goes in the next byte.
const (
	synACK uint8 = iota
	synNakSeq
	synRNR
	synNakInvReq
	synNakRemAccess
	synNakRemOp
)

const psnMask = 1<<24 - 1

// maxUnacked is the most PSNs a requester has outstanding (assigned and not
// acknowledged): half the 24-bit PSN space, so that every serial comparison
// between PSNs of the window is unambiguous. A WQE whose
// packets would exceed it waits for acknowledgements; one WQE alone never
// does (at most 2 GiB at a 256 B MTU: exactly 2^23 packets).
const maxUnacked = 1 << 23

func psnAdd(a, n uint32) uint32 { return (a + n) & psnMask }

// psnDiff is a-b in 24-bit serial arithmetic.
func psnDiff(a, b uint32) int32 { return int32((a-b)<<8) >> 8 }

func isReadResp(op uint8) bool { return op >= opReadRespFirst && op <= opReadRespOnly }

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

func (q *QP) wqe(i uint32) *swqe { return &q.sq[i%uint32(len(q.sq))] }

// --- requester and responder transmit engine --------------------------------

// hasTX reports whether the QP has a data packet (request or READ response)
// to transmit, now or after a wait (pacing, RNR timer, engine).
func (q *QP) hasTX() bool {
	if q.dead {
		return false
	}
	if q.rdN > 0 && (q.state == verbs.StateRTR || q.state == verbs.StateRTS) {
		return true
	}
	if q.state != verbs.StateRTS {
		return false
	}
	if q.typ == verbs.UD {
		return q.sqHead != q.sqTail
	}
	if q.sndPSN != q.maxPSN {
		return true
	}
	if q.sqNext == q.sqTail {
		return false
	}
	w := q.wqe(q.sqNext)
	if w.op == verbs.OpRead && q.readsOut >= max(1, q.maxRd) {
		return false
	}
	return !q.windowFull(w)
}

// windowFull reports whether starting w would leave more than maxUnacked
// PSNs unacknowledged; it notes that the QP waits, so that the
// acknowledgement that opens the window resumes it.
func (q *QP) windowFull(w *swqe) bool {
	out := (q.maxPSN - q.unaPSN) & psnMask
	if int64(out)+max(1, ceilDiv(w.length, q.mtu)) <= maxUnacked {
		return false
	}
	q.winWait = true
	return true
}

// prepare runs the QP's transmit engine on its next packet from now on: the
// processing unit spends WQECost when it starts a WQE (or a READ it serves)
// and gathers the payload at DMABandwidth (shared NIC-wide). A QP that was
// idle (cold) also waits for the WQE fetch and the first payload read
// (DMAReadLatency each); a QP context missing from the cache costs one more
// read round trip of unit time. The packet is ready at readyAt. Prepare runs
// when the previous packet leaves, so the engine works on packet k+1 while
// packet k serializes: the QP's packet period is max(engine, wire).
func (q *QP) prepare(now sim.Time) {
	n := q.nic
	cfg := &n.cfg
	var bytes int64
	first, noDMA, bf := false, false, false
	avail := sim.Time(0)
	// What the payload gather translates: a READ response's region, or
	// the bytes at offset xoff of a WQE's list.
	var xsgl []verbs.SGE
	var xmr *MR
	var xaddr uint64
	var xoff int64
	if q.rdN > 0 && (q.state == verbs.StateRTR || q.state == verbs.StateRTS) {
		j := &q.reads[q.rdHead]
		bytes = min(q.mtu, j.length-int64(j.sent)*q.mtu)
		first = j.sent == 0
		xmr, xaddr = j.mr, j.addr+uint64(int64(j.sent)*q.mtu)
	} else if q.typ == verbs.UD {
		w := q.wqe(q.sqHead)
		bytes, first, noDMA, bf, avail = w.length, true, w.inline, w.bf, w.avail
		xsgl = q.wsgl(w)
	} else if q.sndPSN != q.maxPSN {
		w := q.wqe(q.sqCur)
		k := int64(psnDiff(q.sndPSN, w.firstPSN))
		if w.op != verbs.OpRead {
			bytes = min(q.mtu, w.length-k*q.mtu)
		}
		first, noDMA, avail = k == 0 || !q.warm, w.inline, w.avail
		xsgl, xoff = q.wsgl(w), k*q.mtu
	} else if q.sqNext != q.sqTail {
		w := q.wqe(q.sqNext)
		if w.op != verbs.OpRead {
			bytes = min(q.mtu, w.length)
		}
		first, noDMA, bf, avail = true, w.inline, w.bf, w.avail
		xsgl = q.wsgl(w)
	}
	if bytes < 0 {
		bytes = 0
	}
	cold := !q.warm
	// Resource occupancy (throughput).
	u := &n.txUnit[q.unit]
	s := max(now, *u)
	if !n.touch(q) {
		s += cfg.DMAReadLatency
	}
	if first {
		s += cfg.WQECost
	}
	// Memory translation (MPT/MTT cache misses), when modelled.
	var xl sim.Time
	if bytes > 0 && !noDMA && n.mrCacheOn() {
		if xmr != nil {
			xl = n.xlateMR(xmr, xaddr, bytes)
		} else {
			xl = n.xlateSGL(xsgl, xoff, bytes)
		}
		s += xl
	}
	var dma sim.Time
	if bytes > 0 && !noDMA {
		// The unit gathers the payload (dma of its time); the PCIe read
		// channel, shared NIC-wide, is accounted in request order from
		// now, so the unit's own stalls never block other units' reads.
		dma = sim.TxTime(bytes, cfg.DMABandwidth)
		n.dmaRd = max(n.dmaRd, now) + dma
		s = max(s+dma, n.dmaRd)
	}
	*u = s
	// Latency of this packet.
	e := max(now, avail, q.rnrUntil)
	if cold && !bf {
		e += cfg.DMAReadLatency // WQE fetch
	}
	if first {
		e += cfg.WQECost
	}
	e += xl + dma
	if cold && dma > 0 {
		e += cfg.DMAReadLatency // first payload read
	}
	q.readyAt = max(s, e)
	q.warm, q.prepared = true, true
}

// build turns the prepared packet into a frame at now (the uplink is idle
// and the QP is eligible). It returns nil if the QP failed meanwhile.
func (q *QP) build(now sim.Time) *fabric.Packet {
	n := q.nic
	q.prepared = false
	var p *fabric.Packet
	switch {
	case q.rdN > 0 && (q.state == verbs.StateRTR || q.state == verbs.StateRTS):
		p = q.buildReadResp()
	case q.state != verbs.StateRTS:
		return nil
	case q.typ == verbs.UD:
		p = q.buildUD(now)
	default:
		p = q.buildReq(now)
	}
	if p == nil {
		return nil
	}
	p.Kind = fabric.KindData
	p.Src = n.node
	p.SrcQP = q.qpn
	p.Flow, p.Path = q.flow, q.path
	if n.cfg.CC == CCDCQCN {
		p.ECN = fabric.ECT
	}
	if q.cc != nil {
		q.cc.OnTimer(now)
		r := q.cc.Rate()
		q.cc.OnPacketSent(now, units.Size(p.Size))
		if r < n.rate {
			q.nextTxAt = now + sim.TxTime(p.WireBytes(), r)
		}
	} else if q.ccOn {
		// A reaction point before its first CNP: line rate, no
		// counters; only its clock moves.
		q.ccNow = max(q.ccNow, now)
		if r := n.dcqcnCfg.LineRate; r < n.rate {
			q.nextTxAt = now + sim.TxTime(p.WireBytes(), r)
		}
	}
	q.st.TxPackets++
	q.st.TxBytes += uint64(p.Size)
	q.st.TxPayload += uint64(p.Payload)
	n.st.TxPayload += uint64(p.Payload)
	if q.hasTX() {
		q.prepare(now)
	}
	return p
}

// moved is how many of the pay bytes at offset off of a message a packet
// carries (off counts from the work request's data, plus its
// SendWR.MsgOffset for a WRITE): all of them in payload mode, only those
// inside the first RDMAHead bytes for RDMA data (rdma) when RDMAHead is
// set, none in sizes-only mode. A receiver places what a packet carries
// (len(p.Data)).
func (n *NIC) moved(rdma bool, off, pay int64) int64 {
	switch {
	case pay <= 0 || n.cfg.SizesOnly:
		return 0
	case !rdma || n.cfg.RDMAHead <= 0:
		return pay
	}
	return max(0, min(pay, n.cfg.RDMAHead.Bytes()-off))
}

// setPayload sizes p.Data for size bytes (payload mode). A packet's buffer
// is made for the port MTU, the most any packet of this NIC carries (it
// was 4 KiB whatever the MTU: four times what a 1 KiB-MTU fabric's
// packets need, 64 MB of the training scenario's heap), and keeps its
// capacity through the packet pool.
func (n *NIC) setPayload(p *fabric.Packet, size int64) []byte {
	if int64(cap(p.Data)) < size {
		p.Data = make([]byte, size, max(size, int64(n.cfg.PortMTU)))
	}
	p.Data = p.Data[:size]
	return p.Data
}

// startWQE assigns PSNs to the next unstarted WQE after checking its local
// keys. It reports false (and fails the QP) on a local protection error.
func (q *QP) startWQE(now sim.Time, w *swqe) bool {
	n := q.nic
	for _, s := range q.wsgl(w) {
		if s.Length == 0 {
			continue
		}
		mr := n.mrByKey(s.LKey)
		if mr == nil || mr.pd != q.pd || !mr.contains(uint64(s.Addr), int64(s.Length)) ||
			(w.op == verbs.OpRead && mr.access&verbs.AccessLocalWrite == 0) {
			if w.inline && w.op != verbs.OpRead {
				continue
			}
			q.failAt(now, verbs.WCLocProtErr, q.sqNext)
			return false
		}
	}
	w.firstPSN = q.maxPSN
	w.npkts = uint32(max(1, ceilDiv(w.length, q.mtu)))
	w.readRcvd = 0
	q.maxPSN = psnAdd(q.maxPSN, w.npkts)
	if w.op == verbs.OpRead {
		q.readsOut++
	}
	q.sqCur = q.sqNext
	q.sqNext++
	return true
}

// failAt fails the QP with status on WQE idx (the WQEs before it are
// flushed, the requester cannot know how far they got).
func (q *QP) failAt(now sim.Time, status verbs.WCStatus, idx uint32) {
	n := q.nic
	at := now + n.cfg.CQECost + n.cfg.DMAWriteLatency
	for ; q.sqHead != idx; q.sqHead++ {
		w := q.wqe(q.sqHead)
		q.scq.push(verbs.WC{WRID: w.id, Status: verbs.WCWRFlushErr, Opcode: wcOpcode(w.op), QPN: q.qpn}, at)
	}
	q.fail(now, status, true)
}

func (q *QP) buildReq(now sim.Time) *fabric.Packet {
	n := q.nic
	if q.sndPSN == q.maxPSN {
		if q.sqNext == q.sqTail {
			return nil
		}
		w := q.wqe(q.sqNext)
		if w.op == verbs.OpRead && q.readsOut >= max(1, q.maxRd) {
			return nil
		}
		if q.windowFull(w) {
			return nil
		}
		if !q.startWQE(now, w) {
			return nil
		}
	}
	w := q.wqe(q.sqCur)
	k := uint32(psnDiff(q.sndPSN, w.firstPSN))
	off := int64(k) * q.mtu
	p := n.pool.Get()
	p.Prio = q.prio
	p.Dst = q.destNode
	p.DstQP = q.destQPN
	p.PSN = q.sndPSN
	p.RKey = w.rkey
	// A packet is new exactly when it starts at hiSent (sndPSN never
	// passes hiSent); the test holds at the window's full 2^23, where a
	// serial comparison of the two would not.
	fresh := q.sndPSN == q.hiSent
	if !fresh {
		n.st.Retransmits++
		q.st.Retransmits++
	}
	if w.op == verbs.OpRead {
		rem := w.length - off
		p.Opcode = opReadReq
		p.Addr = w.raddr + uint64(off)
		p.MsgLen = uint32(rem)
		p.Size = fabric.RoCEv2Extra + hdrRETH
		p.Flags = flagAckReq
		q.sndPSN = psnAdd(w.firstPSN, w.npkts)
		q.sqCur++
	} else {
		pay := max(0, min(q.mtu, w.length-off))
		last := off+pay >= w.length
		imm := w.op == verbs.OpSendImm || w.op == verbs.OpWriteImm
		write := w.op == verbs.OpWrite || w.op == verbs.OpWriteImm
		size := int32(fabric.RoCEv2Extra) + int32(pay)
		switch {
		case write && k == 0 && last:
			p.Opcode = opWriteOnly
			size += hdrRETH
		case write && k == 0:
			p.Opcode = opWriteFirst
			size += hdrRETH
		case write && last:
			p.Opcode = opWriteLast
		case write:
			p.Opcode = opWriteMiddle
		case k == 0 && last:
			p.Opcode = opSendOnly
		case k == 0:
			p.Opcode = opSendFirst
		case last:
			p.Opcode = opSendLast
		default:
			p.Opcode = opSendMiddle
		}
		if imm && last {
			p.Opcode++ // the _WITH_IMMEDIATE variant follows each LAST/ONLY opcode
			p.Imm = w.imm
			size += hdrImm
		}
		if write {
			p.Addr = w.raddr + uint64(off)
		}
		p.MsgLen = uint32(w.length)
		p.Payload = int32(pay)
		p.Size = size
		if last || (k+1)%uint32(n.cfg.AckReqEvery) == 0 {
			p.Flags = flagAckReq
		}
		if mv := n.moved(write, w.msgOff+off, pay); mv > 0 {
			buf := n.setPayload(p, mv)
			if w.inline {
				copy(buf, q.wdata(w)[off:off+mv])
			} else {
				n.sgeCopy(q.wsgl(w), off, buf, false)
			}
		}
		q.sndPSN = psnAdd(q.sndPSN, 1)
		if last {
			q.sqCur++
		}
	}
	if fresh {
		q.hiSent = q.sndPSN
	}
	if q.timeout > 0 && !q.rexmit.Armed() {
		q.rexmit.Set(now + q.timeout)
	}
	return p
}

// OnEvent implements sim.Handler: the retransmission timer.
func (q *QP) OnEvent(now sim.Time, _ uint64) {
	n := q.nic
	if q.dead || q.state != verbs.StateRTS || q.sqHead == q.sqNext || q.timeout == 0 {
		return
	}
	if now < q.rnrUntil {
		q.rexmit.Set(q.rnrUntil + q.timeout)
		return
	}
	n.st.Timeouts++
	q.st.Timeouts++
	q.retryLeft--
	if q.retryLeft < 0 {
		q.fail(now, verbs.WCRetryExcErr, true)
		return
	}
	q.rewind(now, q.unaPSN)
}

// rewind restarts transmission at psn (go-back-N). Whether or not there is
// anything to resend, the retransmission timer stays armed while WQEs are
// outstanding: a QP that cannot make progress runs out of retries and fails
// (WCRetryExcErr) instead of waiting forever.
func (q *QP) rewind(now sim.Time, psn uint32) {
	if psnDiff(psn, q.unaPSN) < 0 {
		psn = q.unaPSN
	}
	if psnDiff(psn, q.maxPSN) < 0 {
		for i := q.sqHead; i != q.sqNext; i++ {
			w := q.wqe(i)
			if psnDiff(psn, w.firstPSN) >= 0 && psnDiff(psn, psnAdd(w.firstPSN, w.npkts)) < 0 {
				q.sqCur = i
				q.sndPSN = psn
				if w.op == verbs.OpRead {
					w.readRcvd = uint32(psnDiff(psn, w.firstPSN))
				}
				break
			}
		}
		q.prepared, q.warm = false, false
	}
	if q.timeout > 0 && !q.rexmit.Armed() && q.sqHead != q.sqNext {
		// The timer guards the oldest unacknowledged packet: a rewind
		// does not push it back (only progress of unaPSN does).
		q.rexmit.Set(max(now, q.rnrUntil) + q.timeout)
	}
	q.nic.kick(q)
}

// onAck handles an ACK or NAK from the responder (processed by the receive
// pipeline at t).
func (q *QP) onAck(now, t sim.Time, p *fabric.Packet) {
	n := q.nic
	if q.typ != verbs.RC || q.state != verbs.StateRTS {
		n.st.RxDiscards++
		return
	}
	n.st.AcksRcvd++
	syn, code := uint8(p.Aux), uint8(p.Aux>>8)
	psn := p.PSN
	// The responder's acknowledged point (a NAK acknowledges up to its
	// PSN-1): when it advances, the responder made progress even if the
	// window start is held back by a READ waiting for a response.
	hi := psn
	if syn == synACK {
		hi = psnAdd(psn, 1)
	}
	progress := psnDiff(hi, q.hiAcked) > 0 && psnDiff(hi, q.hiSent) <= 0
	if progress {
		q.hiAcked = hi
		q.retryLeft, q.rnrLeft = int(q.retryCnt), int(q.rnrRetry)
	}
	switch syn {
	case synACK:
		q.acked(now, t, psn)
	case synNakSeq:
		n.st.SeqNAKsRcvd++
		q.st.SeqNAKs++
		if psnDiff(psn, q.unaPSN) < 0 {
			return // stale: that PSN is already acknowledged
		}
		q.acked(now, t, psnAdd(psn, psnMask))
		if q.state != verbs.StateRTS {
			return
		}
		if !progress {
			q.retryLeft--
			if q.retryLeft < 0 {
				q.fail(now, verbs.WCRetryExcErr, true)
				return
			}
		}
		q.rewind(now, psn)
	case synRNR:
		n.st.RNRNAKsRcvd++
		q.st.RNRNAKs++
		if psnDiff(psn, q.unaPSN) < 0 {
			return
		}
		q.acked(now, t, psnAdd(psn, psnMask))
		if q.state != verbs.StateRTS || q.sqHead == q.sqNext {
			return
		}
		if q.rnrRetry != 7 {
			q.rnrLeft--
			if q.rnrLeft < 0 {
				q.fail(now, verbs.WCRNRRetryExcErr, true)
				return
			}
		}
		q.rnrUntil = now + sim.Time(verbs.RNRTimerNS(code))*sim.Nanosecond
		q.rewind(now, psn)
	default:
		q.acked(now, t, psnAdd(psn, psnMask))
		if q.state != verbs.StateRTS {
			return
		}
		st := verbs.WCRemOpErr
		switch syn {
		case synNakInvReq:
			st = verbs.WCRemInvReqErr
		case synNakRemAccess:
			st = verbs.WCRemAccessErr
		}
		q.fail(now, st, true)
	}
}

// acked processes a cumulative acknowledgement of every PSN up to psn. The
// window never moves past the first response a READ still waits for: an
// acknowledgement beyond it means that response was lost (an implicit NAK,
// handled once by ackThrough).
func (q *QP) acked(now, t sim.Time, psn uint32) {
	next := psnAdd(psn, 1)
	if psnDiff(next, q.hiSent) > 0 {
		return // beyond what was sent
	}
	una := next
	if lim, ok := q.readLimit(); ok && psnDiff(una, lim) > 0 {
		una = lim
	}
	if psnDiff(una, q.unaPSN) <= 0 {
		return // no progress
	}
	q.unaPSN = una
	q.gapSet = false
	q.retryLeft, q.rnrLeft = int(q.retryCnt), int(q.rnrRetry)
	q.ackThrough(now, t, psn)
	if q.state != verbs.StateRTS {
		return
	}
	if q.sqHead == q.sqNext {
		q.rexmit.Stop()
	} else if q.timeout > 0 {
		q.rexmit.Set(max(now, q.rnrUntil) + q.timeout)
	}
	if q.winWait {
		q.winWait = false // the window moved: the waiting WQE may start
		q.nic.kick(q)
	}
}

// readLimit is the PSN of the first READ response still missing, if any.
func (q *QP) readLimit() (uint32, bool) {
	if q.readsOut == 0 {
		return 0, false
	}
	for i := q.sqHead; i != q.sqNext; i++ {
		if w := q.wqe(i); w.op == verbs.OpRead && w.readRcvd < w.npkts {
			return psnAdd(w.firstPSN, w.readRcvd), true
		}
	}
	return 0, false
}

// ackThrough completes, in order, the WQEs that psn acknowledges. A READ
// completes only when all its response data arrived; an acknowledgement
// beyond an incomplete READ means responses were lost (implicit NAK).
func (q *QP) ackThrough(now, t sim.Time, psn uint32) {
	kick := false
	for q.sqHead != q.sqNext {
		w := q.wqe(q.sqHead)
		last := psnAdd(w.firstPSN, w.npkts-1)
		if w.op == verbs.OpRead {
			if w.readRcvd < w.npkts {
				exp := psnAdd(w.firstPSN, w.readRcvd)
				if psnDiff(psn, last) >= 0 && (!q.gapSet || q.gapPSN != exp) {
					q.gapSet, q.gapPSN = true, exp
					q.rewind(now, exp)
				}
				break
			}
			q.readsOut--
			kick = true
		} else if psnDiff(psn, last) < 0 {
			break
		}
		q.complete(w, t)
		q.sqHead++
	}
	if kick {
		q.nic.kick(q)
	}
}

// complete writes the success CQE of w if it is signalled.
func (q *QP) complete(w *swqe, t sim.Time) {
	if !w.signaled {
		return
	}
	n := q.nic
	at := n.cqeAt(q, t, t)
	if w.op == verbs.OpRead {
		at = max(at, q.readDataAt)
	}
	q.scq.push(verbs.WC{WRID: w.id, Status: verbs.WCSuccess, Opcode: wcOpcode(w.op),
		ByteLen: uint32(w.length), QPN: q.qpn}, at)
}

// onReadResp handles READ response data at the requester.
func (q *QP) onReadResp(now, t sim.Time, p *fabric.Packet) {
	n := q.nic
	if q.typ != verbs.RC || q.state != verbs.StateRTS {
		n.st.RxDiscards++
		return
	}
	var w *swqe
	for i := q.sqHead; i != q.sqNext; i++ {
		x := q.wqe(i)
		if x.op == verbs.OpRead && x.readRcvd < x.npkts {
			w = x
			break
		}
	}
	if w == nil {
		n.st.RxDiscards++
		return
	}
	exp := psnAdd(w.firstPSN, w.readRcvd)
	if d := psnDiff(p.PSN, exp); d != 0 {
		n.st.RxDiscards++
		if d > 0 && (!q.gapSet || q.gapPSN != exp) {
			// A response was lost: ask again from the missing one, once
			// per gap until progress is made.
			q.gapSet, q.gapPSN = true, exp
			q.rewind(now, exp)
		}
		return
	}
	off := int64(w.readRcvd) * q.mtu
	pay := int64(p.Payload)
	if off+pay > w.length {
		pay = max(0, w.length-off)
	}
	if mv := min(pay, int64(len(p.Data))); mv > 0 && !n.cfg.SizesOnly {
		n.sgeCopy(q.wsgl(w), off, p.Data[:mv], true)
	}
	q.readDataAt = max(q.readDataAt, n.dmaWrite(now, t, pay))
	n.st.RxPayload += uint64(pay)
	q.st.RxPayload += uint64(pay)
	w.readRcvd++
	q.acked(now, t, p.PSN)
}

// --- responder ----------------------------------------------------------------

// sendAck schedules an ACK/NAK for transmission at t; a pending one is
// replaced (coalesced) unless it is a NAK that the new plain ACK would hide.
func (q *QP) sendAck(t sim.Time, syn uint8, psn uint32, code uint8) {
	if q.ackPending && q.ackSyn != synACK && syn == synACK && psnDiff(psn, q.ackPSN) < 0 {
		return
	}
	q.ackAt = t // not before the acknowledged packet is processed
	q.ackPending = true
	q.ackSyn, q.ackPSN, q.ackCode = syn, psn&psnMask, code
	q.nic.queueCtrl(q)
}

func (q *QP) buildAck(now sim.Time) *fabric.Packet {
	n := q.nic
	q.ackPending = false
	p := n.pool.Get()
	p.Kind = fabric.KindAck
	p.Opcode = opAck
	p.Prio = q.prio
	p.Dst = q.destNode
	p.SrcQP, p.DstQP = q.qpn, q.destQPN
	p.Flow, p.Path = q.flow, q.path
	p.PSN = q.ackPSN
	p.Aux = uint64(q.ackSyn) | uint64(q.ackCode)<<8
	p.Size = fabric.RoCEv2Extra + hdrAETH
	n.st.AcksSent++
	return p
}

// getRecv takes the next receive WQE (own RQ or SRQ) into q.cur.
func (q *QP) getRecv(now sim.Time) bool {
	rq := q.rq
	if q.srq != nil {
		rq = &q.srq.rq
	}
	if !rq.ready(now) {
		return false
	}
	rq.pop(&q.cur)
	q.curActive, q.curOff = true, 0
	q.curBad = false
	// RecvView: the view buffer is taken with the first SEND byte (a
	// WRITE with immediate consumes a receive but places nothing in it; a
	// view taken here for it stayed with the QP, 4 KiB each for most of
	// the training scenario's QPs).
	q.curView = q.curView[:0]
	for _, s := range q.cur.sgl {
		if s.Length == 0 {
			continue
		}
		mr := q.nic.mrByKey(s.LKey)
		if mr == nil || mr.pd != q.pd || mr.access&verbs.AccessLocalWrite == 0 ||
			!mr.contains(uint64(s.Addr), int64(s.Length)) {
			q.curBad = true
		}
	}
	return true
}

// respondError NAKs the request at ePSN and moves the responder to ERR,
// completing the receive in progress (if any) with recvStatus.
func (q *QP) respondError(t sim.Time, syn uint8, recvStatus verbs.WCStatus) {
	n := q.nic
	q.sendAck(t, syn, q.ePSN, 0)
	if q.curActive && recvStatus != verbs.WCSuccess {
		q.rcq.push(verbs.WC{WRID: q.cur.id, Status: recvStatus, Opcode: verbs.WCRecv, QPN: q.qpn},
			n.cqeAt(q, t, t))
		q.curActive = false
	}
	q.fail(t, 0, false)
}

// remoteMR validates an RDMA access of length bytes at addr with rkey.
func (q *QP) remoteMR(rkey uint32, addr uint64, length int64, need verbs.Access) *MR {
	mr := q.nic.mrByKey(rkey)
	if mr == nil || mr.dead || mr.pd != q.pd || mr.access&need == 0 || q.access&need == 0 ||
		!mr.contains(addr, length) {
		return nil
	}
	return mr
}

// respond handles an RC request packet at the responder. It reports true
// when it keeps p (relaxed-ordering placement deferred).
func (q *QP) respond(now, t sim.Time, p *fabric.Packet) bool {
	n := q.nic
	cfg := &n.cfg
	if q.typ != verbs.RC || (q.state != verbs.StateRTR && q.state != verbs.StateRTS) {
		n.st.RxDiscards++
		return false
	}
	if p.ECN == fabric.CE {
		n.st.ECNMarked++
		if q.npOn && q.np.OnECNMarkedPacket(now) {
			n.queueCNP(q)
		}
	}
	if d := psnDiff(p.PSN, q.ePSN); d != 0 {
		n.st.RxDiscards++
		if d > 0 {
			if !q.nakSent {
				q.nakSent = true
				n.st.SeqNAKsSent++
				q.sendAck(t, synNakSeq, q.ePSN, 0)
			}
			return false
		}
		if p.Opcode == opReadReq {
			q.serveRead(t, p, true)
			return false
		}
		q.sendAck(t, synACK, psnAdd(q.ePSN, psnMask), 0)
		return false
	}
	op := p.Opcode
	pay := int64(p.Payload)
	keep := false
	switch op {
	case opReadReq:
		if !q.serveRead(t, p, false) {
			return false
		}
		q.nakSent = false
		return false
	case opSendFirst, opSendOnly, opSendOnlyImm:
		if !q.getRecv(now) {
			q.nakSent = true
			n.st.RNRNAKsSent++
			q.sendAck(t, synRNR, q.ePSN, q.minRNR)
			return false
		}
		t = n.rxUnitBusy(q, t, cfg.WQECost)
		fallthrough
	case opSendMiddle, opSendLast, opSendLastImm:
		if !q.curActive {
			q.respondError(t, synNakInvReq, verbs.WCSuccess)
			return false
		}
		if q.curOff+pay > q.cur.total {
			q.respondError(t, synNakInvReq, verbs.WCLocLenErr)
			return false
		}
		if q.curBad {
			q.respondError(t, synNakRemOp, verbs.WCLocProtErr)
			return false
		}
		if pay > 0 && !cfg.SizesOnly && len(p.Data) >= int(pay) {
			if cfg.RecvView {
				if q.curView == nil {
					q.curView = n.viewGet(max(int(p.MsgLen)-int(q.curOff), int(pay)))
				}
				q.curView = append(q.curView, p.Data[:pay]...)
			} else {
				n.sgeCopy(q.cur.sgl, q.curOff, p.Data[:pay], true)
			}
		}
		if pay > 0 && n.mrCacheOn() {
			if d := n.xlateSGL(q.cur.sgl, q.curOff, pay); d > 0 {
				t = n.rxUnitBusy(q, t, d)
			}
		}
		dataAt := n.dmaWrite(now, t, pay)
		q.curOff += pay
		if op == opSendLast || op == opSendLastImm || op == opSendOnly || op == opSendOnlyImm {
			wc := verbs.WC{WRID: q.cur.id, Status: verbs.WCSuccess, Opcode: verbs.WCRecv,
				ByteLen: uint32(q.curOff), QPN: q.qpn}
			if op == opSendLastImm || op == opSendOnlyImm {
				wc.Flags, wc.Imm = verbs.WCWithImm, p.Imm
			}
			if cfg.RecvView && !cfg.SizesOnly {
				wc.Data, q.curView = q.curView, nil
			}
			q.rcq.push(wc, n.cqeAt(q, t, dataAt))
			q.curActive = false
		}
	case opWriteFirst, opWriteOnly, opWriteOnlyImm:
		q.wrLen = int64(p.MsgLen)
		q.wrMR = nil
		if q.wrLen > 0 {
			if q.wrMR = q.remoteMR(p.RKey, p.Addr, q.wrLen, verbs.AccessRemoteWrite); q.wrMR == nil {
				q.respondError(t, synNakRemAccess, verbs.WCSuccess)
				return false
			}
		}
		q.wrActive = true
		fallthrough
	case opWriteMiddle, opWriteLast, opWriteLastImm:
		if !q.wrActive {
			q.respondError(t, synNakInvReq, verbs.WCSuccess)
			return false
		}
		lastPkt := op == opWriteLast || op == opWriteLastImm || op == opWriteOnly || op == opWriteOnlyImm
		imm := op == opWriteLastImm || op == opWriteOnlyImm
		if imm && !q.getRecv(now) {
			q.nakSent = true
			n.st.RNRNAKsSent++
			q.sendAck(t, synRNR, q.ePSN, q.minRNR)
			return false
		}
		if pay > 0 && (q.wrMR == nil || !q.wrMR.contains(p.Addr, pay)) {
			q.respondError(t, synNakRemAccess, verbs.WCSuccess)
			return false
		}
		if pay > 0 && n.mrCacheOn() {
			if d := n.xlateMR(q.wrMR, p.Addr, pay); d > 0 {
				t = n.rxUnitBusy(q, t, d)
			}
		}
		dataAt := n.dmaWrite(now, t, pay)
		if pay > 0 && !cfg.SizesOnly && len(p.Data) > 0 {
			if !lastPkt && q.wrMR.access&verbs.AccessRelaxedOrdering != 0 {
				// Relaxed ordering: this packet's data reaches memory only
				// with (after) the message's last packet.
				q.deferred.Push(p)
				keep = true
				if q.deferred.Len >= 64 {
					q.placeDeferred()
				}
			} else {
				q.place(p)
			}
		}
		if lastPkt {
			q.wrActive = false
			q.placeDeferred()
			if imm {
				t = n.rxUnitBusy(q, t, cfg.WQECost)
				q.rcq.push(verbs.WC{WRID: q.cur.id, Status: verbs.WCSuccess, Opcode: verbs.WCRecvRDMAImm,
					Flags: verbs.WCWithImm, Imm: p.Imm, ByteLen: uint32(q.wrLen), QPN: q.qpn},
					n.cqeAt(q, t, dataAt))
				q.curActive = false
			}
		}
	default:
		q.respondError(t, synNakInvReq, verbs.WCSuccess)
		return false
	}
	n.st.RxPayload += uint64(pay)
	q.st.RxPayload += uint64(pay)
	q.ePSN = psnAdd(q.ePSN, 1)
	q.nakSent = false
	if p.Flags&flagAckReq != 0 {
		q.sendAck(t, synACK, psnAdd(q.ePSN, psnMask), 0)
	}
	return keep
}

// place copies a WRITE packet's payload into the target MR.
func (q *QP) place(p *fabric.Packet) {
	mr := q.wrMR
	if mr == nil || mr.dead {
		return
	}
	off := p.Addr - uint64(mr.addr)
	mv := uint64(min(int(p.Payload), len(p.Data))) // RDMAHead: maybe a head only
	copy(mr.buf[off:off+mv], p.Data[:mv])
}

// placeDeferred places relaxed-ordering packets held back by respond.
func (q *QP) placeDeferred() {
	for p := q.deferred.Pop(); p != nil; p = q.deferred.Pop() {
		q.place(p)
		q.nic.pool.Put(p)
	}
}

// serveRead validates a READ request and queues its responses. A duplicate
// request (go-back-N from the requester) is served again without moving the
// expected PSN.
func (q *QP) serveRead(t sim.Time, p *fabric.Packet, dup bool) bool {
	n := q.nic
	length := int64(p.MsgLen)
	var mr *MR
	if length > 0 {
		if mr = q.remoteMR(p.RKey, p.Addr, length, verbs.AccessRemoteRead); mr == nil {
			if !dup {
				q.respondError(t, synNakRemAccess, verbs.WCSuccess)
			}
			return false
		}
	}
	npk := uint32(max(1, ceilDiv(length, q.mtu)))
	if q.reads == nil {
		q.reads = make([]readJob, q.readsCap)
	}
	if int(q.rdN) == len(q.reads) {
		n.st.RxDiscards++ // more outstanding READs than the responder holds: requester times out
		return false
	}
	i := (q.rdHead + int(q.rdN)) % len(q.reads)
	q.reads[i] = readJob{psn: p.PSN, npkts: npk, addr: p.Addr, length: length, mr: mr}
	q.rdN++
	if !dup {
		q.ePSN = psnAdd(q.ePSN, npk)
	}
	n.kick(q)
	return true
}

func (q *QP) buildReadResp() *fabric.Packet {
	n := q.nic
	j := &q.reads[q.rdHead]
	off := int64(j.sent) * q.mtu
	pay := max(0, min(q.mtu, j.length-off))
	p := n.pool.Get()
	p.Prio = q.prio
	p.Dst = q.destNode
	p.DstQP = q.destQPN
	p.PSN = psnAdd(j.psn, j.sent)
	p.Payload = int32(pay)
	size := int32(fabric.RoCEv2Extra) + int32(pay)
	switch {
	case j.npkts == 1:
		p.Opcode = opReadRespOnly
		size += hdrAETH
	case j.sent == 0:
		p.Opcode = opReadRespFirst
		size += hdrAETH
	case j.sent == j.npkts-1:
		p.Opcode = opReadRespLast
		size += hdrAETH
	default:
		p.Opcode = opReadRespMiddle
	}
	p.Size = size
	if mv := n.moved(true, off, pay); mv > 0 && j.mr != nil && !j.mr.dead {
		buf := n.setPayload(p, mv)
		base := j.addr - uint64(j.mr.addr) + uint64(off)
		copy(buf, j.mr.buf[base:base+uint64(mv)])
	}
	j.sent++
	if j.sent == j.npkts {
		q.rdHead = (q.rdHead + 1) % len(q.reads)
		q.rdN--
		if q.rdN == 0 && q.ackPending {
			n.armWake(n.k.Now())
		}
	}
	return p
}
