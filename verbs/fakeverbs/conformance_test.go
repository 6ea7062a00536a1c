package fakeverbs_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/fakeverbs"
	"github.com/besim/besim/verbs/verbstest"
)

// Backend is fakeverbs as a verbstest backend: two contexts on one Network,
// driven by advancing its clock.
func Backend() verbstest.Backend {
	return verbstest.Backend{
		Name: "fakeverbs",
		Open: func(t testing.TB) (a, b verbs.Context, env verbstest.Env) {
			n := fakeverbs.New(fakeverbs.Config{})
			a, b = n.NewContext("fake0"), n.NewContext("fake1")
			return a, b, verbstest.Env{Progress: func(d time.Duration) { n.Advance(n.Now() + d.Nanoseconds()) }}
		},
		Lacks: verbstest.FeatureUD,
	}
}

func TestConformance(t *testing.T) { verbstest.Run(t, Backend()) }

// TestSuiteCatchesBugs re-runs cases of the suite against fakeverbs with one
// planted bug each (in a child process, since a failing subtest cannot be
// contained) and requires that they fail: the suite and its reference model
// check each other.
func TestSuiteCatchesBugs(t *testing.T) {
	if os.Getenv("FAKEVERBS_PLANT") != "" {
		t.Skip("already the child")
	}
	if testing.Short() {
		t.Skip("spawns test processes")
	}
	for bug, caseName := range map[string]string{
		"signal-all":           "SelectiveSignaling",
		"no-check-modify":      "QPStateMachine",
		"no-flush":             "FlushOnErr",
		"no-sq-limit":          "SendQueueOverflow",
		"finite-rnr":           "RNR/InfiniteThenRecv",
		"recv-qpn-of-sender":   "SharedCQ",
		"ignore-rkey":          "RemoteAccess/BadRKeyWrite",
		"write-consumes-recv":  "Write",
		"write-imm-drops-data": "WriteImm",
		"read-zero":            "Read",
	} {
		// The case passes without the bug (TestConformance); with it, it must fail.
		cmd := exec.Command(os.Args[0], "-test.run=^TestConformance$/^"+caseName+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), "FAKEVERBS_PLANT="+bug)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--- FAIL") {
			t.Errorf("planted bug %q: case %s did not fail:\n%s", bug, caseName, out)
		}
	}
}
