package dcqcn

import (
	"fmt"
	"math"
)

// Default parameter values; see the package comment for their sources.
const (
	DefaultG                  float64 = 1.0 / 256
	DefaultInitialAlpha       float64 = 1
	DefaultAlphaTimer         int64   = 55_000_000  // K = 55 us, in ps
	DefaultRateTimer          int64   = 55_000_000  // T = 55 us, in ps
	DefaultByteCounter        int64   = 10_000_000  // B = 10 MB, in bytes
	DefaultFastRecoveryStages int     = 5           // F
	DefaultAdditiveIncrease   int64   = 5_000_000   // R_AI = 5 Mb/s
	DefaultHyperIncrease      int64   = 50_000_000  // R_HAI = 50 Mb/s
	DefaultMinRate            int64   = 100_000_000 // 100 Mb/s
	DefaultCNPInterval        int64   = 50_000_000  // N = 50 us, in ps
)

// Config holds the reaction-point parameters. Times are picoseconds, rates
// bits/s, sizes bytes.
type Config struct {
	LineRate           int64   // initial rate and ceiling of Rc and Rt
	MinRate            int64   // floor of Rc
	G                  float64 // alpha gain g, in (0, 1]
	InitialAlpha       float64 // alpha before the first CNP, in [0, 1]
	AlphaTimer         int64   // K: alpha decays after each K without a CNP
	RateTimer          int64   // T: rate-increase timer period
	ByteCounter        int64   // B: bytes per byte-counter expiry
	FastRecoveryStages int     // F: stages of fast recovery before increase
	AdditiveIncrease   int64   // R_AI: Rt step in additive increase
	HyperIncrease      int64   // R_HAI: Rt step unit in hyper increase
	// DecreasePeriod coalesces decreases: at most one decrease per period.
	// A CNP within DecreasePeriod of the last decrease is deferred to one
	// decrease at the period's end (ConnectX rate_reduce_monitor_period:
	// "if a CNP is received during the interval, the flow rate is reduced
	// at the beginning of the next interval"); CNPs until then join it.
	// The increase counters restart at the decrease, not at each CNP. 0
	// (the paper): every CNP decreases at once.
	DecreasePeriod int64
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

// DefaultConfig returns the default parameters for a port of lineRate bits/s.
// MinRate is capped at lineRate so that slow links still validate.
func DefaultConfig(lineRate int64) Config {
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
const maxRate = 1 << 53

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

// addSat returns a+b for b >= 0, saturating at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
