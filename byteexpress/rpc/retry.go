package rpc

import "math/rand/v2"

// Retry is the probabilistic retry policy of §7.2: a timed-out request is
// retried with probability Prob while fewer than MaxAttempts attempts were
// made. The coin comes from the injected generator, so a fixed seed gives a
// fixed sequence of decisions.
type Retry struct {
	Prob        float64
	MaxAttempts int
	rng         *rand.Rand
}

// NewRetry returns the policy of cfg drawing from rng.
func NewRetry(cfg Config, rng *rand.Rand) *Retry {
	return &Retry{Prob: cfg.RetryProb, MaxAttempts: cfg.MaxAttempts, rng: rng}
}

// ShouldRetry decides, after attempt number attempts (1 = the first) timed
// out, whether to try again. It draws from the generator only when the
// attempt limit still allows a retry.
func (r *Retry) ShouldRetry(attempts int) bool {
	if attempts >= r.MaxAttempts || r.Prob <= 0 {
		return false
	}
	return r.Prob >= 1 || r.rng.Float64() < r.Prob
}
