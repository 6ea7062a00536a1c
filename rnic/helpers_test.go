package rnic

import (
	"testing"
	"time"
	"unsafe"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
)

// pair is two NICs back to back on a Wire.
type pair struct {
	k    *sim.Kernel
	w    *Wire
	a, b *NIC
	ca   *Context
	cb   *Context
}

func newPair(t testing.TB, cfg Config, rate units.Rate, delay sim.Time) *pair {
	t.Helper()
	k := sim.NewKernel()
	a, err := New(k, "nicA", cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(k, "nicB", cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWire(k, &fabric.Pool{}, rate, delay)
	w.Connect(a, 1, b, 2)
	ca, err := a.Open()
	if err != nil {
		t.Fatal(err)
	}
	cb, err := b.Open()
	if err != nil {
		t.Fatal(err)
	}
	return &pair{k: k, w: w, a: a, b: b, ca: ca, cb: cb}
}

func (p *pair) runFor(d time.Duration) {
	p.k.RunUntil(p.k.Now() + sim.Time(d.Nanoseconds())*sim.Nanosecond)
}

// ep is one side of a test connection.
type ep struct {
	ctx *Context
	pd  verbs.PD
	cq  *CQ
	qp  *QP
}

// rcOpts are the connection parameters of a test RC pair.
type rcOpts struct {
	depth    int
	sigAll   bool
	timeout  uint8
	retry    uint8
	rnrRetry uint8
	minRNR   uint8
	mtu      verbs.MTU
	srq      bool
}

func defaultOpts() rcOpts {
	return rcOpts{depth: 64, sigAll: true, timeout: 14, retry: 7, rnrRetry: 7, minRNR: 1, mtu: 1024}
}

func (p *pair) rc(t testing.TB, o rcOpts) (a, b *ep) {
	t.Helper()
	return rcConnect(t, p.ca, p.cb, o)
}

// rcConnect creates an RC QP on each context and connects them.
func rcConnect(t testing.TB, ca, cb *Context, o rcOpts) (a, b *ep) {
	t.Helper()
	mk := func(c *Context) *ep {
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		cq, err := c.CreateCQ(4*o.depth+16, nil)
		if err != nil {
			t.Fatal(err)
		}
		qp, err := pd.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: cq, RecvCQ: cq,
			MaxSendWR: o.depth, MaxRecvWR: o.depth, MaxSGE: 2, SigAll: o.sigAll})
		if err != nil {
			t.Fatal(err)
		}
		return &ep{ctx: c, pd: pd, cq: cq.(*CQ), qp: qp.(*QP)}
	}
	a, b = mk(ca), mk(cb)
	for _, x := range [][2]*ep{{a, b}, {b, a}} {
		q, peer := x[0], x[1]
		must(t, verbs.ModifyAll(q.qp, []verbs.QPAttr{
			{State: verbs.StateInit, Port: 1, AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead},
			{State: verbs.StateRTR, AH: verbs.AHAttr{DGID: peer.ctx.Attr().GID}, PathMTU: o.mtu,
				DestQPN: peer.qp.QPN(), RQPSN: 100, MaxDestRdAtomic: 16, MinRNRTimer: o.minRNR},
		}, []verbs.AttrMask{
			verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags,
			verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN |
				verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer,
		}))
	}
	for _, q := range []*ep{a, b} {
		attr := verbs.QPAttr{State: verbs.StateRTS, Timeout: o.timeout, RetryCnt: o.retry, RNRRetry: o.rnrRetry,
			SQPSN: 100, MaxRdAtomic: 16}
		must(t, q.qp.Modify(&attr, verbs.AttrState|verbs.AttrTimeout|verbs.AttrRetryCnt|verbs.AttrRNRRetry|
			verbs.AttrSQPSN|verbs.AttrMaxQPRdAtomic))
	}
	return a, b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// region maps and registers n bytes.
type region struct {
	buf []byte
	mr  verbs.MR
}

func (r *region) addr(off int) uintptr { return uintptr(unsafe.Pointer(&r.buf[0])) + uintptr(off) }
func (r *region) sge(off, n int) verbs.SGE {
	return verbs.SGE{Addr: r.addr(off), Length: uint32(n), LKey: r.mr.LKey()}
}

func newRegion(t testing.TB, pd verbs.PD, n int, access verbs.Access) *region {
	t.Helper()
	buf := mapMem(t, n)
	mr, err := pd.RegMR(uintptr(unsafe.Pointer(&buf[0])), n, access)
	must(t, err)
	return &region{buf: buf, mr: mr}
}

const allAccess = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead

func fill(b []byte, seed int) {
	x := uint32(seed)*2654435761 + 7
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
}

// waitCQ runs the kernel until cq holds n completions (or limit passes).
func (p *pair) waitCQ(t testing.TB, cq *CQ, n int, limit sim.Time) []verbs.WC {
	t.Helper()
	var out []verbs.WC
	buf := make([]verbs.WC, 16)
	end := p.k.Now() + limit
	for len(out) < n {
		k := cq.Poll(buf[:min(len(buf), n-len(out))])
		out = append(out, buf[:k]...)
		if len(out) >= n {
			break
		}
		if p.k.Now() >= end {
			t.Fatalf("got %d of %d completions after %v (pending events %d)", len(out), n, limit, p.k.Pending())
		}
		p.k.RunUntil(min(end, p.k.Now()+10*sim.Microsecond))
	}
	return out
}
