package rnic

import (
	"github.com/besim/besim/units"
	"testing"
	"time"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// streamer keeps a QP's send queue full of 64 KiB WRITEs, refilling from
// the CQ notify hook: a steady ib_write_bw-like stream.
type streamer struct {
	a    *ep
	wrs  []verbs.SendWR
	wc   [16]verbs.WC
	out  int
	post uint64
	mod  int
}

func (s *streamer) OnEvent(sim.Time, uint64) {
	for {
		k := s.a.cq.Poll(s.wc[:])
		s.out -= k * s.mod
		if k < len(s.wc) {
			break
		}
	}
	n := len(s.wrs) - s.out
	if n <= 0 {
		return
	}
	for i := 0; i < n; i++ {
		s.post++
		s.wrs[i].Flags = 0
		if s.post%uint64(s.mod) == 0 {
			s.wrs[i].Flags = verbs.FlagSignaled
		}
		s.wrs[i].Next = nil
		if i+1 < n {
			s.wrs[i].Next = &s.wrs[i+1]
		}
	}
	if _, err := s.a.qp.PostSend(&s.wrs[0]); err != nil {
		panic(err)
	}
	s.out += n
}

func newStream(t testing.TB, cfg Config, rate units.Rate) (*pair, *streamer) {
	p := newPair(t, cfg, rate, sim.Microsecond)
	o := defaultOpts()
	o.sigAll = false
	o.mtu = 4096
	a, b := p.rc(t, o)
	const size = 64 << 10
	src := newRegion(t, a.pd, size, allAccess)
	dst := newRegion(t, b.pd, size, allAccess)
	s := &streamer{a: a, wrs: make([]verbs.SendWR, 32), mod: 8}
	for i := range s.wrs {
		s.wrs[i] = verbs.SendWR{Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(0, size)},
			RemoteAddr: uint64(dst.addr(0)), RKey: dst.mr.RKey()}
	}
	a.cq.SetNotify(s, 0)
	s.OnEvent(0, 0)
	return p, s
}

// TestSteadyWriteZeroAllocs: once warmed up, a WRITE stream through two NICs
// (payload mode: bytes really move) allocates nothing per packet.
func TestSteadyWriteZeroAllocs(t *testing.T) {
	p, _ := newStream(t, DefaultConfig(), 100*units.Gbps)
	p.runFor(2 * time.Millisecond)
	before := p.b.Stats().RxPackets
	allocs := testing.AllocsPerRun(50, func() { p.runFor(10 * time.Microsecond) })
	pk := p.b.Stats().RxPackets - before
	if pk < 1000 {
		t.Fatalf("only %d packets in the measured runs", pk)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per 10 us run (%d packets)", allocs, pk)
	}
	if p.w.Pool().Live > 200 {
		t.Fatalf("%d packets live: leak?", p.w.Pool().Live)
	}
}

// BenchmarkBackToBack measures simulated packets per wall-clock second
// through two NICs on a wire (a 100G WRITE stream, payload mode).
func BenchmarkBackToBack(b *testing.B) {
	for _, mode := range []struct {
		name  string
		sizes bool
	}{{"payload", false}, {"sizes-only", true}} {
		b.Run(mode.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.SizesOnly = mode.sizes
			p, _ := newStream(b, cfg, 100*units.Gbps)
			p.runFor(100 * time.Microsecond)
			b.ReportAllocs()
			b.ResetTimer()
			start := p.b.Stats().RxPackets
			ev := p.k.Events()
			for p.b.Stats().RxPackets-start < uint64(b.N) {
				p.runFor(10 * time.Microsecond)
			}
			b.StopTimer()
			pk := float64(p.b.Stats().RxPackets - start)
			b.ReportMetric(pk/b.Elapsed().Seconds(), "pkts/s")
			b.ReportMetric(float64(p.k.Events()-ev)/pk, "events/pkt")
		})
	}
}
