package dcqcn

import (
	"fmt"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Default parameter values; see the package comment for their sources.
const (
	DefaultG                  float64    = 1.0 / 256
	DefaultInitialAlpha       float64    = 1
	DefaultAlphaTimer         sim.Time   = 55 * sim.Microsecond // K = 55 us
	DefaultRateTimer          sim.Time   = 55 * sim.Microsecond // T = 55 us
	DefaultByteCounter        units.Size = 10 * units.MB        // B = 10 MB
	DefaultFastRecoveryStages int        = 5                    // F
	DefaultAdditiveIncrease   units.Rate = 5 * units.Mbps       // R_AI = 5 Mb/s
	DefaultHyperIncrease      units.Rate = 50 * units.Mbps      // R_HAI = 50 Mb/s
	DefaultMinRate            units.Rate = 100 * units.Mbps     // 100 Mb/s
	DefaultCNPInterval        sim.Time   = 50 * sim.Microsecond // N = 50 us
)

// Config holds the reaction-point parameters: times are sim.Time
// (picoseconds), rates units.Rate (bits/s), sizes units.Size (bytes).
type Config struct {
	LineRate           units.Rate // initial rate and ceiling of Rc and Rt
	MinRate            units.Rate // floor of Rc
	G                  float64    // alpha gain g, in (0, 1]
	InitialAlpha       float64    // alpha before the first CNP, in [0, 1]
	AlphaTimer         sim.Time   // K: alpha decays after each K without a CNP
	RateTimer          sim.Time   // T: rate-increase timer period
	ByteCounter        units.Size // B: bytes per byte-counter expiry
	FastRecoveryStages int        // F: stages of fast recovery before increase
	AdditiveIncrease   units.Rate // R_AI: Rt step in additive increase
	HyperIncrease      units.Rate // R_HAI: Rt step unit in hyper increase
	// DecreasePeriod coalesces decreases: at most one decrease per period.
	// A CNP within DecreasePeriod of the last decrease is deferred to one
	// decrease at the period's end (ConnectX rate_reduce_monitor_period:
	// "if a CNP is received during the interval, the flow rate is reduced
	// at the beginning of the next interval"); CNPs until then join it.
	// The increase counters restart at the decrease, not at each CNP. 0
	// (the paper): every CNP decreases at once.
	DecreasePeriod sim.Time
	// AlphaSampled selects the ConnectX alpha estimator instead of the
	// paper's: alpha is updated once every AlphaTimer (dce_tcp_rtt) from
	// the first CNP on, alpha = (1-G)·alpha + G if a CNP arrived in that
	// period and (1-G)·alpha otherwise; a CNP itself does not change alpha.
	// The first CNP does not count as an arrival: InitialAlpha stands for
	// it (as in the ns-3 HPCC simulator's Mellanox model). false (the
	// paper): alpha rises on every decrease and decays per quiet K.
	AlphaSampled bool
	// TargetClamp is when a decrease sets the target rate Rt to the
	// current rate Rc first. ClampAlways (0) is the paper's.
	TargetClamp Clamp
}

// Clamp selects when a rate decrease clamps the target rate.
type Clamp uint8

// Target-rate clamping on a decrease.
const (
	// ClampAlways: Rt = Rc before every decrease (the paper; ConnectX
	// clamp_tgt_rate = 1).
	ClampAlways Clamp = iota
	// ClampAfterTimer: Rt = Rc only if the latest rate increase since the
	// previous decrease came from the rate timer, not the byte counter
	// (ConnectX clamp_tgt_rate = 0 with clamp_tgt_rate_after_time_inc = 1,
	// the firmware default); otherwise Rt keeps its value, so fast
	// recovery returns towards the rate before the cut.
	ClampAfterTimer
	// ClampNever: Rt is never reset by a decrease (ConnectX clamp_tgt_rate
	// = 0, clamp_tgt_rate_after_time_inc = 0).
	ClampNever
)

var clampNames = [...]string{"always", "after-timer", "never"}

func (c Clamp) String() string {
	if int(c) < len(clampNames) {
		return clampNames[c]
	}
	return fmt.Sprintf("Clamp(%d)", int(c))
}

// DefaultConfig returns the default parameters for a port of lineRate.
// MinRate is capped at lineRate so that slow links still validate.
func DefaultConfig(lineRate units.Rate) Config {
	return Config{
		LineRate:           lineRate,
		MinRate:            min(DefaultMinRate, lineRate),
		G:                  DefaultG,
		InitialAlpha:       DefaultInitialAlpha,
		AlphaTimer:         DefaultAlphaTimer,
		RateTimer:          DefaultRateTimer,
		ByteCounter:        DefaultByteCounter,
		FastRecoveryStages: DefaultFastRecoveryStages,
		AdditiveIncrease:   DefaultAdditiveIncrease,
		HyperIncrease:      DefaultHyperIncrease,
	}
}

// maxRate bounds rates so that rate arithmetic cannot overflow and float64
// conversions stay exact (2^53 bits/s is about 9 Pb/s).
const maxRate units.Rate = 1 << 53

// Validate reports the first invalid field, naming it.
func (c Config) Validate() error {
	switch {
	case c.LineRate <= 0 || c.LineRate > maxRate:
		return fmt.Errorf("dcqcn: Config.LineRate = %d bits/s: must be in (0, 2^53]", c.LineRate)
	case c.MinRate <= 0 || c.MinRate > c.LineRate:
		return fmt.Errorf("dcqcn: Config.MinRate = %d bits/s: must be in (0, LineRate = %d]", c.MinRate, c.LineRate)
	case !(c.G > 0 && c.G <= 1): // also rejects NaN
		return fmt.Errorf("dcqcn: Config.G = %v: must be in (0, 1]", c.G)
	case !(c.InitialAlpha >= 0 && c.InitialAlpha <= 1):
		return fmt.Errorf("dcqcn: Config.InitialAlpha = %v: must be in [0, 1]", c.InitialAlpha)
	case c.AlphaTimer <= 0:
		return fmt.Errorf("dcqcn: Config.AlphaTimer = %d ps: must be > 0", c.AlphaTimer)
	case c.RateTimer <= 0:
		return fmt.Errorf("dcqcn: Config.RateTimer = %d ps: must be > 0", c.RateTimer)
	case c.ByteCounter <= 0:
		return fmt.Errorf("dcqcn: Config.ByteCounter = %d bytes: must be > 0", c.ByteCounter)
	case c.FastRecoveryStages < 0:
		return fmt.Errorf("dcqcn: Config.FastRecoveryStages = %d: must be >= 0", c.FastRecoveryStages)
	case c.AdditiveIncrease < 0 || c.AdditiveIncrease > maxRate:
		return fmt.Errorf("dcqcn: Config.AdditiveIncrease = %d bits/s: must be in [0, 2^53]", c.AdditiveIncrease)
	case c.DecreasePeriod < 0:
		return fmt.Errorf("dcqcn: Config.DecreasePeriod = %d ps: must be >= 0", c.DecreasePeriod)
	case c.TargetClamp > ClampNever:
		return fmt.Errorf("dcqcn: Config.TargetClamp = %d: must be ClampAlways, ClampAfterTimer or ClampNever", c.TargetClamp)
	case c.HyperIncrease < 0 || c.HyperIncrease > maxRate:
		return fmt.Errorf("dcqcn: Config.HyperIncrease = %d bits/s: must be in [0, 2^53]", c.HyperIncrease)
	}
	return nil
}

// addSat returns the instant a+b for b >= 0, saturating at Never
// (math.MaxInt64).
func addSat(a, b sim.Time) sim.Time {
	if a > Never-b {
		return Never
	}
	return a + b
}
