package verbstest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/besim/besim/verbs"
)

// Fixture is the per-case state: the two contexts, one PD on each and the
// environment. Everything it creates is destroyed through t.Cleanup in
// reverse order of creation. Backends may use it for their own extra tests.
type Fixture struct {
	T        *testing.T
	A, B     verbs.Context
	PDA, PDB verbs.PD
	Env      Env
	// MTU is the smaller active port MTU of A and B.
	MTU int
}

// NewFixture opens be's two contexts and allocates a PD on each.
func NewFixture(t *testing.T, be Backend) *Fixture {
	t.Helper()
	a, b, env := be.Open(t)
	if a == nil || b == nil {
		t.Fatalf("backend %q: Open returned a nil context", be.Name)
	}
	if env.Progress == nil {
		t.Fatalf("backend %q: Env.Progress is nil", be.Name)
	}
	f := &Fixture{T: t, A: a, B: b, Env: env.withDefaults()}
	t.Cleanup(func() {
		if err := a.Close(); err != nil {
			t.Errorf("close %s: %v", a.Name(), err)
		}
		if b != a {
			if err := b.Close(); err != nil {
				t.Errorf("close %s: %v", b.Name(), err)
			}
		}
	})
	f.PDA = f.PD(a)
	f.PDB = f.PD(b)
	ma, mb := a.Attr().PortMTU, b.Attr().PortMTU
	if !ma.Valid() || !mb.Valid() {
		t.Fatalf("port MTUs %d and %d: want 256..4096", ma, mb)
	}
	f.MTU = int(min(ma, mb))
	return f
}

func (f *Fixture) check(err error, format string, args ...any) {
	f.T.Helper()
	if err != nil {
		f.T.Fatalf("%s: %v", fmt.Sprintf(format, args...), err)
	}
}

// PD allocates a protection domain on c.
func (f *Fixture) PD(c verbs.Context) verbs.PD {
	f.T.Helper()
	pd, err := c.AllocPD()
	f.check(err, "AllocPD on %s", c.Name())
	f.T.Cleanup(func() {
		if err := pd.Dealloc(); err != nil {
			f.T.Errorf("dealloc PD: %v", err)
		}
	})
	return pd
}

// CQ creates a completion queue of depth entries on c.
func (f *Fixture) CQ(c verbs.Context, depth int, td verbs.TD) verbs.CQ {
	f.T.Helper()
	cq, err := c.CreateCQ(depth, td)
	f.check(err, "CreateCQ(%d) on %s", depth, c.Name())
	if cq.Depth() < depth {
		f.T.Fatalf("CQ depth %d, asked for %d", cq.Depth(), depth)
	}
	f.T.Cleanup(func() {
		if err := cq.Destroy(); err != nil {
			f.T.Errorf("destroy CQ: %v", err)
		}
	})
	return cq
}

// Region is a registered buffer outside the Go heap.
type Region struct {
	Buf []byte
	MR  verbs.MR
}

// Addr is the address of Buf[off].
func (r *Region) Addr(off int) uintptr { return uintptr(unsafe.Pointer(&r.Buf[0])) + uintptr(off) }

// SGE covers Buf[off:off+n].
func (r *Region) SGE(off, n int) verbs.SGE {
	return verbs.SGE{Addr: r.Addr(off), Length: uint32(n), LKey: r.MR.LKey()}
}

// SGL is a one-element scatter/gather list over Buf[off:off+n].
func (r *Region) SGL(off, n int) []verbs.SGE { return []verbs.SGE{r.SGE(off, n)} }

// Remote is the remote address of Buf[off] for RDMA operations.
func (r *Region) Remote(off int) uint64 { return uint64(r.Addr(off)) }

// DefaultAccess is the access of regions made by Region.
const DefaultAccess = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead

// Region maps n bytes outside the Go heap and registers them on pd.
func (f *Fixture) Region(pd verbs.PD, n int, access verbs.Access) *Region {
	f.T.Helper()
	buf, err := mapMem(n)
	f.check(err, "mmap %d bytes", n)
	f.T.Cleanup(func() { unmapMem(buf) })
	mr, err := pd.RegMR(uintptr(unsafe.Pointer(&buf[0])), n, access)
	f.check(err, "RegMR(%d bytes, access %#x)", n, uint32(access))
	f.T.Cleanup(func() {
		if err := mr.Dereg(); err != nil {
			f.T.Errorf("dereg MR: %v", err)
		}
	})
	return &Region{Buf: buf, MR: mr}
}

// Wait polls cq until exactly n completions have arrived, calling Progress
// between polls; it fails the test after Env.Timeout. It never takes more
// than n completions off cq.
func (f *Fixture) Wait(cq verbs.CQ, n int, what string) []verbs.WC {
	f.T.Helper()
	out := make([]verbs.WC, 0, n)
	var buf [16]verbs.WC
	var spent time.Duration
	for {
		for len(out) < n {
			k := cq.Poll(buf[:min(len(buf), n-len(out))])
			if k < 0 || k > min(len(buf), n-len(out)) {
				f.T.Fatalf("%s: Poll returned %d", what, k)
			}
			if k == 0 {
				break
			}
			out = append(out, buf[:k]...)
		}
		if len(out) == n {
			return out
		}
		if spent >= f.Env.Timeout {
			f.T.Fatalf("%s: %d of %d completions after %v of progress; got %s",
				what, len(out), n, f.Env.Timeout, FormatWCs(out))
		}
		f.Env.Progress(f.Env.Step)
		spent += f.Env.Step
	}
}

// Quiet lets the backend progress for d and fails if cq yields a completion.
func (f *Fixture) Quiet(cq verbs.CQ, d time.Duration, what string) {
	f.T.Helper()
	var buf [4]verbs.WC
	for spent := time.Duration(0); ; spent += f.Env.Step {
		if k := cq.Poll(buf[:]); k != 0 {
			f.T.Fatalf("%s: unexpected completions %s", what, FormatWCs(buf[:max(k, 0)]))
		}
		if spent >= d {
			return
		}
		f.Env.Progress(f.Env.Step)
	}
}

// FormatWCs prints completions for failure messages.
func FormatWCs(wcs []verbs.WC) string {
	var s strings.Builder
	s.WriteString("[")
	for i, wc := range wcs {
		if i > 0 {
			s.WriteString(" ")
		}
		fmt.Fprintf(&s, "{wr=%#x %v op=%d len=%d qpn=%d flags=%#x imm=%#x}",
			wc.WRID, wc.Status, wc.Opcode, wc.ByteLen, wc.QPN, uint8(wc.Flags), wc.Imm)
	}
	s.WriteString("]")
	return s.String()
}

// Endpoint is one side of a connection.
type Endpoint struct {
	Ctx verbs.Context
	PD  verbs.PD
	CQ  verbs.CQ // send and receive CQ
	QP  verbs.QP
	SRQ verbs.SRQ // non-nil when the QP receives from an SRQ
}

// PostRecv posts to the endpoint's SRQ or, without one, to its QP.
func (e *Endpoint) PostRecv(wr *verbs.RecvWR) (*verbs.RecvWR, error) {
	if e.SRQ != nil {
		return e.SRQ.PostRecv(wr)
	}
	return e.QP.PostRecv(wr)
}

// RCConfig parameterises an RC connection made by Fixture.RC.
type RCConfig struct {
	SendWR, RecvWR, MaxSGE int
	SigAll                 bool
	// RNRRetry is the requester's rnr_retry (7 = infinite) on both sides.
	RNRRetry uint8
	// MinRNRTimer is the responder's min_rnr_timer code on both sides.
	MinRNRTimer uint8
	// CQA, CQB share a CQ across connections; nil creates one per side.
	CQA, CQB verbs.CQ
	// SRQB makes B's QP receive from an SRQ.
	SRQB verbs.SRQ
	// TDA, TDB are thread domains for the QPs (and for CQs created here).
	TDA, TDB verbs.TD
}

// DefaultRC is 64-deep queues, two SGEs, selective signalling off,
// infinite RNR retry every 10 us.
func DefaultRC() RCConfig {
	return RCConfig{SendWR: 64, RecvWR: 64, MaxSGE: 2, SigAll: true, RNRRetry: 7, MinRNRTimer: 1}
}

// PSNs the suite starts connections with (any 24-bit values work; distinct
// values catch a backend that swaps them).
const (
	psnA = 0x1a2b3c
	psnB = 0x0badc0
)

func (f *Fixture) qp(pd verbs.PD, cq verbs.CQ, srq verbs.SRQ, td verbs.TD, t verbs.QPType, c RCConfig) verbs.QP {
	f.T.Helper()
	qp, err := pd.CreateQP(verbs.QPInitAttr{
		Type: t, SendCQ: cq, RecvCQ: cq, SRQ: srq, TD: td,
		MaxSendWR: c.SendWR, MaxRecvWR: c.RecvWR, MaxSGE: c.MaxSGE, SigAll: c.SigAll,
	})
	f.check(err, "CreateQP(%v)", t)
	if qp.Type() != t {
		f.T.Fatalf("QP type %v, want %v", qp.Type(), t)
	}
	if s := qp.State(); s != verbs.StateReset {
		f.T.Fatalf("new QP in %v, want RESET", s)
	}
	f.T.Cleanup(func() {
		if err := qp.Destroy(); err != nil {
			f.T.Errorf("destroy QP %d: %v", qp.QPN(), err)
		}
	})
	return qp
}

// Modify applies a transition and fails the test if it is rejected or the
// QP does not end in attr.State.
func (f *Fixture) Modify(qp verbs.QP, attr verbs.QPAttr, mask verbs.AttrMask, what string) {
	f.T.Helper()
	f.check(qp.Modify(&attr, mask), "%s: modify QP %d", what, qp.QPN())
	if mask&verbs.AttrState != 0 {
		if s := qp.State(); s != attr.State {
			f.T.Fatalf("%s: QP %d in %v after modify, want %v", what, qp.QPN(), s, attr.State)
		}
	}
}

// RC transition masks (the required attributes of ibv_modify_qp(3)).
const (
	MaskRCInit = verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags
	MaskRCRTR  = verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN |
		verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer
	MaskRCRTS = verbs.AttrState | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry |
		verbs.AttrSQPSN | verbs.AttrMaxQPRdAtomic
	MaskUDInit = verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey
	MaskUDRTR  = verbs.AttrState
	MaskUDRTS  = verbs.AttrState | verbs.AttrSQPSN
)

// RCInitAttr is the RESET->INIT attribute set of an RC QP.
func (f *Fixture) RCInitAttr() verbs.QPAttr {
	return verbs.QPAttr{State: verbs.StateInit, Port: f.Env.Port,
		AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead}
}

// RCRTRAttr is the INIT->RTR attribute set for a QP on from reaching
// destQPN on to.
func (f *Fixture) RCRTRAttr(from, to verbs.Context, destQPN, rqPSN uint32, minRNR uint8) verbs.QPAttr {
	return verbs.QPAttr{State: verbs.StateRTR, AH: f.Env.AH(from, to), PathMTU: verbs.MTU(f.MTU),
		DestQPN: destQPN, RQPSN: rqPSN, MaxDestRdAtomic: 1, MinRNRTimer: minRNR}
}

// RCRTSAttr is the RTR->RTS attribute set: ACK timeout 4.096us*2^14 (67 ms),
// 7 transport retries.
func (f *Fixture) RCRTSAttr(sqPSN uint32, rnrRetry uint8) verbs.QPAttr {
	return verbs.QPAttr{State: verbs.StateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: rnrRetry,
		SQPSN: sqPSN, MaxRdAtomic: 1}
}

// RC creates and connects an RC QP on A and one on B (both in RTS).
func (f *Fixture) RC(c RCConfig) (a, b *Endpoint) {
	f.T.Helper()
	a = &Endpoint{Ctx: f.A, PD: f.PDA, CQ: c.CQA}
	b = &Endpoint{Ctx: f.B, PD: f.PDB, CQ: c.CQB, SRQ: c.SRQB}
	depth := c.SendWR + c.RecvWR + 16
	if a.CQ == nil {
		a.CQ = f.CQ(f.A, depth, c.TDA)
	}
	if b.CQ == nil {
		b.CQ = f.CQ(f.B, depth, c.TDB)
	}
	a.QP = f.qp(f.PDA, a.CQ, nil, c.TDA, verbs.RC, c)
	b.QP = f.qp(f.PDB, b.CQ, c.SRQB, c.TDB, verbs.RC, c)
	for _, e := range []*Endpoint{a, b} {
		f.Modify(e.QP, f.RCInitAttr(), MaskRCInit, "RESET->INIT")
	}
	f.Modify(a.QP, f.RCRTRAttr(f.A, f.B, b.QP.QPN(), psnB, c.MinRNRTimer), MaskRCRTR, "A INIT->RTR")
	f.Modify(b.QP, f.RCRTRAttr(f.B, f.A, a.QP.QPN(), psnA, c.MinRNRTimer), MaskRCRTR, "B INIT->RTR")
	f.Modify(a.QP, f.RCRTSAttr(psnA, c.RNRRetry), MaskRCRTS, "A RTR->RTS")
	f.Modify(b.QP, f.RCRTSAttr(psnB, c.RNRRetry), MaskRCRTS, "B RTR->RTS")
	return a, b
}

// UDQKey is the Q_Key of the suite's UD QPs.
const UDQKey = 0x11111111

// UD creates a UD QP on each side, both in RTS, with SigAll set.
func (f *Fixture) UD(depth int) (a, b *Endpoint) {
	f.T.Helper()
	c := RCConfig{SendWR: depth, RecvWR: depth, MaxSGE: 1, SigAll: true}
	a = &Endpoint{Ctx: f.A, PD: f.PDA, CQ: f.CQ(f.A, 2*depth+4, nil)}
	b = &Endpoint{Ctx: f.B, PD: f.PDB, CQ: f.CQ(f.B, 2*depth+4, nil)}
	for i, e := range []*Endpoint{a, b} {
		e.QP = f.qp(e.PD, e.CQ, nil, nil, verbs.UD, c)
		f.Modify(e.QP, verbs.QPAttr{State: verbs.StateInit, Port: f.Env.Port, QKey: UDQKey}, MaskUDInit, "UD RESET->INIT")
		f.Modify(e.QP, verbs.QPAttr{State: verbs.StateRTR}, MaskUDRTR, "UD INIT->RTR")
		f.Modify(e.QP, verbs.QPAttr{State: verbs.StateRTS, SQPSN: uint32(psnA + i)}, MaskUDRTS, "UD RTR->RTS")
	}
	return a, b
}

// PostSend posts a chain and fails the test on error.
func (f *Fixture) PostSend(qp verbs.QP, wr *verbs.SendWR, what string) {
	f.T.Helper()
	if bad, err := qp.PostSend(wr); err != nil {
		f.T.Fatalf("%s: PostSend: %v (bad WR %#x)", what, err, wrID(bad))
	}
}

// PostRecv posts a receive chain on e and fails the test on error.
func (f *Fixture) PostRecv(e *Endpoint, wr *verbs.RecvWR, what string) {
	f.T.Helper()
	if bad, err := e.PostRecv(wr); err != nil {
		var id uint64
		if bad != nil {
			id = bad.ID
		}
		f.T.Fatalf("%s: PostRecv: %v (bad WR %#x)", what, err, id)
	}
}

func wrID(wr *verbs.SendWR) uint64 {
	if wr == nil {
		return 0
	}
	return wr.ID
}

// ChainSend links wrs by Next and returns the head.
func ChainSend(wrs []verbs.SendWR) *verbs.SendWR {
	for i := range wrs {
		wrs[i].Next = nil
		if i+1 < len(wrs) {
			wrs[i].Next = &wrs[i+1]
		}
	}
	if len(wrs) == 0 {
		return nil
	}
	return &wrs[0]
}

// ChainRecv links wrs by Next and returns the head.
func ChainRecv(wrs []verbs.RecvWR) *verbs.RecvWR {
	for i := range wrs {
		wrs[i].Next = nil
		if i+1 < len(wrs) {
			wrs[i].Next = &wrs[i+1]
		}
	}
	if len(wrs) == 0 {
		return nil
	}
	return &wrs[0]
}

// Fill writes a pattern derived from seed into b.
func Fill(b []byte, seed int) {
	x := uint32(seed)*2654435761 + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
}

// pattern returns n pattern bytes for seed, in the Go heap, for comparison.
func pattern(n, seed int) []byte {
	b := make([]byte, n)
	Fill(b, seed)
	return b
}

// Same fails the test if got != want, reporting the first difference.
func (f *Fixture) Same(got, want []byte, what string) {
	f.T.Helper()
	if bytes.Equal(got, want) {
		return
	}
	if len(got) != len(want) {
		f.T.Fatalf("%s: %d bytes, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			f.T.Fatalf("%s: byte %d of %d is %#x, want %#x", what, i, len(got), got[i], want[i])
		}
	}
}

// zero fails the test unless b is all zero.
func (f *Fixture) zero(b []byte, what string) {
	f.T.Helper()
	for i, x := range b {
		if x != 0 {
			f.T.Fatalf("%s: byte %d is %#x, want untouched (0)", what, i, x)
		}
	}
}

// expectWC checks one completion's status, opcode, WR id and local QP.
func (f *Fixture) expectWC(wc verbs.WC, id uint64, st verbs.WCStatus, op verbs.WCOpcode, qpn uint32, what string) {
	f.T.Helper()
	if wc.WRID != id || wc.Status != st || wc.QPN != qpn {
		f.T.Fatalf("%s: got %s, want wr=%#x %v qpn=%d", what, FormatWCs([]verbs.WC{wc}), id, st, qpn)
	}
	if st == verbs.WCSuccess && wc.Opcode != op {
		f.T.Fatalf("%s: opcode %d, want %d (%s)", what, wc.Opcode, op, FormatWCs([]verbs.WC{wc}))
	}
}
