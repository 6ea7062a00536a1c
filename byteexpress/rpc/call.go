package rpc

import (
	"container/heap"
	"errors"
	"fmt"
	"time"

	"github.com/besim/besim/byteexpress"
)

// Errors reported in Outcome.Err.
var (
	// ErrNotRetried: a non-idempotent request (or any request under
	// AtMostOnce) timed out; it was not retried because retrying a
	// state-changing request such as Push is only safe when the application
	// makes it so. It may or may not have taken effect at the server.
	ErrNotRetried = errors.New("rpc: request timed out; not retried (non-idempotent or at-most-once)")
	// ErrExhausted: an idempotent request timed out and the retry policy
	// declined another attempt (coin or attempt limit).
	ErrExhausted = errors.New("rpc: request timed out; retries exhausted")
)

// CallID names an outstanding call.
type CallID uint64

// Request describes one call.
//
// Idempotent must be true only when repeating the request is harmless. A
// read (Pull) usually is; a state-changing Push is only safe to retry when
// the application makes it so (e.g. deduplication by request id). Requests
// with Idempotent false are never retried automatically.
type Request struct {
	Shard      int
	Idempotent bool
}

// OutcomeKind says what a Tick decided for a call.
type OutcomeKind int

const (
	// Retried: the attempt timed out and a new attempt started (Attempt is
	// its number); the caller re-sends, possibly via a Selector decision.
	Retried OutcomeKind = iota
	// Failed: the call is finished with Err.
	Failed
)

func (k OutcomeKind) String() string {
	if k == Retried {
		return "Retried"
	}
	return "Failed"
}

// Outcome is one timeout handled by Tracker.Tick.
type Outcome struct {
	ID      CallID
	Shard   int // Request.Shard
	Kind    OutcomeKind
	Attempt int // Retried: the new attempt's number; Failed: attempts made
	Err     error
}

func (o Outcome) String() string {
	return fmt.Sprintf("call %d %v attempt %d %v", o.ID, o.Kind, o.Attempt, o.Err)
}

type call struct {
	req      Request
	attempts int
	deadline time.Duration
}

type dl struct {
	at  time.Duration
	id  CallID
	att int // attempt the deadline belongs to (stale entries are skipped)
}

type dlHeap []dl

func (h dlHeap) Len() int { return len(h) }
func (h dlHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].id < h[j].id
}
func (h dlHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dlHeap) Push(x any)   { *h = append(*h, x.(dl)) }
func (h *dlHeap) Pop() any {
	o := *h
	x := o[len(o)-1]
	*h = o[:len(o)-1]
	return x
}

// TrackerStats are cumulative counters.
type TrackerStats struct {
	Started, Completed, Retries, Failed, NotRetried int
}

// Tracker keeps the outstanding calls, each with a per-attempt deadline of
// Config.RequestTimeout (Tr). Thread-unsafe; time is explicit.
type Tracker struct {
	cfg   Config
	retry *Retry
	calls map[CallID]*call
	dls   dlHeap
	next  CallID
	Stats TrackerStats
}

// NewTracker returns an empty tracker; cfg must be valid.
func NewTracker(cfg Config, retry *Retry) *Tracker {
	return &Tracker{cfg: cfg, retry: retry, calls: map[CallID]*call{}}
}

// Start registers a call whose first attempt is sent at now.
func (t *Tracker) Start(req Request, now time.Duration) CallID {
	t.next++
	id := t.next
	c := &call{req: req, attempts: 1, deadline: now + t.cfg.RequestTimeout}
	t.calls[id] = c
	heap.Push(&t.dls, dl{c.deadline, id, 1})
	t.Stats.Started++
	return id
}

// Complete finishes a call whose response arrived; it reports false for an
// unknown or already finished call (e.g. a late response).
func (t *Tracker) Complete(id CallID) bool {
	if _, ok := t.calls[id]; !ok {
		return false
	}
	delete(t.calls, id)
	t.Stats.Completed++
	return true
}

// Attempts returns the attempts made so far by an outstanding call.
func (t *Tracker) Attempts(id CallID) (int, bool) {
	c, ok := t.calls[id]
	if !ok {
		return 0, false
	}
	return c.attempts, true
}

// Outstanding is the number of unfinished calls.
func (t *Tracker) Outstanding() int { return len(t.calls) }

// NextDeadline is the earliest attempt deadline, or byteexpress.Never.
func (t *Tracker) NextDeadline() time.Duration {
	for len(t.dls) > 0 {
		d := t.dls[0]
		if c, ok := t.calls[d.id]; ok && c.attempts == d.att {
			return d.at
		}
		heap.Pop(&t.dls)
	}
	return byteexpress.Never
}

// Tick handles every attempt whose deadline is at or before now, in
// deadline order: an idempotent call is retried (new deadline now+Tr) when
// the retry policy says so, otherwise it fails with ErrExhausted; a
// non-idempotent call (or any call under AtMostOnce) fails with
// ErrNotRetried.
func (t *Tracker) Tick(now time.Duration) []Outcome {
	var out []Outcome
	for len(t.dls) > 0 && t.dls[0].at <= now {
		d := heap.Pop(&t.dls).(dl)
		c, ok := t.calls[d.id]
		if !ok || c.attempts != d.att {
			continue
		}
		switch {
		case !c.req.Idempotent || t.cfg.AtMostOnce:
			delete(t.calls, d.id)
			t.Stats.Failed++
			t.Stats.NotRetried++
			out = append(out, Outcome{d.id, c.req.Shard, Failed, c.attempts, ErrNotRetried})
		case t.retry.ShouldRetry(c.attempts):
			c.attempts++
			c.deadline = now + t.cfg.RequestTimeout
			heap.Push(&t.dls, dl{c.deadline, d.id, c.attempts})
			t.Stats.Retries++
			out = append(out, Outcome{d.id, c.req.Shard, Retried, c.attempts, nil})
		default:
			delete(t.calls, d.id)
			t.Stats.Failed++
			out = append(out, Outcome{d.id, c.req.Shard, Failed, c.attempts, ErrExhausted})
		}
	}
	return out
}
