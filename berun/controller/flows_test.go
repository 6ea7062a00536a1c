package controller

import (
	"encoding/json"
	"strings"
	"testing"
)

// Flow roles reduce to besim's flow scenario names: flow/NAME/goodput
// (the receiver's), flows/sent and flows/delivered, in the plan's flow
// order; an incomplete flow is counted.
func TestFlowsReport(t *testing.T) {
	det := func(n string) json.RawMessage { b, _ := json.Marshal(map[string]string{"flow": n}); return b }
	rf := &ResultFile{RunID: "r1", Status: "ok", Plan: PlanInfo{Name: "incast", DurationS: 1},
		Hosts: []HostResult{
			{Name: "a", Roles: []RoleResult{
				{ID: "f10-tx", Role: "flow-sender", Status: "ok", Detail: det("victim"), Metrics: map[string]float64{"bytes": 300, "completed": 0, "size": 0}},
				{ID: "f2-tx", Role: "flow-sender", Status: "ok", Detail: det("incast.0-16"), Metrics: map[string]float64{"bytes": 100, "completed": 1, "size": 100, "fct_s": 0.001}}}},
			{Name: "b", Roles: []RoleResult{
				{ID: "f2-rx", Role: "flow-receiver", Status: "ok", Metrics: map[string]float64{"bytes": 100, "goodput_gbps": 2}},
				{ID: "f10-rx", Role: "flow-receiver", Status: "ok", Metrics: map[string]float64{"bytes": 300, "goodput_gbps": 5}}}}}}
	r := Report(rf)
	for name, want := range map[string]float64{"flow/incast.0-16/goodput": 2, "flow/victim/goodput": 5, "flows/sent": 400, "flows/delivered": 400, "flows/incomplete": 1} {
		if m, ok := r.Metric(name); !ok || m.Value != want {
			t.Errorf("%s: %+v %v, want %v", name, m, ok, want)
		}
	}
	tb, ok := r.Table("flows")
	if !ok || len(tb.Rows) != 2 || !strings.HasPrefix(tb.Rows[0].Key, "incast.0-16 (a->b)") || tb.Rows[0].Values[3] != 1000 {
		t.Errorf("table %+v", tb)
	}
}
