package verbstest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/verbs"
)

// fakeBackend is the reference model of fake_test.go: running the suite on
// it checks that the suite's own expectations are consistent.
func fakeBackend() Backend {
	return Backend{
		Name: "fake",
		Open: func(t testing.TB) (a, b verbs.Context, env Env) {
			w := newFakeWorld()
			a = &fakeCtx{w: w, name: "fake0", gid: verbs.GID{0xfe, 0x80, 15: 1}}
			b = &fakeCtx{w: w, name: "fake1", gid: verbs.GID{0xfe, 0x80, 15: 2}}
			return a, b, Env{Progress: w.Progress}
		},
	}
}

func TestSuiteOnReferenceModel(t *testing.T) { Run(t, fakeBackend()) }

func TestCasesHaveUniqueNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Cases() {
		if c.Name == "" || c.Run == nil || seen[c.Name] {
			t.Fatalf("case %q: empty, without Run or duplicated", c.Name)
		}
		seen[c.Name] = true
	}
}

func TestLacksSkips(t *testing.T) {
	be := fakeBackend()
	be.Lacks = FeatureUD | FeatureSRQ | FeatureThreadDomain
	Run(t, be)
}

func TestEnvDefaults(t *testing.T) {
	e := Env{Progress: func(time.Duration) {}, GIDIndex: 3}.withDefaults()
	if e.Port != 1 || e.Timeout <= 0 || e.Step <= 0 || e.AH == nil {
		t.Fatalf("defaults %+v", e)
	}
	c := &fakeCtx{gid: verbs.GID{1, 2, 3}}
	if ah := e.AH(c, c); ah.DGID != c.gid || ah.SGIDIndex != 3 || ah.PortNum != 1 || ah.HopLimit == 0 {
		t.Fatalf("default AH %+v", ah)
	}
}

func TestChainHelpers(t *testing.T) {
	wrs := make([]verbs.SendWR, 3)
	h := ChainSend(wrs)
	if h != &wrs[0] || wrs[0].Next != &wrs[1] || wrs[1].Next != &wrs[2] || wrs[2].Next != nil {
		t.Fatal("ChainSend links wrong")
	}
	if ChainSend(nil) != nil || ChainRecv(nil) != nil {
		t.Fatal("empty chains must be nil")
	}
	b := make([]byte, 64)
	Fill(b, 3)
	if string(b) != string(pattern(64, 3)) || string(b) == string(pattern(64, 4)) {
		t.Fatal("Fill is not a function of its seed")
	}
	m, err := mapMem(5000)
	if err != nil || len(m) != 5000 {
		t.Fatalf("mapMem: %v, %d bytes", err, len(m))
	}
	m[4999] = 1
	unmapMem(m)
}

// TestSuiteCatchesBugs re-runs cases of the suite against the reference
// model with one planted bug each (in a child process, since a failing
// subtest cannot be contained) and requires that they fail.
func TestSuiteCatchesBugs(t *testing.T) {
	if fakeBug != "" {
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
		"no-grh":               "UD/SendRecvMTU",
		"recv-qpn-of-sender":   "SharedCQ",
		"ignore-rkey":          "RemoteAccess/BadRKeyWrite",
		"write-consumes-recv":  "Write",
		"write-imm-drops-data": "WriteImm",
		"read-zero":            "Read",
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSuiteOnReferenceModel$/^"+caseName+"$", "-test.count=1")
		cmd.Env = append(os.Environ(), "VERBSTEST_FAKE_BUG="+bug)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--- FAIL") {
			t.Errorf("planted bug %q: case %s did not fail:\n%s", bug, caseName, out)
		}
	}
}
