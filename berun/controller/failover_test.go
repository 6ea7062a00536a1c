package controller

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/failover"
)

// Two failover clients reduce to besim's failover/ metrics: counts
// summed, detection and recovery the earliest, the rate from the summed
// bins measured against the fault as besim does; a crashed server is a
// note.
func TestFailoverReport(t *testing.T) {
	ms := int64(sim.Millisecond / sim.Nanosecond)
	detail := func(started, detected int, bins []int) json.RawMessage {
		d := role.FailoverDetail{Summary: failover.Summary{Started: started, Completed: started - 1, Stranded: 1, Resent: 2,
			DetectedAfter: sim.Time(detected) * sim.Millisecond}, Bins: bins, BinNs: ms, FaultAtNs: 2 * ms, Served: []int{0, 3, 4}}
		raw, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	rf := &ResultFile{RunID: "r1", Status: "ok", Plan: PlanInfo{Name: "failover", DurationS: 1},
		Hosts: []HostResult{
			{Name: "h1", Roles: []RoleResult{{ID: "server8", Role: "failover-server", Status: "ok", Metrics: map[string]float64{"crashed": 1, "crashed_at_s": 0.3, "requests": 9}}}},
			{Name: "h2", Roles: []RoleResult{
				{ID: "client0", Role: "failover-client", Status: "ok", Detail: detail(10, 3, []int{2, 2, 0, 1, 2})},
				{ID: "client1", Role: "failover-client", Status: "ok", Detail: detail(20, 2, []int{2, 2, 0, 0, 2})},
			}}}}
	r := Report(rf)
	for name, want := range map[string]float64{"failover/started": 30, "failover/completed": 28, "failover/stranded": 2,
		"failover/resent": 4, "failover/detected_after": 2, "failover/rate_before": 4, "failover/rate_recovered_after": 3,
		"failover/rate_never_recovered": 0} {
		if m, ok := r.Metric(name); !ok || m.Value != want {
			t.Errorf("%s = %+v (%v), want %v", name, m, ok, want)
		}
	}
	var sum failover.Summary
	for _, m := range sum.Metrics() {
		if _, ok := r.Metric("failover/" + m.Name); !ok {
			t.Errorf("no failover/%s", m.Name)
		}
	}
	if _, ok := r.Table("failover"); !ok || len(r.Series) != 1 || r.Series[0].Name != "failover/rate" {
		t.Errorf("tables %v, series %v", r.Tables, r.Series)
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "server8 on h1 crashed") || !strings.Contains(notes, "1: 6, 2: 8") {
		t.Errorf("notes:\n%s", notes)
	}
}
