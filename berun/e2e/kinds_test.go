package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/berun/plan"
	"github.com/besim/besim/experiment"
	"github.com/besim/besim/scenarios"
)

// replayTests are the end-to-end tests of each scenario kind berun
// replays: each runs a scenario of the kind through berun's agents and
// controller and through besim, and checks that both results carry the
// same metric names and that every request completed. The transport is
// loopback TCP (agent processes) or the core on verbs/fakeverbs
// (in-process agents; the Verbs tests and the verbs-only benchmarks).
var replayTests = map[string][]func(*testing.T){
	"ps-cluster":  {TestPSScenario, TestPSScenarioVerbs},
	"incast-pull": {TestIncastScenario, TestIncastScenarioVerbs},
	"failover":    {TestFailoverScenario},
	"perftest":    {TestPerftestScenario},
	"fragsize":    {TestFragsizeScenario},
	"hol":         {TestHolScenario},
	"msgrate":     {TestMsgrateScenario, TestMsgrateCoreScenario},
	"mrcache":     {TestMRCacheScenario},
	"pingpong":    {TestPingpongScenario, TestPingpongScenarioVerbs},
	"peak":        {TestPeakScenario},
	"flows":       {TestFlowsScenario},
}

// refusedScenarios are the embedded scenarios of replayed kinds that berun
// refuses, each with what its refusal must say.
var refusedScenarios = map[string]string{
	"pfc-storm":    "faults[0] kind pfc-storm: the point of this flow scenario is a fault",
	"quarantine":   "a crashed server does not come back in berun",
	"tcp-fallback": "berun cannot replay the fallback to TCP",
}

// TestEveryKindReplayedOrRefused: every scenario kind besim registers
// (experiment.Kinds) is either replayed by berun, with an end-to-end test
// in replayTests, or refused with a reason (plan.Refused), never both and
// never neither, so a new kind cannot slip through silently; and every
// embedded scenario either plans onto enough hosts or is refused with a
// message saying why (for a refused kind, its reason).
func TestEveryKindReplayedOrRefused(t *testing.T) {
	kinds := experiment.Kinds()
	if len(kinds) < 8 {
		t.Fatalf("experiment.Kinds() = %v: are the workloads linked (workloads/all)?", kinds)
	}
	for _, k := range kinds {
		replayed, reason := slices.Contains(plan.Replayed, k), plan.Refused[k]
		switch {
		case replayed && reason != "":
			t.Errorf("kind %s is both replayed and refused (%s)", k, reason)
		case !replayed && reason == "":
			t.Errorf("kind %s is neither replayed by berun (plan.Replayed) nor refused with a reason (plan.Refused)", k)
		case replayed && len(replayTests[k]) == 0:
			t.Errorf("kind %s is replayed but has no end-to-end test in replayTests", k)
		}
	}
	for _, k := range plan.Replayed {
		if !slices.Contains(kinds, k) {
			t.Errorf("plan.Replayed names %s, which besim does not register (%v)", k, kinds)
		}
	}
	for k := range plan.Refused {
		if !slices.Contains(kinds, k) {
			t.Errorf("plan.Refused names %s, which besim does not register (%v)", k, kinds)
		}
	}
	for k := range replayTests {
		if !slices.Contains(plan.Replayed, k) {
			t.Errorf("replayTests has %s, which plan.Replayed does not list", k)
		}
	}
	// Every embedded scenario, on a hosts file large enough for any.
	var y strings.Builder
	y.WriteString("hosts:\n")
	for i := range 1024 {
		fmt.Fprintf(&y, "  - {name: h%d, control: \"127.0.0.1:%d\", data: 127.0.0.1}\n", i, 10000+i)
	}
	hs, err := plan.ParseHosts("hosts.yaml", []byte(y.String()))
	if err != nil {
		t.Fatal(err)
	}
	for _, info := range scenarios.List() {
		data, err := scenarios.Builtin(info.Name)
		if err != nil {
			t.Fatal(err)
		}
		s, err := scenarios.Parse(info.Name+".yaml", data)
		if err != nil {
			t.Fatal(err)
		}
		k := experiment.Kind(s)
		p, err := plan.FromScenario(info.Name+".yaml", data, hs, time.Second)
		switch {
		case err == nil && plan.Refused[k] != "":
			t.Errorf("%s (kind %s): planned, yet the kind is refused", info.Name, k)
		case err == nil && len(p.Roles) == 0:
			t.Errorf("%s (kind %s): a plan without roles", info.Name, k)
		case err == nil:
			t.Logf("%s (kind %s): %d role instances", info.Name, k, len(p.Roles))
		case plan.Refused[k] != "" && !strings.Contains(err.Error(), plan.Refused[k]):
			t.Errorf("%s (kind %s): refused with %q, not the kind's reason", info.Name, k, err)
		case plan.Refused[k] == "" && (refusedScenarios[info.Name] == "" || !strings.Contains(err.Error(), refusedScenarios[info.Name])):
			t.Errorf("%s (kind %s, replayed): refused: %v (a scenario of a replayed kind that berun refuses goes in refusedScenarios with its reason)", info.Name, k, err)
		default:
			t.Logf("%s (kind %s): refused: %v", info.Name, k, err)
		}
	}
}
