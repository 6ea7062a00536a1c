package dcqcn

import "math"

// Never is the NextTimer value meaning "no wakeup wanted". It equals
// sim.Never.
const Never int64 = math.MaxInt64

// Controller is a per-QP sender-side congestion controller. All times are
// int64 picoseconds and must be non-decreasing across calls on one
// controller; an earlier time is treated as the latest time seen.
//
// The caller schedules one event at NextTimer() and calls OnTimer then. A
// caller that only needs Rate() when it is about to send may instead call
// OnTimer(now) just before reading Rate(): OnTimer catches up on every
// expiry at or before now, so the result is the same.
type Controller interface {
	// Name identifies the algorithm in reports.
	Name() string
	// Rate is the current sending rate in bits/s.
	Rate() int64
	// OnPacketSent reports bytes put on the wire at now.
	OnPacketSent(now int64, bytes int64)
	// OnCNP reports a congestion notification received at now.
	OnCNP(now int64)
	// NextTimer is the earliest time at which the controller wants OnTimer
	// called, or Never.
	NextTimer() int64
	// OnTimer processes every timer due at or before now. Calling it early
	// or repeatedly is harmless.
	OnTimer(now int64)
}

// None is no congestion control: it always sends at LineRate.
type None struct {
	LineRate int64 // bits/s
}

var (
	_ Controller = None{}
	_ Controller = (*ReactionPoint)(nil)
)

// Name returns "none".
func (None) Name() string { return "none" }

// Rate returns LineRate.
func (n None) Rate() int64 { return n.LineRate }

// OnPacketSent does nothing.
func (None) OnPacketSent(now int64, bytes int64) {}

// OnCNP does nothing.
func (None) OnCNP(now int64) {}

// NextTimer returns Never.
func (None) NextTimer() int64 { return Never }

// OnTimer does nothing.
func (None) OnTimer(now int64) {}
