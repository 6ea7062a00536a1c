package holsim

import (
	"reflect"
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/hol"
)

// TestFig13Shape: the small flow's latency on an engine shared with large
// flows (paper Figure 13, §6.1): it grows with contention, and with 4 KiB
// fragments it stays far below the unfragmented case, where a whole 1 MiB
// message occupies a WR.
func TestFig13Shape(t *testing.T) {
	pts, err := Run(Config{})
	if err != nil {
		t.Fatal(err)
	}
	get := func(n int, frag bool) Point {
		for _, p := range pts {
			if p.LargeFlows == n && p.Fragmented == frag {
				return p
			}
		}
		t.Fatalf("no point for %d flows, fragmented %v", n, frag)
		return Point{}
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
	c13 := Config{Config: hol.Config{LargeFlows: []int{2}, Measure: 4 * sim.Millisecond}}
	x, err := Run(c13)
	if err != nil {
		t.Fatal(err)
	}
	y, err := Run(c13)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x, y) {
		t.Fatalf("Run differs between runs:\n%+v\n%+v", x, y)
	}
}

// TestRejects: a small message without room for its sequence number and
// send time is an error.
func TestRejects(t *testing.T) {
	if _, err := Run(Config{Config: hol.Config{SmallSize: 8}}); err == nil {
		t.Fatal("accepted an 8-byte small message")
	}
}
