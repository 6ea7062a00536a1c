package pfc

import (
	"fmt"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// NumPrio is the number of 802.1p priorities a PFC frame addresses.
const NumPrio = 8

// WatchdogAction is what a stormed priority does.
type WatchdogAction uint8

// Watchdog actions (the two SONiC pfcwd offers for lossless queues).
const (
	// ActionDrop ignores the peer's pauses and drops the frames queued for
	// and arriving at the stormed queue, so the storm cannot spread upstream.
	ActionDrop WatchdogAction = iota
	// ActionForward ignores the peer's pauses and keeps transmitting.
	ActionForward
)

func (a WatchdogAction) String() string {
	switch a {
	case ActionDrop:
		return "drop"
	case ActionForward:
		return "forward"
	}
	return fmt.Sprintf("WatchdogAction(%d)", uint8(a))
}

// Watchdog defaults. Assumptions, documented: detection 100 ms follows the
// order of magnitude of Guo et al. (SIGCOMM 2016, the watchdog ByteExpress
// §7.2 cites) and of switch PFC watchdog polling intervals (Cisco Nexus
// 100 ms); restore 200 ms follows SONiC pfcwd's default restoration time.
const (
	DefaultDetection = 100 * sim.Millisecond
	DefaultRestore   = 200 * sim.Millisecond
)

// Watchdog configures PFC storm detection on a receiving port.
type Watchdog struct {
	Enabled   bool
	Detection sim.Time // continuous pause longer than this trips the watchdog
	Restore   sim.Time // how long a tripped priority ignores pauses
	Action    WatchdogAction
}

// DefaultWatchdog is enabled with the defaults above and ActionDrop.
func DefaultWatchdog() Watchdog {
	return Watchdog{Enabled: true, Detection: DefaultDetection, Restore: DefaultRestore, Action: ActionDrop}
}

// Validate reports a configuration error in words.
func (w Watchdog) Validate() error {
	if !w.Enabled {
		return nil
	}
	if w.Detection <= 0 {
		return fmt.Errorf("pfc: watchdog detection time %v must be positive", w.Detection)
	}
	if w.Restore <= 0 {
		return fmt.Errorf("pfc: watchdog restore time %v must be positive", w.Restore)
	}
	if w.Action > ActionForward {
		return fmt.Errorf("pfc: unknown watchdog action %d", w.Action)
	}
	return nil
}

// RxStats are a receiving port's PFC counters.
type RxStats struct {
	Frames        int64          // PFC frames received
	Pauses        [NumPrio]int64 // class entries with quanta > 0
	Resumes       [NumPrio]int64 // class entries with quanta 0
	Ignored       [NumPrio]int64 // entries for priorities without PFC
	StormTrips    [NumPrio]int64 // watchdog detections
	StormRestores [NumPrio]int64
}

// Rx is the pause state one port keeps for the pauses its peer sends. The
// zero value honours nothing; call Init.
type Rx struct {
	rate    units.Rate
	enabled uint8
	wd      Watchdog

	active   uint8 // priorities inside a pause interval (possibly expired, closed lazily)
	stormed  uint8
	lastMask uint8

	// s is the per-priority timing and the counters, allocated with the
	// first PFC frame received: most ports of a large fabric never get one.
	s *rxState

	// Trace, if set, receives (time, honoured pause mask) when it changes.
	Trace Sampler

	// tally, if set, also counts this port's storm trips.
	tally *Tally
}

// SetTally makes r also count its storm trips into tl's StormTrips (nil:
// stop). Call it after Init, which clears it.
func (r *Rx) SetTally(tl *Tally) { r.tally = tl }

// rxState is the part of Rx a port needs once its peer has sent PFC.
type rxState struct {
	until      [NumPrio]sim.Time
	start      [NumPrio]sim.Time
	detectFrom [NumPrio]sim.Time
	total      [NumPrio]sim.Time
	longest    [NumPrio]sim.Time // longest closed pause interval
	restoreAt  [NumPrio]sim.Time
	stats      RxStats
}

// Stats is the port's counters so far.
func (r *Rx) Stats() RxStats {
	if r.s == nil {
		return RxStats{}
	}
	return r.s.stats
}

// Init sets the port rate (for quanta), the priorities with PFC enabled
// (bit i for priority i) and the storm watchdog.
func (r *Rx) Init(rate units.Rate, enabled uint8, wd Watchdog) {
	*r = Rx{rate: rate, enabled: enabled, wd: wd}
}

// Enabled is the mask of priorities whose pauses are honoured.
func (r *Rx) Enabled() uint8 { return r.enabled }

// OnFrame applies a received PFC frame: for each priority in mask, quanta q
// pauses it for q × 512 bit times from now (replacing any earlier expiry), and
// quanta 0 resumes it.
func (r *Rx) OnFrame(now sim.Time, mask uint8, quanta *[NumPrio]uint16) {
	if r.s == nil {
		r.s = new(rxState)
	}
	s := r.s
	s.stats.Frames++
	for i := 0; i < NumPrio; i++ {
		bit := uint8(1) << i
		if mask&bit == 0 {
			continue
		}
		if r.enabled&bit == 0 {
			s.stats.Ignored[i]++
			continue
		}
		q := quanta[i]
		if q == 0 {
			s.stats.Resumes[i]++
			if r.active&bit != 0 {
				r.close(i, min(s.until[i], now))
			}
			continue
		}
		s.stats.Pauses[i]++
		until := now + QuantaToTime(q, r.rate)
		if r.active&bit != 0 && s.until[i] > now {
			s.until[i] = until // continuous: refresh (or shorten) the expiry
			continue
		}
		if r.active&bit != 0 { // expired before this frame: close that interval
			r.close(i, s.until[i])
		}
		r.active |= bit
		s.start[i] = now
		s.detectFrom[i] = now
		s.until[i] = until
	}
	r.trace(now)
}

// Paused is the mask of priorities that must not start a frame at now:
// paused by the peer and not overridden by the watchdog.
func (r *Rx) Paused(now sim.Time) uint8 {
	if r.active == 0 {
		return 0
	}
	return r.activeAt(now) &^ r.stormed
}

// Requested is like Paused but includes stormed priorities: what the peer
// currently asks for.
func (r *Rx) Requested(now sim.Time) uint8 {
	return r.activeAt(now)
}

func (r *Rx) activeAt(now sim.Time) uint8 {
	var m uint8
	if r.active == 0 {
		return 0
	}
	for i := 0; i < NumPrio; i++ {
		if r.active&(1<<i) != 0 && r.s.until[i] > now {
			m |= 1 << i
		}
	}
	return m
}

// Stormed is the mask of priorities the watchdog currently overrides.
func (r *Rx) Stormed() uint8 { return r.stormed }

// Advance brings the state to now: closes expired pauses, restores stormed
// priorities whose restore time has come and trips the watchdog on
// priorities paused continuously for Detection. It returns the priorities
// tripped and restored by this call. Call it when NextDeadline comes due.
func (r *Rx) Advance(now sim.Time) (tripped, restored uint8) {
	s := r.s
	if s == nil { // no PFC frame yet: nothing active or stormed
		return 0, 0
	}
	for i := 0; i < NumPrio; i++ {
		bit := uint8(1) << i
		if r.active&bit != 0 && s.until[i] <= now {
			r.close(i, s.until[i])
		}
		if r.stormed&bit != 0 && s.restoreAt[i] <= now {
			r.stormed &^= bit
			restored |= bit
			s.stats.StormRestores[i]++
			s.detectFrom[i] = now // a storm still going must last Detection again
		}
		if r.wd.Enabled && r.active&bit != 0 && r.stormed&bit == 0 && now-s.detectFrom[i] >= r.wd.Detection {
			r.stormed |= bit
			tripped |= bit
			s.restoreAt[i] = now + r.wd.Restore
			s.stats.StormTrips[i]++
			if r.tally != nil {
				r.tally.StormTrips++
				r.tally.changed()
			}
		}
	}
	r.trace(now)
	return tripped, restored
}

// NextDeadline is the earliest instant at which Advance has something to do:
// a pause expiry, a watchdog detection or a restore. sim.Never if none.
func (r *Rx) NextDeadline() sim.Time {
	d := sim.Never
	s := r.s
	if s == nil {
		return d
	}
	for i := 0; i < NumPrio; i++ {
		bit := uint8(1) << i
		if r.active&bit != 0 {
			d = min(d, s.until[i])
			if r.wd.Enabled && r.stormed&bit == 0 {
				d = min(d, s.detectFrom[i]+r.wd.Detection)
			}
		}
		if r.stormed&bit != 0 {
			d = min(d, s.restoreAt[i])
		}
	}
	return d
}

// PausedTime is the total time priority prio has been paused by the peer up
// to now (as requested by the peer's frames, watchdog overrides included).
func (r *Rx) PausedTime(now sim.Time, prio int) sim.Time {
	s := r.s
	if s == nil {
		return 0
	}
	t := s.total[prio]
	if r.active&(1<<prio) != 0 {
		t += min(s.until[prio], now) - s.start[prio]
	}
	return t
}

// LongestPause is the longest continuous pause of priority prio up to now, the
// interval still open included: what the storm watchdog compares with its
// detection time (a pause refreshed before it expires is one interval).
func (r *Rx) LongestPause(now sim.Time, prio int) sim.Time {
	s := r.s
	if s == nil {
		return 0
	}
	l := s.longest[prio]
	if r.active&(1<<prio) != 0 {
		l = max(l, min(s.until[prio], now)-s.start[prio])
	}
	return l
}

// close ends priority i's pause interval at end.
func (r *Rx) close(i int, end sim.Time) {
	s := r.s
	d := end - s.start[i]
	s.total[i] += d
	s.longest[i] = max(s.longest[i], d)
	r.active &^= 1 << i
}

func (r *Rx) trace(now sim.Time) {
	if r.Trace == nil {
		return
	}
	if m := r.Paused(now); m != r.lastMask {
		r.lastMask = m
		r.Trace.Sample(now, int64(m))
	}
}
