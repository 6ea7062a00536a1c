package app

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// DistKind names a message-size distribution.
type DistKind string

// Size distributions.
const (
	Fixed     DistKind = "fixed"     // always Size bytes
	Uniform   DistKind = "uniform"   // uniform on [Min, Max]
	LogNormal DistKind = "lognormal" // given by its Mean and P99 (the paper's way of stating sizes)
	Empirical DistKind = "empirical" // a CDF: linear interpolation between points
)

// CDFPoint is one point of an empirical CDF: P(size <= Size) = P.
type CDFPoint struct {
	Size int
	P    float64
}

// SizeDist is a message-size distribution; only the fields of Kind count.
// Samples are clamped to [1, MaxSize] (MaxSize 0: 1 GiB).
type SizeDist struct {
	Kind      DistKind
	Size      int        // fixed
	Min, Max  int        // uniform
	Mean, P99 int        // lognormal
	CDF       []CDFPoint // empirical, sizes and probabilities non-decreasing, last P = 1
	MaxSize   int
	mu, sigma float64
}

const z99 = 2.3263478740408408 // standard normal 99th percentile

// Prepare validates d and precomputes its parameters.
func (d *SizeDist) Prepare() error {
	switch d.Kind {
	case Fixed:
		if d.Size < 1 {
			return fmt.Errorf("fixed size %d must be >= 1", d.Size)
		}
	case Uniform:
		if d.Min < 1 || d.Max < d.Min {
			return fmt.Errorf("uniform needs 1 <= min <= max, got %d, %d", d.Min, d.Max)
		}
	case LogNormal:
		if d.Mean < 1 || d.P99 <= d.Mean {
			return fmt.Errorf("lognormal needs 1 <= mean < p99, got %d, %d", d.Mean, d.P99)
		}
		// mean = exp(mu + s^2/2), p99 = exp(mu + z s): s^2/2 - z s + ln(p99/mean) = 0.
		l := math.Log(float64(d.P99) / float64(d.Mean))
		disc := z99*z99 - 2*l
		if disc < 0 {
			return fmt.Errorf("lognormal: p99/mean = %.1f is too large (at most %.0f)", float64(d.P99)/float64(d.Mean), math.Exp(z99*z99/2))
		}
		d.sigma = z99 - math.Sqrt(disc)
		d.mu = math.Log(float64(d.Mean)) - d.sigma*d.sigma/2
	case Empirical:
		if len(d.CDF) < 1 {
			return errors.New("empirical needs at least one CDF point")
		}
		for i, p := range d.CDF {
			if p.Size < 1 || p.P < 0 || p.P > 1 {
				return fmt.Errorf("cdf point %d: size %d must be >= 1 and p %v in [0, 1]", i, p.Size, p.P)
			}
			if i > 0 && (p.Size < d.CDF[i-1].Size || p.P < d.CDF[i-1].P) {
				return fmt.Errorf("cdf point %d: sizes and probabilities must not decrease", i)
			}
		}
		if d.CDF[len(d.CDF)-1].P != 1 {
			return errors.New("empirical: the last CDF point must have p = 1")
		}
	default:
		return fmt.Errorf("unknown size distribution %q (want fixed, uniform, lognormal or empirical)", d.Kind)
	}
	return nil
}

// Sample draws one size from r (Prepare first).
func (d *SizeDist) Sample(r *rand.Rand) int {
	var v float64
	switch d.Kind {
	case Fixed:
		return d.clamp(float64(d.Size))
	case Uniform:
		return d.clamp(float64(d.Min + r.IntN(d.Max-d.Min+1)))
	case LogNormal:
		v = math.Exp(d.mu + d.sigma*r.NormFloat64())
	case Empirical:
		u := r.Float64()
		prevS, prevP := 0.0, 0.0
		v = float64(d.CDF[len(d.CDF)-1].Size)
		for _, p := range d.CDF {
			if u <= p.P {
				if p.P > prevP {
					v = prevS + (float64(p.Size)-prevS)*(u-prevP)/(p.P-prevP)
				} else {
					v = float64(p.Size)
				}
				break
			}
			prevS, prevP = float64(p.Size), p.P
		}
	}
	return d.clamp(v)
}

func (d *SizeDist) clamp(v float64) int {
	hi := d.MaxSize
	if hi <= 0 {
		hi = 1 << 30
	}
	n := int(math.Round(v))
	return max(1, min(n, hi))
}

// MeanSize is the distribution's mean (for lognormal the stated Mean; for
// empirical the interpolated CDF's mean).
func (d *SizeDist) MeanSize() float64 {
	switch d.Kind {
	case Fixed:
		return float64(d.Size)
	case Uniform:
		return float64(d.Min+d.Max) / 2
	case LogNormal:
		return float64(d.Mean)
	case Empirical:
		m, prevS, prevP := 0.0, 0.0, 0.0
		for _, p := range d.CDF {
			m += (p.P - prevP) * (prevS + float64(p.Size)) / 2
			prevS, prevP = float64(p.Size), p.P
		}
		return m
	}
	return 0
}
