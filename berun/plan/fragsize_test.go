package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/fragsize"
)

// A fragsize benchmark (Figure 10): sender on the first host, receiver on
// the second, one slot per fragment size (warmup, the measured interval,
// the drain) in the run's duration.
func TestFromFragsizeScenario(t *testing.T) {
	hs, err := ParseHosts("h.yaml", []byte(`hosts:
  - {name: a, control: "127.0.0.1:7001", data: 127.0.0.1}
  - {name: b, control: "127.0.0.1:7002", data: 127.0.0.2}
`))
	if err != nil {
		t.Fatal(err)
	}
	scen, _ := scenarios.Builtin("fig10") // 8 fragment sizes, warmup 6.7108864ms
	p, err := FromScenario("fig10.yaml", scen, hs, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	warm := 6710886400 * sim.Picosecond // 6.7108864 ms
	if want := time.Duration(fragsize.SweepDuration(8, warm, sim.Second) / sim.Nanosecond); p.Dur != want || len(p.Roles) != 2 {
		t.Fatalf("plan %v (want %v), roles %+v", p.Dur, want, p.Roles)
	}
	sw, err := fragsize.NewSweep(sim.Time(p.Dur.Nanoseconds())*sim.Nanosecond, 8, warm)
	if err != nil || sw.Measure < sim.Second {
		t.Errorf("the roles' sweep over the plan's duration: %+v, %v; want a measured interval of at least 1s", sw, err)
	}
	rx, tx := p.Roles[0], p.Roles[1]
	if rx.Role != "fragsize-receiver" || rx.Host != "b" || tx.Role != "fragsize-sender" || tx.Host != "a" || len(tx.Peers) != 1 || tx.Peers[0] != rx.ID {
		t.Errorf("roles %+v", p.Roles)
	}
	if _, err := Assign(p, hs); err != nil {
		t.Fatal(err)
	}
	one, _ := ParseHosts("h.yaml", []byte(`hosts: [{name: a, control: "127.0.0.1:7001", data: 127.0.0.1}]`))
	if _, err := FromScenario("fig10.yaml", scen, one, time.Second); err == nil || !strings.Contains(err.Error(), "runs between two hosts; the hosts file has 1") {
		t.Errorf("one host: %v", err)
	}
}

// A hol benchmark (Figure 13): sender on the first host, receiver on the
// second, one slot per point (each large-flow count, fragmented and
// whole).
func TestFromHolScenario(t *testing.T) {
	hs, err := ParseHosts("h.yaml", []byte(`hosts:
  - {name: a, control: "127.0.0.1:7001", data: 127.0.0.1}
  - {name: b, control: "127.0.0.1:7002", data: 127.0.0.2}
`))
	if err != nil {
		t.Fatal(err)
	}
	scen, _ := scenarios.Builtin("fig13") // 5 large-flow counts, warmup 2ms
	p, err := FromScenario("fig13.yaml", scen, hs, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	warm := 2 * sim.Millisecond
	if want := time.Duration(fragsize.SweepDuration(10, warm, sim.Second) / sim.Nanosecond); p.Dur != want || len(p.Roles) != 2 {
		t.Fatalf("plan %v (want %v), roles %+v", p.Dur, want, p.Roles)
	}
	rx, tx := p.Roles[0], p.Roles[1]
	if rx.Role != "hol-receiver" || rx.Host != "b" || tx.Role != "hol-sender" || tx.Host != "a" || len(tx.Peers) != 1 || tx.Peers[0] != rx.ID {
		t.Errorf("roles %+v", p.Roles)
	}
	if _, err := Assign(p, hs); err != nil {
		t.Fatal(err)
	}
}
