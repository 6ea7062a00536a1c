package role

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// pingpongSpecs are the roles of fig8 cut to 32-byte and 8 KiB messages
// (one on each side of the core's 4 KiB zero-copy limit) at the point
// mtu, with warm-up warm, over transport ("" for the default, tcp).
func pingpongSpecs(t *testing.T, mtu, transport, warm string) []Spec {
	t.Helper()
	data, err := scenarios.Builtin("fig8")
	if err != nil {
		t.Fatal(err)
	}
	small := strings.NewReplacer("messages: [32, 64, 128, 256, 512, 1KiB, 2KiB, 4KiB, 8KiB, 16KiB]", "messages: [32, 8KiB]",
		"warmup: 200us", "warmup: "+warm, "{rate: 100Gbps, mtu: 1024}", "{rate: 100Gbps, mtu: "+mtu+"}").Replace(string(data))
	if !strings.Contains(small, "messages: [32, 8KiB]") || !strings.Contains(small, "mtu: "+mtu+"}") || !strings.Contains(small, "warmup: "+warm) {
		t.Fatal("fig8 changed: cannot cut it down")
	}
	params := func() map[string]string {
		if transport == "" {
			return map[string]string{}
		}
		return map[string]string{"transport": transport}
	}
	return []Spec{
		{ID: "pp-server", Role: "pingpong-server", Host: "b", Bind: "127.0.0.1:0", From: []string{"pp-sender"}, Params: params(), Scenario: []byte(small)},
		{ID: "pp-sender", Role: "pingpong-sender", Host: "a", Bind: "127.0.0.1:0", Peers: []string{"pp-server"}, Params: params(), Scenario: []byte(small)},
	}
}

// checkPingpong: both roles succeeded, every message of each size was
// answered in its slot, the server answered exactly the messages and
// clock-offset probes sent,
// and each size has latency samples with P50 <= P99 <= max and a one-way
// time below the round trip.
func checkPingpong(t *testing.T, out map[string]*inst) {
	t.Helper()
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		t.Logf("%s: %v %v", id, in.res.Metrics, in.res.Notes)
	}
	tx, srv := out["pp-sender"].res.Metrics, out["pp-server"].res.Metrics
	var sent float64
	for _, k := range []string{"32B", "8192B"} {
		req, resp := tx["requests/"+k], tx["responses/"+k]
		if req == 0 || req != resp {
			t.Errorf("%s: %v messages sent, %v answered", k, req, resp)
		}
		sent += req
		if n := tx["samples/"+k]; n <= 0 || n > resp {
			t.Errorf("%s: %v samples of %v answers", k, n, resp)
		}
		mean, p50, p99, mx := tx["mean_us/"+k], tx["p50_us/"+k], tx["p99_us/"+k], tx["max_us/"+k]
		if !(mean > 0 && p50 > 0 && p50 <= p99 && p99 <= mx && mean <= mx) {
			t.Errorf("%s: mean %v, P50 %v, P99 %v, max %v us", k, mean, p50, p99, mx)
		}
		if ow := tx["oneway_mean_us/"+k]; !(ow > 0 && ow < mean) {
			t.Errorf("%s: one-way %v us, round trip %v us", k, ow, mean)
		}
	}
	if probes := tx["offset_probes"]; probes < 1 || probes > ppProbes || !(tx["offset_rtt_us"] > 0) {
		t.Errorf("%v clock-offset probes, the fastest %v us", probes, tx["offset_rtt_us"])
	}
	if srv["messages"] != sent+tx["offset_probes"] {
		t.Errorf("the server answered %v messages, the sender sent %v and %v probes", srv["messages"], sent, tx["offset_probes"])
	}
}

// Over the ByteExpress core on verbs (in-memory NICs, verbs/fakeverbs):
// the sizes run in their slots on one socket, and both roles name the
// port's rate and MTU (100 Gb/s, 4096) as the point.
func TestPingpongRolesOverVerbs(t *testing.T) {
	useFakeNICs(t)
	// 500 ms slots: under -race an in-memory round trip can take 60 ms.
	out := runAll(t, time.Second, 5*time.Second, pingpongSpecs(t, "4096", "verbs", "100ms")...)
	checkPingpong(t, out)
	for _, id := range []string{"pp-sender", "pp-server"} {
		if m := out[id].res.Metrics; m["rate_bps"] != 100e9 || m["mtu"] != 4096 || m["verbs"] != 1 {
			t.Errorf("%s: rate %v, MTU %v, verbs %v; want the fake port's 100 Gb/s and 4096", id, m["rate_bps"], m["mtu"], m["verbs"])
		}
	}
}

// Over kernel TCP (loopback): the same machine and checks; the link is
// not read, so the run is reported under the scenario's one point, said
// in a note.
func TestPingpongRolesOverTCP(t *testing.T) {
	out := runAll(t, 400*time.Millisecond, 5*time.Second, pingpongSpecs(t, "1024", "", "20ms")...)
	checkPingpong(t, out)
	m := out["pp-sender"].res
	if m.Metrics["rate_bps"] != 100e9 || m.Metrics["mtu"] != 1024 || m.Metrics["verbs"] != 0 || !strings.Contains(strings.Join(m.Notes, "\n"), "scenario's only point 100G/1024B") {
		t.Errorf("rate %v, MTU %v, notes %v", m.Metrics["rate_bps"], m.Metrics["mtu"], m.Notes)
	}
}

// The roles refuse what they cannot run, before anything opens.
func TestPingpongRoleErrors(t *testing.T) {
	specs := pingpongSpecs(t, "1024", "", "20ms")
	two := strings.Replace(string(specs[0].Scenario), "points:\n", "points:\n    - {rate: 25Gbps, mtu: 1024}\n", 1)
	t2, _ := scenarios.Builtin("table2")
	for _, c := range []struct {
		mod  func(s *Spec)
		want string
	}{
		{func(s *Spec) { s.Peers = []string{"x"} }, "connects to nobody"},
		{func(s *Spec) { s.Role = "pingpong-sender" }, "needs one peer"},
		{func(s *Spec) { s.Scenario = t2 }, "no pingpong benchmark"},
		{func(s *Spec) { s.Params = map[string]string{"transport": "udp"} }, "transport"},
		{func(s *Spec) { s.Params = map[string]string{"rate": "fast"} }, "parameter rate"},
		{func(s *Spec) { s.Params = map[string]string{"rate": "25Gbps"} }, "rate and mtu together"},
		{func(s *Spec) { s.Scenario = []byte(two) }, "the scenario has 2 points"},
	} {
		s := specs[0]
		c.mod(&s)
		if _, err := New(s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v", c.want, err)
		}
	}
	// Two points and the link named: accepted.
	s := specs[0]
	s.Scenario, s.Params = []byte(two), map[string]string{"rate": "25Gbps", "mtu": "1024"}
	r, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	s.Duration = 30 * time.Millisecond // two slots of 15 ms, shorter than the 20 ms warm-up
	if _, err := r.Prepare(t.Context(), s); err == nil || !strings.Contains(err.Error(), "no measured interval") {
		t.Errorf("too short: %v", err)
	}
}
