package msgratesim

import (
	"strconv"

	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"testing"

	"github.com/besim/besim/workloads/internal/wltest"
)

// TestFig11Scenario: without thread domains the rate at 512 QPs falls below
// 75% of the rate at 64; with them it stays within 10% of its peak.
func TestFig11Scenario(t *testing.T) {
	r := wltest.Builtin(t, "fig11")
	m := wltest.Metrics(r)
	no64, no512 := m["msgrate/no_td/64/mmps"], m["msgrate/no_td/512/mmps"]
	t.Logf("no TD: 64 QPs %.2f, 512 QPs %.2f Mmsg/s; TD: 64 %.2f, 512 %.2f", no64, no512, m["msgrate/td/64/mmps"], m["msgrate/td/512/mmps"])
	if no64 <= 0 || no512 >= 0.75*no64 {
		t.Errorf("no TD: 512 QPs %.2f vs 64 QPs %.2f Mmsg/s (want < 75%%)", no512, no64)
	}
	var peak float64
	for _, q := range []int{8, 16, 32, 64, 128, 256, 512} {
		peak = max(peak, m["msgrate/td/"+strconv.Itoa(q)+"/mmps"])
	}
	for _, q := range []int{8, 16, 32, 64, 128, 256, 512} {
		if v := m["msgrate/td/"+strconv.Itoa(q)+"/mmps"]; v < 0.9*peak {
			t.Errorf("TD at %d QPs: %.2f of peak %.2f Mmsg/s", q, v, peak)
		}
	}
	if tb, ok := r.Table("msgrate"); !ok || len(tb.Rows) != 7 {
		t.Errorf("msgrate table: %+v", tb)
	}
}

// TestFig11CoreScenario: the embedded fig11-core scenario, cut to 64 and
// 512 QPs and a shorter interval, runs through the registry: without
// thread domains the rate at 512 QPs falls below 95% of the TD rate, the
// QPs beyond the 64 lock-free registers are counted as shared and the
// client spends CPU in doorbell locks; with them it does not fall.
func TestFig11CoreScenario(t *testing.T) {
	s, err := scenarios.Load("fig11-core")
	if err != nil {
		t.Fatal(err)
	}
	s.Benchmark.QPs = []int{64, 512}
	s.Duration = scenarios.Duration(300 * sim.Microsecond)
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	r := wltest.Run(t, s)
	m := wltest.Metrics(r)
	no64, no512, td64, td512 := m["msgrate/no_td/64/mmps"], m["msgrate/no_td/512/mmps"], m["msgrate/td/64/mmps"], m["msgrate/td/512/mmps"]
	t.Logf("no TD: 64 QPs %.2f, 512 QPs %.2f Mmsg/s; TD: 64 %.2f, 512 %.2f", no64, no512, td64, td512)
	if td64 <= 0 || td512 < 0.97*td64 {
		t.Errorf("TD: 512 QPs %.2f vs 64 QPs %.2f Mmsg/s (want within 3%%)", td512, td64)
	}
	if no512 > 0.95*td512 || no512 > 0.95*no64 {
		t.Errorf("no TD at 512 QPs %.2f Mmsg/s: want below 95%% of TD (%.2f) and of no TD at 64 (%.2f)", no512, td512, no64)
	}
	tb, ok := r.Table("msgrate")
	if !ok || len(tb.Rows) != 2 || tb.Rows[1].Values[2] != 448 || tb.Rows[1].Values[3] <= 0 {
		t.Errorf("msgrate table: %+v", tb)
	}
}
