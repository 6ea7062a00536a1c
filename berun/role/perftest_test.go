package role

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

func perftestSpecs(t *testing.T, scen string) []Spec {
	t.Helper()
	return []Spec{
		{ID: "perf-rx", Role: "perftest-server", Host: "b", Bind: "127.0.0.1:0", From: []string{"perf-tx"}, Scenario: []byte(scen)},
		{ID: "perf-tx", Role: "perftest-client", Host: "a", Bind: "127.0.0.1:0", Peers: []string{"perf-rx"}, Scenario: []byte(scen)},
	}
}

func table2(t *testing.T) string {
	t.Helper()
	data, err := scenarios.Builtin("table2")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func perftestDetail(t *testing.T, r Result) *PerftestDetail {
	t.Helper()
	b, err := json.Marshal(r.Detail)
	if err != nil {
		t.Fatal(err)
	}
	var d PerftestDetail
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// TestPerftestRolesRC replays table2 (cut to RC) with the perftest roles
// on in-memory NICs (verbs/fakeverbs: 100 Gb/s ports at MTU 4096, which
// is the scenario's point 100G/4096B) opened on the RoCE v2 GID of the
// data IP: the QPs are exchanged over TCP, the client's SENDs all
// complete and drain, and the server measures 64 KiB messages in its
// interval under the key besim uses.
func TestPerftestRolesRC(t *testing.T) {
	useFakeNICs(t)
	scen := strings.Replace(table2(t), "transports: [rc, ud]", "transports: [rc]", 1)
	out := runAll(t, 300*time.Millisecond, 5*time.Second, perftestSpecs(t, scen)...)
	for id, in := range out {
		if in.err != nil {
			t.Errorf("%s: %v", id, in.err)
		}
		t.Logf("%s: %v %v", id, in.res.Metrics, in.res.Notes)
	}
	srv, cli := out["perf-rx"].res, out["perf-tx"].res
	d := perftestDetail(t, srv)
	if d.Match != "100G/4096B" || d.RateBps != 100e9 || d.PathMTU != 4096 || len(d.Points) != 4 || len(d.Runs) != 1 {
		t.Fatalf("detail %+v", d)
	}
	r := d.Runs[0]
	if r.Key != "100G/4096B/rc" || r.Message != 65536 || r.Msgs == 0 || r.Bytes != r.Msgs*65536 || r.Gbps <= 0 || r.Error != "" {
		t.Errorf("run %+v", r)
	}
	if r.LineGbps < 98 || r.LineGbps > 98.1 || r.MeasuredS < 0.29 || r.MeasuredS > 0.3 {
		t.Errorf("line %.3f Gb/s, measured %.3f s", r.LineGbps, r.MeasuredS)
	}
	// Every SEND the client posted was received (the interval's are a part).
	if sent := cli.Metrics["rc_sent"]; sent < srv.Metrics["rc_msgs"] || srv.Metrics["rc_msgs"] == 0 {
		t.Errorf("client sent %v, server counted %v in its interval", sent, srv.Metrics["rc_msgs"])
	}
	if !strings.Contains(strings.Join(srv.Notes, "\n"), "the scenario's point 100G/4096B") {
		t.Errorf("notes %v", srv.Notes)
	}
}

// TestPerftestRolesUDOnFakeNICs: fakeverbs implements RC only (no UD QP,
// no CreateAH), so the UD half of table2 cannot run here; it must fail
// loudly on both sides, after the RC half has been measured and kept.
// The endpoints' UD logic is tested on the simulated RNIC instead
// (workloads/perftest/perftestsim); on a ConnectX both run.
func TestPerftestRolesUDOnFakeNICs(t *testing.T) {
	useFakeNICs(t)
	out := runAll(t, 400*time.Millisecond, 5*time.Second, perftestSpecs(t, table2(t))...)
	srv := out["perf-rx"]
	if srv.err == nil || !strings.Contains(srv.err.Error(), "ud:") || out["perf-tx"].err == nil {
		t.Fatalf("UD on fakeverbs: server %v, client %v; want both to fail", srv.err, out["perf-tx"].err)
	}
	t.Logf("server: %v\nclient: %v", srv.err, out["perf-tx"].err)
	d := perftestDetail(t, srv.res)
	if len(d.Runs) != 2 || d.Runs[0].Error != "" || d.Runs[0].Msgs == 0 || d.Runs[1].Error == "" {
		t.Errorf("runs %+v", d.Runs)
	}
}

// The perftest roles check their scenario and peers before anything opens.
func TestPerftestRoleChecks(t *testing.T) {
	ps, _ := scenarios.Builtin("ps-cluster")
	for _, c := range []struct {
		spec Spec
		want string
	}{
		{Spec{ID: "x", Role: "perftest-server", Scenario: ps}, "no perftest benchmark"},
		{Spec{ID: "x", Role: "perftest-server", Scenario: []byte(table2(t)), Peers: []string{"y"}}, "connects to nobody"},
		{Spec{ID: "x", Role: "perftest-client", Scenario: []byte(table2(t))}, "exactly one perftest-server"},
		{Spec{ID: "x", Role: "perftest-client", Scenario: []byte(table2(t)), Peers: []string{"y"}, Params: map[string]string{"transport": "tcp"}}, "unknown parameter \"transport\""},
		{Spec{ID: "x", Role: "perftest-client", Peers: []string{"y"}}, "needs the besim scenario"},
	} {
		if _, err := New(c.spec); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.spec, err, c.want)
		}
	}
	r, err := New(Spec{ID: "x", Role: "perftest-server", Scenario: []byte(table2(t))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Prepare(t.Context(), Spec{ID: "x", Bind: "127.0.0.1:0", Duration: 90 * time.Microsecond}); err == nil || !strings.Contains(err.Error(), "no measured interval") {
		t.Errorf("a run too short for two warmups: %v", err)
	}
}
