package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// TestHolScenario replays besim's fig13 (cut to 0 and 2 large flows of
// 64 KiB messages, a small message every 200 us, a warm-up of 100 ms: a
// slow drain on a loaded machine has half of it) through berun's agents
// and controller over the core on verbs (in-memory NICs): every large
// message is answered and the small flow measured in every point, and the
// report carries every hol/ metric besim's simulation of the same file
// has.
func TestHolScenario(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("fig13")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.NewReplacer("large_flows: [0, 1, 2, 4, 8]", "large_flows: [0, 2]",
		"large_message: 1MiB", "large_message: 64KiB", "interval: 20us", "interval: 200us", "duration: 20ms", "duration: 2ms", "warmup: 2ms", "warmup: 100ms").Replace(string(data)))
	if !strings.Contains(string(scen), "large_flows: [0, 2]") || !strings.Contains(string(scen), "duration: 2ms") || !strings.Contains(string(scen), "warmup: 100ms") {
		t.Fatal("fig13 changed: cannot cut it down")
	}
	rf, hw := runInProcess(t, "fig13", scen, 2, 500*time.Millisecond)
	rx, tx := rf.Role("hol-receiver"), rf.Role("hol-sender")
	for _, k := range []string{"0/fragmented", "0/whole", "2/fragmented", "2/whole"} {
		if sent, got := tx.Metrics["requests/"+k], tx.Metrics["responses/"+k]; sent != got || strings.HasPrefix(k, "2/") && sent == 0 {
			t.Errorf("%s: %v large messages sent, %v answered", k, sent, got)
		}
		if rx.Metrics["samples/"+k] <= 0 {
			t.Errorf("%s: no latency samples (%v small messages sent)", k, tx.Metrics["small_sent/"+k])
		}
	}
	sim, rows := besimVs(t, hw, "fig13", scen)
	for _, m := range sim.Metrics {
		if !strings.HasPrefix(m.Name, "hol/") {
			continue
		}
		if v, ok := hw.Metric(m.Name); !ok || !(v.Value > 0) {
			t.Errorf("berun's report: %s = %+v (present %v), want > 0", m.Name, v, ok)
		}
	}
	if !rows["hol/2/whole/p99 (us)"] {
		t.Errorf("compare has no row hol/2/whole/p99 (us)")
	}
}
