package controller

import (
	"strings"
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/hol"
)

// A hol-receiver's result reduces to besim's fig13 metric names (through
// hol.Reduce); a receiver without measurements is a note.
func TestHolReport(t *testing.T) {
	m := map[string]float64{"measure_s": 1, "small_bytes": 512, "large_bytes": 1 << 20, "fragment_bytes": 4096, "interval_s": 20e-6}
	for _, k := range []string{"0/fragmented", "0/whole", "2/fragmented", "2/whole"} {
		m["mean_us/"+k], m["p50_us/"+k], m["p99_us/"+k], m["samples/"+k], m["large_gbps/"+k] = 3, 2, 9, 100, 1
	}
	m["mean_us/2/whole"] = 40
	rf := &ResultFile{RunID: "r1", Status: "ok", Plan: PlanInfo{Name: "fig13", DurationS: 9},
		Hosts: []HostResult{{Name: "b", Roles: []RoleResult{
			{ID: "hol-receiver", Role: "hol-receiver", Status: "ok", Metrics: m},
			{ID: "empty", Role: "hol-receiver", Status: "error"}}}}}
	r := Report(rf)
	data, _ := scenarios.Builtin("fig13")
	s, err := scenarios.Parse("fig13.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	var sim report.Result
	hol.Reduce(s, nil, &sim)
	for _, name := range []string{"hol/0/fragmented/mean", "hol/0/whole/p99", "hol/2/fragmented/p99", "hol/2/whole/mean"} {
		if _, ok := sim.Metric(name); !ok {
			t.Errorf("besim's fig13 has no metric %s", name)
		}
		if m, ok := r.Metric(name); !ok || m.Value <= 0 || m.Unit != "us" {
			t.Errorf("%s: %+v %v", name, m, ok)
		}
	}
	if m, _ := r.Metric("hol/2/whole/mean"); m.Value != 40 {
		t.Errorf("hol/2/whole/mean %v, want 40", m.Value)
	}
	tb, ok := r.Table("hol")
	if !ok || len(tb.Rows) != 4 || tb.Rows[0].Key != "0/fragmented" || !strings.Contains(tb.Title, "512B") {
		t.Errorf("table %+v", tb)
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "empty: no hol measurements") {
		t.Errorf("notes:\n%s", notes)
	}
}
