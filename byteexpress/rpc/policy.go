package rpc

import (
	"math/rand/v2"
	"time"
)

// Policy bundles one Quarantine, Tracker and Selector that share a Config,
// so a caller drives a single NextDeadline/Tick pair.
type Policy struct {
	Quarantine *Quarantine
	Tracker    *Tracker
	Selector   *Selector
}

// TickResult is everything one Policy.Tick produced.
type TickResult struct {
	Released []NodeID  // nodes that left the exclusion list
	Calls    []Outcome // call timeouts (retries and failures)
	Probes   []Decision
}

// NewPolicy validates cfg and svc and builds the three machines; rng feeds
// the retry coin.
func NewPolicy(cfg Config, svc Service, localPod int, rng *rand.Rand) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := svc.Validate(); err != nil {
		return nil, err
	}
	q := NewQuarantine(cfg)
	return &Policy{
		Quarantine: q,
		Tracker:    NewTracker(cfg, NewRetry(cfg, rng)),
		Selector:   NewSelector(cfg, svc, localPod, q),
	}, nil
}

// NextDeadline is the earliest of the three machines' deadlines
// (byteexpress.Never when none is pending).
func (p *Policy) NextDeadline() time.Duration {
	return min(p.Quarantine.NextDeadline(), p.Tracker.NextDeadline(), p.Selector.NextDeadline())
}

// Tick runs the three machines at now: quarantine releases first, then call
// timeouts, then due probes. Only the caller knows where each timed-out
// attempt went, so it reports every one of r.Calls to
// Selector.OnRequestTimeout with that node before re-sending a Retried
// call to wherever Selector.Pick then says (Client does this).
func (p *Policy) Tick(now time.Duration) TickResult {
	var r TickResult
	r.Released = p.Quarantine.Tick(now)
	r.Calls = p.Tracker.Tick(now)
	r.Probes = p.Selector.Tick(now)
	return r
}
