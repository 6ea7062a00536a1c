package plan

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/fragsize"
)

// checkSetupSweep checks a two-host set-up sweep plan: KIND-sender on the
// first host with the receiver as its peer, the receiver on the second,
// both with parameter setup; the run holds n slots whose measured interval
// (after set-up and warm-up, as the roles compute it) is at least meas;
// the roles accept the parameters; one host is refused.
func checkSetupSweep(t *testing.T, name, kind, receiver string, n int, warm sim.Time, wantSetup time.Duration) {
	t.Helper()
	hs, err := ParseHosts("h.yaml", []byte(`hosts:
  - {name: a, control: "127.0.0.1:7001", data: 127.0.0.1}
  - {name: b, control: "127.0.0.1:7002", data: 127.0.0.2}
`))
	if err != nil {
		t.Fatal(err)
	}
	scen, _ := scenarios.Builtin(name)
	p, err := FromScenario(name+".yaml", scen, hs, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Roles) != 2 {
		t.Fatalf("roles %+v", p.Roles)
	}
	rx, tx := p.Roles[0], p.Roles[1]
	if rx.Role != kind+"-"+receiver || rx.Host != "b" || tx.Role != kind+"-sender" || tx.Host != "a" || len(tx.Peers) != 1 || tx.Peers[0] != rx.ID {
		t.Errorf("roles %+v", p.Roles)
	}
	setup, err := time.ParseDuration(tx.Params["setup"])
	if err != nil || setup != wantSetup || rx.Params["setup"] != tx.Params["setup"] {
		t.Errorf("set-up %q and %q (%v), want %v for both", tx.Params["setup"], rx.Params["setup"], err, wantSetup)
	}
	full := sim.Time(setup.Nanoseconds())*sim.Nanosecond + warm
	if want := time.Duration(fragsize.SweepDuration(n, full, sim.Second) / sim.Nanosecond); p.Dur != want {
		t.Errorf("plan %v, want %v", p.Dur, want)
	}
	sw, err := fragsize.NewSweep(sim.Time(p.Dur.Nanoseconds())*sim.Nanosecond, n, full)
	if err != nil || sw.Measure < sim.Second {
		t.Errorf("the roles' sweep over the plan's duration: %+v, %v; want a measured interval of at least 1s", sw, err)
	}
	if _, err := Assign(p, hs); err != nil {
		t.Fatal(err)
	}
	// The roles take the plan's parameters and scenario.
	for _, e := range p.Roles {
		spec := role.Spec{ID: e.ID, Role: e.Role, Peers: e.Peers, Params: e.Params, Scenario: scen, Bind: "127.0.0.1:0"}
		if _, err := role.New(spec); err != nil {
			t.Errorf("%s: %v", e.ID, err)
		}
	}
	one, _ := ParseHosts("h.yaml", []byte(`hosts: [{name: a, control: "127.0.0.1:7001", data: 127.0.0.1}]`))
	if _, err := FromScenario(name+".yaml", scen, one, time.Second); err == nil || !strings.Contains(err.Error(), "runs between two hosts; the hosts file has 1") {
		t.Errorf("one host: %v", err)
	}
}

// A msgrate benchmark through the core (fig11-core: 7 QP counts up to
// 512, with and without thread domains, warmup 200 us): the msgrate-core
// roles, 14 slots, a set-up of 250 ms + 2 ms x 512.
func TestFromMsgrateCoreScenario(t *testing.T) {
	checkSetupSweep(t, "fig11-core", "msgrate-core", "target", 14, 200*sim.Microsecond, 250*time.Millisecond+1024*time.Millisecond)
}

// A mrcache benchmark (mr-cache: 3 registrations, 2048 buffers, warmup
// 5 ms): the mrcache roles, 3 slots, a set-up of 250 ms + 50 us x 2048.
func TestFromMRCacheScenario(t *testing.T) {
	checkSetupSweep(t, "mr-cache", "mrcache", "target", 3, 5*sim.Millisecond, 250*time.Millisecond+2048*50*time.Microsecond)
}
