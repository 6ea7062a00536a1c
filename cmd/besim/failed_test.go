package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFailedSimulationExitsNonZero: a workload that cannot be built or
// whose run fails makes run exit 1 with the reason, and a sweep over it
// writes the failed rows and exits 1 listing them (0 with --keep-going).
func TestFailedSimulationExitsNonZero(t *testing.T) {
	for _, f := range []string{"testdata/fails-to-build.yaml", "testdata/fails-to-run.yaml"} {
		var out, errb bytes.Buffer
		code := run([]string{"run", "-q", "--out", filepath.Join(t.TempDir(), "o"), f}, &out, &errb)
		if code != 1 || !strings.Contains(errb.String(), "headroom") {
			t.Errorf("run %s: exit %d, stderr %q; want 1 and the reason", f, code, errb.String())
		}
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "s.json")
	var out, errb bytes.Buffer
	code := run([]string{"sweep", "testdata/fails-to-build.yaml", "--set", "fabric.switch.buffer=1KiB,1MiB", "-o", file}, &out, &errb)
	if code != 1 || !strings.Contains(errb.String(), "1 of 2 points failed") || !strings.Contains(errb.String(), "point fabric.switch.buffer=1KiB") {
		t.Errorf("sweep: exit %d, stderr %q; want 1 listing the failed point", code, errb.String())
	}
	for _, ext := range []string{".json", ".csv", ".md"} {
		b, err := os.ReadFile(filepath.Join(dir, "s"+ext))
		if err != nil || !strings.Contains(string(b), "cannot hold the headroom") {
			t.Errorf("s%s lacks the failed point's error: %v", ext, err)
		}
	}
	errb.Reset()
	code = run([]string{"sweep", "-q", "--keep-going", "testdata/fails-to-build.yaml", "--set", "fabric.switch.buffer=1KiB,1MiB", "-o", file}, &out, &errb)
	if code != 0 || !strings.Contains(errb.String(), "warning") {
		t.Errorf("sweep --keep-going: exit %d, stderr %q", code, errb.String())
	}
}

// TestUnboundedInputsRefused: scenario and result files are read only if
// regular: /dev/zero is refused at once by every command that reads one.
func TestUnboundedInputsRefused(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	for _, args := range [][]string{
		{"validate", "/dev/zero"},
		{"run", "/dev/zero"},
		{"sweep", "/dev/zero", "--set", "seed=1,2"},
		{"merge", "/dev/zero"},
		{"compare", "/dev/zero", "/dev/zero"},
		{"plot", "/dev/zero", "-o", filepath.Join(t.TempDir(), "x.png")},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 1 || !strings.Contains(errb.String(), "/dev/zero: not a regular file (a device)") {
			t.Errorf("%v: exit %d, stderr %q", args, code, errb.String())
		}
	}
}
