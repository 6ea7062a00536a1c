package controller

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/peak"
	"github.com/besim/besim/workloads/pingpong"
)

// besimNames are the metric names besim's reduction writes for the
// embedded scenario name (add fills them in with nothing measured).
func besimNames(t *testing.T, name string, add func(s *scenarios.Scenario, r *report.Result)) map[string]bool {
	t.Helper()
	data, _ := scenarios.Builtin(name)
	s, err := scenarios.Parse(name+".yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	var r report.Result
	add(s, &r)
	out := map[string]bool{}
	for _, m := range r.Metrics {
		out[m.Name] = true
	}
	return out
}

// A pingpong-sender's result reduces to besim's fig8 names at the smaller
// of the two roles' points, in size order; the values are the sender's.
func TestPingpongReport(t *testing.T) {
	tx := map[string]float64{"rate_bps": 100e9, "mtu": 4096, "verbs": 1, "response_bytes": 32, "measure_s": 0.5, "offset_probes": 32, "offset_rtt_us": 4.1}
	for _, k := range []string{"32B", "16384B"} {
		tx["requests/"+k], tx["responses/"+k], tx["samples/"+k] = 100, 100, 90
		tx["mean_us/"+k], tx["p50_us/"+k], tx["p99_us/"+k], tx["max_us/"+k] = 5, 4.8, 7, 9
		tx["oneway_mean_us/"+k], tx["oneway_p99_us/"+k] = 2.5, 3.5
	}
	tx["mean_us/16384B"] = 11
	rf := &ResultFile{RunID: "r1", Status: "ok", Plan: PlanInfo{Name: "fig8", DurationS: 1.2},
		Hosts: []HostResult{
			{Name: "a", Roles: []RoleResult{{ID: "pingpong-sender", Role: "pingpong-sender", Status: "ok", Metrics: tx}}},
			{Name: "b", Roles: []RoleResult{{ID: "pingpong-server", Role: "pingpong-server", Status: "ok", Metrics: map[string]float64{"rate_bps": 100e9, "mtu": 1024, "messages": 200}}}}}}
	r := Report(rf)
	sim := besimNames(t, "fig8", func(s *scenarios.Scenario, r *report.Result) {
		tbl := pingpong.Table(s)
		pingpong.Add(s, pingpong.Points(s.Benchmark)[0], nil, &tbl, r)
	})
	n := 0
	for _, m := range r.Metrics {
		if !strings.HasPrefix(m.Name, "pingpong/") {
			continue
		}
		n++
		if !sim[m.Name] {
			t.Errorf("besim's fig8 has no metric %s", m.Name)
		}
	}
	if n != 6 {
		t.Errorf("%d pingpong metrics, want 3 for each of 2 sizes", n)
	}
	if m, ok := r.Metric("pingpong/100G/1024B/16384B/mean_us"); !ok || m.Value != 11 || m.Unit != "us" {
		t.Errorf("16 KiB mean: %+v %v", m, ok)
	}
	if tb, ok := r.Table("pingpong"); !ok || len(tb.Rows) != 2 || tb.Rows[0].Key != "100G/1024B/32B" {
		t.Errorf("table %+v", tb)
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "ByteExpress core") || !strings.Contains(notes, "32 probes") || strings.Contains(notes, "unanswered") {
		t.Errorf("notes:\n%s", notes)
	}
	// A sender that lost answers says so, one without probes that it has no
	// one-way times, one without measurements that it has none.
	tx["responses/32B"], tx["offset_probes"] = 99, 0
	rf.Hosts[0].Roles = append(rf.Hosts[0].Roles, RoleResult{ID: "empty", Role: "pingpong-sender", Status: "error"})
	if notes := strings.Join(Report(rf).Notes, "\n"); !strings.Contains(notes, "1 messages unanswered") || !strings.Contains(notes, "one-way times are not measured") || !strings.Contains(notes, "empty: no pingpong measurements") {
		t.Errorf("notes:\n%s", notes)
	}
}

// A peak run's ByteExpress receiver and perftest server reduce to besim's
// fig9 names at the perftest path; a failed transport is -1 and a note.
func TestPeakReport(t *testing.T) {
	d := role.PerftestDetail{Device: "mlx5_0", RateBps: 100e9, PathMTU: 4096, Match: "100G/4096B",
		Runs: []role.PerftestRun{{Key: "100G/4096B/rc", Transport: "rc", Message: 65536, Gbps: 97.1},
			{Key: "100G/4096B/ud", Transport: "ud", Message: 4096, Error: "retry counter exceeded"}}}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	rf := &ResultFile{RunID: "r1", Status: "partial", Plan: PlanInfo{Name: "fig9", DurationS: 3},
		Hosts: []HostResult{{Name: "b", Roles: []RoleResult{
			{ID: "peak-receiver", Role: "peak-receiver", Status: "ok", Metrics: map[string]float64{"rate_bps": 100e9, "path_mtu": 4096,
				"gbps/65536B": 95.5, "messages/65536B": 5700, "message_bytes": 1 << 20, "fragment_bytes": 65536, "depth": 8, "measure_s": 0.5}},
			{ID: "peak-perftest-server", Role: "peak-perftest-server", Status: "error", Detail: raw}}}}}
	r := Report(rf)
	sim := besimNames(t, "fig9", func(s *scenarios.Scenario, r *report.Result) {
		tbl := peak.Table(s)
		for _, p := range peak.Points(s.Benchmark) {
			peak.Add(p, peak.Measured{BE: -1, RC: -1, UD: -1}, peak.Paper{RC: -1, UD: -1}, &tbl, r)
		}
	})
	want := map[string]float64{"peak/100G/4096B/be/gbps": 95.5, "peak/100G/4096B/rc/gbps": 97.1, "peak/100G/4096B/ud/gbps": -1}
	for name, v := range want {
		if !sim[name] {
			t.Errorf("besim's fig9 has no metric %s", name)
		}
		if m, ok := r.Metric(name); !ok || m.Value != v {
			t.Errorf("%s: %+v %v, want %v", name, m, ok, v)
		}
	}
	tb, ok := r.Table("peak")
	if v, _ := tb.Value("100G/4096B", "ByteExpress messages"); !ok || v != 5700 {
		t.Errorf("table %+v", tb)
	}
	if notes := strings.Join(r.Notes, "\n"); !strings.Contains(notes, "retry counter exceeded") || !strings.Contains(notes, "took turns on the link 100G/4096B") {
		t.Errorf("notes:\n%s", notes)
	}
}
