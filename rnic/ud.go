package rnic

import (
	"encoding/binary"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
)

// buildUD sends the datagram at the head of a UD send queue and completes
// the WQE when it leaves (UD has no acknowledgements).
func (q *QP) buildUD(now sim.Time) *fabric.Packet {
	n := q.nic
	if q.sqHead == q.sqTail {
		return nil
	}
	w := q.wqe(q.sqHead)
	if !w.inline {
		for _, s := range q.wsgl(w) {
			if s.Length == 0 {
				continue
			}
			mr := n.mrByKey(s.LKey)
			if mr == nil || mr.pd != q.pd || !mr.contains(uint64(s.Addr), int64(s.Length)) {
				q.fail(now, verbs.WCLocProtErr, true)
				return nil
			}
		}
	}
	p := n.pool.Get()
	p.Opcode = opUDSend
	p.Prio = w.dprio
	p.Dst = w.dnode
	p.DstQP = w.dqpn
	p.PSN = q.sndPSN
	q.sndPSN = psnAdd(q.sndPSN, 1)
	p.Aux = uint64(w.qkey)
	p.Payload = int32(w.length)
	p.Size = int32(fabric.RoCEv2Extra+hdrDETH) + int32(w.length)
	if w.op == verbs.OpSendImm {
		p.Opcode = opUDSendImm
		p.Imm = w.imm
		p.Size += hdrImm
	}
	if w.length > 0 && !n.cfg.SizesOnly {
		buf := n.setPayload(p, w.length)
		if w.inline {
			copy(buf, q.wdata(w))
		} else {
			n.sgeCopy(q.wsgl(w), 0, buf, false)
		}
	}
	if w.signaled {
		u := &n.txUnit[q.unit]
		*u = max(*u, now) + n.cfg.CQECost
		q.scq.push(verbs.WC{WRID: w.id, Status: verbs.WCSuccess, Opcode: verbs.WCSend,
			ByteLen: uint32(w.length), QPN: q.qpn}, *u+n.cfg.DMAWriteLatency)
	}
	q.sqHead++
	q.sqCur, q.sqNext = q.sqHead, q.sqHead
	return p
}

// udRecv delivers a datagram into the next receive, behind a 40-byte GRH.
func (q *QP) udRecv(now, t sim.Time, p *fabric.Packet) {
	n := q.nic
	if q.state != verbs.StateRTR && q.state != verbs.StateRTS || p.Kind != fabric.KindData ||
		(p.Opcode != opUDSend && p.Opcode != opUDSendImm) || uint32(p.Aux) != q.qkey {
		n.st.RxDiscards++
		return
	}
	if !q.getRecv(now) {
		n.st.UDNoRecvDrops++
		return
	}
	q.curActive = false
	t = n.rxUnitBusy(q, t, n.cfg.WQECost)
	pay := int64(p.Payload)
	need := pay + grhBytes
	wc := verbs.WC{WRID: q.cur.id, Opcode: verbs.WCRecv, QPN: q.qpn, SrcQP: p.SrcQP}
	switch {
	case need > q.cur.total:
		wc.Status = verbs.WCLocLenErr
	case q.curBad:
		wc.Status = verbs.WCLocProtErr
	default:
		wc.ByteLen = uint32(need)
		if p.Opcode == opUDSendImm {
			wc.Flags, wc.Imm = verbs.WCWithImm, p.Imm
		}
		if !n.cfg.SizesOnly {
			var grh [grhBytes]byte
			grh[0] = 0x60 // IPv6 version, as the GRH of RoCE
			binary.BigEndian.PutUint16(grh[4:], uint16(pay))
			grh[6] = 0x11 // next header: UDP
			grh[7] = 64
			sg, dg := GIDOf(p.Src), GIDOf(n.node)
			copy(grh[8:24], sg[:])
			copy(grh[24:40], dg[:])
			n.sgeCopy(q.cur.sgl, 0, grh[:], true)
			if pay > 0 && len(p.Data) >= int(pay) {
				n.sgeCopy(q.cur.sgl, grhBytes, p.Data[:pay], true)
			}
		}
		n.st.RxPayload += uint64(pay)
		q.st.RxPayload += uint64(pay)
	}
	dataAt := n.dmaWrite(now, t, need)
	q.rcq.push(wc, n.cqeAt(q, t, dataAt))
}

// LinePayloadGbps is the payload rate a link of rate carries with
// full MTU-sized packets of the transport (RoCEv2 headers, UD's DETH and
// the Ethernet preamble and gap removed).
func LinePayloadGbps(t verbs.QPType, rate units.Rate, mtu verbs.MTU) float64 {
	hdr := int64(fabric.RoCEv2Extra + fabric.WireGap)
	if t == verbs.UD {
		hdr += hdrDETH
	}
	return float64(rate) / 1e9 * float64(mtu) / float64(int64(mtu)+hdr)
}

// GRHBytes is the GRH the NIC writes in front of every UD receive buffer:
// a UD receive buffer must be this much larger than the message.
const GRHBytes = grhBytes
