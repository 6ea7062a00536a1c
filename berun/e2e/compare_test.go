package e2e

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// besimVsBerun reads the report in besim's format that the controller
// printed the path of in stdout, simulates the scenario scen (named name)
// with besim, and returns both results and their comparison (logged), with
// the comparison's row keys.
func besimVsBerun(t *testing.T, stdout, name string, scen []byte) (sim, hw *report.Result, rows map[string]bool) {
	t.Helper()
	m := regexp.MustCompile(`(?m)^report \(besim format.*\): (.+)$`).FindStringSubmatch(stdout)
	if m == nil {
		t.Fatalf("no report path printed:\n%s", stdout)
	}
	f, err := os.Open(m[1])
	if err != nil {
		t.Fatal(err)
	}
	hw, err = report.ReadJSON(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	sim, rows = besimVs(t, hw, name, scen)
	return sim, hw, rows
}

// besimVs simulates the scenario scen (named name) with besim and compares
// its result with berun's hw (logged), returning besim's result and the
// comparison's row keys.
func besimVs(t *testing.T, hw *report.Result, name string, scen []byte) (sim *report.Result, rows map[string]bool) {
	t.Helper()
	s, err := scenarios.Parse(name, scen)
	if err != nil {
		t.Fatal(err)
	}
	x, err := experiment.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	if sim, err = x.Run(); err != nil {
		t.Fatal(err)
	}
	tbl := report.Compare(sim, hw, "besim", "berun")
	var b strings.Builder
	tbl.WriteText(&b)
	t.Logf("\n%s", b.String())
	rows = map[string]bool{}
	for _, row := range tbl.Rows {
		rows[row.Key] = true
	}
	return sim, rows
}
