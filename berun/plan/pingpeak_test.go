package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/peak"
)

func twoHosts(t *testing.T) *Hosts {
	t.Helper()
	hs, err := ParseHosts("h.yaml", []byte(`hosts:
  - {name: a, control: "127.0.0.1:7001", data: 127.0.0.1}
  - {name: b, control: "127.0.0.1:7002", data: 127.0.0.2}
`))
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

// A pingpong benchmark (Figure 8): sender on the first host, server on
// the second, one slot per message size (warmup, the measured interval,
// the drain) in the run's duration.
func TestFromPingpongScenario(t *testing.T) {
	hs := twoHosts(t)
	scen, _ := scenarios.Builtin("fig8") // 10 message sizes, warmup 200us
	p, err := FromScenario("fig8.yaml", scen, hs, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	warm := 200 * sim.Microsecond
	if want := time.Duration(fragsize.SweepDuration(10, warm, 100*sim.Millisecond) / sim.Nanosecond); p.Dur != want || len(p.Roles) != 2 {
		t.Fatalf("plan %v (want %v), roles %+v", p.Dur, want, p.Roles)
	}
	if sw, err := fragsize.NewSweep(sim.Time(p.Dur.Nanoseconds())*sim.Nanosecond, 10, warm); err != nil || sw.Measure < 100*sim.Millisecond {
		t.Errorf("the roles' sweep over the plan's duration: %+v, %v; want a measured interval of at least 100ms", sw, err)
	}
	srv, tx := p.Roles[0], p.Roles[1]
	if srv.Role != "pingpong-server" || srv.Host != "b" || tx.Role != "pingpong-sender" || tx.Host != "a" || len(tx.Peers) != 1 || tx.Peers[0] != srv.ID {
		t.Errorf("roles %+v", p.Roles)
	}
	if _, err := Assign(p, hs); err != nil {
		t.Fatal(err)
	}
	one, _ := ParseHosts("h.yaml", []byte(`hosts: [{name: a, control: "127.0.0.1:7001", data: 127.0.0.1}]`))
	if _, err := FromScenario("fig8.yaml", scen, one, time.Second); err == nil || !strings.Contains(err.Error(), "runs between two hosts; the hosts file has 1") {
		t.Errorf("one host: %v", err)
	}
}

// A peak benchmark (Figure 9): ByteExpress's sender and receiver and the
// perftest client and server on the first and second host; the run holds
// ByteExpress's slot and each transport's warmup and measured interval.
func TestFromPeakScenario(t *testing.T) {
	hs := twoHosts(t)
	scen, _ := scenarios.Builtin("fig9") // rc and ud, warmup 2ms
	p, err := FromScenario("fig9.yaml", scen, hs, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	warm := 2 * sim.Millisecond
	if want := time.Duration(peak.ScheduleDuration(2, warm, sim.Second) / sim.Nanosecond); p.Dur != want || len(p.Roles) != 4 {
		t.Fatalf("plan %v (want %v), roles %+v", p.Dur, want, p.Roles)
	}
	sc, err := peak.NewSchedule(sim.Time(p.Dur.Nanoseconds())*sim.Nanosecond, 2, warm)
	if err != nil || sc.BE.Measure < sim.Second || sc.Each-warm < sim.Second {
		t.Errorf("the roles' schedule over the plan's duration: %+v, %v; want every series to measure at least 1s", sc, err)
	}
	on := map[string]string{}
	for _, r := range p.Roles {
		on[r.Role] = r.Host
		if r.ID != r.Role {
			t.Errorf("role %s has ID %s", r.Role, r.ID)
		}
	}
	if on["peak-sender"] != "a" || on["peak-receiver"] != "b" || on["peak-perftest-client"] != "a" || on["peak-perftest-server"] != "b" {
		t.Errorf("roles %+v", p.Roles)
	}
	if _, err := Assign(p, hs); err != nil {
		t.Fatal(err)
	}
	if _, err := FromScenario("fig9.yaml", scen, hs, 100*time.Hour); err == nil || !strings.Contains(err.Error(), "use --duration") {
		t.Errorf("a run too long: %v", err)
	}
	one, _ := ParseHosts("h.yaml", []byte(`hosts: [{name: a, control: "127.0.0.1:7001", data: 127.0.0.1}]`))
	if _, err := FromScenario("fig9.yaml", scen, one, time.Second); err == nil || !strings.Contains(err.Error(), "runs between two hosts; the hosts file has 1") {
		t.Errorf("one host: %v", err)
	}
}
