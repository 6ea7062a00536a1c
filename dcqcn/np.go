package dcqcn

import "github.com/besim/besim/sim"

// NotificationPoint is the receiver-side CNP generator of one flow: the first
// ECN-marked packet after at least MinInterval without a CNP triggers one
// (the paper's N; ConnectX calls it min_time_between_cnps). Marks inside the
// interval are absorbed, not deferred. The zero value with MinInterval set is
// ready to use; MinInterval 0 answers every mark with a CNP.
type NotificationPoint struct {
	MinInterval sim.Time

	sent    bool     // a CNP has been sent
	lastCNP sim.Time // when
	stats   NPStats
}

// NPStats counts notification-point events for reports.
type NPStats struct {
	Marked     uint64 // ECN-marked packets seen
	CNPs       uint64 // CNPs requested
	Suppressed uint64 // marks absorbed by MinInterval
}

// Stats returns the event counters.
func (n *NotificationPoint) Stats() NPStats { return n.stats }

// NewNotificationPoint returns a notification point with the given minimum
// interval between CNPs (DefaultCNPInterval is the paper's 50 us).
func NewNotificationPoint(minInterval sim.Time) NotificationPoint {
	return NotificationPoint{MinInterval: minInterval}
}

// OnECNMarkedPacket reports whether a CNP should be sent now for a marked
// packet that arrived at now.
func (n *NotificationPoint) OnECNMarkedPacket(now sim.Time) bool {
	n.stats.Marked++
	if n.sent && now-n.lastCNP < n.MinInterval {
		n.stats.Suppressed++
		return false
	}
	n.sent, n.lastCNP = true, now
	n.stats.CNPs++
	return true
}
