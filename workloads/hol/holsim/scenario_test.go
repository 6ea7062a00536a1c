package holsim

import (
	"testing"

	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/internal/wltest"
)

// TestFig13Scenario: the embedded fig13 scenario, cut to 0 and 4 large
// flows and a 4 ms window, runs through the registry and reduces to the hol
// table and metrics: large flows raise the small flow's latency, and far
// more without fragmentation.
func TestFig13Scenario(t *testing.T) {
	s, err := scenarios.Load("fig13")
	if err != nil {
		t.Fatal(err)
	}
	s.Benchmark.LargeFlows = []int{0, 4}
	s.Duration, s.Benchmark.Warmup = scenarios.Duration(4*sim.Millisecond), scenarios.Duration(sim.Millisecond)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	r := wltest.Run(t, s)
	m := wltest.Metrics(r)
	idle, frag, whole := m["hol/0/fragmented/p99"], m["hol/4/fragmented/p99"], m["hol/4/whole/p99"]
	t.Logf("P99: idle %.1f us, 4 flows fragmented %.1f us, whole %.1f us", idle, frag, whole)
	if idle <= 0 || frag < 2*idle || whole < 3*frag {
		t.Errorf("P99 idle %.1f, fragmented %.1f, whole %.1f us: want idle < fragmented << whole", idle, frag, whole)
	}
	if tb, ok := r.Table("hol"); !ok || len(tb.Rows) != 4 {
		t.Errorf("hol table: %+v", tb)
	}
}
