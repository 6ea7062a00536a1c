package fragsizesim

import (
	"github.com/besim/besim/units"
	"testing"

	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/internal/wltest"
)

// TestFig10Scenario: the embedded fig10 scenario, cut to two fragment
// sizes at 25 Gb/s, runs through the registry and reduces to the fragsize
// table and metrics: 64 KiB fragments come close to the line, 1 KiB ones
// do not.
func TestFig10Scenario(t *testing.T) {
	s, err := scenarios.Load("fig10")
	if err != nil {
		t.Fatal(err)
	}
	b := s.Benchmark
	b.Rates, b.Fragments = []scenarios.Rate{25 * units.Gbps}, []scenarios.Size{scenarios.KiB, 64 * scenarios.KiB}
	s.Duration, b.Warmup = scenarios.Duration(4*sim.Millisecond), scenarios.Duration(2*sim.Millisecond)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	r := wltest.Run(t, s)
	m := wltest.Metrics(r)
	small, big := m["fragsize/25G/1024B/efficiency"], m["fragsize/25G/65536B/efficiency"]
	t.Logf("1 KiB %.1f%%, 64 KiB %.1f%% of line", small, big)
	if big < 95 || small <= 0 || small > 0.8*big {
		t.Errorf("efficiency 1 KiB %.1f%%, 64 KiB %.1f%%: want 64 KiB near the line and 1 KiB well below", small, big)
	}
	if tb, ok := r.Table("fragsize"); !ok || len(tb.Rows) != 2 {
		t.Errorf("fragsize table: %+v", tb)
	}
}
