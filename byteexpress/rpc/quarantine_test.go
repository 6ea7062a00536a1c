package rpc

import (
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
)

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.ConnTimeout != 10*time.Millisecond || c.RequestTimeout != 40*time.Millisecond ||
		c.Window != 5*time.Minute || c.MaxConnFailures != 30 || c.MaxReqFailures != 50 {
		t.Fatalf("defaults differ from the paper: %+v", c)
	}
	bad := []func(*Config){
		func(c *Config) { c.ConnTimeout = 0 },
		func(c *Config) { c.RequestTimeout = -1 },
		func(c *Config) { c.RetryProb = 1.5 },
		func(c *Config) { c.MaxAttempts = 0 },
		func(c *Config) { c.Window = 0 },
		func(c *Config) { c.MaxReqFailures = -1 },
		func(c *Config) { c.QuarantineHold = -1 },
		func(c *Config) { c.Paths = 0 },
		func(c *Config) { c.ProbeInterval = 0 },
	}
	for i, f := range bad {
		c := DefaultConfig()
		f(&c)
		if c.Validate() == nil {
			t.Errorf("case %d: Validate accepted %+v", i, c)
		}
	}
}

func TestQuarantineThresholds(t *testing.T) {
	cases := []struct {
		name     string
		conn     bool
		n        int
		spacing  time.Duration
		excluded bool
	}{
		{"30 conn in window", true, 30, time.Second, false},
		{"31 conn in window", true, 31, time.Second, true},
		{"50 req in window", false, 50, time.Second, false},
		{"51 req in window", false, 51, time.Second, true},
		{"31 conn within 5min exactly", true, 31, (5*time.Minute - time.Nanosecond) / 30, true},
		{"31 conn spread over >5min", true, 31, 10 * time.Second, false},
		{"51 req spread over >5min", false, 51, 6 * time.Second, false},
		{"1000 conn spread over >5min", true, 1000, 10 * time.Second, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := NewQuarantine(DefaultConfig())
			var now time.Duration
			ever := false
			for i := 0; i < tc.n; i++ {
				now = time.Duration(i) * tc.spacing
				if tc.conn {
					q.ConnFailed(7, now)
				} else {
					q.ReqFailed(7, now)
				}
				ever = ever || q.Excluded(7, now)
			}
			if ever != tc.excluded || q.Excluded(7, now) != tc.excluded {
				t.Fatalf("excluded=%v (ever %v), want %v", q.Excluded(7, now), ever, tc.excluded)
			}
			if q.Excluded(8, now) {
				t.Fatal("other node excluded")
			}
			if tc.excluded && q.Stats.Trips != 1 {
				t.Fatalf("trips %d", q.Stats.Trips)
			}
		})
	}
}

func TestQuarantineDrainsAsWindowSlides(t *testing.T) {
	cfg := DefaultConfig()
	q := NewQuarantine(cfg)
	// 31 connection failures, one per second, at t=0..30s.
	for i := 0; i < 31; i++ {
		q.ConnFailed(1, time.Duration(i)*time.Second)
	}
	if q.NextDeadline() != 5*time.Minute {
		t.Fatalf("deadline %v, want 5m (oldest + window)", q.NextDeadline())
	}
	if c, _ := q.Counts(1, 30*time.Second); c != 31 {
		t.Fatalf("count %d", c)
	}
	if !q.Excluded(1, 5*time.Minute-1) {
		t.Fatal("released too early")
	}
	if q.Excluded(1, 5*time.Minute) {
		t.Fatal("still excluded once the first failure left the window")
	}
	if c, _ := q.Counts(1, 5*time.Minute); c != 30 {
		t.Fatalf("count after slide %d, want 30", c)
	}
	if r := q.Tick(5*time.Minute - 1); len(r) != 0 {
		t.Fatalf("early release %v", r)
	}
	if r := q.Tick(5 * time.Minute); len(r) != 1 || r[0] != 1 {
		t.Fatalf("release %v", r)
	}
	if q.NextDeadline() != byteexpress.Never || q.Stats.Releases != 1 {
		t.Fatalf("after release: deadline %v stats %+v", q.NextDeadline(), q.Stats)
	}
	// One more failure now makes 31 in the window again: re-trip.
	q.ConnFailed(1, 5*time.Minute+time.Second/2)
	if !q.Excluded(1, 5*time.Minute+time.Second/2) || q.Stats.Trips != 2 {
		t.Fatalf("no re-trip: %+v", q.Stats)
	}
	// The ring keeps 1s..30s and 5m0.5s: released when 1s leaves, at 5m1s.
	if q.NextDeadline() != 5*time.Minute+time.Second {
		t.Fatalf("deadline %v", q.NextDeadline())
	}
}

func TestQuarantineHold(t *testing.T) {
	cfg := DefaultConfig()
	cfg.QuarantineHold = time.Hour
	q := NewQuarantine(cfg)
	for i := 0; i < 51; i++ {
		q.ReqFailed(3, time.Duration(i)*time.Millisecond)
	}
	at := 50 * time.Millisecond
	if q.Excluded(3, 10*time.Minute) == false || q.NextDeadline() != at+time.Hour {
		t.Fatalf("hold not applied: deadline %v", q.NextDeadline())
	}
	if q.Excluded(3, at+time.Hour) {
		t.Fatal("held past the hold")
	}
	if got := q.ExcludedNodes(at); len(got) != 1 || got[0] != 3 {
		t.Fatalf("ExcludedNodes %v", got)
	}
}

func TestQuarantineDeterministicNodeOrder(t *testing.T) {
	q := NewQuarantine(DefaultConfig())
	for _, n := range []NodeID{9, 2, 5} {
		for i := 0; i < 31; i++ {
			q.ConnFailed(n, 0)
		}
	}
	for k := 0; k < 5; k++ {
		r := q.Tick(5 * time.Minute)
		if k == 0 && (len(r) != 3 || r[0] != 2 || r[1] != 5 || r[2] != 9) {
			t.Fatalf("release order %v", r)
		}
	}
}

func TestQuarantineForgetsIdleNodes(t *testing.T) {
	q := NewQuarantine(DefaultConfig())
	for n := NodeID(0); n < 100; n++ {
		q.ReqFailed(n, time.Duration(n)*time.Second)
	}
	for i := 0; i < 31; i++ {
		q.ConnFailed(500, 0)
	}
	q.Tick(5*time.Minute + 49*time.Second)
	// Nodes 0..49 failed more than 5 min ago; 500 was released at 5m.
	if got := q.Tracked(); got != 50 {
		t.Fatalf("tracked %d, want 50", got)
	}
	if c, r := q.Counts(60, 5*time.Minute+49*time.Second); c != 0 || r != 1 {
		t.Fatalf("counts of a kept node %d %d", c, r)
	}
}
