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

var defaultNotify = notifyInterrupt

// TestSweepInterrupted: SIGINT during a sweep writes the points finished
// so far, marked partial, and exits 130.
func TestSweepInterrupted(t *testing.T) {
	notifyInterrupt = func(c chan<- os.Signal) { c <- os.Interrupt } // at once
	defer func() { notifyInterrupt = defaultNotify }()
	file := filepath.Join(t.TempDir(), "s.json")
	var out, errb bytes.Buffer
	code := run([]string{"sweep", "-q", "testdata/fails-to-build.yaml", "--set", "fabric.switch.buffer=1MiB,2MiB", "--metrics", "pfc/frames_tx", "-o", file}, &out, &errb)
	if code != ExitInterrupted || !strings.Contains(errb.String(), "interrupted") || !strings.Contains(errb.String(), "partial") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), "PARTIAL") || !strings.Contains(string(b), "not run") {
		t.Errorf("partial file: %v\n%s", err, b)
	}
}

// TestRunReplacesEarlierOutput: run --out into the folder of an earlier
// run leaves only the new run's files; a folder holding other files is
// refused and left alone.
func TestRunReplacesEarlierOutput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "o")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "stale_table.csv"), []byte("old"), 0o644)
	var out, errb bytes.Buffer
	if code := run([]string{"run", "-q", "--out", dir, "line-rate"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "stale_table.csv")); err == nil {
		t.Errorf("the earlier run's CSV is still there")
	}
	if _, err := os.Stat(filepath.Join(dir, "result.json")); err != nil {
		t.Errorf("no result.json: %v", err)
	}
	mine := t.TempDir()
	os.WriteFile(filepath.Join(mine, "thesis.tex"), []byte("mine"), 0o644)
	errb.Reset()
	if code := run([]string{"run", "-q", "--out", mine, "line-rate"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "thesis.tex") {
		t.Errorf("foreign folder: exit %d, %s", code, errb.String())
	}
}
