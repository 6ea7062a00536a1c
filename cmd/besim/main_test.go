package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/besim/besim/report"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestRunDefaultGolden pins the person-readable summary of the default
// scenario; regenerate with go test ./cmd/besim -run Golden -update.
func TestRunDefaultGolden(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if code := run([]string{"run", "--out", dir}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	golden := filepath.Join("testdata", "incast.summary.txt")
	if *update {
		os.WriteFile(golden, out.Bytes(), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("summary differs from %s (rerun with -update if intended):\n%s", golden, out.String())
	}
	for _, f := range []string{"result.json", "flows.csv", "ports.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing output %s", f)
		}
	}
}

func TestCommandErrors(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage:"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"valdiate"}, 2, "did you mean validate?"},
		{[]string{"help", "nope"}, 2, `unknown command "nope"`},
		{[]string{"run", "no-such-scenario"}, 1, "not an embedded scenario"},
		{[]string{"validate"}, 2, "usage: besim validate"},
		{[]string{"run", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"run", "-h"}, 0, "--seed"},
		{[]string{"validate", "testdata/bad-unit.yaml"}, 1, "testdata/bad-unit.yaml:5: fabric.links.rate"},
		{[]string{"sweep", "incast", "--set", "seed=1,2", "--jobs", "-5"}, 1, "--jobs -5: want at least 1"},
		{[]string{"sweep", "incast", "--set", "seed=1,2", "--jobs", "0"}, 1, "--jobs 0: want at least 1"},
		{[]string{"sweep", "incast", "--set", "seed=1,1"}, 1, "value 1 given twice"},
	}
	for _, tc := range tests {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != tc.code || !strings.Contains(out.String()+errb.String(), tc.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d containing %q", tc.args, code, out.String()+errb.String(), tc.code, tc.want)
		}
	}
}

func TestValidateExplains(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"validate", "incast"}, &out, &errb); code != 0 {
		t.Fatal(errb.String())
	}
	for _, w := range []string{"incast: valid (18 hosts, 17 flows", "headroom", "XOFF"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("validate output lacks %q:\n%s", w, out.String())
		}
	}
}

// TestValidateDerivedFabric: validate prints a workload's derived
// leaf-spine, and --set workload.spines changes it (issue 17: no workload
// topology is hard-coded).
func TestValidateDerivedFabric(t *testing.T) {
	for _, tc := range []struct {
		set  []string
		want string
	}{
		{nil, "4 spines (per leaf 32 x 25Gbps down, 4 x 100Gbps up: 2:1 oversubscribed)"},
		{[]string{"--set", "workload.spines=1"}, "1 spine (per leaf 32 x 25Gbps down, 1 x 100Gbps up: 8:1 oversubscribed)"},
		{[]string{"--set", "workload.spines=8"}, "8 spines (per leaf 32 x 25Gbps down, 8 x 100Gbps up: non-blocking)"},
	} {
		var out, errb bytes.Buffer
		args := append(append([]string{"validate"}, tc.set...), "fig14-incast")
		if code := run(args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("%v: output lacks %q:\n%s", args, tc.want, out.String())
		}
	}
}

// TestCompareOldAndNew: compare reads a version 1 result (no format
// field, -1 for missing) beside one this build writes.
func TestCompareOldAndNew(t *testing.T) {
	dir := t.TempDir()
	besim(t, "run", "-q", "--out", dir, "fig11")
	out, _ := besim(t, "compare", "--names", "v1,v2", "testdata/fig11.v1.json", filepath.Join(dir, "result.json"))
	if !strings.Contains(out, "v1") || !strings.Contains(out, "ratio") || strings.Count(out, "\n") < 4 {
		t.Errorf("compare output:\n%s", out)
	}
	r, err := readResult(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != report.Format || r.ToolVersion == "" || r.Revision == "" || len(r.ScenarioSHA256) != 64 || len(r.ResolvedScenario) == 0 {
		t.Errorf("provenance: format %q version %q revision %q digest %q resolved %d bytes", r.Format, r.ToolVersion, r.Revision, r.ScenarioSHA256, len(r.ResolvedScenario))
	}
}

// TestHelp: help goes to stdout with exit 0 for `help CMD`, -h and --help,
// and has the description, the flags as --flag and an example.
func TestHelp(t *testing.T) {
	for _, c := range commands {
		if c.name == "help" {
			continue
		}
		for _, args := range [][]string{{"help", c.name}, {c.name, "-h"}, {c.name, "--help"}} {
			var out, errb bytes.Buffer
			if code := run(args, &out, &errb); code != 0 || errb.Len() != 0 {
				t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
			}
			o := out.String()
			if !strings.HasPrefix(o, "usage: besim "+c.name) || !strings.Contains(o, c.long) || !strings.Contains(o, "example:\n  besim ") {
				t.Errorf("%v: help lacks usage, description or example:\n%s", args, o)
			}
		}
	}
	out, _ := besim(t, "help", "run")
	for _, w := range []string{"--seed", "--set KEY=VALUE", "--out", "  -q"} {
		if !strings.Contains(out, w) {
			t.Errorf("run help lacks %q:\n%s", w, out)
		}
	}
	if out, _ := besim(t, "--help"); !strings.Contains(out, "Exit status: 0 success; 1") {
		t.Errorf("top-level help:\n%s", out)
	}
}

func TestVersion(t *testing.T) {
	out, _ := besim(t, "version")
	v, r := report.Build()
	if !strings.HasPrefix(out, "besim "+v+" (revision "+r+",") {
		t.Errorf("version: %q", out)
	}
}

// TestShowValidateRoundTrip: `besim show incast | besim validate -` loads,
// and `validate --print` of it is the normalised form of the embedded one.
func TestShowValidateRoundTrip(t *testing.T) {
	for _, name := range []string{"incast", "fig11", "ps-cluster"} {
		shown, _ := besim(t, "show", name)
		stdin = strings.NewReader(shown)
		besim(t, "validate", "-")
		stdin = strings.NewReader(shown)
		printed, _ := besim(t, "validate", "--print", "-")
		direct, _ := besim(t, "validate", "--print", name)
		if printed != direct || !strings.Contains(printed, "name: "+name) {
			t.Errorf("%s: validate --print - differs from validate --print %s:\n%s\n---\n%s", name, name, printed, direct)
		}
		stdin = strings.NewReader(printed) // the normalised form loads again
		again, _ := besim(t, "validate", "--print", "-")
		if again != printed {
			t.Errorf("%s: the normalised form does not reload to itself", name)
		}
	}
	stdin = os.Stdin
}

// TestMetricsListsEveryMetric: `besim metrics incast` names every metric
// and table the run writes.
func TestMetricsListsEveryMetric(t *testing.T) {
	dir := t.TempDir()
	besim(t, "run", "-q", "--out", dir, "incast")
	r, err := readResult(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := besim(t, "metrics", "incast")
	for _, m := range r.Metrics {
		if !strings.Contains(out, "  "+m.Name+" ") {
			t.Errorf("metrics lacks %s", m.Name)
		}
	}
	for _, tb := range r.Tables {
		if !strings.Contains(out, "  "+tb.Name+" ") {
			t.Errorf("metrics lacks table %s", tb.Name)
		}
	}
}

// TestRunSet: run --set changes one key, with the override named in errors.
func TestRunSet(t *testing.T) {
	dir := t.TempDir()
	besim(t, "run", "-q", "--set", "duration=1ms", "--out", dir, "incast")
	r, err := readResult(filepath.Join(dir, "result.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Duration != "1ms" || !strings.Contains(string(r.ResolvedScenario), `"duration": "1ms"`) {
		t.Errorf("duration %s, resolved %s", r.Duration, r.ResolvedScenario)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"run", "--set", "fabric.links.rate=25Gbs", "incast"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "fabric.links.rate=25Gbs") {
		t.Errorf("bad --set: exit %d, %s", code, errb.String())
	}
}

// TestWarnsWhenNothingCompleted: a run whose interval completed no work
// says so on stderr.
func TestWarnsWhenNothingCompleted(t *testing.T) {
	_, errs := besim(t, "run", "-q", "--set", "duration=100us", "--out", t.TempDir(), "ps-cluster")
	if !strings.Contains(errs, "warning: nothing completed in the measured interval") {
		t.Errorf("no warning:\n%s", errs)
	}
	_, errs = besim(t, "run", "-q", "--out", t.TempDir(), "incast")
	if strings.Contains(errs, "warning") {
		t.Errorf("warning on a run that delivered:\n%s", errs)
	}
}

// $BESIM_CPUPROFILE writes a CPU profile of the command; a file that cannot
// be created fails the command loudly instead of running unprofiled.
func TestCPUProfileEnv(t *testing.T) {
	f := filepath.Join(t.TempDir(), "cpu.prof")
	if rc := profiled(f, func() int { return 3 }); rc != 3 {
		t.Fatalf("exit %d, want the command's 3", rc)
	}
	if st, err := os.Stat(f); err != nil || st.Size() == 0 {
		t.Fatalf("profile %s: %v", f, err)
	}
	if rc := profiled(filepath.Join(t.TempDir(), "no", "such", "dir", "p"), func() int { return 0 }); rc != 1 {
		t.Fatalf("unwritable profile: exit %d, want 1", rc)
	}
}

// $BESIM_MEMPROFILE writes a heap profile when the command ends; a file
// that cannot be created fails the command.
func TestMemProfileEnv(t *testing.T) {
	f := filepath.Join(t.TempDir(), "heap.prof")
	if rc := heapProfiled(f, func() int { return 3 }); rc != 3 {
		t.Fatalf("exit %d, want the command's 3", rc)
	}
	if st, err := os.Stat(f); err != nil || st.Size() == 0 {
		t.Fatalf("profile %s: %v", f, err)
	}
	if rc := heapProfiled(filepath.Join(t.TempDir(), "no", "such", "dir", "p"), func() int { return 0 }); rc != 1 {
		t.Fatalf("unwritable profile: exit %d, want 1", rc)
	}
}

// The benchmark scenarios under bench/ (bench/run.sh) stay valid.
func TestBenchScenariosValidate(t *testing.T) {
	files, err := filepath.Glob("../../bench/*.yaml")
	if err != nil || len(files) < 2 {
		t.Fatalf("bench/*.yaml: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		var out, errb bytes.Buffer
		if code := run([]string{"validate", "--memory-limit", "0", f}, &out, &errb); code != 0 {
			t.Errorf("besim validate %s: exit %d: %s", f, code, errb.String())
		}
	}
}
