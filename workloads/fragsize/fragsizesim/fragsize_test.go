package fragsizesim

import (
	"github.com/besim/besim/units"
	"reflect"
	"testing"

	"github.com/besim/besim/rnic"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/fragsize"
)

func effAt(pts []Point, rate int64, frag int) float64 {
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
	pts, err := Run(Config{})
	if err != nil {
		t.Fatal(err)
	}
	const g25, g100 = 25 * units.Gbps, 100 * units.Gbps
	t.Log("rate  fragment  goodput  of line  efficiency  sender CPU")
	for _, p := range pts {
		t.Logf("%3dG  %6d B  %6.2f  %6.2f  %.3f  %.3f", p.Rate/units.Gbps, p.FragSize, p.Gbps, p.LineGbps, p.Efficiency, p.SenderCPU)
	}
	first90 := map[int64]int{}
	for _, rate := range []int64{g25, g100} {
		prev := 0.0
		for s := 512; s <= 64<<10; s *= 2 {
			e := effAt(pts, rate, s)
			if e < prev-0.01 {
				t.Errorf("%dG: efficiency falls from %.3f to %.3f at %d B", rate/units.Gbps, prev, e, s)
			}
			if e > 1.001 {
				t.Errorf("%dG at %d B: efficiency %.3f above line rate", rate/units.Gbps, s, e)
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
	base := Config{Config: fragsize.Config{Rates: []int64{100 * units.Gbps}, FragSizes: []int{2048, 8192}}}
	ref, err := Run(base)
	if err != nil {
		t.Fatal(err)
	}
	free := base
	free.NIC = rnic.DefaultConfig()
	free.NIC.WQECost = 0
	free.NIC.PostSendPerWQE = 0
	free.CPU = simhost.CPUCost{Step: 1}
	cheap, err := Run(free)
	if err != nil {
		t.Fatal(err)
	}
	deep := base
	deep.BE.SQDepth = 128
	deeper, err := Run(deep)
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

// TestDeterministic: the same configuration gives identical results.
func TestDeterministic(t *testing.T) {
	c10 := Config{Config: fragsize.Config{FragSizes: []int{1024, 16384}}}
	a, err := Run(c10)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(c10)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("Run differs between runs:\n%+v\n%+v", a, b)
	}
}

// TestRejects: a message too small for the experiment is an error.
func TestRejects(t *testing.T) {
	if _, err := Run(Config{Config: fragsize.Config{MsgSize: 10}}); err == nil {
		t.Fatal("accepted a 10-byte message")
	}
}
