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
	// DecreasePeriod coalesces decreases: a CNP within DecreasePeriod of
	// the last decrease changes neither the rate nor alpha (it restarts
	// the increase counters, as any CNP). 0 (the paper): every CNP
	// decreases. ConnectX firmware has such a period
	// (rate_reduce_monitor_period); it defers a CNP inside it to a
	// decrease at its end, where this drops it (under steady marking both
	// give one decrease per period).
	DecreasePeriod int64
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
