package fabric

import (
	"slices"
	"testing"

	"github.com/besim/besim/pfc"
	"github.com/besim/besim/sim"
)

type pfcSeries = pfc.Series

var newPFCSeries = pfc.NewSeries

// incast64 is the benchmark scenario: 64 line-rate senders into one 25 Gbps
// receiver through one switch, lossless with PFC, flows without end.
func incast64(tb testing.TB, sampling sim.Time) *Network {
	n := build(tb, func(c *Config) {
		c.Topology = Topology{Kind: Star, Hosts: 65}
		c.Sampling.Interval = sampling
	})
	for i := 0; i < 64; i++ {
		addFlow(tb, n, Flow{Src: NodeID(i), Dst: 64, Prio: lossless})
	}
	return n
}

func dataHops(n *Network) int64 {
	var h int64
	for _, l := range n.Links {
		h += l.Delivered - l.DeliveredPFC
	}
	return h
}

// Zero allocations per packet and per event in steady state: after warm-up
// (pool, queues and kernel buckets grown, series allocated), running the
// incast allocates nothing.
//
// Warm-up is 80 ms of virtual time because the kernel's radix wheel grows
// each slot's slice on the slot's first use: pause expiries and refreshes
// (0.7-1.3 ms ahead) land in level-5 slots (2^30 ps = 1.07 ms each), and all
// 64 of them have been used once after 64 x 1.07 ms.
func TestSteadyStateAllocs(t *testing.T) {
	n := incast64(t, 10*sim.Microsecond)
	n.Run(80 * sim.Millisecond) // PFC cycling, queues and kernel at steady state
	h0, p0 := dataHops(n), n.Pool.Allocated()
	allocs := testing.AllocsPerRun(50, func() {
		for i := 0; i < 5000; i++ {
			n.K.Step()
		}
	})
	hops := dataHops(n) - h0
	if hops < 50*1000 {
		t.Fatalf("only %d packet-hops in the window", hops)
	}
	if grown := n.Pool.Allocated() - p0; grown != 0 {
		t.Fatalf("pool grew by %d packets in steady state", grown)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations per 5000 events (%d packet-hops)", allocs, hops)
	}
	r := n.Report()
	if r.Totals.PFCFramesTx == 0 || r.Totals.HeadroomDrops != 0 {
		t.Fatalf("not the PFC steady state: %+v", r.Totals)
	}
}

// BenchmarkIncast64to1 reports simulated packet-hops (a data frame crossing
// one link) per wall-clock second, and per CPU second of this process; one
// op is one kernel event. Target: >= 3M hops/s on the 2-core dev machine.
func BenchmarkIncast64to1(b *testing.B) {
	n := incast64(b, 0)
	n.Run(2 * sim.Millisecond)
	h0, e0, t0 := dataHops(n), n.K.Events(), n.K.Now()
	b.ReportAllocs()
	b.ResetTimer()
	c0 := cpuTime()
	for i := 0; i < b.N; i++ {
		n.K.Step()
	}
	cpu := cpuTime() - c0
	b.StopTimer()
	hops := float64(dataHops(n) - h0)
	b.ReportMetric(hops/b.Elapsed().Seconds(), "hops/s")
	if cpu > 0 { // robust to a busy shared machine (wall time is not)
		b.ReportMetric(hops/cpu.Seconds(), "hops/cpu-s")
	}
	b.ReportMetric(float64(n.K.Events()-e0)/hops, "events/hop")
	if d := (n.K.Now() - t0).Seconds(); d > 0 {
		b.ReportMetric(d/b.Elapsed().Seconds(), "sim-s/s")
	}
}

// The change-driven depth series equal, point for point, what a sampler
// visiting every queue at every tick records: the oracle below steps the
// kernel and, right after each sampler tick (the instant the old sampler
// read the queues), samples every queue that has held a frame. A small cap
// exercises the downsampling; the sampler keeps ticking while flows run.
func TestDepthSeriesMatchPerTickSampling(t *testing.T) {
	const capPoints = 64
	n := build(t, func(c *Config) {
		c.Topology = Topology{Kind: Star, Hosts: 17}
		c.Sampling = Sampling{Interval: 3 * sim.Microsecond, Cap: capPoints}
	})
	for i := 0; i < 16; i++ {
		addFlow(t, n, Flow{Src: NodeID(i), Dst: 16, Prio: lossless})
	}
	addFlow(t, n, Flow{Src: 16, Dst: 3, Prio: 1})
	ref := map[*Port]*[NumPrio]*pfcSeries{}
	ticks := n.sampler.ticks
	for n.K.Now() < 4*sim.Millisecond && n.K.Step() {
		if n.sampler.ticks == ticks {
			continue
		}
		ticks = n.sampler.ticks
		for _, sw := range n.Switches {
			for _, p := range sw.Ports {
				for i := 0; i < NumPrio; i++ {
					if p.Counters(i).MaxQueue == 0 {
						continue
					}
					r := ref[p]
					if r == nil {
						r = new([NumPrio]*pfcSeries)
						ref[p] = r
					}
					if r[i] == nil {
						r[i] = newPFCSeries(capPoints)
					}
					r[i].Sample(n.K.Now(), p.QueueBytes(i))
				}
			}
		}
	}
	if ticks < 1000 {
		t.Fatalf("only %d sampler ticks", ticks)
	}
	rep := n.Report()
	compared := 0
	for si, sw := range rep.Switches {
		for pi, pr := range sw.Ports {
			r := ref[n.Switches[si].Ports[pi]]
			for i := range NumPrio {
				q := pr.Prio(i)
				var want *pfcSeries
				if r != nil {
					want = r[i]
				}
				if (want == nil) != (q.Depth == nil) {
					t.Fatalf("%s port %d prio %d: series present %v, per-tick sampling %v", sw.Name, pi, i, q.Depth != nil, want != nil)
				}
				if want == nil {
					continue
				}
				c := q.Depth.Compact()
				got := c.Series()
				if !slices.Equal(want.T, got.T) || !slices.Equal(want.V, got.V) || want.Stride() != c.Stride() {
					t.Fatalf("%s port %d prio %d: series\n%v\n%v\nper-tick sampling\n%v\n%v", sw.Name, pi, i, got.T, got.V, want.T, want.V)
				}
				compared++
			}
		}
	}
	if compared < 2 {
		t.Fatalf("only %d series compared", compared)
	}
}

// Recording a depth change allocates nothing, whether ticks passed since the
// previous change (a fill) or not.
func TestDepthSyncAllocs(t *testing.T) {
	n := incast64(t, 10*sim.Microsecond)
	n.Run(sim.Millisecond)
	var p *Port
	for _, q := range n.Switches[0].Ports {
		if q.Peer == 64 {
			p = q
		}
	}
	if c := p.cls[lossless]; c == nil || c.depth == nil {
		t.Fatal("the bottleneck queue has no series")
	}
	allocs := testing.AllocsPerRun(1000, func() {
		n.sampler.ticks += 3
		p.syncDepth(lossless)
		p.syncDepth(lossless)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per depth change", allocs)
	}
}
