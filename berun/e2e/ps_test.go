package e2e

import (
	"strconv"
	"testing"

	"github.com/besim/besim/scenarios"
)

// TestPSScenario replays besim's embedded ps-cluster scenario, unedited, on
// three agent processes over loopback TCP: every request must be answered
// (clients and servers agree on the counts), and the report in besim's
// format must carry the metrics besim's simulation of the same file has,
// so that compare lines them up.
func TestPSScenario(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := tokenFile(t, dir)
	scen, err := scenarios.Builtin("ps-cluster")
	if err != nil {
		t.Fatal(err)
	}
	var agents []*agentProc
	for _, n := range []string{"h1", "h2", "h3"} {
		agents = append(agents, startAgent(t, n, "127.0.0.1:0", tok))
	}
	wait, _ := startControllerArgs(t, dir, string(scen), hostsFile(agents...), tok, []string{"--duration", "1s"})
	r := wait()
	rf := r.rf
	if r.code != 0 || rf.Status != "ok" {
		t.Fatalf("exit %d, status %s, failures %v\n%s\n%s", r.code, rf.Status, rf.Failures, r.stdout, r.stderr.String())
	}
	t.Logf("controller took %v\n%s", r.elapsed, r.stdout)

	s, err := scenarios.Parse("ps-cluster", scen)
	if err != nil {
		t.Fatal(err)
	}
	w := s.Workload
	var served float64
	for i := range w.Servers {
		served += metric(t, rf, "server"+itoa(i), "fetches") + metric(t, rf, "server"+itoa(i), "pushes")
	}
	var sent float64
	for i := range w.Rankers + w.Trainers {
		id := "ranker" + itoa(i)
		if i >= w.Rankers {
			id = "trainer" + itoa(i-w.Rankers)
		}
		req, resp := metric(t, rf, id, "requests"), metric(t, rf, id, "responses")
		if req < 10 || req != resp || metric(t, rf, id, "lost") != 0 {
			t.Errorf("%s: %v requests, %v responses", id, req, resp)
		}
		sent += req
		if i < w.Rankers && metric(t, rf, id, "user_requests") < 1 {
			t.Errorf("%s completed no user request", id)
		}
		if i >= w.Rankers && metric(t, rf, id, "iterations") < 1 {
			t.Errorf("%s completed no iteration", id)
		}
	}
	if served != sent {
		t.Errorf("servers served %v requests, clients sent %v", served, sent)
	}
	// Each kind went round-robin over the three hosts.
	for _, h := range rf.Hosts {
		if len(h.Roles) < w.Servers/3+w.Rankers/3+w.Trainers/3 {
			t.Errorf("host %s ran only %d instances", h.Name, len(h.Roles))
		}
	}

	_, hw, rows := besimVsBerun(t, r.stdout, "ps-cluster", scen)
	for _, want := range []string{"user/p99 (us)", "fetch/p50 (us)", "push/p99 (us)", "iteration/p99 (us)", "fetch_phase/p99 (us)", "push_phase/p99 (us)", "client/goodput (Gbps)", "server/goodput (Gbps)", "workload/servers"} {
		if !rows[want] {
			t.Errorf("compare has no row %q", want)
		}
	}
	for _, m := range []string{"user/count", "push/count", "fetch_phase/count", "push_phase/count"} {
		if v, _ := hw.Metric(m); v.Value < 1 {
			t.Errorf("%s %v", m, v.Value)
		}
	}
	if v, _ := hw.Metric("requests/answered"); v.Value != sent {
		t.Errorf("requests/answered %v, sent %v", v.Value, sent)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
