package simhost

import (
	"reflect"
	"testing"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
)

func effAt(pts []Fig10Point, rate int64, frag int) float64 {
	for _, p := range pts {
		if p.Rate == rate && p.FragSize == frag {
			return p.Efficiency
		}
	}
	return -1
}

// TestFig10Shape: throughput against fragment size on one QP (paper
// Figure 10, §6.1). Small fragments cannot fill the link because every
// fragment costs a WQE at the NIC and a WR of CPU, and the 32-deep ring,
// with only the last WR of each batch signalled, keeps at most 32
// fragments in flight and drains before it refills. 25 Gb/s is near line
// rate at a few KiB; 100 Gb/s needs several times larger fragments.
func TestFig10Shape(t *testing.T) {
	pts, err := Fig10(Fig10Config{})
	if err != nil {
		t.Fatal(err)
	}
	const g25, g100 = 25 * fabric.Gbps, 100 * fabric.Gbps
	t.Log("rate  fragment  goodput  of line  efficiency  sender CPU")
	for _, p := range pts {
		t.Logf("%3dG  %6d B  %6.2f  %6.2f  %.3f  %.3f", p.Rate/fabric.Gbps, p.FragSize, p.Gbps, p.LineGbps, p.Efficiency, p.SenderCPU)
	}
	first90 := map[int64]int{}
	for _, rate := range []int64{g25, g100} {
		prev := 0.0
		for s := 512; s <= 64<<10; s *= 2 {
			e := effAt(pts, rate, s)
			if e < prev-0.01 {
				t.Errorf("%dG: efficiency falls from %.3f to %.3f at %d B", rate/fabric.Gbps, prev, e, s)
			}
			if e > 1.001 {
				t.Errorf("%dG at %d B: efficiency %.3f above line rate", rate/fabric.Gbps, s, e)
			}
			if e >= 0.9 && first90[rate] == 0 {
				first90[rate] = s
			}
			prev = e
		}
	}
	// 25 Gb/s: close to saturation at ~2 KiB, at least 90% by 8 KiB.
	if e := effAt(pts, g25, 2048); e < 0.75 {
		t.Errorf("25G at 2 KiB: %.3f of line rate, want >= 0.75", e)
	}
	if e := effAt(pts, g25, 8192); e < 0.9 {
		t.Errorf("25G at 8 KiB: %.3f, want >= 0.9", e)
	}
	// 100 Gb/s: clearly below line rate at 8 KiB, >= 90% at 32-64 KiB.
	if e := effAt(pts, g100, 8192); e > 0.8 {
		t.Errorf("100G at 8 KiB: %.3f, want clearly below line rate (<= 0.8)", e)
	}
	for _, s := range []int{32 << 10, 64 << 10} {
		if e := effAt(pts, g100, s); e < 0.9 {
			t.Errorf("100G at %d B: %.3f, want >= 0.9", s, e)
		}
	}
	for s := 512; s <= 16<<10; s *= 2 {
		if e25, e100 := effAt(pts, g25, s), effAt(pts, g100, s); e100 > e25-0.05 {
			t.Errorf("at %d B: 100G %.3f not clearly below 25G %.3f", s, e100, e25)
		}
	}
	if first90[g25] == 0 || first90[g100] < 4*first90[g25] {
		t.Errorf("smallest fragment reaching 90%%: %d B at 25G, %d B at 100G; want 100G >= 4x", first90[g25], first90[g100])
	}
	t.Logf("smallest fragment at >= 90%% of line rate: %d B at 25G, %d B at 100G", first90[g25], first90[g100])
}

// TestFig10ComesFromCosts: the curve is made by the modelled costs, not
// built in: removing the NIC's per-WQE cost and the CPU's per-WR costs
// lifts 100G at 2-8 KiB, and a deeper ring (more fragments in flight)
// lifts it too.
func TestFig10ComesFromCosts(t *testing.T) {
	base := Fig10Config{Rates: []int64{100 * fabric.Gbps}, FragSizes: []int{2048, 8192}}
	ref, err := Fig10(base)
	if err != nil {
		t.Fatal(err)
	}
	free := base
	free.NIC = rnic.DefaultConfig()
	free.NIC.WQECost = 0
	free.NIC.PostSendPerWQE = 0
	free.CPU = CPUCost{Step: 1}
	cheap, err := Fig10(free)
	if err != nil {
		t.Fatal(err)
	}
	deep := base
	deep.BE.SQDepth = 128
	deeper, err := Fig10(deep)
	if err != nil {
		t.Fatal(err)
	}
	for i := range ref {
		t.Logf("100G %5d B: model %.3f, no per-WQE/per-WR cost %.3f, SQ depth 128 %.3f",
			ref[i].FragSize, ref[i].Efficiency, cheap[i].Efficiency, deeper[i].Efficiency)
		if cheap[i].Efficiency < ref[i].Efficiency+0.05 || deeper[i].Efficiency < ref[i].Efficiency+0.05 {
			t.Errorf("%d B: costs or ring depth do not move the curve", ref[i].FragSize)
		}
	}
}

// TestFig13Shape: the small flow's latency on an engine shared with large
// flows (paper Figure 13, §6.1): it grows with contention, and with 4 KiB
// fragments it stays far below the unfragmented case, where a whole 1 MiB
// message occupies a WR.
func TestFig13Shape(t *testing.T) {
	pts, err := Fig13(Fig13Config{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(n int, frag bool) Fig13Point {
		for _, p := range pts {
			if p.LargeFlows == n && p.Fragmented == frag {
				return p
			}
		}
		t.Fatalf("no point for %d flows, fragmented %v", n, frag)
		return Fig13Point{}
	}
	t.Log("large flows  fragmented  mean us  p50 us  p99 us  samples  large Gb/s")
	for _, p := range pts {
		t.Logf("%d  %-5v  %8.1f  %8.1f  %8.1f  %4d  %5.2f", p.LargeFlows, p.Fragmented, p.MeanUs, p.P50Us, p.P99Us, p.Samples, p.LargeGbps)
		if p.Samples < 900 {
			t.Errorf("%d flows, fragmented %v: only %d samples", p.LargeFlows, p.Fragmented, p.Samples)
		}
		if p.LargeFlows > 0 && p.LargeGbps < 0.8*23.15 {
			t.Errorf("%d flows, fragmented %v: large flows at %.2f Gb/s", p.LargeFlows, p.Fragmented, p.LargeGbps)
		}
	}
	for _, frag := range []bool{true, false} {
		idle := get(0, frag)
		prev := idle
		for _, n := range []int{1, 2, 4, 8} {
			p := get(n, frag)
			if p.MeanUs < 2*idle.MeanUs || p.P99Us < 2*idle.P99Us {
				t.Errorf("fragmented %v, %d flows: mean %.1f / p99 %.1f us, not above the idle %.1f / %.1f",
					frag, n, p.MeanUs, p.P99Us, idle.MeanUs, idle.P99Us)
			}
			if p.MeanUs < prev.MeanUs*0.95 {
				t.Errorf("fragmented %v: mean latency falls from %.1f to %.1f us at %d flows", frag, prev.MeanUs, p.MeanUs, n)
			}
			prev = p
		}
		if g := get(8, frag).MeanUs / get(1, frag).MeanUs; g < 1.3 {
			t.Errorf("fragmented %v: 8 flows only x%.2f the latency of 1", frag, g)
		}
	}
	for _, n := range []int{4, 8} {
		f, u := get(n, true), get(n, false)
		if u.MeanUs < 3*f.MeanUs || u.P99Us < 3*f.P99Us {
			t.Errorf("%d flows: unfragmented mean %.1f / p99 %.1f us, fragmented %.1f / %.1f: want >= 3x",
				n, u.MeanUs, u.P99Us, f.MeanUs, f.P99Us)
		}
	}
}

// TestDeterministic: the same configuration gives identical results.
func TestDeterministic(t *testing.T) {
	c10 := Fig10Config{FragSizes: []int{1024, 16384}}
	a, err := Fig10(c10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Fig10(c10)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("Fig10 differs between runs:\n%+v\n%+v", a, b)
	}
	c13 := Fig13Config{LargeFlows: []int{2}, Measure: 4 * sim.Millisecond}
	x, err := Fig13(c13)
	if err != nil {
		t.Fatal(err)
	}
	y, err := Fig13(c13)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("Fig13 differs between runs:\n%+v\n%+v", x, y)
	}
}
