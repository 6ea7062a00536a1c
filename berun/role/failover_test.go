package role

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// foSpecs are the roles of the failover scenario (4 shards on hosts 8..11
// and 16..19, 2 clients) over transport; replica A of shard 0 (host 8)
// crashes at crash after the start (0: never).
func foSpecs(t *testing.T, transport string, crash time.Duration) []Spec {
	t.Helper()
	data, err := scenarios.Builtin("failover")
	if err != nil {
		t.Fatal(err)
	}
	// Ten role instances share CI's cores (over verbs, with polling I/O
	// threads): an engine exchange or a healthy fetch can miss the
	// scenario's Tc of 10 ms or Tr of 40 ms, which walks the ladder away
	// from healthy replicas; so the timeouts are those of a slower
	// network. The crash is still found at once, by the failed connection.
	data = []byte(strings.NewReplacer("connect_timeout: 10ms, request_timeout: 40ms", "connect_timeout: 300ms, request_timeout: 400ms").Replace(string(data)))
	if !strings.Contains(string(data), "request_timeout: 400ms") {
		t.Fatal("the failover scenario changed: cannot slow its timeouts")
	}
	var srv []string
	for _, base := range []int{8, 16} {
		for s := range 4 {
			srv = append(srv, "server"+strconv.Itoa(base+s))
		}
	}
	var specs []Spec
	for _, id := range srv {
		p := map[string]string{"transport": transport, "index": strings.TrimPrefix(id, "server")}
		if id == "server8" && crash > 0 {
			p["crash_at"] = crash.String()
		}
		specs = append(specs, Spec{ID: id, Role: "failover-server", Bind: "127.0.0.1:0", Params: p, Scenario: data})
	}
	for i := range 2 {
		p := map[string]string{"transport": transport, "index": strconv.Itoa(i)}
		if crash > 0 {
			p["fault_at"], p["crashed"] = crash.String(), "8"
		}
		specs = append(specs, Spec{ID: "client" + strconv.Itoa(i), Role: "failover-client", Bind: "127.0.0.1:0", Peers: srv, Params: p, Scenario: data})
	}
	return specs
}

// checkFailover: no fetch failed, fetches completed, and with a crash the
// clients detected it and replica B of shard 0 answered after it.
func checkFailover(t *testing.T, out map[string]*inst, crash bool) {
	t.Helper()
	var completed float64
	detected := false
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		m := in.res.Metrics
		if strings.HasPrefix(id, "server") {
			if c := m["crashed"]; (id == "server8" && crash) != (c == 1) {
				t.Errorf("%s: crashed %v", id, c)
			}
			continue
		}
		d, ok := in.res.Detail.(*FailoverDetail)
		if !ok {
			t.Fatalf("%s: detail %T", id, in.res.Detail)
		}
		t.Logf("%s: %v; served %v; first bins %v; %v", id, m, d.Served, d.Bins[:min(12, len(d.Bins))], d.Errors)
		completed += m["completed"]
		if m["failed"] != 0 || m["completed"] == 0 || m["started"] != m["completed"]+m["stranded"] {
			t.Errorf("%s: started %v, completed %v, failed %v, stranded %v", id, m["started"], m["completed"], m["failed"], m["stranded"])
		}
		if crash && m["detected_after_ms"] > 0 {
			detected = true
		}
		if crash && d.Served[16] == 0 {
			t.Errorf("%s: replica B of shard 0 (host 16) never answered", id)
		}
	}
	if crash && !detected {
		t.Error("no client detected the crash")
	}
	if completed == 0 {
		t.Error("nothing completed")
	}
}

func TestFailoverRolesOverTCP(t *testing.T) {
	checkFailover(t, runAll(t, 400*time.Millisecond, 5*time.Second, foSpecs(t, "tcp", 0)...), false)
}

// A crash over TCP: server8 closes its listener and connections; its
// clients see the connections fail, the path change finds nobody
// listening, and replica B (host 16) takes shard 0.
func TestFailoverRolesCrashOverTCP(t *testing.T) {
	checkFailover(t, runAll(t, 600*time.Millisecond, 5*time.Second, foSpecs(t, "tcp", 150*time.Millisecond)...), true)
}

// Over verbs on in-memory NICs: the ByteExpress core and the RPC layer's
// socket transport; server8 closes its endpoint at the crash.
func TestFailoverRolesCrashOverVerbs(t *testing.T) {
	useFakeNICs(t)
	checkFailover(t, runAll(t, 2500*time.Millisecond, 5*time.Second, foSpecs(t, "verbs", 800*time.Millisecond)...), true)
}

// The parameters and the scenario are checked before anything starts.
func TestFailoverRoleErrors(t *testing.T) {
	specs := foSpecs(t, "tcp", 0)
	s := specs[0]
	s.Params = map[string]string{"index": "5"}
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "no replica host") {
		t.Errorf("server index 5: %v", err)
	}
	c := specs[len(specs)-1]
	c.Peers = c.Peers[:3]
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "8 replica servers") {
		t.Errorf("client with 3 peers: %v", err)
	}
	ps, _ := scenarios.Builtin("ps-cluster")
	s = specs[0]
	s.Scenario = ps
	if _, err := New(s); err == nil || !strings.Contains(err.Error(), "no failover workload") {
		t.Errorf("failover role on a ps-cluster scenario: %v", err)
	}
}
