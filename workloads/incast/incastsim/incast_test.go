package incastsim

import (
	"reflect"
	"slices"
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/units"
	"github.com/besim/besim/workloads/app"
	"github.com/besim/besim/workloads/incast"
)

// incastCfg is a reduced Figure 14 setup: fabric defaults except for a
// smaller shared buffer (so that PFC fires with few servers), one spine
// (every response enters the workers' leaf through one port, the setting
// these tests' thresholds were derived on), one worker, DCQCN off.
func incastCfg(servers, cwnd int, buffer int64) Config {
	sc := simhost.DefaultConfig(2)
	if buffer > 0 {
		sc.Fabric.Switch.Buffer = units.Size(buffer)
	}
	sc.BE.Cwnd = cwnd
	return Config{Cluster: sc, Config: incast.Config{Spines: 1, Workers: 1, Servers: servers, Outstanding: 4, Victim: true,
		Response: app.SizeDist{Kind: app.LogNormal, Mean: 20_000, P99: 50_000},
		Warmup:   100 * sim.Microsecond, Measure: 300 * sim.Microsecond, Seed: 1}}
}

func pfcFired(t *testing.T, cfg Config) bool {
	t.Helper()
	r, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) > 0 {
		t.Fatalf("servers %d: %v", cfg.Servers, r.Errors)
	}
	return r.Report.Totals.PFCFramesTx > 0
}

// serversBeforePFC bisects the largest server count in [1, hi] without a
// PFC frame.
func serversBeforePFC(t *testing.T, cwnd int, buffer int64, hi int) int {
	lo := 1
	if pfcFired(t, incastCfg(lo, cwnd, buffer)) {
		return 0
	}
	if !pfcFired(t, incastCfg(hi, cwnd, buffer)) {
		t.Fatalf("window %d: no PFC even with %d servers", cwnd, hi)
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if pfcFired(t, incastCfg(mid, cwnd, buffer)) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo
}

// TestTable4Trend: the paper's Table 4 mechanism on a reduced fabric
// (3 MiB switch buffer): fewer bytes outstanding per engine let more
// servers join before leaf 0's XOFF threshold is crossed, so the count
// falls as the window grows, servers x window stays roughly constant (the
// XOFF threshold), and without a window far fewer servers fit.
func TestTable4Trend(t *testing.T) {
	if testing.Short() {
		t.Skip("bisection over several simulations")
	}
	const buffer = 3 << 20
	wins := []int{4 << 10, 8 << 10, 16 << 10, 0}
	var counts []int
	for _, w := range wins {
		counts = append(counts, serversBeforePFC(t, w, buffer, 256))
	}
	t.Logf("servers before PFC for windows %v: %v", wins, counts)
	for i := 1; i < len(counts); i++ {
		if counts[i] >= counts[i-1] {
			t.Errorf("servers before PFC must fall as the window grows: %v for %v", counts, wins)
		}
	}
	var prods []float64
	for i, w := range wins[:3] {
		prods = append(prods, float64(counts[i]*w))
	}
	lo, hi := slices.Min(prods), slices.Max(prods)
	if hi > 1.3*lo {
		t.Errorf("servers x window should be roughly constant: %v", prods)
	}
	if counts[3]*3 > counts[2] {
		t.Errorf("no window (%d servers) should admit far fewer servers than 16 KiB (%d)", counts[3], counts[2])
	}
}

// TestFig15Shape: with 64 servers on the default fabric, no window makes
// PFC fire and the victim loses most of its bandwidth; a 4 KiB window
// keeps PFC off and the victim near line rate, with the worker still at
// line rate.
func TestFig15Shape(t *testing.T) {
	cfg := incastCfg(64, 0, 0)
	cfg.Measure = sim.Millisecond
	none, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Cluster.BE.Cwnd = 4 << 10
	win, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("none: worker %.2f victim %.2f Gbps pfc %d p50 %d p99 %d us; 4KiB: worker %.2f victim %.2f pfc %d p50 %d p99 %d us",
		none.WorkerGbps, none.VictimGbps, none.Report.Totals.PFCFramesTx, none.Latency.P50()/1000, none.Latency.P99()/1000,
		win.WorkerGbps, win.VictimGbps, win.Report.Totals.PFCFramesTx, win.Latency.P50()/1000, win.Latency.P99()/1000)
	switch {
	case none.Report.Totals.PFCFramesTx == 0:
		t.Error("no window: PFC should fire")
	case win.Report.Totals.PFCFramesTx != 0:
		t.Error("4 KiB window: PFC should not fire")
	case none.VictimGbps > 0.3*win.VictimGbps:
		t.Errorf("victim: %.2f Gbps without a window should be far below %.2f with one", none.VictimGbps, win.VictimGbps)
	case win.VictimGbps < 20 || win.WorkerGbps < 20:
		t.Errorf("4 KiB window: victim %.2f and worker %.2f Gbps should be near 25 Gb/s line rate", win.VictimGbps, win.WorkerGbps)
	case none.Latency.Count() == 0 || win.Latency.Count() == 0:
		t.Error("no latency samples")
	}
}

func TestIncastDeterministic(t *testing.T) {
	run := func() []any {
		r, err := Run(incastCfg(16, 8<<10, 0))
		if err != nil {
			t.Fatal(err)
		}
		return []any{r.Pulls, r.WorkerGbps, r.VictimGbps, r.Latency.P50(), r.Latency.P99(), r.Latency.Count(),
			r.Report.Totals, r.Events, r.ServerCPU, r.WorkerCPU}
	}
	a, b := run(), run()
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two runs differ:\n%v\n%v", a, b)
	}
}

func TestIncastOpenLoop(t *testing.T) {
	cfg := incastCfg(8, 0, 0)
	cfg.Rate = 20_000 // per pair: 8 x 20k x 20 KB = 26 Gb/s offered
	r, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Pulls == 0 || r.Latency.Count() == 0 || len(r.Errors) > 0 {
		t.Errorf("open loop: %d pulls, %d samples, errors %v", r.Pulls, r.Latency.Count(), r.Errors)
	}
}

// TestSpinesSpreadIncast: more spines bring the responses into the
// workers' leaf over more ingress ports, each with its own priority group
// and XOFF threshold, so the same incast that pauses a one-spine fabric
// does not pause a four-spine one (fabric defaults, no window).
func TestSpinesSpreadIncast(t *testing.T) {
	pfc := map[int]int64{}
	for _, spines := range []int{1, 4} {
		cfg := incastCfg(32, 0, 0)
		cfg.Spines = spines
		r, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		pfc[spines] = r.Report.Totals.PFCFramesTx
		if spines == 4 && len(r.Report.Switches) != 3+4 {
			t.Errorf("%d switches, want 3 leaves and 4 spines", len(r.Report.Switches))
		}
	}
	t.Logf("32 servers, no window: PFC frames %v by spines", pfc)
	if pfc[1] == 0 || pfc[4] != 0 {
		t.Errorf("PFC frames %v: one spine should pause, four should not", pfc)
	}
}

// TestEnginePerSocketQPCache: 4 workers each open 8 sockets to one server,
// one pull outstanding per socket, and the NICs cache 16 QP contexts.
// Multiplexed, the server's NIC holds 4 QPs and never misses after setup;
// with one engine per socket it holds 32, more than it caches, and misses;
// with a cache of 64 it does not. Every pull completes in all three.
func TestEnginePerSocketQPCache(t *testing.T) {
	run := func(per bool, entries int) *Result {
		t.Helper()
		cfg := incastCfg(1, 0, 0)
		cfg.Victim = false
		cfg.Workers, cfg.Sockets, cfg.Outstanding = 4, 8, 8
		cfg.Response = app.SizeDist{Kind: app.Fixed, Size: 2048}
		cfg.Cluster.BE.EnginePerSocket = per
		cfg.Cluster.NIC.QPCacheEntries = entries
		r, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Errors) > 0 || r.Pulls == 0 || r.Unfinished > 0 {
			t.Fatalf("per socket %v, cache %d: %d pulls, %d unfinished, errors %v", per, entries, r.Pulls, r.Unfinished, r.Errors)
		}
		t.Logf("engine per socket %-5v cache %3d: %d engines, server QP-cache misses %d (hits %d), %d pulls, mean %.2f us",
			per, entries, r.Engines, r.ServerQPMisses, r.ServerQPHits, r.Pulls, r.Latency.Mean()/1e3)
		return r
	}
	mux, per, perBig := run(false, 16), run(true, 16), run(true, 64)
	if mux.Engines != 4 || per.Engines != 32 {
		t.Fatalf("engines: multiplexed %d (want 4), per socket %d (want 32)", mux.Engines, per.Engines)
	}
	if mux.ServerQPMisses != 0 || perBig.ServerQPMisses != 0 {
		t.Errorf("QP-cache misses with the QPs cached: multiplexed %d, per socket with 64 entries %d", mux.ServerQPMisses, perBig.ServerQPMisses)
	}
	if per.ServerQPMisses < uint64(per.Pulls)/4 {
		t.Errorf("per socket, 32 QPs over 16 entries: %d misses for %d pulls", per.ServerQPMisses, per.Pulls)
	}
}
