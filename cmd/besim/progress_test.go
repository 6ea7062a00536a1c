package main

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/sim"
)

func TestProgressLine(t *testing.T) {
	tests := []struct {
		now, total sim.Time
		events     uint64
		elapsed    time.Duration
		want       string
	}{
		{2500 * sim.Microsecond, 10 * sim.Millisecond, 4_000_000, 2 * time.Second,
			"progress: simulated 2.5ms of 10ms (25%), about 6s left, 4.0M events, 2.00M events/s"},
		{10 * sim.Millisecond, 10 * sim.Millisecond, 8_000_000, 4 * time.Second,
			"progress: simulated 10ms of 10ms (100%), about 0s left, 8.0M events, 2.00M events/s"},
		{97 * sim.Millisecond, 0, 4_500_000, 12 * time.Second, "progress: simulated 97ms, 4.5M events, 0.38M events/s"},
		{0, 10 * sim.Millisecond, 0, 2 * time.Second, "progress: 2s wall, starting (no progress published yet)"},
	}
	for _, tc := range tests {
		if got := progressLine(tc.now, tc.total, tc.events, tc.elapsed); got != tc.want {
			t.Errorf("progressLine(%v, %v, %d, %v) = %q, want %q", tc.now, tc.total, tc.events, tc.elapsed, got, tc.want)
		}
	}
}

// TestRunProgressFlag: without --progress a run whose stderr is not a
// terminal prints no progress; with it, the run completes as usual (how
// many lines it prints depends on the wall time, so that is not checked).
func TestRunProgressFlag(t *testing.T) {
	_, stderr := besim(t, "run", "-q", "--out", t.TempDir(), "--set", "duration=200us", "incast")
	if strings.Contains(stderr, "progress:") {
		t.Errorf("progress printed to a non-terminal without --progress:\n%s", stderr)
	}
	old := progressInterval
	progressInterval = time.Millisecond
	defer func() { progressInterval = old }()
	_, stderr = besim(t, "run", "-q", "--progress", "--out", t.TempDir(), "--set", "duration=200us", "incast")
	if !strings.Contains(stderr, "simulated 200us in") {
		t.Errorf("run --progress: no final summary line:\n%s", stderr)
	}
	if now, ev := sim.Progress(); now != 0 || ev != 0 {
		t.Errorf("progress still observed after the run: %v, %d", now, ev)
	}
}
