package controller

import (
	"strings"
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/mrcache"
)

// A msgrate-core-target's result reduces to besim's fig11-core metric
// names, with the core's table title; the sender's counts stay role
// metrics.
func TestMsgrateCoreReport(t *testing.T) {
	rf := &ResultFile{RunID: "r1", Status: "ok", Plan: PlanInfo{Name: "fig11-core", DurationS: 9},
		Hosts: []HostResult{
			{Name: "b", Roles: []RoleResult{{ID: "msgrate-core-target", Role: "msgrate-core-target", Status: "ok", Metrics: map[string]float64{
				"measure_s": 1, "threads": 8, "message_bytes": 512, "mmps/no_td/8": 3, "mmps/td/8": 4, "messages/no_td/8": 3e6, "messages/td/8": 4e6}}}},
			{Name: "a", Roles: []RoleResult{{ID: "msgrate-core-sender", Role: "msgrate-core-sender", Status: "ok", Metrics: map[string]float64{
				"requests/no_td/8": 3.1e6, "responses/no_td/8": 3.1e6}}}}}}
	r := Report(rf)
	for name, want := range map[string]float64{"msgrate/no_td/8/mmps": 3, "msgrate/td/8/mmps": 4, "role/msgrate-core-sender/requests/no_td/8": 3.1e6} {
		if m, ok := r.Metric(name); !ok || m.Value != want {
			t.Errorf("%s: %+v %v, want %v", name, m, ok, want)
		}
	}
	tb, ok := r.Table("msgrate")
	if !ok || len(tb.Rows) != 1 || !strings.Contains(tb.Title, "through the ByteExpress core") {
		t.Errorf("table %+v", tb)
	}
}

// A mrcache-sender's result reduces to besim's mr-cache names for the
// throughput, in besim's registration order; the miss rates, which a real
// NIC does not count, are absent, and so are the table's cache cells (-1).
func TestMRCacheReport(t *testing.T) {
	metrics := map[string]float64{"measure_s": 2, "message_bytes": 4096, "buffers": 2048, "block_bytes": 4 << 20, "depth": 16}
	for i, reg := range []string{"message", "block", "buffer"} {
		metrics["mmps/"+reg] = float64(i + 1)
		metrics["gbps/"+reg] = float64(i+1) * 4096 * 8 / 1e3
		metrics["regions/"+reg] = float64(10 * (i + 1))
		metrics["reg_share/"+reg] = 0.1 * float64(i)
	}
	rf := &ResultFile{RunID: "r1", Status: "ok", Plan: PlanInfo{Name: "mr-cache", DurationS: 9},
		Hosts: []HostResult{{Name: "a", Roles: []RoleResult{{ID: "mrcache-sender", Role: "mrcache-sender", Status: "ok", Metrics: metrics}}}}}
	r := Report(rf)
	data, _ := scenarios.Builtin("mr-cache")
	s, err := scenarios.Parse("mr-cache.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	var sim report.Result
	var regs []mrcache.Registration
	for _, reg := range s.Benchmark.Registrations {
		regs = append(regs, mrcache.Registration(reg))
	}
	mrcache.Reduce(s, regs, make([]mrcache.Point, len(regs)), &sim)
	for _, m := range sim.Metrics {
		got, ok := r.Metric(m.Name)
		miss := strings.HasSuffix(m.Name, "_miss_rate")
		if ok == miss {
			t.Errorf("%s: present %v in berun's report (want present unless a cache miss rate)", m.Name, ok)
		}
		if ok && got.Unit != m.Unit {
			t.Errorf("%s: unit %q, besim's %q", m.Name, got.Unit, m.Unit)
		}
	}
	if m, ok := r.Metric("mrcache/message/mmps"); !ok || m.Value != 1 {
		t.Errorf("mrcache/message/mmps %+v %v, want 1", m, ok)
	}
	tb, ok := r.Table("mrcache")
	if !ok || len(tb.Rows) != 3 || tb.Rows[0].Key != "block" || tb.Rows[2].Key != "message" {
		t.Fatalf("table %+v", tb)
	}
	for _, row := range tb.Rows {
		for c, col := range tb.Columns {
			if strings.Contains(col.Name, "MPT") || strings.Contains(col.Name, "MTT") {
				if row.Values[c] != -1 {
					t.Errorf("%s: %s = %v, want -1 (not measured)", row.Key, col.Name, row.Values[c])
				}
			}
		}
	}
}
