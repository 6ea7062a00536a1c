package incastsim

import (
	"bytes"
	"testing"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/internal/wltest"
)

// A watched run whose condition is never decided reports exactly what an
// unwatched run reports; one whose condition is decided stops after the
// event that decided it, with only the fabric counters up to the stop,
// the counter just past the condition, and when it stopped.
func TestWatchedRun(t *testing.T) {
	load := func(servers int) *scenarios.Scenario {
		s, err := scenarios.Load("fig14-incast")
		if err != nil {
			t.Fatal(err)
		}
		s.Workload.Servers = servers
		return s
	}
	frames := func(x float64) bool { return x > 0 }

	// 32 servers without a window: no PFC (results/table4: 48 is the last).
	s := load(32)
	plain, _, err := experiment.Simulate(s)
	if err != nil {
		t.Fatal(err)
	}
	watched, _, err := experiment.SimulateWatched(load(32), "pfc/frames_tx", frames)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := wltest.JSON(t, plain), wltest.JSON(t, watched); !bytes.Equal(a, b) {
		t.Errorf("a watched run that never stopped differs from an unwatched one")
	}
	if _, ok := watched.Metric(experiment.MetricStoppedAt); ok {
		t.Errorf("a run without PFC says it stopped")
	}

	// 64 servers: PFC fires; the full run's counters bound the stopped one's.
	full, _, err := experiment.Simulate(load(64))
	if err != nil {
		t.Fatal(err)
	}
	stopped, _, err := experiment.SimulateWatched(load(64), "pfc/frames_tx", frames)
	if err != nil {
		t.Fatal(err)
	}
	at, ok := stopped.Metric(experiment.MetricStoppedAt)
	if !ok || at.Value <= 0 {
		t.Fatalf("a run where PFC fires did not stop: %v", stopped.Notes)
	}
	x, _ := stopped.Metric("pfc/frames_tx")
	y, _ := full.Metric("pfc/frames_tx")
	// The run stops after the event that sent the first frame (a port
	// sends one frame per event), so it reports exactly one.
	if x.Value != 1 || y.Value < 1 {
		t.Errorf("stopped with %g PFC frames (want 1), the full run sent %g", x.Value, y.Value)
	}
	if _, ok := stopped.Metric("pull/p99"); ok {
		t.Errorf("a stopped run reports the workload's latency")
	}
	if _, err := experiment.NewWatch("pull/p99", frames); err == nil {
		t.Errorf("a latency metric can be watched")
	}
}
