package controller

import (
	"encoding/json"
	"testing"

	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/metrics"
	"github.com/besim/besim/workloads/ps"
)

// Two ps-clients' RPC layers reduce to besim's rpc/* metrics, summed over
// the clients (calls, failures, answers by a replica, user/failed), and
// the rpc table; without RPC stats in the details there is no rpc/*.
func TestPSReportRPC(t *testing.T) {
	rc := rpc.DefaultConfig()
	client := func(id string, st ps.RPCStats, usersFailed int64) RoleResult {
		d := role.PSDetail{User: metrics.New(3), Fetch: metrics.New(3), Iteration: metrics.New(3),
			RPC: &st, RPCConfig: &rc, Replicas: 2, UsersFailed: usersFailed}
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return RoleResult{ID: id, Role: "ps-client", Status: "ok", Detail: b, Metrics: map[string]float64{}}
	}
	a := ps.RPCStats{Calls: [2]int64{10, 4}, Answered: [2]int64{9, 3}, Failed: [2]int64{1, 1}, ByReplica: [2]int64{2, 0}, Timeouts: 3, Retries: 2}
	b := ps.RPCStats{Calls: [2]int64{7, 0}, Answered: [2]int64{7, 0}, ByReplica: [2]int64{1, 0}, Stale: [2]int64{1, 0}}
	rf := &ResultFile{Hosts: []HostResult{{Name: "h", Roles: []RoleResult{client("ranker0", a, 1), client("ranker1", b, 0),
		{ID: "server0", Role: "ps-server", Metrics: map[string]float64{"rx_bytes": 1}}}}}}
	r := Report(rf)
	for name, want := range map[string]float64{"rpc/calls": 21, "rpc/failed": 2, "rpc/replica_answers": 3, "rpc/stale": 1,
		"rpc/timeouts": 3, "rpc/retries": 2, "rpc/outstanding": 0, "user/failed": 1} {
		if m, ok := r.Metric(name); !ok || m.Value != want {
			t.Errorf("%s: %v (present %v), want %v", name, m.Value, ok, want)
		}
	}
	found := false
	for _, tb := range r.Tables {
		found = found || tb.Name == "rpc"
	}
	if !found {
		t.Error("no rpc table")
	}
	// Without the RPC layer: no rpc/* metric.
	c := client("ranker0", a, 0)
	var d role.PSDetail
	_ = json.Unmarshal(c.Detail, &d)
	d.RPC, d.RPCConfig = nil, nil
	c.Detail, _ = json.Marshal(d)
	r = Report(&ResultFile{Hosts: []HostResult{{Name: "h", Roles: []RoleResult{c}}}})
	if _, ok := r.Metric("rpc/calls"); ok {
		t.Error("rpc/calls without the RPC layer")
	}
}
