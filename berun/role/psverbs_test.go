package role

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// The ps roles over verbs run the ByteExpress core on an in-memory NIC
// (verbs/fakeverbs) here, where no RDMA device exists: the same scenario,
// exchange over TCP, engines, sockets, window and fragments as on a
// ConnectX host, with only libibverbs replaced. Every request is answered
// and the servers' counts match the clients'.
func TestPSRolesOverVerbs(t *testing.T) {
	useFakeNICs(t)

	data, err := scenarios.Builtin("ps-cluster")
	if err != nil {
		t.Fatal(err)
	}
	small := strings.NewReplacer("servers: 16", "servers: 2", "shards: 128", "shards: 16", "rankers: 4", "rankers: 1",
		"trainers: 4", "trainers: 1", "warmup: 300us", "warmup: 50ms").Replace(string(data))
	param := func(i string) map[string]string { return map[string]string{"transport": "verbs", "index": i} }
	specs := []Spec{
		{ID: "server0", Role: "ps-server", Bind: "127.0.0.1:0", From: []string{"ranker0", "trainer0"}, Params: param("0"), Scenario: []byte(small)},
		{ID: "server1", Role: "ps-server", Bind: "127.0.0.1:0", From: []string{"ranker0", "trainer0"}, Params: param("1"), Scenario: []byte(small)},
		{ID: "ranker0", Role: "ps-client", Bind: "127.0.0.1:0", Peers: []string{"server0", "server1"}, Params: param("0"), Scenario: []byte(small)},
		{ID: "trainer0", Role: "ps-client", Bind: "127.0.0.1:0", Peers: []string{"server0", "server1"}, Params: param("1"), Scenario: []byte(small)},
	}
	// Four polling I/O threads and the fake NIC's clock share CI's two
	// cores, so wall-clock fetches take tens of milliseconds here (hundreds
	// under -race); 1.5 s leaves the trainer several iterations even then,
	// where 0.5 s sometimes left it none.
	out := runAll(t, 1500*time.Millisecond, 5*time.Second, specs...)
	var served, sent float64
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		served += in.res.Metrics["fetches"] + in.res.Metrics["pushes"]
		if strings.HasPrefix(id, "ranker") || strings.HasPrefix(id, "trainer") {
			sent += in.res.Metrics["requests"]
			if in.res.Metrics["lost"] != 0 || in.res.Metrics["requests"] == 0 {
				t.Errorf("%s: %v requests, %v lost", id, in.res.Metrics["requests"], in.res.Metrics["lost"])
			}
		}
	}
	t.Logf("%v requests sent, %v served; ranker %v user requests (fetch p99 %v us), trainer %v iterations",
		sent, served, out["ranker0"].res.Metrics["user_requests"], out["ranker0"].res.Metrics["latency_us_p99"], out["trainer0"].res.Metrics["iterations"])
	if sent == 0 || served != sent {
		t.Errorf("servers served %v of %v requests", served, sent)
	}
	if out["ranker0"].res.Metrics["user_requests"] == 0 || out["trainer0"].res.Metrics["iterations"] == 0 {
		t.Error("no user request or iteration completed in the measured interval")
	}
}

// Without a device, the verbs transport says so.
func TestPSVerbsNoDevice(t *testing.T) {
	data, _ := scenarios.Builtin("ps-cluster")
	r, err := New(Spec{ID: "server0", Role: "ps-server", Bind: "127.0.0.1:0", Params: map[string]string{"transport": "verbs", "index": "0"}, Scenario: data})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Prepare(context.Background(), Spec{ID: "server0", Bind: "127.0.0.1:0"})
	if err == nil || !strings.Contains(err.Error(), "verbs transport") {
		t.Errorf("prepare without a device: %v, want a verbs transport error", err)
	}
	t.Logf("%v", err)
}
