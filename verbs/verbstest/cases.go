package verbstest

import (
	"errors"
	"fmt"
	"time"

	"github.com/besim/besim/verbs"
)

// Device: attributes are sane and MRs report what was registered.
func testDevice(f *Fixture) {
	for _, c := range []verbs.Context{f.A, f.B} {
		a := c.Attr()
		if a.MaxQPWR <= 0 || a.MaxSGE <= 0 || a.MaxCQE <= 0 || a.MaxMR <= 0 {
			f.T.Fatalf("%s: device limits %+v: want positive MaxQPWR, MaxSGE, MaxCQE, MaxMR", c.Name(), a)
		}
		if a.PortRate <= 0 || !a.PortMTU.Valid() {
			f.T.Fatalf("%s: port rate %d, MTU %d", c.Name(), a.PortRate, a.PortMTU)
		}
	}
	if f.A.Attr().GID == (verbs.GID{}) {
		f.T.Fatalf("%s: zero port GID", f.A.Name())
	}
	acc := verbs.AccessLocalWrite | verbs.AccessRemoteWrite
	r1 := f.Region(f.PDA, 3*4096, acc)
	r2 := f.Region(f.PDA, 4096, DefaultAccess)
	if r1.MR.Addr() != r1.Addr(0) || r1.MR.Len() != 3*4096 || r1.MR.Access() != acc {
		f.T.Fatalf("MR reports addr %#x len %d access %#x, registered %#x %d %#x",
			r1.MR.Addr(), r1.MR.Len(), uint32(r1.MR.Access()), r1.Addr(0), 3*4096, uint32(acc))
	}
	if r1.MR.RKey() == r2.MR.RKey() || r1.MR.LKey() == r2.MR.LKey() {
		f.T.Fatalf("two MRs share keys: %#x/%#x and %#x/%#x", r1.MR.LKey(), r1.MR.RKey(), r2.MR.LKey(), r2.MR.RKey())
	}
}

// QPStateMachine: RESET->INIT->RTR->RTS with the required masks; illegal
// transitions and missing or extra attributes are rejected without changing
// the state; ERR->RESET makes the QP reusable.
func testQPStateMachine(f *Fixture) {
	cq := f.CQ(f.A, 16, nil)
	peer := f.qp(f.PDB, f.CQ(f.B, 16, nil), nil, nil, verbs.RC, DefaultRC())
	qp := f.qp(f.PDA, cq, nil, nil, verbs.RC, DefaultRC())
	ini := f.RCInitAttr()
	rtr := f.RCRTRAttr(f.A, f.B, peer.QPN(), psnB, 1)
	rts := f.RCRTSAttr(psnA, 7)
	badMTU := rtr
	badMTU.PathMTU = 1500
	errA := verbs.QPAttr{State: verbs.StateErr}
	reset := verbs.QPAttr{State: verbs.StateReset}
	rtsAgain := verbs.QPAttr{State: verbs.StateRTS, MinRNRTimer: 12}
	type step struct {
		name string
		attr verbs.QPAttr
		mask verbs.AttrMask
		ok   bool
		want verbs.QPState
	}
	steps := []step{
		{"RESET->RTR", rtr, MaskRCRTR, false, verbs.StateReset},
		{"RESET->RTS", rts, MaskRCRTS, false, verbs.StateReset},
		{"RESET->INIT without Port", ini, MaskRCInit &^ verbs.AttrPort, false, verbs.StateReset},
		{"RESET->INIT without AccessFlags", ini, MaskRCInit &^ verbs.AttrAccessFlags, false, verbs.StateReset},
		{"RESET->INIT with extra DestQPN", ini, MaskRCInit | verbs.AttrDestQPN, false, verbs.StateReset},
		{"RESET->INIT", ini, MaskRCInit, true, verbs.StateInit},
		{"INIT->RTS", rts, MaskRCRTS, false, verbs.StateInit},
		{"INIT->RTR without DestQPN", rtr, MaskRCRTR &^ verbs.AttrDestQPN, false, verbs.StateInit},
		{"INIT->RTR without AV", rtr, MaskRCRTR &^ verbs.AttrAV, false, verbs.StateInit},
		{"INIT->RTR path MTU 1500", badMTU, MaskRCRTR, false, verbs.StateInit},
		{"INIT->RTR", rtr, MaskRCRTR, true, verbs.StateRTR},
		{"RTR->INIT", ini, verbs.AttrState, false, verbs.StateRTR},
		{"RTR->RTS without SQPSN", rts, MaskRCRTS &^ verbs.AttrSQPSN, false, verbs.StateRTR},
		{"RTR->RTS without RNRRetry", rts, MaskRCRTS &^ verbs.AttrRNRRetry, false, verbs.StateRTR},
		{"RTR->RTS", rts, MaskRCRTS, true, verbs.StateRTS},
		{"RTS->RTR", rtr, MaskRCRTR, false, verbs.StateRTS},
		{"RTS->RTS MinRNRTimer", rtsAgain, verbs.AttrState | verbs.AttrMinRNRTimer, true, verbs.StateRTS},
		{"RTS->ERR", errA, verbs.AttrState, true, verbs.StateErr},
		{"ERR->RTS", rts, MaskRCRTS, false, verbs.StateErr},
		{"ERR->RESET", reset, verbs.AttrState, true, verbs.StateReset},
		{"RESET->INIT again", ini, MaskRCInit, true, verbs.StateInit},
		{"INIT->RESET", reset, verbs.AttrState, true, verbs.StateReset},
	}
	for _, s := range steps {
		attr := s.attr
		err := qp.Modify(&attr, s.mask)
		if s.ok && err != nil {
			f.T.Fatalf("%s (mask %#x): rejected: %v", s.name, uint32(s.mask), err)
		}
		if !s.ok && err == nil {
			f.T.Fatalf("%s (mask %#x): accepted, want an error", s.name, uint32(s.mask))
		}
		if st := qp.State(); st != s.want {
			f.T.Fatalf("%s: QP in %v, want %v", s.name, st, s.want)
		}
	}
	f.Quiet(cq, 10*f.Env.Step, "state changes of an idle QP")
}

// FlushOnErr/Recv: moving a QP to ERR completes its posted receives with
// WCWRFlushErr, in posting order.
func testFlushRecv(f *Fixture) {
	a, b := f.RC(DefaultRC())
	r := f.Region(f.PDB, 8*256, DefaultAccess)
	wrs := make([]verbs.RecvWR, 8)
	for i := range wrs {
		wrs[i] = verbs.RecvWR{ID: 0x1000 + uint64(i), SGL: r.SGL(i*256, 256)}
	}
	f.PostRecv(b, ChainRecv(wrs), "receives")
	f.Quiet(b.CQ, 10*f.Env.Step, "receives on a quiet connection")
	f.Modify(b.QP, verbs.QPAttr{State: verbs.StateErr}, verbs.AttrState, "RTS->ERR")
	wcs := f.Wait(b.CQ, len(wrs), "flushed receives")
	for i, wc := range wcs {
		f.expectWC(wc, 0x1000+uint64(i), verbs.WCWRFlushErr, 0, b.QP.QPN(), fmt.Sprintf("flushed receive %d", i))
	}
	f.Quiet(b.CQ, 10*f.Env.Step, "after the flush")
	f.Quiet(a.CQ, 0, "the peer")
}

// FlushOnErr/Send: sends stuck behind an RNR wait (infinite retry) are
// flushed with WCWRFlushErr when the sender moves to ERR; nothing arrives.
func testFlushSend(f *Fixture) {
	a, b := f.RC(DefaultRC())
	r := f.Region(f.PDA, 3*512, DefaultAccess)
	wrs := make([]verbs.SendWR, 3)
	for i := range wrs {
		wrs[i] = verbs.SendWR{ID: 0x2000 + uint64(i), Opcode: verbs.OpSend, Flags: verbs.FlagSignaled, SGL: r.SGL(i*512, 512)}
	}
	f.PostSend(a.QP, ChainSend(wrs), "sends without receives")
	f.Quiet(a.CQ, time.Millisecond, "sends waiting for a receive (rnr_retry=7)")
	if s := a.QP.State(); s != verbs.StateRTS {
		f.T.Fatalf("sender in %v while retrying RNR, want RTS", s)
	}
	f.Modify(a.QP, verbs.QPAttr{State: verbs.StateErr}, verbs.AttrState, "RTS->ERR")
	wcs := f.Wait(a.CQ, len(wrs), "flushed sends")
	for i, wc := range wcs {
		f.expectWC(wc, 0x2000+uint64(i), verbs.WCWRFlushErr, 0, a.QP.QPN(), fmt.Sprintf("flushed send %d", i))
	}
	f.Quiet(b.CQ, 10*f.Env.Step, "the receiver")
}

// SendRecv/ChainedInOrder: many chained SENDs (sizes from 1 byte to 3 MTUs,
// some gathered from two SGEs, one with immediate data) arrive intact and
// in order, each consuming one receive.
func testSendRecvChained(f *Fixture) {
	const n, perPost = 48, 16
	a, b := f.RC(DefaultRC())
	slot := 3 * f.MTU
	src := f.Region(f.PDA, n*slot, DefaultAccess)
	dst := f.Region(f.PDB, n*slot, DefaultAccess)
	sizes := make([]int, n)
	for i := range sizes {
		sizes[i] = 1 + (i*977+i*i*31)%slot
	}
	sizes[0], sizes[1], sizes[2], sizes[3] = 1, f.MTU, f.MTU+1, slot
	twoSGE := f.A.Attr().MaxSGE >= 2
	recvs := make([]verbs.RecvWR, n)
	for i := range recvs {
		recvs[i] = verbs.RecvWR{ID: 0x3000 + uint64(i), SGL: dst.SGL(i*slot, slot)}
	}
	f.PostRecv(b, ChainRecv(recvs), "receives")
	sends := make([]verbs.SendWR, n)
	for i := range sends {
		Fill(src.Buf[i*slot:i*slot+sizes[i]], i)
		w := verbs.SendWR{ID: 0x4000 + uint64(i), Opcode: verbs.OpSend, SGL: src.SGL(i*slot, sizes[i])}
		if twoSGE && i%3 == 2 && sizes[i] > 1 {
			h := sizes[i] / 2
			w.SGL = []verbs.SGE{src.SGE(i*slot, h), src.SGE(i*slot+h, sizes[i]-h)}
		}
		if i == 5 {
			w.Opcode, w.Imm = verbs.OpSendImm, 0xa5000005
		}
		sends[i] = w
	}
	for i := 0; i < n; i += perPost {
		f.PostSend(a.QP, ChainSend(sends[i:i+perPost]), fmt.Sprintf("sends %d..%d", i, i+perPost-1))
	}
	wcs := f.Wait(b.CQ, n, "receive completions")
	for i, wc := range wcs {
		what := fmt.Sprintf("receive %d", i)
		f.expectWC(wc, 0x3000+uint64(i), verbs.WCSuccess, verbs.WCRecv, b.QP.QPN(), what)
		if int(wc.ByteLen) != sizes[i] {
			f.T.Fatalf("%s: byte_len %d, want %d", what, wc.ByteLen, sizes[i])
		}
		if imm := wc.Flags&verbs.WCWithImm != 0; imm != (i == 5) || (imm && wc.Imm != 0xa5000005) {
			f.T.Fatalf("%s: flags %#x imm %#x", what, uint8(wc.Flags), wc.Imm)
		}
		f.Same(dst.Buf[i*slot:i*slot+sizes[i]], pattern(sizes[i], i), what)
	}
	swcs := f.Wait(a.CQ, n, "send completions")
	for i, wc := range swcs {
		f.expectWC(wc, 0x4000+uint64(i), verbs.WCSuccess, verbs.WCSend, a.QP.QPN(), fmt.Sprintf("send %d", i))
	}
}

// SelectiveSignaling: with SigAll false only FlagSignaled WRs complete at
// the sender, and a signalled completion implies the earlier unsignalled
// WRs on that QP have completed (their data is at the remote side).
func testSelectiveSignaling(f *Fixture) {
	cfg := DefaultRC()
	cfg.SigAll = false
	a, b := f.RC(cfg)
	const sz = 1000
	src := f.Region(f.PDA, 16*sz, DefaultAccess)
	dst := f.Region(f.PDB, 16*sz, DefaultAccess)
	for i := 0; i < 16; i++ {
		Fill(src.Buf[i*sz:(i+1)*sz], 100+i)
	}
	// Seven unsignalled WRITEs, then a signalled SEND.
	f.PostRecv(b, &verbs.RecvWR{ID: 0x5100, SGL: dst.SGL(15*sz, sz)}, "receive")
	wrs := make([]verbs.SendWR, 8)
	for i := 0; i < 7; i++ {
		wrs[i] = verbs.SendWR{ID: 0x5000 + uint64(i), Opcode: verbs.OpWrite, SGL: src.SGL(i*sz, sz),
			RemoteAddr: dst.Remote(i * sz), RKey: dst.MR.RKey()}
	}
	wrs[7] = verbs.SendWR{ID: 0x5007, Opcode: verbs.OpSend, Flags: verbs.FlagSignaled, SGL: src.SGL(7*sz, sz)}
	f.PostSend(a.QP, ChainSend(wrs), "writes then a signalled send")
	wc := f.Wait(a.CQ, 1, "the one signalled completion")[0]
	f.expectWC(wc, 0x5007, verbs.WCSuccess, verbs.WCSend, a.QP.QPN(), "signalled send")
	for i := 0; i < 7; i++ {
		f.Same(dst.Buf[i*sz:(i+1)*sz], pattern(sz, 100+i), fmt.Sprintf("unsignalled WRITE %d after the signalled completion", i))
	}
	f.expectWC(f.Wait(b.CQ, 1, "receive")[0], 0x5100, verbs.WCSuccess, verbs.WCRecv, b.QP.QPN(), "receive")
	f.Same(dst.Buf[15*sz:16*sz], pattern(sz, 107), "sent data")
	f.Quiet(a.CQ, 20*f.Env.Step, "unsignalled WRs")

	// Four unsignalled SENDs (each still completes at the receiver), then a
	// signalled WRITE.
	recvs := make([]verbs.RecvWR, 4)
	for i := range recvs {
		recvs[i] = verbs.RecvWR{ID: 0x5200 + uint64(i), SGL: dst.SGL((8+i)*sz, sz)}
	}
	f.PostRecv(b, ChainRecv(recvs), "receives")
	wrs = wrs[:5]
	for i := 0; i < 4; i++ {
		wrs[i] = verbs.SendWR{ID: 0x5300 + uint64(i), Opcode: verbs.OpSend, SGL: src.SGL((8+i)*sz, sz)}
	}
	wrs[4] = verbs.SendWR{ID: 0x5304, Opcode: verbs.OpWrite, Flags: verbs.FlagSignaled, SGL: src.SGL(12*sz, sz),
		RemoteAddr: dst.Remote(12 * sz), RKey: dst.MR.RKey()}
	f.PostSend(a.QP, ChainSend(wrs), "sends then a signalled write")
	wc = f.Wait(a.CQ, 1, "the signalled WRITE")[0]
	f.expectWC(wc, 0x5304, verbs.WCSuccess, verbs.WCRDMAWrite, a.QP.QPN(), "signalled write")
	f.Same(dst.Buf[12*sz:13*sz], pattern(sz, 112), "written data")
	for i, wc := range f.Wait(b.CQ, 4, "receives of unsignalled sends") {
		f.expectWC(wc, 0x5200+uint64(i), verbs.WCSuccess, verbs.WCRecv, b.QP.QPN(), fmt.Sprintf("receive %d", i))
		f.Same(dst.Buf[(8+i)*sz:(9+i)*sz], pattern(sz, 108+i), fmt.Sprintf("unsignalled send %d", i))
	}
	f.Quiet(a.CQ, 20*f.Env.Step, "unsignalled sends")
}

// Write/NoRecvConsumed: a WRITE places data at the remote address, produces
// no receive completion and leaves the posted receive for a later SEND.
func testWrite(f *Fixture) {
	a, b := f.RC(DefaultRC())
	n := 3*f.MTU + 5
	src := f.Region(f.PDA, n+64, DefaultAccess)
	dst := f.Region(f.PDB, n+4096, DefaultAccess)
	Fill(src.Buf[:n], 7)
	Fill(src.Buf[n:n+10], 8)
	f.PostRecv(b, &verbs.RecvWR{ID: 77, SGL: dst.SGL(n+200, 100)}, "receive")
	f.PostSend(a.QP, &verbs.SendWR{ID: 1, Opcode: verbs.OpWrite, Flags: verbs.FlagSignaled,
		SGL: src.SGL(0, n), RemoteAddr: dst.Remote(100), RKey: dst.MR.RKey()}, "write")
	f.expectWC(f.Wait(a.CQ, 1, "write completion")[0], 1, verbs.WCSuccess, verbs.WCRDMAWrite, a.QP.QPN(), "write")
	f.Same(dst.Buf[100:100+n], pattern(n, 7), "written data")
	f.zero(dst.Buf[:100], "bytes before the write")
	f.zero(dst.Buf[100+n:n+200], "bytes after the write")
	f.Quiet(b.CQ, 20*f.Env.Step, "responder of a WRITE")
	f.PostSend(a.QP, &verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.FlagSignaled, SGL: src.SGL(n, 10)}, "send")
	wc := f.Wait(b.CQ, 1, "receive of the send")[0]
	f.expectWC(wc, 77, verbs.WCSuccess, verbs.WCRecv, b.QP.QPN(), "receive still posted after the WRITE")
	if wc.ByteLen != 10 {
		f.T.Fatalf("receive byte_len %d, want 10", wc.ByteLen)
	}
	f.Same(dst.Buf[n+200:n+210], pattern(10, 8), "sent data")
	f.Wait(a.CQ, 1, "send completion")
}

// WriteImm/PriorWritesVisible: WRITE_WITH_IMM consumes a receive (without
// touching its buffer); the completion is WCRecvRDMAImm with WCWithImm and
// the immediate; when it is polled the data of that WRITE and of earlier
// WRITEs on the QP is visible. A zero-length WRITE_WITH_IMM works too.
func testWriteImm(f *Fixture) {
	a, b := f.RC(DefaultRC())
	src := f.Region(f.PDA, 4*f.MTU, DefaultAccess)
	dst := f.Region(f.PDB, 6*f.MTU, DefaultAccess)
	Fill(src.Buf, 9)
	rb := dst.Buf[5*f.MTU : 5*f.MTU+64]
	for i := range rb {
		rb[i] = 0xee
	}
	f.PostRecv(b, ChainRecv([]verbs.RecvWR{
		{ID: 0x600, SGL: dst.SGL(5*f.MTU, 64)},
		{ID: 0x601, SGL: dst.SGL(5*f.MTU, 64)},
	}), "receives")
	rk := dst.MR.RKey()
	wrs := []verbs.SendWR{
		{ID: 0x610, Opcode: verbs.OpWrite, SGL: src.SGL(0, 2*f.MTU), RemoteAddr: dst.Remote(0), RKey: rk},
		{ID: 0x611, Opcode: verbs.OpWrite, SGL: src.SGL(2*f.MTU, 100), RemoteAddr: dst.Remote(2 * f.MTU), RKey: rk},
		{ID: 0x612, Opcode: verbs.OpWriteImm, Imm: 0xc0ffee01, SGL: src.SGL(3*f.MTU, 777), RemoteAddr: dst.Remote(3 * f.MTU), RKey: rk},
		{ID: 0x613, Opcode: verbs.OpWriteImm, Imm: 2, RemoteAddr: dst.Remote(4 * f.MTU), RKey: rk},
	}
	f.PostSend(a.QP, ChainSend(wrs), "writes and writes with immediate")
	wc := f.Wait(b.CQ, 1, "first WRITE_WITH_IMM")[0]
	// Check visibility before anything else progresses.
	f.Same(dst.Buf[:2*f.MTU], src.Buf[:2*f.MTU], "earlier WRITE 0 when WRITE_WITH_IMM completes")
	f.Same(dst.Buf[2*f.MTU:2*f.MTU+100], src.Buf[2*f.MTU:2*f.MTU+100], "earlier WRITE 1 when WRITE_WITH_IMM completes")
	f.Same(dst.Buf[3*f.MTU:3*f.MTU+777], src.Buf[3*f.MTU:3*f.MTU+777], "WRITE_WITH_IMM data when it completes")
	f.expectWC(wc, 0x600, verbs.WCSuccess, verbs.WCRecvRDMAImm, b.QP.QPN(), "WRITE_WITH_IMM receive")
	if wc.Flags&verbs.WCWithImm == 0 || wc.Imm != 0xc0ffee01 || wc.ByteLen != 777 {
		f.T.Fatalf("WRITE_WITH_IMM completion flags %#x imm %#x byte_len %d, want WithImm 0xc0ffee01 777",
			uint8(wc.Flags), wc.Imm, wc.ByteLen)
	}
	wc = f.Wait(b.CQ, 1, "zero-length WRITE_WITH_IMM")[0]
	f.expectWC(wc, 0x601, verbs.WCSuccess, verbs.WCRecvRDMAImm, b.QP.QPN(), "zero-length WRITE_WITH_IMM receive")
	if wc.Flags&verbs.WCWithImm == 0 || wc.Imm != 2 || wc.ByteLen != 0 {
		f.T.Fatalf("zero-length WRITE_WITH_IMM: flags %#x imm %#x byte_len %d", uint8(wc.Flags), wc.Imm, wc.ByteLen)
	}
	for i, x := range rb {
		if x != 0xee {
			f.T.Fatalf("WRITE_WITH_IMM wrote into the receive buffer at %d", i)
		}
	}
	for i, wc := range f.Wait(a.CQ, 4, "send completions") {
		f.expectWC(wc, 0x610+uint64(i), verbs.WCSuccess, verbs.WCRDMAWrite, a.QP.QPN(), fmt.Sprintf("write %d", i))
	}
	f.Quiet(b.CQ, 10*f.Env.Step, "plain WRITEs")
}

// Read: RDMA READ returns remote data, including into two SGEs.
func testRead(f *Fixture) {
	a, b := f.RC(DefaultRC())
	n := 2*f.MTU + 3
	remote := f.Region(f.PDB, 2*n+100, DefaultAccess)
	local := f.Region(f.PDA, 2*n+100, DefaultAccess)
	Fill(remote.Buf, 11)
	wrs := []verbs.SendWR{
		{ID: 0x700, Opcode: verbs.OpRead, Flags: verbs.FlagSignaled, SGL: local.SGL(0, n),
			RemoteAddr: remote.Remote(50), RKey: remote.MR.RKey()},
		{ID: 0x701, Opcode: verbs.OpRead, Flags: verbs.FlagSignaled, SGL: local.SGL(n, 100),
			RemoteAddr: remote.Remote(n + 50), RKey: remote.MR.RKey()},
	}
	if f.A.Attr().MaxSGE >= 2 {
		wrs[1].SGL = []verbs.SGE{local.SGE(n, 40), local.SGE(n+40, 60)}
	}
	f.PostSend(a.QP, ChainSend(wrs), "reads")
	wcs := f.Wait(a.CQ, 2, "read completions")
	for i, want := range []uint32{uint32(n), 100} {
		f.expectWC(wcs[i], 0x700+uint64(i), verbs.WCSuccess, verbs.WCRDMARead, a.QP.QPN(), fmt.Sprintf("read %d", i))
		if wcs[i].ByteLen != want {
			f.T.Fatalf("read %d byte_len %d, want %d", i, wcs[i].ByteLen, want)
		}
	}
	f.Same(local.Buf[:n], remote.Buf[50:50+n], "read data")
	f.Same(local.Buf[n:n+100], remote.Buf[n+50:n+150], "read data (two SGEs)")
	f.Quiet(b.CQ, 10*f.Env.Step, "responder of a READ")
}

// SendQueueOverflow: a chain longer than the send queue is posted up to the
// first WR that does not fit, which is returned with an error; that WR and
// the ones after it have no effect, and the QP stays usable.
func testSendQueueOverflow(f *Fixture) {
	const cqDepth = 512
	cfg := DefaultRC()
	cfg.SendWR = 8
	cfg.CQA = f.CQ(f.A, cqDepth, nil)
	a, b := f.RC(cfg)
	depth := cfg.SendWR
	if c, ok := a.QP.(SendQueueCapper); ok {
		depth = c.SendQueueCap()
	}
	if depth < cfg.SendWR {
		f.T.Fatalf("send queue holds %d, asked for %d", depth, cfg.SendWR)
	}
	if depth > cqDepth-8 {
		f.T.Skipf("MaxSendWR %d became a %d-deep send queue; too deep to fill here", cfg.SendWR, depth)
	}
	const sz = 8
	src := f.Region(f.PDA, (depth+3)*sz, DefaultAccess)
	dst := f.Region(f.PDB, (depth+3)*sz, DefaultAccess)
	Fill(src.Buf, 13)
	wr := func(i int) verbs.SendWR {
		return verbs.SendWR{ID: 0x800 + uint64(i), Opcode: verbs.OpWrite, SGL: src.SGL(i*sz, sz),
			RemoteAddr: dst.Remote(i * sz), RKey: dst.MR.RKey()}
	}
	wrs := make([]verbs.SendWR, depth+1)
	for i := range wrs {
		wrs[i] = wr(i)
	}
	bad, err := a.QP.PostSend(ChainSend(wrs))
	if err == nil || bad == nil {
		f.T.Fatalf("posting %d WRs on a %d-deep send queue: bad %v, err %v; want an error and the first WR not posted", depth+1, depth, bad, err)
	}
	k := -1
	for i := range wrs {
		if bad == &wrs[i] {
			k = i
		}
	}
	if k < 0 {
		f.T.Fatalf("bad WR %p (id %#x) is not in the posted chain", bad, bad.ID)
	}
	if k == depth {
		// The queue is full now (nothing was polled): one more WR fails too.
		extra := wr(depth + 1)
		if bad, err := a.QP.PostSend(&extra); err == nil || bad != &extra {
			f.T.Fatalf("posting to a full send queue: bad %v, err %v", bad, err)
		}
	}
	if s := a.QP.State(); s != verbs.StateRTS {
		f.T.Fatalf("QP in %v after a rejected post, want RTS", s)
	}
	for i, wc := range f.Wait(a.CQ, k, "completions of the WRs that fit") {
		f.expectWC(wc, 0x800+uint64(i), verbs.WCSuccess, verbs.WCRDMAWrite, a.QP.QPN(), fmt.Sprintf("write %d", i))
	}
	f.Quiet(a.CQ, 20*f.Env.Step, "WRs that were not posted")
	f.Same(dst.Buf[:k*sz], src.Buf[:k*sz], "data of the posted WRs")
	f.zero(dst.Buf[k*sz:], "targets of WRs that were not posted")
	last := wr(depth + 2)
	last.Flags = verbs.FlagSignaled
	f.PostSend(a.QP, &last, "post after draining")
	f.expectWC(f.Wait(a.CQ, 1, "post after draining")[0], last.ID, verbs.WCSuccess, verbs.WCRDMAWrite, a.QP.QPN(), "post after draining")
	f.Same(dst.Buf[(depth+2)*sz:], src.Buf[(depth+2)*sz:], "data of the post after draining")
	f.Quiet(b.CQ, 0, "responder")
}

// RNR/RetryNExceeded: a SEND with no receive posted and rnr_retry=N fails
// with WCRNRRetryExcErr and the sender's QP enters ERR.
func testRNRExceeded(f *Fixture, retry uint8) {
	cfg := DefaultRC()
	cfg.RNRRetry = retry
	a, b := f.RC(cfg)
	src := f.Region(f.PDA, 256, DefaultAccess)
	f.PostSend(a.QP, &verbs.SendWR{ID: 0x900, Opcode: verbs.OpSend, Flags: verbs.FlagSignaled, SGL: src.SGL(0, 256)}, "send")
	wc := f.Wait(a.CQ, 1, "RNR failure")[0]
	f.expectWC(wc, 0x900, verbs.WCRNRRetryExcErr, 0, a.QP.QPN(), fmt.Sprintf("send with rnr_retry=%d and no receive", retry))
	if s := a.QP.State(); s != verbs.StateErr {
		f.T.Fatalf("sender in %v after RNR retry exceeded, want ERR", s)
	}
	f.Quiet(b.CQ, 10*f.Env.Step, "receiver without receives")
}

// RNR/InfiniteThenRecv: with rnr_retry=7 a SEND waits for a receive for as
// long as it takes, and completes once one is posted.
func testRNRInfinite(f *Fixture) {
	a, b := f.RC(DefaultRC())
	src := f.Region(f.PDA, 300, DefaultAccess)
	dst := f.Region(f.PDB, 300, DefaultAccess)
	Fill(src.Buf, 17)
	f.PostSend(a.QP, &verbs.SendWR{ID: 0x910, Opcode: verbs.OpSend, Flags: verbs.FlagSignaled, SGL: src.SGL(0, 300)}, "send")
	f.Quiet(a.CQ, 2*time.Millisecond, "send waiting on RNR with rnr_retry=7")
	if s := a.QP.State(); s != verbs.StateRTS {
		f.T.Fatalf("sender in %v while waiting on RNR, want RTS", s)
	}
	f.PostRecv(b, &verbs.RecvWR{ID: 0x911, SGL: dst.SGL(0, 300)}, "late receive")
	wc := f.Wait(b.CQ, 1, "receive after RNR")[0]
	f.expectWC(wc, 0x911, verbs.WCSuccess, verbs.WCRecv, b.QP.QPN(), "late receive")
	f.Same(dst.Buf, src.Buf, "data after RNR")
	f.expectWC(f.Wait(a.CQ, 1, "send after RNR")[0], 0x910, verbs.WCSuccess, verbs.WCSend, a.QP.QPN(), "send after RNR")
}

func badKey(keys ...uint32) uint32 {
	k := keys[0] ^ 0x5a
	for again := true; again; {
		again = false
		for _, x := range keys {
			if k == x {
				k ^= 0x0100_0300
				again = true
			}
		}
	}
	return k
}

// remoteAccess posts one WR and expects WCRemAccessErr with the sender in
// ERR and the responder's memory untouched.
func remoteAccess(f *Fixture, op verbs.Opcode, rkey func(local, remote *Region) uint32, off func(remote *Region) int) {
	a, b := f.RC(DefaultRC())
	local := f.Region(f.PDA, 4096, DefaultAccess)
	remote := f.Region(f.PDB, 4096, DefaultAccess)
	Fill(local.Buf, 19)
	o := off(remote)
	wr := verbs.SendWR{ID: 0xa00, Opcode: op, Flags: verbs.FlagSignaled, SGL: local.SGL(0, 64),
		RemoteAddr: remote.Remote(0) + uint64(o), RKey: rkey(local, remote)}
	f.PostSend(a.QP, &wr, op.String())
	f.expectWC(f.Wait(a.CQ, 1, "remote access error")[0], 0xa00, verbs.WCRemAccessErr, 0, a.QP.QPN(), op.String())
	if s := a.QP.State(); s != verbs.StateErr {
		f.T.Fatalf("requester in %v after a remote access error, want ERR", s)
	}
	f.zero(remote.Buf, "responder memory")
	if op == verbs.OpRead {
		f.Same(local.Buf, pattern(4096, 19), "local buffer of a failed READ")
	}
	f.Quiet(b.CQ, 10*f.Env.Step, "responder")
}

// RemoteAccess/BadRKeyWrite: a WRITE with an rkey that names no MR fails
// with WCRemAccessErr.
func testBadRKeyWrite(f *Fixture) {
	remoteAccess(f, verbs.OpWrite,
		func(l, r *Region) uint32 { return badKey(r.MR.RKey(), l.MR.RKey()) },
		func(*Region) int { return 0 })
}

// RemoteAccess/BadRKeyRead: so does a READ.
func testBadRKeyRead(f *Fixture) {
	remoteAccess(f, verbs.OpRead,
		func(l, r *Region) uint32 { return badKey(r.MR.RKey(), l.MR.RKey()) },
		func(*Region) int { return 0 })
}

// RemoteAccess/OutOfBounds: a WRITE with a valid rkey that runs past the end
// of the MR fails with WCRemAccessErr and writes nothing.
func testOutOfBounds(f *Fixture) {
	remoteAccess(f, verbs.OpWrite,
		func(_, r *Region) uint32 { return r.MR.RKey() },
		func(r *Region) int { return len(r.Buf) - 32 })
}

// UD/StateMasks: UD QPs need a Q_Key at INIT and nothing but the state at
// RTR; RC-only attributes are rejected.
func testUDStateMasks(f *Fixture) {
	cq := f.CQ(f.A, 8, nil)
	qp := f.qp(f.PDA, cq, nil, nil, verbs.UD, RCConfig{SendWR: 4, RecvWR: 4, MaxSGE: 1, SigAll: true})
	ini := verbs.QPAttr{State: verbs.StateInit, Port: f.Env.Port, QKey: UDQKey,
		AccessFlags: verbs.AccessLocalWrite}
	for _, s := range []struct {
		name string
		mask verbs.AttrMask
	}{
		{"RESET->INIT without QKey", MaskUDInit &^ verbs.AttrQKey},
		{"RESET->INIT with AccessFlags", MaskUDInit | verbs.AttrAccessFlags},
	} {
		attr := ini
		if err := qp.Modify(&attr, s.mask); err == nil {
			f.T.Fatalf("UD %s accepted, want an error", s.name)
		}
		if st := qp.State(); st != verbs.StateReset {
			f.T.Fatalf("UD %s: QP in %v", s.name, st)
		}
	}
	f.Modify(qp, ini, MaskUDInit, "UD RESET->INIT")
	rtr := verbs.QPAttr{State: verbs.StateRTR, DestQPN: 5, PathMTU: verbs.MTU(f.MTU)}
	if err := qp.Modify(&rtr, verbs.AttrState|verbs.AttrDestQPN|verbs.AttrPathMTU); err == nil {
		f.T.Fatalf("UD INIT->RTR with DestQPN and PathMTU accepted")
	}
	f.Modify(qp, verbs.QPAttr{State: verbs.StateRTR}, MaskUDRTR, "UD INIT->RTR")
	f.Modify(qp, verbs.QPAttr{State: verbs.StateRTS, SQPSN: 1}, MaskUDRTS, "UD RTR->RTS")
}

// grhLen is the Global Routing Header that UD receives carry in front of
// the payload (ibverbs leaves its 40 bytes in the receive buffer).
const grhLen = 40

// UD/SendRecvMTU: a UD SEND of exactly one MTU (and a small one with
// immediate data) lands after the 40-byte GRH; byte_len counts the GRH and
// src_qp names the sender.
func testUDMTU(f *Fixture) {
	a, b := f.UD(8)
	mtu := f.MTU
	src := f.Region(f.PDA, mtu, DefaultAccess)
	dst := f.Region(f.PDB, 2*(mtu+grhLen), DefaultAccess)
	Fill(src.Buf, 23)
	ah, err := f.PDA.CreateAH(f.Env.AH(f.A, f.B))
	f.check(err, "CreateAH")
	f.T.Cleanup(func() {
		if err := ah.Destroy(); err != nil {
			f.T.Errorf("destroy AH: %v", err)
		}
	})
	f.PostRecv(b, ChainRecv([]verbs.RecvWR{
		{ID: 0xb00, SGL: dst.SGL(0, mtu+grhLen)},
		{ID: 0xb01, SGL: dst.SGL(mtu+grhLen, mtu+grhLen)},
	}), "UD receives")
	wrs := []verbs.SendWR{
		{ID: 0xb10, Opcode: verbs.OpSend, SGL: src.SGL(0, mtu), AH: ah, RemoteQPN: b.QP.QPN(), RemoteQKey: UDQKey},
		{ID: 0xb11, Opcode: verbs.OpSendImm, Imm: 0x0d0d, SGL: src.SGL(0, 100), AH: ah, RemoteQPN: b.QP.QPN(), RemoteQKey: UDQKey},
	}
	f.PostSend(a.QP, ChainSend(wrs), "UD sends")
	for i, wc := range f.Wait(a.CQ, 2, "UD send completions") {
		f.expectWC(wc, 0xb10+uint64(i), verbs.WCSuccess, verbs.WCSend, a.QP.QPN(), fmt.Sprintf("UD send %d", i))
	}
	wcs := f.Wait(b.CQ, 2, "UD receives")
	for i, n := range []int{mtu, 100} {
		wc := wcs[i]
		what := fmt.Sprintf("UD receive %d", i)
		f.expectWC(wc, 0xb00+uint64(i), verbs.WCSuccess, verbs.WCRecv, b.QP.QPN(), what)
		if int(wc.ByteLen) != n+grhLen || wc.SrcQP != a.QP.QPN() {
			f.T.Fatalf("%s: byte_len %d src_qp %d, want %d (payload + 40-byte GRH) and %d", what, wc.ByteLen, wc.SrcQP, n+grhLen, a.QP.QPN())
		}
		base := i * (mtu + grhLen)
		f.Same(dst.Buf[base+grhLen:base+grhLen+n], src.Buf[:n], what+" payload after the GRH")
	}
	if wcs[1].Flags&verbs.WCWithImm == 0 || wcs[1].Imm != 0x0d0d {
		f.T.Fatalf("UD SEND_WITH_IMM: flags %#x imm %#x", uint8(wcs[1].Flags), wcs[1].Imm)
	}
}

// UD/LargerThanMTURejected: a UD SEND of MTU+1 bytes is refused, either at
// post time or with an error completion, and nothing is received.
func testUDOverMTU(f *Fixture) {
	a, b := f.UD(8)
	mtu := f.MTU
	src := f.Region(f.PDA, mtu+1, DefaultAccess)
	dst := f.Region(f.PDB, 2*mtu+grhLen, DefaultAccess)
	ah, err := f.PDA.CreateAH(f.Env.AH(f.A, f.B))
	f.check(err, "CreateAH")
	f.T.Cleanup(func() { _ = ah.Destroy() })
	f.PostRecv(b, &verbs.RecvWR{ID: 0xc00, SGL: dst.SGL(0, 2*mtu+grhLen)}, "UD receive")
	wr := verbs.SendWR{ID: 0xc10, Opcode: verbs.OpSend, SGL: src.SGL(0, mtu+1), AH: ah, RemoteQPN: b.QP.QPN(), RemoteQKey: UDQKey}
	if bad, err := a.QP.PostSend(&wr); err != nil {
		if bad != &wr {
			f.T.Fatalf("rejected UD post returned bad WR %v, want the WR", bad)
		}
	} else {
		wc := f.Wait(a.CQ, 1, "oversized UD send")[0]
		if wc.WRID != wr.ID || wc.Status == verbs.WCSuccess {
			f.T.Fatalf("UD send of MTU+1 bytes completed with %s, want an error", FormatWCs([]verbs.WC{wc}))
		}
	}
	f.Quiet(b.CQ, 20*f.Env.Step, "receiver of an oversized UD send")
}

// SharedCQ/DispatchByQPN: one CQ per side serves two QPs; every completion
// carries the QPN of its QP, and per-QP order holds.
func testSharedCQ(f *Fixture) {
	cqA, cqB := f.CQ(f.A, 64, nil), f.CQ(f.B, 64, nil)
	cfg := DefaultRC()
	cfg.CQA, cfg.CQB = cqA, cqB
	a1, b1 := f.RC(cfg)
	a2, b2 := f.RC(cfg)
	const n, sz = 4, 64
	src := f.Region(f.PDA, 2*n*sz, DefaultAccess)
	dst := f.Region(f.PDB, 2*n*sz, DefaultAccess)
	for q, b := range []*Endpoint{b1, b2} {
		recvs := make([]verbs.RecvWR, n)
		for i := range recvs {
			recvs[i] = verbs.RecvWR{ID: uint64(q+1)<<8 | uint64(i), SGL: dst.SGL((q*n+i)*sz, sz)}
		}
		f.PostRecv(b, ChainRecv(recvs), "receives")
	}
	for i := 0; i < n; i++ {
		for q, a := range []*Endpoint{a1, a2} {
			off := (q*n + i) * sz
			Fill(src.Buf[off:off+sz], q*n+i)
			f.PostSend(a.QP, &verbs.SendWR{ID: uint64(q+1)<<8 | uint64(i), Opcode: verbs.OpSend,
				Flags: verbs.FlagSignaled, SGL: src.SGL(off, sz)}, "send")
		}
	}
	check := func(cq verbs.CQ, qps [2]verbs.QP, side string) {
		var next [2]int
		for _, wc := range f.Wait(cq, 2*n, side+" shared CQ") {
			q := -1
			for j, qp := range qps {
				if wc.QPN == qp.QPN() {
					q = j
				}
			}
			if q < 0 || wc.Status != verbs.WCSuccess {
				f.T.Fatalf("%s: completion %s names neither QP %d nor %d", side, FormatWCs([]verbs.WC{wc}), qps[0].QPN(), qps[1].QPN())
			}
			if want := uint64(q+1)<<8 | uint64(next[q]); wc.WRID != want {
				f.T.Fatalf("%s: QP %d completion wr %#x, want %#x", side, wc.QPN, wc.WRID, want)
			}
			if side == "receiver" {
				off := (q*n + next[q]) * sz
				f.Same(dst.Buf[off:off+sz], pattern(sz, q*n+next[q]), "data via shared CQ")
			}
			next[q]++
		}
	}
	check(cqB, [2]verbs.QP{b1.QP, b2.QP}, "receiver")
	check(cqA, [2]verbs.QP{a1.QP, a2.QP}, "sender")
}

// SRQ/TwoQPs: two QPs draw receives from one SRQ; each message lands in the
// buffer of the receive its completion names.
func testSRQ(f *Fixture) {
	srq, err := f.PDB.CreateSRQ(verbs.SRQInitAttr{MaxWR: 16, MaxSGE: 1})
	f.check(err, "CreateSRQ")
	f.T.Cleanup(func() {
		if err := srq.Destroy(); err != nil {
			f.T.Errorf("destroy SRQ: %v", err)
		}
	})
	cqB := f.CQ(f.B, 64, nil)
	cfg := DefaultRC()
	cfg.CQB, cfg.SRQB = cqB, srq
	a1, b1 := f.RC(cfg)
	a2, b2 := f.RC(cfg)
	const n, sz = 6, 128
	src := f.Region(f.PDA, n*sz, DefaultAccess)
	dst := f.Region(f.PDB, n*sz, DefaultAccess)
	recvs := make([]verbs.RecvWR, n)
	for i := range recvs {
		recvs[i] = verbs.RecvWR{ID: 0xd00 + uint64(i), SGL: dst.SGL(i*sz, sz)}
	}
	f.PostRecv(b1, ChainRecv(recvs), "SRQ receives")
	for i := 0; i < n; i++ {
		a := []*Endpoint{a1, a2}[i%2]
		Fill(src.Buf[i*sz:(i+1)*sz], 200+i)
		f.PostSend(a.QP, &verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, Flags: verbs.FlagSignaled, SGL: src.SGL(i*sz, sz)}, "send")
	}
	used := map[uint64]bool{}
	next := map[uint32]int{b1.QP.QPN(): 0, b2.QP.QPN(): 1}
	for _, wc := range f.Wait(cqB, n, "SRQ receive completions") {
		k, ok := next[wc.QPN]
		if !ok || wc.Status != verbs.WCSuccess || wc.Opcode != verbs.WCRecv || wc.ByteLen != sz {
			f.T.Fatalf("SRQ completion %s", FormatWCs([]verbs.WC{wc}))
		}
		if wc.WRID < 0xd00 || wc.WRID >= 0xd00+n || used[wc.WRID] {
			f.T.Fatalf("SRQ completion names receive %#x (used twice or never posted)", wc.WRID)
		}
		used[wc.WRID] = true
		off := int(wc.WRID-0xd00) * sz
		f.Same(dst.Buf[off:off+sz], pattern(sz, 200+k), fmt.Sprintf("message %d via SRQ on QP %d", k, wc.QPN))
		next[wc.QPN] = k + 2
	}
	f.Wait(a1.CQ, n/2, "sends on QP 1")
	f.Wait(a2.CQ, n/2, "sends on QP 2")
}

// ThreadDomain: CQs and QPs created in thread domains carry traffic.
func testThreadDomain(f *Fixture) {
	td := func(c verbs.Context) verbs.TD {
		td, err := c.AllocTD()
		if errors.Is(err, verbs.ErrNotSupported) {
			f.T.Skipf("%s: AllocTD: %v", c.Name(), err)
		}
		f.check(err, "AllocTD on %s", c.Name())
		f.T.Cleanup(func() {
			if err := td.Dealloc(); err != nil {
				f.T.Errorf("dealloc TD: %v", err)
			}
		})
		return td
	}
	cfg := DefaultRC()
	cfg.TDA, cfg.TDB = td(f.A), td(f.B)
	for _, side := range []struct {
		c  verbs.Context
		td verbs.TD
		cq *verbs.CQ
	}{{f.A, cfg.TDA, &cfg.CQA}, {f.B, cfg.TDB, &cfg.CQB}} {
		cq, err := side.c.CreateCQ(256, side.td)
		if errors.Is(err, verbs.ErrNotSupported) {
			f.T.Skipf("%s: CQ in a thread domain: %v", side.c.Name(), err)
		}
		f.check(err, "CreateCQ in a thread domain on %s", side.c.Name())
		f.T.Cleanup(func() {
			if err := cq.Destroy(); err != nil {
				f.T.Errorf("destroy CQ: %v", err)
			}
		})
		*side.cq = cq
	}
	a, b := f.RC(cfg)
	const n, sz = 4, 500
	src := f.Region(f.PDA, n*sz, DefaultAccess)
	dst := f.Region(f.PDB, n*sz, DefaultAccess)
	Fill(src.Buf, 29)
	recvs := make([]verbs.RecvWR, n)
	sends := make([]verbs.SendWR, n)
	for i := range recvs {
		recvs[i] = verbs.RecvWR{ID: uint64(i), SGL: dst.SGL(i*sz, sz)}
		sends[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, SGL: src.SGL(i*sz, sz)}
	}
	f.PostRecv(b, ChainRecv(recvs), "receives")
	f.PostSend(a.QP, ChainSend(sends), "sends")
	for i, wc := range f.Wait(b.CQ, n, "receives in a thread domain") {
		f.expectWC(wc, uint64(i), verbs.WCSuccess, verbs.WCRecv, b.QP.QPN(), "receive")
	}
	f.Same(dst.Buf, src.Buf, "data through thread-domain QPs")
	f.Wait(a.CQ, n, "sends in a thread domain")
}
