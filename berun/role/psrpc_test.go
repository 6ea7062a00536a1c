package role

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// psRPCScenario is ps-cluster cut to 2 servers, 1 ranker and 1 trainer,
// with the RPC layer on (rpc, the mapping's fields) and extra workload
// keys.
func psRPCScenario(t *testing.T, rpc, extra string) []byte {
	t.Helper()
	data, err := scenarios.Builtin("ps-cluster")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer("servers: 16", "servers: 2", "shards: 128", "shards: 16", "rankers: 4", "rankers: 1",
		"trainers: 4", "trainers: 1", "warmup: 300us", "warmup: 50ms",
		"  window: 16KiB\n", "  window: 16KiB\n  rpc: {"+rpc+"}\n"+extra).Replace(string(data))
	if !strings.Contains(s, "rpc: {") || !strings.Contains(s, "servers: 2") {
		t.Fatal("ps-cluster changed: cannot cut it down or turn rpc on")
	}
	return []byte(s)
}

// psRPCSpecs are the instances of psRPCScenario over verbs; server
// parameters srvParams[i] are added to server i's.
func psRPCSpecs(scen []byte, srvParams ...map[string]string) []Spec {
	param := func(i string, more map[string]string) map[string]string {
		p := map[string]string{"transport": "verbs", "index": i}
		for k, v := range more {
			p[k] = v
		}
		return p
	}
	srv := func(i int) map[string]string {
		if i < len(srvParams) {
			return srvParams[i]
		}
		return nil
	}
	from := []string{"ranker0", "trainer0"}
	peers := []string{"server0", "server1"}
	return []Spec{
		{ID: "server0", Role: "ps-server", Bind: "127.0.0.1:0", From: from, Params: param("0", srv(0)), Scenario: scen},
		{ID: "server1", Role: "ps-server", Bind: "127.0.0.1:0", From: from, Params: param("1", srv(1)), Scenario: scen},
		{ID: "ranker0", Role: "ps-client", Bind: "127.0.0.1:0", Peers: peers, Params: param("0", nil), Scenario: scen},
		{ID: "trainer0", Role: "ps-client", Bind: "127.0.0.1:0", Peers: peers, Params: param("1", nil), Scenario: scen},
	}
}

// checkRPCBooks checks a client's RPC counters: every call has exactly
// one outcome by the end (calls = answered + failed + outstanding, and
// nothing outstanding), and a call was made.
func checkRPCBooks(t *testing.T, id string, m map[string]float64) {
	t.Helper()
	calls, answered, failed, out := m["rpc_calls"], m["rpc_answered"], m["rpc_failed"], m["rpc_outstanding"]
	if calls == 0 || calls != answered+failed+out || out != 0 || m["lost"] != 0 {
		t.Errorf("%s: %v calls, %v answered, %v failed, %v outstanding, %v lost", id, calls, answered, failed, out, m["lost"])
	}
	if m["requests"] != calls || m["responses"] != answered {
		t.Errorf("%s: requests %v, responses %v; rpc calls %v, answered %v", id, m["requests"], m["responses"], calls, answered)
	}
}

// The ps roles with workload.rpc run the RPC layer over the ByteExpress
// core on an in-memory NIC (verbs/fakeverbs): every fetch and push is a
// call, every call is answered (Tr is far above the fake NIC's latency
// under load), the servers took in exactly the attempts the clients sent,
// and the client machines completed user requests and iterations.
func TestPSRolesRPCOverVerbs(t *testing.T) {
	useFakeNICs(t)
	scen := psRPCScenario(t, "connect_timeout: 2s, request_timeout: 3s", "")
	out := runAll(t, 1500*time.Millisecond, 10*time.Second, psRPCSpecs(scen)...)
	var served, sent float64
	exact := true // no timeout, no engine failure: every attempt arrived once
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		served += in.res.Metrics["fetches"] + in.res.Metrics["pushes"]
		if in.spec.Role == "ps-client" {
			m := in.res.Metrics
			checkRPCBooks(t, id, m)
			sent += m["sent"]
			if m["rpc_timeouts"] > 0 || m["engine_errors"] > 0 {
				// The fake NIC's keepalives can miss under -race on a
				// loaded machine; the layer then re-sends.
				exact = false
				t.Logf("%s: %v timeouts, %v engine errors: %v", id, m["rpc_timeouts"], m["engine_errors"], in.res.Notes)
			} else if m["rpc_failed"] != 0 || m["sent"] != m["rpc_calls"] {
				t.Errorf("%s: no timeout, yet %v calls failed and %v attempts were sent for %v calls", id, m["rpc_failed"], m["sent"], m["rpc_calls"])
			}
			if d, ok := in.res.Detail.(*PSDetail); !ok || d.RPC == nil || d.RPCConfig == nil {
				t.Errorf("%s: no RPC stats in the detail", id)
			}
		}
	}
	r, tr := out["ranker0"].res.Metrics, out["trainer0"].res.Metrics
	t.Logf("ranker: %v calls (%v timeouts), %v user requests, fetch p99 %v us; trainer: %v calls, %v iterations; servers took %v of %v attempts",
		r["rpc_calls"], r["rpc_timeouts"], r["user_requests"], r["latency_us_p99"], tr["rpc_calls"], tr["iterations"], served, sent)
	if sent == 0 || exact && served != sent {
		t.Errorf("servers took in %v requests, clients sent %v attempts", served, sent)
	}
	if r["user_requests"] == 0 || tr["iterations"] == 0 {
		t.Error("no user request or iteration completed in the measured interval")
	}
}

// With replicas: 2, server 1 black-holed (mute_at: it takes requests in
// and stops answering) makes the clients' fetches to its shard group time
// out; the RPC layer retries them (retry_prob 100%) and, once the ladder
// has given server 1 up, server 0, the group's second replica, answers
// them. Every call still has exactly one outcome.
func TestPSRolesRPCReplicaAnswers(t *testing.T) {
	useFakeNICs(t)
	scen := psRPCScenario(t, "connect_timeout: 2s, request_timeout: 250ms, retry_prob: 100%, max_attempts: 6", "  replicas: 2\n")
	out := runAll(t, 2500*time.Millisecond, 10*time.Second, psRPCSpecs(scen, nil, map[string]string{"mute_at": "400ms"})...)
	var byReplica, retried float64
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		if in.spec.Role == "ps-client" {
			m := in.res.Metrics
			checkRPCBooks(t, id, m)
			byReplica += m["rpc_replica_answers"]
			retried += m["rpc_retried"]
			t.Logf("%s: %v calls, %v answered (%v by a replica, %v after a retry), %v failed, %v timeouts, %v path changes; notes %v",
				id, m["rpc_calls"], m["rpc_answered"], m["rpc_replica_answers"], m["rpc_retried"], m["rpc_failed"], m["rpc_timeouts"], m["rpc_path_changes"], in.res.Notes)
		}
	}
	if u := out["server1"].res.Metrics["unanswered"]; u == 0 {
		t.Errorf("server 1 left no request unanswered (%v)", out["server1"].res.Metrics)
	}
	if byReplica == 0 || retried == 0 {
		t.Errorf("%v calls answered by a replica, %v after a retry; want both > 0", byReplica, retried)
	}
}

// Over kernel TCP the ps roles refuse rpc, saying why and what to do.
func TestPSRolesRPCOverTCPRefused(t *testing.T) {
	scen := psRPCScenario(t, "request_timeout: 40ms", "")
	_, err := New(Spec{ID: "ranker0", Role: "ps-client", Bind: "127.0.0.1:0", Peers: []string{"server0", "server1"},
		Params: map[string]string{"index": "0"}, Scenario: scen})
	if err == nil || !strings.Contains(err.Error(), "--transport verbs") {
		t.Errorf("rpc over tcp: %v, want a refusal naming --transport verbs", err)
	}
	// mute_at without rpc is refused: nothing would time the requests out.
	data, _ := scenarios.Builtin("ps-cluster")
	_, err = New(Spec{ID: "server0", Role: "ps-server", Bind: "127.0.0.1:0", Params: map[string]string{"index": "0", "transport": "verbs", "mute_at": "1s"}, Scenario: data})
	if err == nil || !strings.Contains(err.Error(), "mute_at needs workload.rpc") {
		t.Errorf("mute_at without rpc: %v", err)
	}
}
