package rnic

import (
	"bytes"
	"github.com/besim/besim/units"
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// TestLossGoBackN: with 2% of frames (data and ACKs, both ways) dropped at
// random, RC WRITEs, READs and SENDs still deliver every byte in order,
// through NAK-triggered go-back-N and retransmission timeouts.
func TestLossGoBackN(t *testing.T) {
	p := newPair(t, DefaultConfig(), 25*units.Gbps, sim.Microsecond)
	p.w.SetLoss(0.02, 42)
	o := defaultOpts()
	o.timeout = 6 // 262 us
	a, b := p.rc(t, o)
	const n = 1 << 20
	src := newRegion(t, a.pd, 3*n, allAccess)
	dst := newRegion(t, b.pd, 3*n, allAccess)
	fill(src.buf[:n], 1)
	fill(dst.buf[2*n:], 2) // READ source at the responder
	fill(src.buf[2*n:2*n+4096], 3)
	var wrs []verbs.SendWR
	const chunk = 128 << 10
	for off := 0; off < n; off += chunk {
		wrs = append(wrs, verbs.SendWR{ID: uint64(off), Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(off, chunk)},
			RemoteAddr: uint64(dst.addr(off)), RKey: dst.mr.RKey()})
	}
	wrs = append(wrs, verbs.SendWR{ID: 1 << 40, Opcode: verbs.OpRead, SGL: []verbs.SGE{src.sge(n, n)},
		RemoteAddr: uint64(dst.addr(2 * n)), RKey: dst.mr.RKey()})
	wrs = append(wrs, verbs.SendWR{ID: 1 << 41, Opcode: verbs.OpSend, SGL: []verbs.SGE{src.sge(2*n, 4096)}})
	for i := range wrs {
		if i+1 < len(wrs) {
			wrs[i].Next = &wrs[i+1]
		}
	}
	_, err := b.qp.PostRecv(&verbs.RecvWR{ID: 9, SGL: []verbs.SGE{dst.sge(n, 8192)}})
	must(t, err)
	_, err = a.qp.PostSend(&wrs[0])
	must(t, err)
	wcs := p.waitCQ(t, a.cq, len(wrs), 2*sim.Second)
	for i, wc := range wcs {
		if wc.Status != verbs.WCSuccess || wc.WRID != wrs[i].ID {
			t.Fatalf("completion %d: %+v", i, wc)
		}
	}
	rwc := p.waitCQ(t, b.cq, 1, sim.Millisecond)
	if rwc[0].Status != verbs.WCSuccess || rwc[0].ByteLen != 4096 {
		t.Fatalf("receive %+v", rwc[0])
	}
	if !bytes.Equal(dst.buf[:n], src.buf[:n]) {
		t.Fatal("WRITE data differs")
	}
	if !bytes.Equal(src.buf[n:2*n], dst.buf[2*n:]) {
		t.Fatal("READ data differs")
	}
	if !bytes.Equal(dst.buf[n:n+4096], src.buf[2*n:2*n+4096]) {
		t.Fatal("SEND data differs")
	}
	sa, sb := p.a.Stats(), p.b.Stats()
	t.Logf("dropped %d; A: retrans %d seqNAKrcvd %d timeouts %d; B: seqNAKsent %d retrans %d",
		p.w.Dropped, sa.Retransmits, sa.SeqNAKsRcvd, sa.Timeouts, sb.SeqNAKsSent, sb.Retransmits)
	if p.w.Dropped == 0 || sa.Retransmits == 0 || sa.SeqNAKsRcvd == 0 || sb.SeqNAKsSent == 0 {
		t.Fatalf("expected drops, retransmissions and sequence NAKs: %+v %+v", sa, sb)
	}
	if a.qp.Stats().Retransmits != sa.Retransmits {
		t.Fatalf("QP retransmits %d, NIC %d", a.qp.Stats().Retransmits, sa.Retransmits)
	}
}

// TestRNRRetryExceededFlushes: SENDs without receives draw RNR NAKs; after
// rnr_retry retries the first fails with WCRNRRetryExcErr, the rest are
// flushed, and the retries were paced by the responder's min_rnr_timer.
func TestRNRRetryExceededFlushes(t *testing.T) {
	p := newPair(t, DefaultConfig(), 25*units.Gbps, sim.Microsecond)
	o := defaultOpts()
	o.rnrRetry = 3
	o.minRNR = 4 // 40 us
	a, _ := p.rc(t, o)
	src := newRegion(t, a.pd, 4096, allAccess)
	wrs := make([]verbs.SendWR, 3)
	for i := range wrs {
		wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, SGL: []verbs.SGE{src.sge(0, 2000)}}
		if i > 0 {
			wrs[i-1].Next = &wrs[i]
		}
	}
	start := p.k.Now()
	_, err := a.qp.PostSend(&wrs[0])
	must(t, err)
	wcs := p.waitCQ(t, a.cq, 3, 10*sim.Millisecond)
	want := []verbs.WCStatus{verbs.WCRNRRetryExcErr, verbs.WCWRFlushErr, verbs.WCWRFlushErr}
	for i, wc := range wcs {
		if wc.Status != want[i] || wc.WRID != uint64(i) {
			t.Fatalf("completion %d: %v (wr %d), want %v", i, wc.Status, wc.WRID, want[i])
		}
	}
	if a.qp.State() != verbs.StateErr {
		t.Fatalf("QP in %v", a.qp.State())
	}
	sa, sb := p.a.Stats(), p.b.Stats()
	if sb.RNRNAKsSent != 4 || sa.RNRNAKsRcvd != 4 || a.qp.Stats().RNRNAKs != 4 {
		t.Fatalf("RNR NAKs sent %d received %d, want 4 (first try + 3 retries)", sb.RNRNAKsSent, sa.RNRNAKsRcvd)
	}
	if el := p.k.Now() - start; el < 3*40*sim.Microsecond {
		t.Fatalf("failed after %v, before three 40 us RNR waits", el)
	}
}

// TestRNRWaitThenReceive: with rnr_retry 7 the requester keeps retrying at
// the RNR timer until a receive is posted.
func TestRNRWaitThenReceive(t *testing.T) {
	p := newPair(t, DefaultConfig(), 25*units.Gbps, sim.Microsecond)
	o := defaultOpts()
	o.minRNR = 1
	a, b := p.rc(t, o)
	src := newRegion(t, a.pd, 4096, allAccess)
	dst := newRegion(t, b.pd, 4096, allAccess)
	fill(src.buf, 5)
	_, err := a.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{src.sge(0, 3000)}})
	must(t, err)
	p.k.RunUntil(p.k.Now() + 200*sim.Microsecond)
	if n := p.b.Stats().RNRNAKsSent; n < 5 {
		t.Fatalf("%d RNR NAKs in 200 us with a 10 us timer", n)
	}
	_, err = b.qp.PostRecv(&verbs.RecvWR{ID: 2, SGL: []verbs.SGE{dst.sge(0, 4096)}})
	must(t, err)
	if wc := p.waitCQ(t, b.cq, 1, sim.Millisecond)[0]; wc.Status != verbs.WCSuccess || wc.ByteLen != 3000 {
		t.Fatalf("receive %+v", wc)
	}
	if wc := p.waitCQ(t, a.cq, 1, sim.Millisecond)[0]; wc.Status != verbs.WCSuccess {
		t.Fatalf("send %+v", wc)
	}
	if !bytes.Equal(dst.buf[:3000], src.buf[:3000]) {
		t.Fatal("data differs")
	}
}

// TestRetryExceeded: a dead wire exhausts retry_cnt retransmission timeouts
// (4.096 us x 2^timeout each), then WCRetryExcErr and flushes.
func TestRetryExceeded(t *testing.T) {
	p := newPair(t, DefaultConfig(), 25*units.Gbps, sim.Microsecond)
	p.w.SetLoss(1, 1)
	o := defaultOpts()
	o.timeout, o.retry = 5, 3 // 131 us
	a, _ := p.rc(t, o)
	src := newRegion(t, a.pd, 4096, allAccess)
	w2 := verbs.SendWR{ID: 2, Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(0, 100)}, RemoteAddr: 0x1000, RKey: 1}
	w1 := verbs.SendWR{ID: 1, Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(0, 100)}, RemoteAddr: 0x1000, RKey: 1, Next: &w2}
	start := p.k.Now()
	_, err := a.qp.PostSend(&w1)
	must(t, err)
	wcs := p.waitCQ(t, a.cq, 2, sim.Second)
	if wcs[0].Status != verbs.WCRetryExcErr || wcs[1].Status != verbs.WCWRFlushErr {
		t.Fatalf("completions %+v", wcs)
	}
	el := p.k.Now() - start
	to := sim.Time(verbs.AckTimeoutNS(5)) * sim.Nanosecond
	if st := p.a.Stats(); st.Timeouts != 4 || el < 4*to {
		t.Fatalf("%d timeouts after %v, want 4 (retry_cnt 3 + 1) of %v", st.Timeouts, el, to)
	}
}

// TestRelaxedOrdering: a WRITE into a relaxed-ordering MR may land out of
// order (here: everything but the last packet lands with the last one), but
// its completion still implies all of it is visible.
func TestRelaxedOrdering(t *testing.T) {
	for _, ro := range []bool{false, true} {
		p := newPair(t, DefaultConfig(), 25*units.Gbps, sim.Microsecond)
		a, b := p.rc(t, defaultOpts())
		const n = 16 * 1024
		acc := allAccess
		if ro {
			acc |= verbs.AccessRelaxedOrdering
		}
		src := newRegion(t, a.pd, n, allAccess)
		dst := newRegion(t, b.pd, n, acc)
		fill(src.buf, 9)
		_, err := a.qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(0, n)},
			RemoteAddr: uint64(dst.addr(0)), RKey: dst.mr.RKey()})
		must(t, err)
		for p.b.Stats().RxPayload < n/2 {
			p.k.Step()
		}
		early := bytes.Equal(dst.buf[:1024], src.buf[:1024])
		if early == ro {
			t.Fatalf("relaxed=%v: first packet visible mid-message = %v", ro, early)
		}
		p.waitCQ(t, a.cq, 1, sim.Millisecond)
		if !bytes.Equal(dst.buf, src.buf) {
			t.Fatalf("relaxed=%v: data not visible at completion", ro)
		}
	}
}

// TestUDDropWithoutReceive: a datagram with no posted receive is dropped;
// the sender still completes (UD is unreliable).
func TestUDDropWithoutReceive(t *testing.T) {
	p := newPair(t, DefaultConfig(), 25*units.Gbps, sim.Microsecond)
	var eps [2]*ep
	for i, c := range []*Context{p.ca, p.cb} {
		pd, _ := c.AllocPD()
		cq, _ := c.CreateCQ(16, nil)
		qp, err := pd.CreateQP(verbs.QPInitAttr{Type: verbs.UD, SendCQ: cq, RecvCQ: cq, MaxSendWR: 4, MaxRecvWR: 4, MaxSGE: 1, SigAll: true})
		must(t, err)
		must(t, verbs.ModifyAll(qp, []verbs.QPAttr{{State: verbs.StateInit, Port: 1, QKey: 7}, {State: verbs.StateRTR}, {State: verbs.StateRTS}},
			[]verbs.AttrMask{verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey, verbs.AttrState, verbs.AttrState | verbs.AttrSQPSN}))
		eps[i] = &ep{ctx: c, pd: pd, cq: cq.(*CQ), qp: qp.(*QP)}
	}
	src := newRegion(t, eps[0].pd, 1024, allAccess)
	ah, err := eps[0].pd.CreateAH(verbs.AHAttr{DGID: p.cb.Attr().GID})
	must(t, err)
	_, err = eps[0].qp.PostSend(&verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{src.sge(0, 512)},
		AH: ah, RemoteQPN: eps[1].qp.QPN(), RemoteQKey: 7})
	must(t, err)
	if wc := p.waitCQ(t, eps[0].cq, 1, sim.Millisecond)[0]; wc.Status != verbs.WCSuccess {
		t.Fatalf("UD send %+v", wc)
	}
	p.k.RunUntil(p.k.Now() + 100*sim.Microsecond)
	if d := p.b.Stats().UDNoRecvDrops; d != 1 || eps[1].cq.Len() != 0 {
		t.Fatalf("UD drops %d, receiver CQ %d", d, eps[1].cq.Len())
	}
}

// TestCQNotify: the hook fires when a CQE lands on a drained CQ, once until
// the poller drains it again.
func TestCQNotify(t *testing.T) {
	p := newPair(t, DefaultConfig(), 25*units.Gbps, sim.Microsecond)
	a, b := p.rc(t, defaultOpts())
	src := newRegion(t, a.pd, 4096, allAccess)
	dst := newRegion(t, b.pd, 4096, allAccess)
	var hits []sim.Time
	h := handlerFunc(func(now sim.Time, _ uint64) { hits = append(hits, now) })
	a.cq.SetNotify(h, 0)
	post := func(id uint64) {
		_, err := a.qp.PostSend(&verbs.SendWR{ID: id, Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(0, 64)},
			RemoteAddr: uint64(dst.addr(0)), RKey: dst.mr.RKey()})
		must(t, err)
	}
	post(1)
	post(2)
	p.k.RunUntil(p.k.Now() + 100*sim.Microsecond)
	if len(hits) != 1 || a.cq.Len() != 2 {
		t.Fatalf("hook fired %d times for 2 undrained CQEs (CQ len %d)", len(hits), a.cq.Len())
	}
	wc := make([]verbs.WC, 4)
	if k := a.cq.Poll(wc); k != 2 {
		t.Fatalf("polled %d", k)
	}
	post(3)
	p.k.RunUntil(p.k.Now() + 100*sim.Microsecond)
	if len(hits) != 2 {
		t.Fatalf("hook fired %d times, want 2", len(hits))
	}
}

type handlerFunc func(sim.Time, uint64)

func (f handlerFunc) OnEvent(now sim.Time, tag uint64) { f(now, tag) }

// TestCPUCharges: a post call charges call + per-WQE + doorbell time to the
// current CPU; a QP past the dedicated doorbell registers pays the shared
// lock (and its cache line) when another CPU rang it last; a thread-domain
// QP pays no lock.
func TestCPUCharges(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DedicatedBFRegs, cfg.SharedBFRegs = 1, 1
	p := newPair(t, cfg, 25*units.Gbps, sim.Microsecond)
	o := defaultOpts()
	a1, b1 := p.rc(t, o) // dedicated register
	a2, _ := p.rc(t, o)  // shared
	a3, _ := p.rc(t, o)  // shared, same register as a2
	if a1.qp.SharesDoorbell() || !a2.qp.SharesDoorbell() || !a3.qp.SharesDoorbell() {
		t.Fatal("doorbell register assignment")
	}
	src := newRegion(t, a1.pd, 4096, allAccess)
	dst := newRegion(t, b1.pd, 4096, allAccess)
	wr := func() *verbs.SendWR {
		w2 := &verbs.SendWR{ID: 2, Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(0, 64)}, RemoteAddr: uint64(dst.addr(0)), RKey: dst.mr.RKey()}
		return &verbs.SendWR{ID: 1, Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(0, 64)}, RemoteAddr: uint64(dst.addr(0)), RKey: dst.mr.RKey(), Next: w2}
	}
	c1, c2 := NewCPU(p.k, "c1"), NewCPU(p.k, "c2")
	charge := func(cpu *CPU, q *QP) sim.Time {
		p.ca.SetCPU(cpu)
		defer p.ca.SetCPU(nil)
		b := cpu.Stats().Busy
		_, err := q.PostSend(wr())
		must(t, err)
		return cpu.Stats().Busy - b
	}
	base := cfg.PostSendCall + 2*cfg.PostSendPerWQE + cfg.LockAcquire + cfg.DoorbellCost
	if d := charge(c1, a1.qp); d != base {
		t.Fatalf("dedicated post cost %v, want %v", d, base)
	}
	if d := charge(c1, a2.qp); d != base+cfg.LockAcquire {
		t.Fatalf("first shared post cost %v, want %v", d, base+cfg.LockAcquire)
	}
	p.k.RunUntil(p.k.Now() + 10*sim.Microsecond)
	if d := charge(c2, a3.qp); d != base+cfg.LockAcquire+cfg.LockTransfer {
		t.Fatalf("shared post after another CPU: %v, want %v", d, base+cfg.LockAcquire+cfg.LockTransfer)
	}
	// Contended: c1 posts right behind c2 on the same register and spins.
	if d := charge(c1, a2.qp); c1.Stats().Spin == 0 || d <= base+cfg.LockAcquire+cfg.LockTransfer {
		t.Fatalf("contended post cost %v, spin %v", d, c1.Stats().Spin)
	}
	td, _ := p.ca.AllocTD()
	pd, _ := p.ca.AllocPD()
	cq, _ := p.ca.CreateCQ(16, td)
	q, err := pd.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: cq, RecvCQ: cq, TD: td, MaxSendWR: 4, MaxRecvWR: 4})
	must(t, err)
	if q.(*QP).SharesDoorbell() {
		t.Fatal("TD QP shares a doorbell")
	}
}
