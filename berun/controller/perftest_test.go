package controller

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/perftest"
)

// A perftest-server's result reduces to besim's table2 metric names: on a
// link that is one of the scenario's points, the names besim writes for
// that point; a transport that failed is a note, not a zero.
func TestPerftestReport(t *testing.T) {
	d := role.PerftestDetail{Device: "mlx5_0", RateBps: 100e9, PathMTU: 4096, GIDIndex: 3, Match: "100G/4096B",
		Points: []string{"25G/1024B", "100G/1024B", "100G/4096B", "200G/4096B"},
		Runs: []role.PerftestRun{
			{Key: "100G/4096B/rc", Transport: "rc", Message: 65536, Gbps: 97.1, MsgRate: 185e3, PktRate: 2.96e6, LineGbps: 98.04, MeasuredS: 5},
			{Key: "100G/4096B/ud", Transport: "ud", Message: 4096, Error: "perftest: completion transport retry counter exceeded on QP 9"},
		}}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	rf := &ResultFile{RunID: "r1", Status: "partial", Plan: PlanInfo{Name: "table2", DurationS: 10.0001},
		Hosts: []HostResult{{Name: "h2", Roles: []RoleResult{{ID: "perftest-server", Role: "perftest-server", Status: "error", Detail: raw}}}}}
	r := Report(rf)
	m, ok := r.Metric("perftest/100G/4096B/rc/gbps")
	if !ok || m.Value != 97.1 || m.Unit != "Gbps" {
		t.Fatalf("metric %+v %v; metrics %+v", m, ok, r.Metrics)
	}
	if _, ok := r.Metric("perftest/100G/4096B/ud/gbps"); ok {
		t.Error("a failed transport has a metric")
	}
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "retry counter exceeded") || !strings.Contains(notes, "the scenario's point 100G/4096B") {
		t.Errorf("notes:\n%s", notes)
	}
	tb, ok := r.Table("perftest")
	if v, _ := tb.Value("100G/4096B/rc", "measured/line"); !ok || v < 99 || v > 99.1 {
		t.Errorf("table %+v", tb)
	}
	// The name is one besim's table2 result has.
	data, _ := scenarios.Builtin("table2")
	s, err := scenarios.Parse("table2.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	runs, _ := perftest.FromScenario(s)
	found := false
	for _, run := range runs {
		found = found || perftest.Metric(run.Key) == "perftest/100G/4096B/rc/gbps"
	}
	if !found {
		t.Error("besim's table2 has no metric perftest/100G/4096B/rc/gbps")
	}
}
