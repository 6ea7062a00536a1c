package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// TestMsgrateCoreScenario replays besim's fig11-core (cut to 2 I/O
// threads on 2 and 4 QPs) through berun's agents and controller over the
// core on verbs (in-memory NICs): every point connects all its engines,
// every message sent is answered, and the report's msgrate/ metrics are
// exactly the names besim's simulation of the same file has, each
// measured.
func TestMsgrateCoreScenario(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("fig11-core")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.NewReplacer("threads: 8", "threads: 2", "qps: [8, 16, 32, 64, 128, 256, 512]", "qps: [2, 4]").Replace(string(data)))
	if !strings.Contains(string(scen), "qps: [2, 4]") || !strings.Contains(string(scen), "threads: 2") {
		t.Fatal("fig11-core changed: cannot cut it down")
	}
	rf, hw := runInProcess(t, "fig11-core", scen, 2, 150*time.Millisecond)
	tx := rf.Role("msgrate-core-sender").Metrics
	for _, k := range []string{"no_td/2", "td/2", "no_td/4", "td/4"} {
		q := map[string]float64{"no_td/2": 2, "td/2": 2, "no_td/4": 4, "td/4": 4}[k]
		if sent, got := tx["requests/"+k], tx["responses/"+k]; sent == 0 || got != sent || tx["connected/"+k] != q {
			t.Errorf("%s: %v messages sent, %v answered, %v of %v engines connected", k, sent, got, tx["connected/"+k], q)
		}
	}
	sim, _ := besimVs(t, hw, "fig11-core", scen)
	names := map[string]bool{}
	total := 0.0
	for _, m := range sim.Metrics {
		if !strings.HasPrefix(m.Name, "msgrate/") {
			continue
		}
		names[m.Name] = true
		v, ok := hw.Metric(m.Name)
		if !ok || !(v.Value >= 0) {
			t.Errorf("berun's report: %s = %+v (present %v), want a rate", m.Name, v, ok)
		}
		total += v.Value
	}
	// A point may measure nothing when a loaded machine stalls the run
	// for its whole interval; the run as a whole must measure messages.
	if !(total > 0) {
		t.Errorf("berun measured no message in any point")
	}
	for _, m := range hw.Metrics {
		if strings.HasPrefix(m.Name, "msgrate/") && !names[m.Name] {
			t.Errorf("berun's report has %s, besim's result does not", m.Name)
		}
	}
	if len(names) != 4 {
		t.Errorf("besim's result has %d msgrate/ metrics, want 4", len(names))
	}
}

// TestMRCacheScenario replays besim's mr-cache (cut to 256 buffers in
// 256 KiB blocks) through berun's agents and controller on verbs
// (in-memory NICs): every WRITE of every registration completes, and the
// report carries besim's mrcache/ names but the NIC's cache miss rates,
// which berun cannot read on a real NIC (absent, not zero).
func TestMRCacheScenario(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("mr-cache")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.NewReplacer("buffers: 2048", "buffers: 256", "block: 4MiB", "block: 256KiB").Replace(string(data)))
	if !strings.Contains(string(scen), "buffers: 256") || !strings.Contains(string(scen), "block: 256KiB") {
		t.Fatal("mr-cache changed: cannot cut it down")
	}
	rf, hw := runInProcess(t, "mr-cache", scen, 2, 150*time.Millisecond)
	tx := rf.Role("mrcache-sender").Metrics
	for _, reg := range []string{"block", "buffer", "message"} {
		if w, c := tx["writes/"+reg], tx["completions/"+reg]; w == 0 || w != c {
			t.Errorf("%s: %v WRITEs posted, %v completed", reg, w, c)
		}
	}
	sim, _ := besimVs(t, hw, "mr-cache", scen)
	names := map[string]bool{}
	total := 0.0
	for _, m := range sim.Metrics {
		if !strings.HasPrefix(m.Name, "mrcache/") {
			continue
		}
		names[m.Name] = true
		v, ok := hw.Metric(m.Name)
		switch {
		case strings.HasSuffix(m.Name, "/mpt_miss_rate") || strings.HasSuffix(m.Name, "/mtt_miss_rate"):
			if ok {
				t.Errorf("berun's report has %s = %v: a real NIC's cache misses are not measured, it must be absent", m.Name, v.Value)
			}
		case !ok || !(v.Value >= 0):
			t.Errorf("berun's report: %s = %+v (present %v), want a rate", m.Name, v, ok)
		default:
			total += v.Value
		}
	}
	if !(total > 0) {
		t.Errorf("berun measured no WRITE in any registration")
	}
	for _, m := range hw.Metrics {
		if strings.HasPrefix(m.Name, "mrcache/") && !names[m.Name] {
			t.Errorf("berun's report has %s, besim's result does not", m.Name)
		}
	}
	if len(names) != 12 {
		t.Errorf("besim's result has %d mrcache/ metrics, want 12 (4 per registration)", len(names))
	}
}
