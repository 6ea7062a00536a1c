package msgratesim

import (
	"strconv"
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
