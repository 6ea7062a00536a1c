package dcqcn

import (
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Stats counts reaction-point events for reports.
type Stats struct {
	CNPs                uint64 // CNPs handled
	Decreases           uint64 // decreases applied (DecreasePeriod: at most one per period)
	RateDecreases       uint64 // decreases that lowered Rc (not already at MinRate)
	MinRateClamps       uint64 // decreases that MinRate cut short
	AlphaDecays         uint64 // K periods that passed without a CNP
	AlphaRises          uint64 // AlphaSampled: periods that saw a CNP
	DeferredDecreases   uint64 // decreases deferred to a DecreasePeriod's end
	TimerExpiries       uint64 // rate-increase timer expiries
	ByteCounterExpiries uint64 // byte-counter expiries
	FastRecovery        uint64 // increase events per stage type
	AdditiveIncrease    uint64
	HyperIncrease       uint64
}

// ReactionPoint is the DCQCN sender-side rate controller of one QP. The zero
// value is not usable; build one with NewReactionPoint or Init. Its methods
// neither allocate nor block.
type ReactionPoint struct {
	cfg       Config
	oneMinusG float64

	rc, rt units.Rate // current and target rate
	alpha  float64    // as of now

	now           sim.Time   // latest time seen
	alphaDeadline sim.Time   // next alpha decay; Never before the first CNP
	rateDeadline  sim.Time   // next rate-timer expiry; Never while at line rate
	timerStage    int64      // T: timer expiries since the last CNP
	byteStage     int64      // BC: byte-counter expiries since the last CNP
	bytes         units.Size // bytes sent towards the next byte-counter expiry
	lastDecrease  sim.Time   // when the last CNP decreased the rate (DecreasePeriod)
	decreased     bool       // a decrease happened (lastDecrease is set)
	pending       bool       // a decrease is deferred to lastDecrease+DecreasePeriod
	seen          bool       // a CNP arrived
	cnpInPeriod   bool       // AlphaSampled: a CNP arrived in the current alpha period
	lastIncTimer  bool       // the latest increase since the last decrease was the timer's

	stats Stats
}

// NewReactionPoint returns a reaction point at line rate, or the
// configuration error.
func NewReactionPoint(cfg Config) (*ReactionPoint, error) {
	r := new(ReactionPoint)
	if err := r.Init(cfg); err != nil {
		return nil, err
	}
	return r, nil
}

// Init (re)initialises r in place, so that callers can embed a ReactionPoint
// in per-QP state without a separate allocation. On error r is unchanged.
func (r *ReactionPoint) Init(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	*r = ReactionPoint{
		cfg:           cfg,
		oneMinusG:     1 - cfg.G,
		rc:            cfg.LineRate,
		rt:            cfg.LineRate,
		alpha:         cfg.InitialAlpha,
		alphaDeadline: Never,
		rateDeadline:  Never,
	}
	return nil
}

// Name returns "dcqcn".
func (r *ReactionPoint) Name() string { return "dcqcn" }

// Rate returns the current rate Rc.
func (r *ReactionPoint) Rate() units.Rate { return r.rc }

// TargetRate returns the target rate Rt.
func (r *ReactionPoint) TargetRate() units.Rate { return r.rt }

// Alpha returns alpha as of the latest event processed (call OnTimer(now)
// first for the value at now).
func (r *ReactionPoint) Alpha() float64 { return r.alpha }

// Config returns the parameters r runs with.
func (r *ReactionPoint) Config() Config { return r.cfg }

// Stats returns the event counters.
func (r *ReactionPoint) Stats() Stats { return r.stats }

// NextTimer returns the next rate-increase timer expiry or deferred
// decrease, or Never. Alpha updates need no wakeup: they are computed on the
// next event.
func (r *ReactionPoint) NextTimer() sim.Time {
	if r.pending {
		return min(r.rateDeadline, addSat(r.lastDecrease, r.cfg.DecreasePeriod))
	}
	return r.rateDeadline
}

// OnTimer processes every alpha and rate-timer expiry at or before now.
func (r *ReactionPoint) OnTimer(now sim.Time) {
	r.advance(r.clock(now))
}

// OnCNP handles a CNP after processing the expiries due at or before now:
// the paper's multiplicative decrease, at once or (DecreasePeriod) at the
// end of the current decrease period.
func (r *ReactionPoint) OnCNP(now sim.Time) {
	now = r.clock(now)
	r.advance(now)
	r.stats.CNPs++
	first := !r.seen
	r.seen = true
	if r.cfg.AlphaSampled {
		if first {
			// The estimator starts with the first CNP; InitialAlpha
			// stands for that CNP.
			r.alphaDeadline = addSat(now, r.cfg.AlphaTimer)
		} else {
			r.cnpInPeriod = true
		}
	} else {
		r.alphaDeadline = addSat(now, r.cfg.AlphaTimer)
	}
	if p := r.cfg.DecreasePeriod; p <= 0 || !r.decreased || now >= addSat(r.lastDecrease, p) {
		r.decrease(now)
		return
	}
	if !r.pending {
		r.pending = true
		r.stats.DeferredDecreases++
	}
}

// decrease applies one multiplicative decrease at now.
func (r *ReactionPoint) decrease(now sim.Time) {
	r.decreased, r.lastDecrease, r.pending = true, now, false
	r.stats.Decreases++
	switch r.cfg.TargetClamp {
	case ClampAlways:
		r.rt = r.rc
	case ClampAfterTimer:
		if r.lastIncTimer {
			r.rt = r.rc
		}
	}
	r.lastIncTimer = false
	// The decrease uses alpha before this CNP's update, as in the paper.
	rc := units.Rate(float64(r.rc) * (1 - r.alpha/2))
	if rc < r.cfg.MinRate {
		rc = r.cfg.MinRate
		r.stats.MinRateClamps++
	}
	if rc < r.rc {
		r.stats.RateDecreases++
	}
	r.rc = rc
	if !r.cfg.AlphaSampled {
		r.alpha = float64(r.oneMinusG*r.alpha) + r.cfg.G
		if r.alpha > 1 {
			r.alpha = 1
		}
	}
	r.timerStage, r.byteStage, r.bytes = 0, 0, 0
	if r.rc >= r.cfg.LineRate { // no decrease: alpha 0 or MinRate == LineRate
		r.rateDeadline = Never
	} else {
		r.rateDeadline = addSat(now, r.cfg.RateTimer)
	}
}

// OnPacketSent feeds the byte counter after processing the expiries due at
// or before now.
func (r *ReactionPoint) OnPacketSent(now sim.Time, bytes units.Size) {
	now = r.clock(now)
	r.advance(now)
	if r.rateDeadline == Never || bytes <= 0 {
		return // at line rate: increases would be no-ops
	}
	r.bytes += bytes
	for r.bytes >= r.cfg.ByteCounter {
		r.bytes -= r.cfg.ByteCounter
		r.byteStage++
		r.stats.ByteCounterExpiries++
		if r.increase(false) {
			r.bytes = 0
			return
		}
	}
}

// clock makes time monotone: an earlier now counts as the latest seen.
func (r *ReactionPoint) clock(now sim.Time) sim.Time {
	if now < r.now {
		return r.now
	}
	r.now = now
	return now
}

func (r *ReactionPoint) advance(now sim.Time) {
	for {
		if r.pending {
			// A deferred decrease, after the timer expiries due at or
			// before its instant and with alpha as of then.
			at := addSat(r.lastDecrease, r.cfg.DecreasePeriod)
			if at <= now && at < r.rateDeadline {
				r.alphaTo(at)
				r.decrease(at)
				continue
			}
		}
		if r.rateDeadline > now || r.rateDeadline == Never {
			break
		}
		r.timerStage++
		r.stats.TimerExpiries++
		if r.increase(true) {
			continue
		}
		r.rateDeadline = addSat(r.rateDeadline, r.cfg.RateTimer)
	}
	r.alphaTo(now)
}

// alphaTo applies the alpha updates of the periods that ended at or before
// now.
func (r *ReactionPoint) alphaTo(now sim.Time) {
	if r.alphaDeadline <= now && r.alphaDeadline != Never {
		r.decayAlpha(now)
	}
}

// decayAlpha applies one decay per K period that ended at or before now.
func (r *ReactionPoint) decayAlpha(now sim.Time) {
	k := r.cfg.AlphaTimer
	elapsed := now - r.alphaDeadline
	n := int64(elapsed/k) + 1
	r.alphaDeadline = addSat(now-elapsed%k, k)
	if r.cfg.AlphaSampled && r.cnpInPeriod {
		// The period that ended first saw a CNP: alpha rises.
		r.cnpInPeriod = false
		r.stats.AlphaRises++
		r.alpha = float64(r.oneMinusG*r.alpha) + r.cfg.G
		if r.alpha > 1 {
			r.alpha = 1
		}
		n--
	}
	r.stats.AlphaDecays += uint64(n)
	// Repeated multiplication matches per-period wakeups bit for bit. It
	// stops at the fixed point (alpha 0, or a subnormal that no longer
	// shrinks), which bounds the loop after very long quiet spells.
	for ; n > 0; n-- {
		a := r.alpha * r.oneMinusG
		if a == r.alpha {
			break
		}
		r.alpha = a
	}
}

// increase applies one rate-increase event (of the rate timer, or the byte
// counter) for the current stage counts. It reports whether Rc reached line
// rate, in which case the timer stops.
func (r *ReactionPoint) increase(timer bool) (atLineRate bool) {
	r.lastIncTimer = timer
	f := int64(r.cfg.FastRecoveryStages)
	t, b := r.timerStage, r.byteStage
	switch {
	case max(t, b) <= f:
		r.stats.FastRecovery++
	case min(t, b) > f:
		r.stats.HyperIncrease++
		i := min(t, b) - f
		if h := r.cfg.HyperIncrease; h > 0 && i > int64(maxRate/h) {
			r.rt = r.cfg.LineRate
		} else {
			r.rt += units.Rate(i) * h
		}
	default:
		r.stats.AdditiveIncrease++
		r.rt += r.cfg.AdditiveIncrease
	}
	if r.rt > r.cfg.LineRate {
		r.rt = r.cfg.LineRate
	}
	// Round up so that Rc reaches Rt rather than stalling one bit/s short.
	r.rc += (r.rt - r.rc + 1) / 2
	r.rc = min(max(r.rc, r.cfg.MinRate), r.cfg.LineRate)
	if r.rc >= r.cfg.LineRate {
		r.rateDeadline = Never
		return true
	}
	return false
}
