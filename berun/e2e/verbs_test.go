package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// TestFragsizeScenario replays besim's fig10 (cut to 4 KiB and 16 KiB
// fragments of 64 KiB messages) through berun's agents and controller
// over the core on verbs (in-memory NICs, 100 Gb/s ports, one of fig10's
// rates): every message of every fragment size is answered, and the
// report's fragsize/ metrics are names besim's simulation of the same
// file has.
func TestFragsizeScenario(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("fig10")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.NewReplacer("fragments: [512, 1KiB, 2KiB, 4KiB, 8KiB, 16KiB, 32KiB, 64KiB]", "fragments: [4KiB, 16KiB]",
		"message: 1MiB", "message: 64KiB", "warmup: 6.7108864ms", "warmup: 100ms").Replace(string(data)))
	if !strings.Contains(string(scen), "fragments: [4KiB, 16KiB]") || !strings.Contains(string(scen), "warmup: 100ms") {
		t.Fatal("fig10 changed: cannot cut it down")
	}
	rf, hw := runInProcess(t, "fig10", scen, 2, 500*time.Millisecond)
	tx := rf.Role("fragsize-sender")
	for _, k := range []string{"4096B", "16384B"} {
		if sent, got := tx.Metrics["requests/"+k], tx.Metrics["responses/"+k]; sent == 0 || sent != got {
			t.Errorf("%s: %v messages sent, %v answered", k, sent, got)
		}
	}
	sim, _ := besimVs(t, hw, "fig10", scen)
	n := 0
	for _, m := range hw.Metrics {
		if !strings.HasPrefix(m.Name, "fragsize/") {
			continue
		}
		n++
		if _, ok := sim.Metric(m.Name); !ok {
			t.Errorf("besim's fig10 has no %s", m.Name)
		}
		if !(m.Value > 0) {
			t.Errorf("%s = %v", m.Name, m.Value)
		}
	}
	if n != 2 {
		t.Errorf("berun's report has %d fragsize/ metrics, want 2", n)
	}
}

// TestPerftestScenario replays besim's table2 (RC only) through berun's
// agents and controller on verbs (in-memory NICs at 100 Gb/s, MTU 4096,
// one of table2's points): the client's SENDs all complete, and the
// report's perftest/ metrics are names besim's simulation of the same
// file has.
func TestPerftestScenario(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("table2")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.Replace(string(data), "transports: [rc, ud]", "transports: [rc]", 1))
	if !strings.Contains(string(scen), "transports: [rc]") {
		t.Fatal("table2 changed: cannot cut it to RC")
	}
	_, hw := runInProcess(t, "table2", scen, 2, 300*time.Millisecond)
	sim, _ := besimVs(t, hw, "table2", scen)
	n := 0
	for _, m := range hw.Metrics {
		if !strings.HasPrefix(m.Name, "perftest/") {
			continue
		}
		n++
		if _, ok := sim.Metric(m.Name); !ok {
			t.Errorf("besim's table2 has no %s", m.Name)
		}
		if strings.HasSuffix(m.Name, "/gbps") && !(m.Value > 0) {
			t.Errorf("%s = %v", m.Name, m.Value)
		}
	}
	if n == 0 {
		t.Error("berun's report has no perftest/ metric")
	}
}

// TestVerbsWithoutDevice: on a host without an RDMA device (this one; the
// agents are built without -tags rdma) a scenario whose roles need verbs
// fails at prepare, before the start, with a reason that says there is no
// device and how to build for one, never silently.
func TestVerbsWithoutDevice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := tokenFile(t, dir)
	data, err := scenarios.Builtin("fig13")
	if err != nil {
		t.Fatal(err)
	}
	a, b := startAgent(t, "h1", "127.0.0.1:0", tok), startAgent(t, "h2", "127.0.0.1:0", tok)
	wait, _ := startControllerArgs(t, dir, string(data), hostsFile(a, b), tok, []string{"--duration", "100ms"})
	r := wait()
	if r.code == 0 || r.rf.Status != "failed" || len(r.rf.Failures) == 0 {
		t.Fatalf("exit %d, status %s, failures %+v", r.code, r.rf.Status, r.rf.Failures)
	}
	f := r.rf.Failures[0]
	if f.Phase != "prepare" || !strings.Contains(f.Reason, "no RDMA device") || !strings.Contains(f.Reason, "-tags rdma") {
		t.Errorf("failure %+v: want the prepare phase, no RDMA device, and -tags rdma", f)
	}
}

// TestPSScenarioVerbs replays besim's ps-cluster (cut to 2 servers, one
// ranker and one trainer) through berun's agents and controller over the
// core on verbs (in-memory NICs): every request is answered, and the
// report carries the ps metrics besim's simulation of the same file has.
func TestPSScenarioVerbs(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("ps-cluster")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.NewReplacer("servers: 16", "servers: 2", "shards: 128", "shards: 16", "rankers: 4", "rankers: 1",
		"trainers: 4", "trainers: 1", "warmup: 300us", "warmup: 50ms").Replace(string(data)))
	if !strings.Contains(string(scen), "servers: 2") || !strings.Contains(string(scen), "warmup: 50ms") {
		t.Fatal("ps-cluster changed: cannot cut it down")
	}
	rf, hw := runInProcessOn(t, "ps-cluster", scen, 2, 1500*time.Millisecond, true)
	var sent, served float64
	for _, id := range []string{"ranker0", "trainer0"} {
		req, resp := rf.Role(id).Metrics["requests"], rf.Role(id).Metrics["responses"]
		if req == 0 || req != resp || rf.Role(id).Metrics["lost"] != 0 {
			t.Errorf("%s: %v requests, %v responses", id, req, resp)
		}
		sent += req
	}
	for _, id := range []string{"server0", "server1"} {
		served += rf.Role(id).Metrics["fetches"] + rf.Role(id).Metrics["pushes"]
	}
	if served != sent {
		t.Errorf("servers served %v requests, clients sent %v", served, sent)
	}
	_, rows := besimVs(t, hw, "ps-cluster", scen)
	for _, want := range []string{"user/p99 (us)", "fetch/p50 (us)", "push/p99 (us)", "client/goodput (Gbps)", "server/goodput (Gbps)"} {
		if !rows[want] {
			t.Errorf("compare has no row %q", want)
		}
	}
	if v, _ := hw.Metric("requests/answered"); v.Value != sent {
		t.Errorf("requests/answered %v, sent %v", v.Value, sent)
	}
}

// TestIncastScenarioVerbs replays besim's fig14-incast (cut to 4 servers)
// through berun's agents and controller with the pulls over the core on
// verbs (in-memory NICs; the victim stays kernel TCP): every pull is
// answered, and the report carries besim's incast metrics.
func TestIncastScenarioVerbs(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("fig14-incast")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.Replace(string(data), "servers: 64", "servers: 4", 1))
	if !strings.Contains(string(scen), "servers: 4") {
		t.Fatal("fig14-incast changed: cannot cut it down")
	}
	rf, hw := runInProcessOn(t, "fig14-incast", scen, 3, time.Second, true)
	var served float64
	for i := range 4 {
		served += rf.Role("server" + itoa(i)).Metrics["pulls"]
	}
	sent, got := rf.Role("worker0").Metrics["requests"], rf.Role("worker0").Metrics["responses"]
	if sent == 0 || sent != got || served != sent {
		t.Errorf("worker0 sent %v pulls, got %v answers; servers answered %v", sent, got, served)
	}
	_, rows := besimVs(t, hw, "fig14-incast", scen)
	for _, want := range []string{"pull/count", "pull/p50 (us)", "pull/p99 (us)", "worker/goodput (Gbps)", "victim/goodput (Gbps)"} {
		if !rows[want] {
			t.Errorf("compare has no row %q", want)
		}
	}
}

// TestMsgrateScenario replays besim's fig11 (cut to 2 I/O threads on 4
// and 8 QPs) through berun's agents and controller on verbs (in-memory
// NICs): every point posts and drains its WRITEs, and the report's
// msgrate/ metrics are the names besim's simulation of the same file
// has, every one of them measured.
func TestMsgrateScenario(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("fig11")
	if err != nil {
		t.Fatal(err)
	}
	scen := []byte(strings.NewReplacer("threads: 8", "threads: 2", "qps: [8, 16, 32, 64, 128, 256, 512]", "qps: [4, 8]",
		"warmup: 500us", "warmup: 50ms").Replace(string(data)))
	if !strings.Contains(string(scen), "qps: [4, 8]") || !strings.Contains(string(scen), "warmup: 50ms") {
		t.Fatal("fig11 changed: cannot cut it down")
	}
	_, hw := runInProcess(t, "fig11", scen, 2, 200*time.Millisecond)
	sim, _ := besimVs(t, hw, "fig11", scen)
	n := 0
	for _, m := range sim.Metrics {
		if !strings.HasPrefix(m.Name, "msgrate/") {
			continue
		}
		n++
		if v, ok := hw.Metric(m.Name); !ok || !(v.Value > 0) {
			t.Errorf("berun's report: %s = %+v (present %v), want > 0", m.Name, v, ok)
		}
	}
	if n != 4 {
		t.Errorf("besim's result has %d msgrate/ metrics, want 4", n)
	}
}

// TestPSScenarioRPCVerbs replays ps-cluster (cut to 2 servers, 1 ranker, 1
// trainer) with the RPC layer on and 2 replicas per shard group through
// berun's agents and controller over verbs (in-memory NICs): every
// client's every call has exactly one outcome, and the report carries
// every rpc/* metric besim's simulation of the same file has.
func TestPSScenarioRPCVerbs(t *testing.T) {
	useFakeNICs(t)
	data, err := scenarios.Builtin("ps-cluster")
	if err != nil {
		t.Fatal(err)
	}
	// Tc and Tr far above the fake NIC's latency under load: nothing
	// should time out here.
	scen := []byte(strings.NewReplacer("servers: 16", "servers: 2", "shards: 128", "shards: 16", "rankers: 4", "rankers: 1",
		"trainers: 4", "trainers: 1", "warmup: 300us", "warmup: 50ms",
		"  window: 16KiB\n", "  window: 16KiB\n  rpc: {connect_timeout: 2s, request_timeout: 3s}\n  replicas: 2\n").Replace(string(data)))
	if !strings.Contains(string(scen), "servers: 2") || !strings.Contains(string(scen), "replicas: 2") {
		t.Fatal("ps-cluster changed: cannot cut it down")
	}
	rf, hw := runInProcessOn(t, "ps-cluster", scen, 2, 1500*time.Millisecond, true)
	var calls float64
	for _, id := range []string{"ranker0", "trainer0"} {
		m := rf.Role(id).Metrics
		c, a, f, o := m["rpc_calls"], m["rpc_answered"], m["rpc_failed"], m["rpc_outstanding"]
		if c == 0 || c != a+f+o || o != 0 {
			t.Errorf("%s: %v calls, %v answered, %v failed, %v outstanding", id, c, a, f, o)
		}
		calls += c
	}
	if v, _ := hw.Metric("rpc/calls"); v.Value != calls {
		t.Errorf("rpc/calls %v, the clients made %v", v.Value, calls)
	}
	sim, rows := besimVs(t, hw, "ps-cluster", scen)
	n := 0
	for _, m := range sim.Metrics {
		if !strings.HasPrefix(m.Name, "rpc/") && m.Name != "user/failed" {
			continue
		}
		n++
		if _, ok := hw.Metric(m.Name); !ok {
			t.Errorf("berun's report has no %s (besim's has)", m.Name)
		}
	}
	if n == 0 {
		t.Error("besim's ps-cluster with rpc has no rpc/* metric")
	}
	for _, want := range []string{"rpc/calls", "rpc/failed", "rpc/replica_answers", "user/p99 (us)"} {
		if !rows[want] {
			t.Errorf("compare has no row %q", want)
		}
	}
}
