package pingpongsim

import (
	"github.com/besim/besim/units"
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/internal/wltest"
	"github.com/besim/besim/workloads/pingpong"
)

// TestLatencyShape: latency grows with the message size, steps up past
// the core's 4 KiB small-message limit (the zero-copy path adds the
// metadata round trip), the one-way time is about half the round trip
// for small messages, and a faster link lowers the latency of a large
// message.
func TestLatencyShape(t *testing.T) {
	run := func(rate int64, sizes ...int) []pingpong.Stats {
		st, err := Run(Config{Config: pingpong.Config{Rate: rate, MTU: 1024, Messages: sizes, Response: 32,
			Warmup: 100 * sim.Microsecond, Measure: 500 * sim.Microsecond}})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range st {
			t.Logf("%3dG %5d B: RTT mean %.2f P99 %.2f us, one-way %.2f us, %d samples", rate/units.Gbps, s.Message, s.RTTMean, s.RTTP99, s.OneWayMean, s.Samples)
		}
		return st
	}
	st := run(100*units.Gbps, 32, 4096, 8192)
	small, edge, big := st[0], st[1], st[2]
	if small.Samples < 50 || small.RTTMean <= 0 || small.RTTP99 < small.RTTMean {
		t.Fatalf("32 B: %+v", small)
	}
	if edge.RTTMean <= small.RTTMean || big.RTTMean < edge.RTTMean+2 {
		t.Errorf("RTT 32 B %.2f, 4 KiB %.2f, 8 KiB %.2f us: want growth and a step of at least 2 us past 4 KiB", small.RTTMean, edge.RTTMean, big.RTTMean)
	}
	if r := small.OneWayMean / small.RTTMean; r < 0.4 || r > 0.6 {
		t.Errorf("32 B one-way %.2f of RTT %.2f", small.OneWayMean, small.RTTMean)
	}
	slow := run(25*units.Gbps, 8192)
	if slow[0].RTTMean <= big.RTTMean {
		t.Errorf("8 KiB at 25G %.2f us, at 100G %.2f us: want 25G slower", slow[0].RTTMean, big.RTTMean)
	}
}

// TestFig8Scenario: the embedded fig8 scenario, cut to two sizes, runs
// through the registry.
func TestFig8Scenario(t *testing.T) {
	s := wltest.Parse(t, "fig8-cut", "name: fig8-cut\nduration: 300us\nbenchmark: {kind: pingpong, warmup: 50us, points: [{rate: 100Gbps, mtu: 1024}], messages: [32, 16KiB]}\n")
	r := wltest.Run(t, s)
	m := wltest.Metrics(r)
	a, b := m["pingpong/100G/1024B/32B/mean_us"], m["pingpong/100G/1024B/16384B/mean_us"]
	if a <= 0 || b <= a {
		t.Errorf("mean 32 B %.2f, 16 KiB %.2f us", a, b)
	}
	if tb, ok := r.Table("pingpong"); !ok || len(tb.Rows) != 2 {
		t.Errorf("pingpong table: %+v", tb)
	}
}
