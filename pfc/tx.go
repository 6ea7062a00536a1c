package pfc

import (
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// TxStats are a transmitting port's PFC counters.
type TxStats struct {
	Frames  int64          // PFC frames sent
	Pauses  [NumPrio]int64 // class entries with quanta > 0 (XOFF and refreshes)
	Resumes [NumPrio]int64 // class entries with quanta 0 (XON)
	XOFF    [NumPrio]int64 // pause assertions (not counting refreshes)
}

// Tx is the pause generator of one port: the priorities it asserts toward its
// peer, when a frame is owed, and refresh timing. The zero value is unusable;
// call Init.
type Tx struct {
	rate    units.Rate
	quanta  uint16
	refresh sim.Time

	asserted    uint8
	dirty       uint8 // priorities whose state the peer has not been told yet
	nextRefresh sim.Time

	injMask uint8 // one-shot entries (fault injection)

	// s is the per-priority timing and the counters, allocated with the
	// first pause asserted or injected: most ports of a large fabric never
	// send one.
	s *txState

	// tally, if set, also counts this port's frames and assertions.
	tally *Tally
}

// Tally is a running sum of PFC counters over many ports (a whole
// network), kept as frames are sent and storms trip so that reading it
// costs O(1), however many ports feed it. Each field is the sum of the
// TxStats or RxStats field it names over the ports that feed it
// (SetTally); the per-port counters are kept as before.
type Tally struct {
	Frames     int64 // TxStats.Frames
	XOFF       int64 // every priority's TxStats.XOFF
	StormTrips int64 // every priority's RxStats.StormTrips

	// Notify, if set, is called after every change, at the instant of
	// the event that made it (an early-stop watch).
	Notify func()
}

// changed calls Notify if it is set.
func (tl *Tally) changed() {
	if tl.Notify != nil {
		tl.Notify()
	}
}

// SetTally makes t also count its frames and XOFF assertions into tl
// (nil: stop). Call it after Init, which clears it.
func (t *Tx) SetTally(tl *Tally) { t.tally = tl }

// txState is the part of Tx a port needs once it has paused its peer.
type txState struct {
	injQuanta [NumPrio]uint16
	since     [NumPrio]sim.Time
	total     [NumPrio]sim.Time
	stats     TxStats
}

// state is s, allocated on first use.
func (t *Tx) state() *txState {
	if t.s == nil {
		t.s = new(txState)
	}
	return t.s
}

// Stats is the port's counters so far.
func (t *Tx) Stats() TxStats {
	if t.s == nil {
		return TxStats{}
	}
	return t.s.stats
}

// Init sets the port rate, the quanta put in XOFF entries (0 means
// DefaultQuanta) and the refresh interval (0 means half the pause time, so a
// refresh always lands before the peer's expiry even behind a queued frame).
func (t *Tx) Init(rate units.Rate, quanta uint16, refresh sim.Time) {
	if quanta == 0 {
		quanta = DefaultQuanta
	}
	if refresh <= 0 {
		refresh = QuantaToTime(quanta, rate) / 2
	}
	*t = Tx{rate: rate, quanta: quanta, refresh: refresh, nextRefresh: sim.Never}
}

// Quanta is the pause time put in XOFF entries.
func (t *Tx) Quanta() uint16 { return t.quanta }

// RefreshInterval is how often an asserted pause is re-sent.
func (t *Tx) RefreshInterval() sim.Time { return t.refresh }

// Asserted is the mask of priorities being paused toward the peer.
func (t *Tx) Asserted() uint8 { return t.asserted }

// Assert starts pausing prio. It reports whether a frame is now owed.
func (t *Tx) Assert(now sim.Time, prio int) bool {
	bit := uint8(1) << prio
	if t.asserted&bit != 0 {
		return false
	}
	t.asserted |= bit
	t.dirty |= bit
	s := t.state()
	s.since[prio] = now
	s.stats.XOFF[prio]++
	if t.tally != nil {
		t.tally.XOFF++
		t.tally.changed()
	}
	return true
}

// Deassert stops pausing prio. It reports whether a frame is now owed.
func (t *Tx) Deassert(now sim.Time, prio int) bool {
	bit := uint8(1) << prio
	if t.asserted&bit == 0 {
		return false
	}
	t.asserted &^= bit
	t.dirty |= bit
	t.s.total[prio] += now - t.s.since[prio] // asserted, so allocated
	return true
}

// Inject queues one frame entry with arbitrary quanta for the priorities in
// mask (fault injection: a misbehaving NIC). Asserted priorities keep their
// own state in the frame.
func (t *Tx) Inject(mask uint8, quanta uint16) {
	t.injMask |= mask
	s := t.state()
	for i := 0; i < NumPrio; i++ {
		if mask&(1<<i) != 0 {
			s.injQuanta[i] = quanta
		}
	}
}

// Pending reports whether a PFC frame is owed to the peer.
func (t *Tx) Pending() bool { return t.dirty|t.injMask != 0 }

// Build produces the frame to send now: the class-enable vector and the
// per-priority quanta. Every asserted priority is restated, so each frame
// also refreshes. It clears the owed state and schedules the next refresh.
func (t *Tx) Build(now sim.Time) (mask uint8, quanta [NumPrio]uint16) {
	mask = t.dirty | t.asserted | t.injMask
	s := t.state()
	for i := 0; i < NumPrio; i++ {
		bit := uint8(1) << i
		switch {
		case mask&bit == 0:
		case t.asserted&bit != 0:
			quanta[i] = t.quanta
		case t.injMask&bit != 0:
			quanta[i] = s.injQuanta[i]
		}
		if mask&bit != 0 {
			if quanta[i] > 0 {
				s.stats.Pauses[i]++
			} else {
				s.stats.Resumes[i]++
			}
		}
	}
	s.stats.Frames++
	if t.tally != nil {
		t.tally.Frames++
		t.tally.changed()
	}
	t.dirty, t.injMask = 0, 0
	if t.asserted != 0 {
		t.nextRefresh = now + t.refresh
	} else {
		t.nextRefresh = sim.Never
	}
	return mask, quanta
}

// NextRefresh is when an asserted pause must be re-sent; sim.Never if none.
func (t *Tx) NextRefresh() sim.Time {
	if t.asserted == 0 {
		return sim.Never
	}
	return t.nextRefresh
}

// Refresh marks the asserted priorities owed if their refresh is due and
// reports whether a frame is now owed.
func (t *Tx) Refresh(now sim.Time) bool {
	if t.asserted == 0 || now < t.nextRefresh {
		return false
	}
	t.dirty |= t.asserted
	return true
}

// AssertedTime is how long prio has been asserted toward the peer up to now.
func (t *Tx) AssertedTime(now sim.Time, prio int) sim.Time {
	if t.s == nil {
		return 0
	}
	d := t.s.total[prio]
	if t.asserted&(1<<prio) != 0 {
		d += now - t.s.since[prio]
	}
	return d
}
