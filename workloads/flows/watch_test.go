package flows

import (
	"bytes"
	"testing"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/internal/wltest"
)

// A flow run under a watch that is never decided is the unwatched run,
// byte for byte (the watch schedules no event of its own, so the queue
// sampler and every flow see the same events); one whose counter passes
// the condition stops after the event that passed it: the counter is
// exactly 1, it says when it stopped (inside the duration), and it
// simulated fewer events than the whole run. Raw flows (pfc-incast,
// watched on PFC frames) and RC flows on simulated RNICs (dcqcn-incast,
// watched on ECN marks).
func TestWatchedFlows(t *testing.T) {
	for _, tc := range []struct{ scenario, metric string }{
		{"pfc-incast", "pfc/frames_tx"},
		{"dcqcn-incast", "fabric/ecn_marks"},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			load := func() *scenarios.Scenario {
				s, err := scenarios.Load(tc.scenario)
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			plain, tPlain, err := experiment.Simulate(load())
			if err != nil {
				t.Fatal(err)
			}
			never, _, err := experiment.SimulateWatched(load(), tc.metric, func(float64) bool { return false })
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(wltest.JSON(t, plain), wltest.JSON(t, never)) {
				t.Errorf("a watched run that never stopped differs from the unwatched one")
			}
			full := wltest.Metrics(plain)
			if full[tc.metric] < 2 {
				t.Fatalf("the whole run counts %v %s: the test needs a scenario that counts more than one", full[tc.metric], tc.metric)
			}
			stopped, tStopped, err := experiment.SimulateWatched(load(), tc.metric, func(x float64) bool { return x > 0 })
			if err != nil {
				t.Fatal(err)
			}
			m := wltest.Metrics(stopped)
			at, ok := m[experiment.MetricStoppedAt]
			if !ok || at <= 0 || at >= load().Duration.Time().Seconds()*1e6 {
				t.Fatalf("stopped at %v us (ok %v), want inside the run: %v", at, ok, stopped.Notes)
			}
			if m[tc.metric] != 1 {
				t.Errorf("stopped with %s = %v, want 1 (the event that decided it)", tc.metric, m[tc.metric])
			}
			if tStopped.Events == 0 || tStopped.Events >= tPlain.Events {
				t.Errorf("stopped run simulated %d events, the whole run %d", tStopped.Events, tPlain.Events)
			}
			if _, ok := m["flows/goodput"]; ok {
				t.Errorf("a stopped run reports the flows' goodput")
			}
		})
	}
}
