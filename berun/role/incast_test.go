package role

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// incastSpecs are the roles of fig14-incast cut to servers servers and
// workers workers, over transport.
func incastSpecs(t *testing.T, servers, workers int, transport string) []Spec {
	t.Helper()
	data, err := scenarios.Builtin("fig14-incast")
	if err != nil {
		t.Fatal(err)
	}
	small := strings.NewReplacer("servers: 64", "servers: "+strconv.Itoa(servers), "workers: 1", "workers: "+strconv.Itoa(workers),
		"warmup: 200us", "warmup: 50ms").Replace(string(data))
	if !strings.Contains(small, "servers: "+strconv.Itoa(servers)) {
		t.Fatal("fig14-incast changed: cannot cut it down")
	}
	param := func(i int) map[string]string {
		return map[string]string{"transport": transport, "index": strconv.Itoa(i)}
	}
	var specs []Spec
	var srvIDs, wIDs []string
	for i := range servers {
		srvIDs = append(srvIDs, "server"+strconv.Itoa(i))
	}
	for i := range workers {
		wIDs = append(wIDs, "worker"+strconv.Itoa(i))
	}
	for i, id := range srvIDs {
		specs = append(specs, Spec{ID: id, Role: "incast-server", Bind: "127.0.0.1:0", From: wIDs, Params: param(i), Scenario: []byte(small)})
	}
	for i, id := range wIDs {
		specs = append(specs, Spec{ID: id, Role: "incast-worker", Bind: "127.0.0.1:0", Peers: srvIDs, Params: param(i), Scenario: []byte(small)})
	}
	return specs
}

// checkIncast: every pull answered and counted by its server, pulls
// completed in the measured interval, latency recorded.
func checkIncast(t *testing.T, out map[string]*inst) {
	t.Helper()
	var served, sent, pulls float64
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		m := in.res.Metrics
		if strings.HasPrefix(id, "server") {
			served += m["pulls"]
			continue
		}
		sent += m["requests"]
		pulls += m["pulls"]
		if m["lost"] != 0 || m["requests"] == 0 || m["latency_us_p99"] <= 0 {
			t.Errorf("%s: %v pulls sent, %v lost, p99 %v us", id, m["requests"], m["lost"], m["latency_us_p99"])
		}
		d, ok := in.res.Detail.(*IncastDetail)
		if !ok || d.Latency.Count() == 0 || d.Latency.Count() != d.SentIn {
			t.Errorf("%s: detail %+v: every pull sent in the interval must be in the histogram once drained", id, in.res.Detail)
		}
	}
	t.Logf("%v pulls sent, %v served, %v completed in the interval", sent, served, pulls)
	if sent == 0 || served != sent || pulls == 0 {
		t.Errorf("servers answered %v of %v pulls; %v in the interval", served, sent, pulls)
	}
}

func TestIncastRolesOverTCP(t *testing.T) {
	checkIncast(t, runAll(t, 400*time.Millisecond, 5*time.Second, incastSpecs(t, 3, 2, "tcp")...))
}

// Over verbs: the ByteExpress core with fig14-incast's engine settings on
// an in-memory NIC (verbs/fakeverbs), as on a ConnectX host with only
// libibverbs replaced.
func TestIncastRolesOverVerbs(t *testing.T) {
	useFakeNICs(t)
	// As for the ps roles: polling I/O threads share CI's two cores, so
	// pulls take milliseconds; the run is long enough for many.
	checkIncast(t, runAll(t, 1000*time.Millisecond, 5*time.Second, incastSpecs(t, 3, 1, "verbs")...))
}

// A worker needs every server as a peer; the index must exist.
func TestIncastRoleErrors(t *testing.T) {
	specs := incastSpecs(t, 2, 1, "tcp")
	w := specs[2]
	w.Peers = w.Peers[:1]
	if _, err := New(w); err == nil || !strings.Contains(err.Error(), "needs the scenario's 2 servers") {
		t.Errorf("worker with one of two servers: %v", err)
	}
	s := specs[0]
	s.Params = map[string]string{"index": "5"}
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "has 2 servers") {
		t.Errorf("server index 5 of 2: %v", err)
	}
	s.Params = map[string]string{"index": "0"}
	ps, _ := scenarios.Builtin("ps-cluster")
	s.Scenario = ps
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "no incast-pull workload") {
		t.Errorf("incast role on a ps-cluster scenario: %v", err)
	}
	// A ps-cluster through the RPC layer is refused, not replayed without it.
	rpcOn := strings.Replace(string(ps), "kind: ps-cluster", "kind: ps-cluster\n  rpc: true", 1)
	if _, err := New(Spec{ID: "server0", Role: "ps-server", Params: map[string]string{"index": "0"}, Scenario: []byte(rpcOn)}); err == nil || !strings.Contains(err.Error(), "workload.rpc") {
		t.Errorf("ps role with rpc: true: %v", err)
	}
}
