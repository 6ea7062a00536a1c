package dcqcn

import (
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Never is the NextTimer value meaning "no wakeup wanted": sim.Never.
const Never = sim.Never

// Controller is a per-QP sender-side congestion controller. All times are
// sim.Time (picoseconds) and must be non-decreasing across calls on one
// controller; an earlier time is treated as the latest time seen.
//
// The caller schedules one event at NextTimer() and calls OnTimer then. A
// caller that only needs Rate() when it is about to send may instead call
// OnTimer(now) just before reading Rate(): OnTimer catches up on every
// expiry at or before now, so the result is the same.
type Controller interface {
	// Name identifies the algorithm in reports.
	Name() string
	// Rate is the current sending rate.
	Rate() units.Rate
	// OnPacketSent reports bytes put on the wire at now.
	OnPacketSent(now sim.Time, bytes units.Size)
	// OnCNP reports a congestion notification received at now.
	OnCNP(now sim.Time)
	// NextTimer is the earliest time at which the controller wants OnTimer
	// called, or Never.
	NextTimer() sim.Time
	// OnTimer processes every timer due at or before now. Calling it early
	// or repeatedly is harmless.
	OnTimer(now sim.Time)
}

// None is no congestion control: it always sends at LineRate.
type None struct {
	LineRate units.Rate
}

var (
	_ Controller = None{}
	_ Controller = (*ReactionPoint)(nil)
)

// Name returns "none".
func (None) Name() string { return "none" }

// Rate returns LineRate.
func (n None) Rate() units.Rate { return n.LineRate }

// OnPacketSent does nothing.
func (None) OnPacketSent(now sim.Time, bytes units.Size) {}

// OnCNP does nothing.
func (None) OnCNP(now sim.Time) {}

// NextTimer returns Never.
func (None) NextTimer() sim.Time { return Never }

// OnTimer does nothing.
func (None) OnTimer(now sim.Time) {}
