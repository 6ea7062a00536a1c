package fakeverbs

import (
	"syscall"
	"testing"
	"unsafe"

	"github.com/besim/besim/verbs"
)

type side struct {
	ctx *Context
	pd  verbs.PD
	cq  verbs.CQ
	qp  verbs.QP
	mem []byte
	mr  verbs.MR
}

func mkSide(t *testing.T, n *Network, name string, srq bool) *side {
	t.Helper()
	s := &side{ctx: n.NewContext(name)}
	s.pd, _ = s.ctx.AllocPD()
	s.cq, _ = s.ctx.CreateCQ(64, nil)
	mem, err := syscall.Mmap(-1, 0, 1<<16, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	s.mem = mem
	s.mr, err = s.pd.RegMR(uintptr(unsafe.Pointer(&mem[0])), len(mem), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	attr := verbs.QPInitAttr{Type: verbs.RC, SendCQ: s.cq, RecvCQ: s.cq, MaxSendWR: 16, MaxRecvWR: 16}
	s.qp, err = s.pd.CreateQP(attr)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func connect(t *testing.T, a, b *side, rnrRetry uint8) {
	t.Helper()
	for _, p := range [][2]*side{{a, b}, {b, a}} {
		x, y := p[0], p[1]
		steps := []struct {
			attr verbs.QPAttr
			mask verbs.AttrMask
		}{
			{verbs.QPAttr{State: verbs.StateInit, Port: 1, AccessFlags: verbs.AccessRemoteWrite},
				verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags},
			{verbs.QPAttr{State: verbs.StateRTR, PathMTU: 1024, DestQPN: y.qp.QPN(), MinRNRTimer: 1},
				verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer},
			{verbs.QPAttr{State: verbs.StateRTS, RNRRetry: rnrRetry, RetryCnt: 7, Timeout: 14},
				verbs.AttrState | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrSQPSN | verbs.AttrMaxQPRdAtomic},
		}
		for _, st := range steps {
			if err := x.qp.Modify(&st.attr, st.mask); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func (s *side) sge(off, n int) []verbs.SGE {
	return []verbs.SGE{{Addr: s.mr.Addr() + uintptr(off), Length: uint32(n), LKey: s.mr.LKey()}}
}

func poll(cq verbs.CQ) []verbs.WC {
	wc := make([]verbs.WC, 64)
	return wc[:cq.Poll(wc)]
}

func TestWriteOrderingAndSelectiveSignalling(t *testing.T) {
	n := New(Config{})
	a, b := mkSide(t, n, "a", false), mkSide(t, n, "b", false)
	connect(t, a, b, 7)
	for i := range 3 {
		copy(a.mem[i*100:], []byte{byte(i + 1), byte(i + 1)})
	}
	// Three WRITEs to the same place in one chain: RC order leaves the last.
	var wrs [3]verbs.SendWR
	for i := range wrs {
		wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpWrite, SGL: a.sge(i*100, 2),
			RemoteAddr: uint64(b.mr.Addr()) + 500, RKey: b.mr.RKey()}
		if i < 2 {
			wrs[i].Next = &wrs[i+1]
		}
	}
	wrs[2].Flags = verbs.FlagSignaled
	if _, err := a.qp.PostSend(&wrs[0]); err != nil {
		t.Fatal(err)
	}
	n.Advance(n.Now() + 1e9)
	if b.mem[500] != 3 || b.mem[501] != 3 {
		t.Errorf("destination %v, want the last WRITE's bytes", b.mem[500:502])
	}
	wc := poll(a.cq)
	if len(wc) != 1 || wc[0].WRID != 2 || wc[0].Status != verbs.WCSuccess || wc[0].QPN != a.qp.QPN() {
		t.Errorf("completions %+v, want only the signalled WR 2", wc)
	}
	if st := n.Stats(); st.BadSignalChains != 0 || st.PostSendCalls != 1 || st.SendWRs != 3 {
		t.Errorf("stats %+v", st)
	}
	// A chain with two signalled WRs is flagged.
	wrs[0].Flags = verbs.FlagSignaled
	a.qp.PostSend(&wrs[0])
	if n.Stats().BadSignalChains != 1 {
		t.Error("chain with two signalled WRs not flagged")
	}
}

func TestSendRecvRNRAndImm(t *testing.T) {
	n := New(Config{})
	a, b := mkSide(t, n, "a", false), mkSide(t, n, "b", false)
	connect(t, a, b, 7)
	copy(a.mem, "hello")
	send := verbs.SendWR{ID: 7, Opcode: verbs.OpSend, SGL: a.sge(0, 5), Flags: verbs.FlagSignaled}
	a.qp.PostSend(&send)
	n.Advance(50_000) // no receive posted: RNR NAKs, retried every 10 us
	if n.Stats().RNRNaks == 0 {
		t.Fatal("no RNR without a posted receive")
	}
	recv := verbs.RecvWR{ID: 9, SGL: b.sge(1000, 100)}
	b.qp.PostRecv(&recv)
	n.Advance(n.Now() + 1e9)
	wc := poll(b.cq)
	if len(wc) != 1 || wc[0].WRID != 9 || wc[0].ByteLen != 5 || wc[0].Opcode != verbs.WCRecv || wc[0].QPN != b.qp.QPN() {
		t.Fatalf("receive completion %+v", wc)
	}
	if string(b.mem[1000:1005]) != "hello" {
		t.Errorf("received %q", b.mem[1000:1005])
	}
	// WRITE_WITH_IMM consumes a receive and reports the immediate.
	b.qp.PostRecv(&recv)
	wi := verbs.SendWR{ID: 8, Opcode: verbs.OpWriteImm, SGL: a.sge(0, 5), Imm: 0xabcd,
		RemoteAddr: uint64(b.mr.Addr()) + 2000, RKey: b.mr.RKey(), Flags: verbs.FlagSignaled}
	a.qp.PostSend(&wi)
	n.Advance(n.Now() + 1e9)
	wc = poll(b.cq)
	if len(wc) != 1 || wc[0].Opcode != verbs.WCRecvRDMAImm || wc[0].Imm != 0xabcd || wc[0].ByteLen != 5 {
		t.Fatalf("write-imm completion %+v", wc)
	}
	if string(b.mem[2000:2005]) != "hello" {
		t.Errorf("written %q", b.mem[2000:2005])
	}
}

func TestRNRRetryExhaustedAndFlush(t *testing.T) {
	n := New(Config{})
	a, b := mkSide(t, n, "a", false), mkSide(t, n, "b", false)
	connect(t, a, b, 0) // no RNR retries
	send := verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: a.sge(0, 5)}
	send2 := verbs.SendWR{ID: 2, Opcode: verbs.OpSend, SGL: a.sge(0, 5)}
	send.Next = &send2
	a.qp.PostSend(&send)
	n.Advance(n.Now() + 1e9)
	wc := poll(a.cq)
	if len(wc) != 2 || wc[0].Status != verbs.WCRNRRetryExcErr || wc[1].Status != verbs.WCWRFlushErr {
		t.Fatalf("completions %+v, want RNR retry exceeded then a flush (errors are always reported)", wc)
	}
	if a.qp.State() != verbs.StateErr {
		t.Errorf("QP state %v after an error completion", a.qp.State())
	}
}

func TestBadRKeyAndCrash(t *testing.T) {
	n := New(Config{})
	a, b := mkSide(t, n, "a", false), mkSide(t, n, "b", false)
	connect(t, a, b, 7)
	w := verbs.SendWR{ID: 1, Opcode: verbs.OpWrite, SGL: a.sge(0, 5), RemoteAddr: uint64(b.mr.Addr()), RKey: 12345}
	a.qp.PostSend(&w)
	n.Advance(n.Now() + 1e9)
	if wc := poll(a.cq); len(wc) != 1 || wc[0].Status != verbs.WCRemAccessErr {
		t.Fatalf("completions %+v, want remote access error", wc)
	}
	c, d := mkSide(t, n, "c", false), mkSide(t, n, "d", false)
	connect(t, c, d, 7)
	d.ctx.Crash()
	w = verbs.SendWR{ID: 1, Opcode: verbs.OpWrite, SGL: c.sge(0, 5), RemoteAddr: uint64(d.mr.Addr()), RKey: d.mr.RKey()}
	c.qp.PostSend(&w)
	n.Advance(n.Now() + 1e9)
	if wc := poll(c.cq); len(wc) != 1 || wc[0].Status != verbs.WCRetryExcErr {
		t.Fatalf("completions %+v, want retry exceeded towards a crashed peer", wc)
	}
}

// TestRegDeregMR: a region registered for one WRITE (as ibv_reg_mr per
// message does) carries it; once deregistered its lkey no longer does
// (the WRITE completes in error), it is counted as registered and
// deregistered, OpenMRs drops back, and a second Dereg is an error.
func TestRegDeregMR(t *testing.T) {
	n := New(Config{})
	a, b := mkSide(t, n, "a", false), mkSide(t, n, "b", false)
	connect(t, a, b, 7)
	base := n.Stats()
	open := n.OpenMRs()
	if open != 2 {
		t.Fatalf("%d open MRs, want the two sides' 2", open)
	}
	mr, err := a.pd.RegMR(a.mr.Addr()+4096, 4096, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	copy(a.mem[4096:], "per-message")
	write := func(id uint64) verbs.WC {
		t.Helper()
		wr := verbs.SendWR{ID: id, Opcode: verbs.OpWrite, Flags: verbs.FlagSignaled,
			SGL: []verbs.SGE{{Addr: mr.Addr(), Length: 11, LKey: mr.LKey()}}, RemoteAddr: uint64(b.mr.Addr()), RKey: b.mr.RKey()}
		if _, err := a.qp.PostSend(&wr); err != nil {
			t.Fatal(err)
		}
		n.Advance(n.Now() + 1e9)
		wc := poll(a.cq)
		if len(wc) != 1 {
			t.Fatalf("%d completions, want 1", len(wc))
		}
		return wc[0]
	}
	if wc := write(1); wc.Status != verbs.WCSuccess || string(b.mem[:11]) != "per-message" {
		t.Fatalf("WRITE from the new region: %v, destination %q", wc.Status, b.mem[:11])
	}
	if n.OpenMRs() != open+1 {
		t.Errorf("%d open MRs after one more registration, want %d", n.OpenMRs(), open+1)
	}
	if err := mr.Dereg(); err != nil {
		t.Fatal(err)
	}
	if err := mr.Dereg(); err == nil {
		t.Error("a second Dereg of one region succeeded")
	}
	st := n.Stats()
	if st.RegMRs-base.RegMRs != 1 || st.DeregMRs-base.DeregMRs != 1 || n.OpenMRs() != open {
		t.Errorf("registered %d, deregistered %d, open %d; want 1, 1, %d", st.RegMRs-base.RegMRs, st.DeregMRs-base.DeregMRs, n.OpenMRs(), open)
	}
	if wc := write(2); wc.Status == verbs.WCSuccess {
		t.Error("a WRITE through a deregistered region's lkey succeeded")
	}
}
