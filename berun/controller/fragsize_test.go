package controller

import (
	"strings"
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/fragsize"
)

// A fragsize-receiver's result reduces to besim's fig10 metric names, in
// fragment order; a receiver without measurements is a note.
func TestFragsizeReport(t *testing.T) {
	rf := &ResultFile{RunID: "r1", Status: "ok", Plan: PlanInfo{Name: "fig10", DurationS: 9},
		Hosts: []HostResult{{Name: "b", Roles: []RoleResult{
			{ID: "fragsize-receiver", Role: "fragsize-receiver", Status: "ok", Metrics: map[string]float64{
				"rate_bps": 25e9, "measure_s": 1, "gbps/16384B": 22.5, "messages/16384B": 2682, "gbps/4096B": 20.1, "messages/4096B": 2396}},
			{ID: "empty", Role: "fragsize-receiver", Status: "error"}}}}}
	r := Report(rf)
	// The names besim's fig10 writes for those points.
	data, _ := scenarios.Builtin("fig10")
	s, err := scenarios.Parse("fig10.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	var sim report.Result
	tbl := fragsize.Table(s)
	fragsize.Add(s, s.Benchmark.Rates[0], nil, &tbl, &sim)
	for _, k := range []string{"4096B", "16384B"} {
		name := "fragsize/25G/" + k + "/gbps"
		if _, ok := sim.Metric(name); !ok {
			t.Errorf("besim's fig10 has no metric %s", name)
		}
		if m, ok := r.Metric(name); !ok || m.Value <= 0 || m.Unit != "Gbps" {
			t.Errorf("%s: %+v %v", name, m, ok)
		}
	}
	tb, ok := r.Table("fragsize")
	if !ok || len(tb.Rows) != 2 || tb.Rows[0].Key != "25G/4096B" {
		t.Errorf("table %+v", tb)
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "empty: no fragsize measurements") {
		t.Errorf("notes:\n%s", notes)
	}
}
