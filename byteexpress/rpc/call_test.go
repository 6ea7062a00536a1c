package rpc

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
)

func TestRetryProbability(t *testing.T) {
	for _, p := range []float64{0, 0.1, 0.5, 0.9, 1} {
		cfg := DefaultConfig()
		cfg.RetryProb = p
		cfg.MaxAttempts = 2
		r := NewRetry(cfg, rand.New(rand.NewPCG(1, 2)))
		const n = 100000
		k := 0
		for i := 0; i < n; i++ {
			if r.ShouldRetry(1) {
				k++
			}
		}
		got := float64(k) / n
		tol := 4*math.Sqrt(p*(1-p)/n) + 1e-12
		if math.Abs(got-p) > tol {
			t.Errorf("p=%v: got %v (tol %v)", p, got, tol)
		}
		if r.ShouldRetry(2) {
			t.Errorf("p=%v: retried past MaxAttempts", p)
		}
	}
}

func TestRetryDeterministic(t *testing.T) {
	seq := func() []bool {
		r := NewRetry(DefaultConfig(), rand.New(rand.NewPCG(42, 0)))
		var s []bool
		for i := 0; i < 64; i++ {
			s = append(s, r.ShouldRetry(1))
		}
		return s
	}
	a, b := seq(), seq()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seeded sequences differ at %d", i)
		}
	}
}

func newTracker(p float64, max int, atMostOnce bool) *Tracker {
	cfg := DefaultConfig()
	cfg.RetryProb, cfg.MaxAttempts, cfg.AtMostOnce = p, max, atMostOnce
	return NewTracker(cfg, NewRetry(cfg, rand.New(rand.NewPCG(7, 7))))
}

func TestTrackerNonIdempotentNeverRetried(t *testing.T) {
	cases := []struct {
		name       string
		idem, amo  bool
		wantErr    error
		wantTries  int
		wantRetrys int
	}{
		{"push not idempotent", false, false, ErrNotRetried, 1, 0},
		{"idempotent under at-most-once", true, true, ErrNotRetried, 1, 0},
		{"idempotent p=1 max 3", true, false, ErrExhausted, 3, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTracker(1, 3, tc.amo)
			id := tr.Start(Request{Idempotent: tc.idem}, 0)
			var last Outcome
			retries := 0
			for tr.Outstanding() > 0 {
				d := tr.NextDeadline()
				for _, o := range tr.Tick(d) {
					last = o
					if o.Kind == Retried {
						retries++
					}
				}
			}
			if last.ID != id || last.Kind != Failed || !errors.Is(last.Err, tc.wantErr) ||
				last.Attempt != tc.wantTries || retries != tc.wantRetrys {
				t.Fatalf("last %v retries %d", last, retries)
			}
		})
	}
}

func TestTrackerDeadlinesAndTick(t *testing.T) {
	tr := newTracker(1, 2, false)
	if tr.NextDeadline() != byteexpress.Never {
		t.Fatal("empty tracker has a deadline")
	}
	tr0 := 40 * time.Millisecond
	a := tr.Start(Request{Idempotent: true}, 0)
	b := tr.Start(Request{Idempotent: false}, 5*time.Millisecond)
	c := tr.Start(Request{Idempotent: true}, 10*time.Millisecond)
	if got := tr.NextDeadline(); got != tr0 {
		t.Fatalf("deadline %v", got)
	}
	if o := tr.Tick(tr0 - 1); len(o) != 0 {
		t.Fatalf("early tick %v", o)
	}
	if !tr.Complete(a) || tr.Complete(a) {
		t.Fatal("Complete")
	}
	// a completed: next is b at 45ms.
	if got := tr.NextDeadline(); got != 45*time.Millisecond {
		t.Fatalf("deadline after complete %v", got)
	}
	o := tr.Tick(50 * time.Millisecond)
	if len(o) != 2 || o[0].ID != b || o[0].Err != ErrNotRetried || o[1].ID != c || o[1].Kind != Retried || o[1].Attempt != 2 {
		t.Fatalf("tick %v", o)
	}
	// c's retry deadline is now+Tr.
	if got := tr.NextDeadline(); got != 90*time.Millisecond {
		t.Fatalf("retry deadline %v", got)
	}
	if n, _ := tr.Attempts(c); n != 2 {
		t.Fatalf("attempts %d", n)
	}
	o = tr.Tick(90 * time.Millisecond)
	if len(o) != 1 || o[0].Err != ErrExhausted || tr.Outstanding() != 0 || tr.NextDeadline() != byteexpress.Never {
		t.Fatalf("final %v", o)
	}
	want := TrackerStats{Started: 3, Completed: 1, Retries: 1, Failed: 2, NotRetried: 1}
	if tr.Stats != want {
		t.Fatalf("stats %+v", tr.Stats)
	}
}

func TestTrackerRetryFraction(t *testing.T) {
	tr := newTracker(0.3, 2, false)
	const n = 20000
	for i := 0; i < n; i++ {
		tr.Start(Request{Idempotent: true}, 0)
	}
	tr.Tick(tr.NextDeadline())
	got := float64(tr.Stats.Retries) / n
	if math.Abs(got-0.3) > 4*math.Sqrt(0.3*0.7/n) {
		t.Fatalf("retry fraction %v", got)
	}
}
