package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
		{[]string{"run", "no-such-scenario"}, 1, "not an embedded scenario"},
		{[]string{"validate"}, 2, "usage: besim validate"},
		{[]string{"run", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"run", "-h"}, 0, "-seed"},
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
