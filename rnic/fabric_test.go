package rnic

import (
	"github.com/besim/besim/units"
	"testing"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// star is NICs on the fabric's star topology.
type star struct {
	k    *sim.Kernel
	net  *fabric.Network
	nics []*NIC
	ctx  []*Context
}

func newStar(t testing.TB, hosts int, rate units.Rate, cfg Config, mod func(*fabric.Config)) *star {
	t.Helper()
	k := sim.NewKernel()
	fc := fabric.DefaultConfig()
	fc.Topology = fabric.Topology{Kind: fabric.Star, Hosts: hosts}
	fc.HostLink.Rate = rate
	fc.MTU = 1024
	if mod != nil {
		mod(&fc)
	}
	net, err := fabric.New(k, fc)
	must(t, err)
	s := &star{k: k, net: net}
	for i := 0; i < hosts; i++ {
		n, err := New(k, net.NodeName(fabric.NodeID(i)), cfg)
		must(t, err)
		must(t, net.Attach(fabric.NodeID(i), n))
		c, err := n.Open()
		must(t, err)
		s.nics = append(s.nics, n)
		s.ctx = append(s.ctx, c)
	}
	return s
}

// port is the switch port facing host h.
func (s *star) port(h int) *fabric.Port {
	for _, p := range s.net.Switches[0].Ports {
		if p.Peer == fabric.NodeID(h) {
			return p
		}
	}
	return nil
}

// stream starts a sizes-only WRITE stream of size-byte messages on a.
func stream(t testing.TB, a, b *ep, size int) *streamer {
	t.Helper()
	const base = 0x40_0000_0000
	sm, err := a.pd.RegMR(base, size, allAccess)
	must(t, err)
	dm, err := b.pd.RegMR(base, size, allAccess)
	must(t, err)
	s := &streamer{a: a, wrs: make([]verbs.SendWR, 16), mod: 4}
	for i := range s.wrs {
		s.wrs[i] = verbs.SendWR{Opcode: verbs.OpWrite, SGL: []verbs.SGE{{Addr: base, Length: uint32(size), LKey: sm.LKey()}},
			RemoteAddr: base, RKey: dm.RKey()}
	}
	a.cq.SetNotify(s, 0)
	s.OnEvent(0, 0)
	return s
}

func ccConfig(cc CCKind) Config {
	c := DefaultConfig()
	c.SizesOnly = true
	c.CC = cc
	return c
}

func streamOpts() rcOpts {
	o := defaultOpts()
	o.sigAll = false
	o.depth = 32
	return o
}

// TestDCQCNFairShare: two DCQCN flows into one 25G receiver through a star
// switch with ECN, the second starting 2 ms after the first, converge to
// shares within 10% of each other with the link full. (With the default
// DCQCN parameters, alpha starting at 1, the flows first overreact and then
// recover by additive increase of 5 Mb/s per 55 us: about 100 ms.)
func TestDCQCNFairShare(t *testing.T) {
	s := newStar(t, 3, 25*units.Gbps, ccConfig(CCDCQCN), nil)
	a0, b0 := rcConnect(t, s.ctx[0], s.ctx[2], streamOpts())
	stream(t, a0, b0, 64<<10)
	s.k.RunUntil(2 * sim.Millisecond)
	a1, b1 := rcConnect(t, s.ctx[1], s.ctx[2], streamOpts())
	stream(t, a1, b1, 64<<10)
	const from, to = 120 * sim.Millisecond, 200 * sim.Millisecond
	s.k.RunUntil(from)
	r0, r1 := b0.qp.Stats().RxPayload, b1.qp.Stats().RxPayload
	s.k.RunUntil(to)
	g0 := float64(b0.qp.Stats().RxPayload-r0) * 8 / (to - from).Seconds() / 1e9
	g1 := float64(b1.qp.Stats().RxPayload-r1) * 8 / (to - from).Seconds() / 1e9
	st := s.nics[2].Stats()
	t.Logf("flow rates %.2f / %.2f Gb/s (DCQCN rates now %.2f / %.2f), CNPs sent %d, ECN marked %d",
		g0, g1, float64(a0.qp.Rate())/1e9, float64(a1.qp.Rate())/1e9, st.CNPsSent, st.ECNMarked)
	if hi, lo := max(g0, g1), min(g0, g1); hi > 1.1*lo {
		t.Fatalf("unfair: %.2f vs %.2f Gb/s", g0, g1)
	}
	if g0+g1 < 0.85*LinePayloadGbps(verbs.RC, 25*units.Gbps, 1024) {
		t.Fatalf("bottleneck underused: %.2f Gb/s", g0+g1)
	}
	if st.CNPsSent == 0 || s.nics[0].Stats().CNPsHandled == 0 {
		t.Fatal("no CNPs")
	}
}

// incast runs 8 WRITE streams into host 8 and samples the bottleneck queue.
func incast(t *testing.T, cc CCKind) (q []int64, r *fabric.Report, gbps float64) {
	s := newStar(t, 9, 25*units.Gbps, ccConfig(cc), nil)
	var bs []*ep
	for i := 0; i < 8; i++ {
		a, b := rcConnect(t, s.ctx[i], s.ctx[8], streamOpts())
		stream(t, a, b, 64<<10)
		bs = append(bs, b)
	}
	port := s.port(8)
	smp := &sampler{k: s.k, port: port, every: 10 * sim.Microsecond}
	s.k.At(0, smp, 0)
	from, to := 150*sim.Millisecond, 250*sim.Millisecond
	if cc == CCNone {
		from, to = 5*sim.Millisecond, 25*sim.Millisecond
	}
	s.k.RunUntil(from)
	rx := s.nics[8].Stats().RxPayload
	smp.v = smp.v[:0]
	s.k.RunUntil(to)
	gbps = float64(s.nics[8].Stats().RxPayload-rx) * 8 / (to - from).Seconds() / 1e9
	return smp.v, s.net.Report(), gbps
}

type sampler struct {
	k     *sim.Kernel
	port  *fabric.Port
	every sim.Time
	v     []int64
}

func (s *sampler) OnEvent(now sim.Time, _ uint64) {
	s.v = append(s.v, s.port.QueueBytes(3))
	s.k.At(now+s.every, s, 0)
}

func stats(v []int64) (mean float64, lo, hi int64) {
	lo, hi = v[0], v[0]
	var sum float64
	for _, x := range v {
		sum += float64(x)
		lo, hi = min(lo, x), max(hi, x)
	}
	return sum / float64(len(v)), lo, hi
}

// TestIncastDCQCN: with DCQCN the 8-to-1 incast queue hovers around the
// ECN band (Kmin 5 KB .. Kmax 200 KB) instead of growing; without it the
// same incast fills the buffer and PFC pauses the senders.
func TestIncastDCQCN(t *testing.T) {
	q, rep, g := incast(t, CCDCQCN)
	first, _, _ := stats(q[:len(q)/2])
	second, lo, hi := stats(q[len(q)/2:])
	t.Logf("DCQCN: queue mean %.0f then %.0f B (min %d, max %d), goodput %.2f Gb/s, PFC frames %d, XOFF %d",
		first, second, lo, hi, g, rep.Totals.PFCFramesTx, rep.Totals.XOFFEvents)
	kmin, kmax := fabric.DefaultKmin.Bytes(), fabric.DefaultKmax.Bytes()
	if second > float64(2*kmax) || hi > 4*kmax {
		t.Fatalf("queue not held near the ECN band: mean %.0f max %d", second, hi)
	}
	if second > 1.5*first+float64(kmin) {
		t.Fatalf("queue growing: %.0f -> %.0f", first, second)
	}
	if g < 0.8*LinePayloadGbps(verbs.RC, 25*units.Gbps, 1024) {
		t.Fatalf("goodput %.2f Gb/s", g)
	}

	q, rep2, g2 := incast(t, CCNone)
	m, _, hi2 := stats(q)
	t.Logf("no CC: queue mean %.0f B max %d, goodput %.2f Gb/s, PFC frames %d, XOFF %d",
		m, hi2, g2, rep2.Totals.PFCFramesTx, rep2.Totals.XOFFEvents)
	if rep2.Totals.PFCFramesTx == 0 || rep2.Totals.XOFFEvents == 0 {
		t.Fatal("incast without congestion control did not trigger PFC")
	}
	for _, h := range rep2.Hosts {
		if h.Counters.PauseViolations != 0 {
			t.Fatalf("%s: NIC sent %d frames on a paused priority", h.Name, h.Counters.PauseViolations)
		}
	}
	if rep2.Totals.PFCFramesTx <= 4*rep.Totals.PFCFramesTx {
		t.Fatalf("PFC frames %d without DCQCN vs %d with", rep2.Totals.PFCFramesTx, rep.Totals.PFCFramesTx)
	}
}
