package rnic

import (
	"bytes"
	"fmt"
	"github.com/besim/besim/units"
	"math/rand/v2"
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// TestRandomOpsUnderLoss posts a random mix of SEND, SEND_WITH_IMM, WRITE,
// WRITE_WITH_IMM and READ of random sizes (0 to 5 MTUs, one or two SGEs) on
// four QPs sharing CQs, over a wire that drops 2% of frames, and checks every
// completion (order, status, length, immediate) and every byte, and that
// frames were in fact dropped and recovered (retransmitted after a NAK or a
// timeout).
func TestRandomOpsUnderLoss(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { randomOps(t, seed, 0.02) })
	}
}

func randomOps(t *testing.T, seed uint64, loss float64) {
	p := newPair(t, DefaultConfig(), 25*units.Gbps, sim.Microsecond)
	p.w.SetLoss(loss, seed)
	rng := rand.New(rand.NewPCG(seed, 99))
	o := defaultOpts()
	o.timeout = 6
	o.depth = 256
	const nqp, nwr, slot = 4, 150, 5 * 1024
	type exp struct {
		id      uint64
		op      verbs.Opcode
		n       int
		imm     uint32
		srcOff  int // local buffer
		dstOff  int // remote buffer
		recvOff int // receive buffer at B (SEND)
	}
	var as, bs []*ep
	var checks []func()
	for i := 0; i < nqp; i++ {
		a, b := p.rc(t, o)
		as, bs = append(as, a), append(bs, b)
	}
	for q := 0; q < nqp; q++ {
		a, b := as[q], bs[q]
		src := newRegion(t, a.pd, nwr*slot, allAccess)
		dst := newRegion(t, b.pd, nwr*slot, allAccess)
		rcv := newRegion(t, b.pd, nwr*slot, allAccess)
		fill(src.buf, int(seed)*10+q)
		fill(dst.buf, int(seed)*10+q+100) // READ sources
		var exps []exp
		var wrs []verbs.SendWR
		var recvs []verbs.RecvWR
		for i := 0; i < nwr; i++ {
			ops := []verbs.Opcode{verbs.OpSend, verbs.OpSendImm, verbs.OpWrite, verbs.OpWriteImm, verbs.OpRead}
			e := exp{id: uint64(q<<16 | i), op: ops[rng.IntN(len(ops))], n: rng.IntN(slot + 1), imm: rng.Uint32(),
				srcOff: i * slot, dstOff: i * slot, recvOff: i * slot}
			if rng.IntN(4) == 0 {
				e.n = rng.IntN(3)
			}
			w := verbs.SendWR{ID: e.id, Opcode: e.op, Imm: e.imm, RemoteAddr: uint64(dst.addr(e.dstOff)), RKey: dst.mr.RKey()}
			if e.n > 1 && rng.IntN(2) == 0 {
				h := e.n / 2
				w.SGL = []verbs.SGE{src.sge(e.srcOff, h), src.sge(e.srcOff+h, e.n-h)}
			} else {
				w.SGL = []verbs.SGE{src.sge(e.srcOff, e.n)}
			}
			if e.op.ConsumesRecv() {
				recvs = append(recvs, verbs.RecvWR{ID: e.id, SGL: []verbs.SGE{rcv.sge(e.recvOff, slot)}})
			}
			exps = append(exps, e)
			wrs = append(wrs, w)
		}
		for i := range recvs {
			if i+1 < len(recvs) {
				recvs[i].Next = &recvs[i+1]
			}
		}
		if len(recvs) > 0 {
			_, err := b.qp.PostRecv(&recvs[0])
			must(t, err)
		}
		for i := 0; i < len(wrs); i += 10 {
			for j := i; j < min(i+10, len(wrs)); j++ {
				wrs[j].Next = nil
				if j+1 < min(i+10, len(wrs)) {
					wrs[j].Next = &wrs[j+1]
				}
			}
			_, err := a.qp.PostSend(&wrs[i])
			must(t, err)
		}
		q := q
		defer func(q int, exps []exp, src, dst, rcv *region) {
			if t.Failed() {
				return
			}
			// Data checks after all completions were verified.
			for _, e := range exps {
				what := fmt.Sprintf("QP %d WR %d %v %d bytes", q, e.id&0xffff, e.op, e.n)
				switch e.op {
				case verbs.OpWrite, verbs.OpWriteImm:
					if !bytes.Equal(dst.buf[e.dstOff:e.dstOff+e.n], src.buf[e.srcOff:e.srcOff+e.n]) {
						t.Errorf("%s: remote data differs", what)
					}
				case verbs.OpSend, verbs.OpSendImm:
					if !bytes.Equal(rcv.buf[e.recvOff:e.recvOff+e.n], src.buf[e.srcOff:e.srcOff+e.n]) {
						t.Errorf("%s: received data differs", what)
					}
				case verbs.OpRead:
					if !bytes.Equal(src.buf[e.srcOff:e.srcOff+e.n], dst.buf[e.dstOff:e.dstOff+e.n]) {
						t.Errorf("%s: read data differs", what)
					}
				}
			}
		}(q, exps, src, dst, rcv)
		checks = append(checks, func() {
			// Sender completions in order, all successful.
			swc := p.waitCQ(t, a.cq, nwr, 5*sim.Second)
			for i, wc := range swc {
				e := exps[i]
				if wc.Status != verbs.WCSuccess || wc.WRID != e.id || wc.ByteLen != uint32(e.n) {
					t.Fatalf("QP %d send completion %d: %+v, want wr %#x len %d", q, i, wc, e.id, e.n)
				}
			}
			k := 0
			rwc := p.waitCQ(t, b.cq, len(recvs), sim.Second)
			for _, e := range exps {
				if !e.op.ConsumesRecv() {
					continue
				}
				wc := rwc[k]
				k++
				wantOp, imm := verbs.WCRecv, e.op == verbs.OpSendImm
				if e.op == verbs.OpWriteImm {
					wantOp, imm = verbs.WCRecvRDMAImm, true
				}
				if wc.Status != verbs.WCSuccess || wc.WRID != e.id || wc.Opcode != wantOp || wc.ByteLen != uint32(e.n) ||
					(wc.Flags&verbs.WCWithImm != 0) != imm || (imm && wc.Imm != e.imm) {
					t.Fatalf("QP %d receive for %v wr %#x: %+v", q, e.op, e.id, wc)
				}
			}
		})
	}
	for _, c := range checks {
		c()
	}
	st := p.a.Stats()
	t.Logf("dropped %d, retransmits %d, seq NAKs %d, timeouts %d", p.w.Dropped, st.Retransmits, st.SeqNAKsRcvd, st.Timeouts)
	// The property is recovery from loss: a run in which nothing was lost,
	// or nothing was sent again, checked nothing of it.
	if loss > 0 && (p.w.Dropped == 0 || st.Retransmits == 0 || st.SeqNAKsRcvd+st.Timeouts == 0) {
		t.Errorf("loss %v: %d frames dropped, %d retransmits, %d NAKs, %d timeouts: no loss was recovered from",
			loss, p.w.Dropped, st.Retransmits, st.SeqNAKsRcvd, st.Timeouts)
	}
	if p.w.Pool().Live > 64 {
		t.Errorf("%d packets not returned to the pool", p.w.Pool().Live)
	}
}
