package controller

import (
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/msgrate"
)

// A msgrate-sender's result reduces to besim's fig11 metric names
// (through msgrate.Reduce).
func TestMsgrateReport(t *testing.T) {
	rf := &ResultFile{RunID: "r1", Status: "ok", Plan: PlanInfo{Name: "fig11", DurationS: 9},
		Hosts: []HostResult{{Name: "a", Roles: []RoleResult{
			{ID: "msgrate-sender", Role: "msgrate-sender", Status: "ok", Metrics: map[string]float64{"measure_s": 1, "threads": 8, "message_bytes": 512,
				"mmps/no_td/8": 20, "mmps/td/8": 21, "mmps/no_td/16": 19, "mmps/td/16": 22}}}}}}
	r := Report(rf)
	data, _ := scenarios.Builtin("fig11")
	s, err := scenarios.Parse("fig11.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	var sim report.Result
	pts := make([][]msgrate.Point, len(s.Benchmark.QPs))
	for i := range pts {
		pts[i] = make([]msgrate.Point, len(s.Benchmark.ThreadDomains))
	}
	msgrate.Reduce(s, pts, &sim)
	for name, want := range map[string]float64{"msgrate/no_td/8/mmps": 20, "msgrate/td/16/mmps": 22} {
		if _, ok := sim.Metric(name); !ok {
			t.Errorf("besim's fig11 has no metric %s", name)
		}
		if m, ok := r.Metric(name); !ok || m.Value != want {
			t.Errorf("%s: %+v %v, want %v", name, m, ok, want)
		}
	}
	if tb, ok := r.Table("msgrate"); !ok || len(tb.Rows) != 2 {
		t.Errorf("table %+v", tb)
	}
}
