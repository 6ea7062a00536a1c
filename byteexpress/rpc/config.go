package rpc

import (
	"errors"
	"fmt"
	"time"
)

// Config holds the recovery-policy parameters. Start from DefaultConfig.
type Config struct {
	// ConnTimeout is Tc, the connection-establishment timeout (paper: 10 ms).
	ConnTimeout time.Duration
	// RequestTimeout is Tr, the per-attempt request timeout (paper: 40 ms).
	RequestTimeout time.Duration

	// RetryProb is the probability that a timed-out idempotent request is
	// retried (the paper retries "probabilistically" without a value).
	RetryProb float64
	// MaxAttempts bounds the attempts of one request, the first included.
	MaxAttempts int
	// AtMostOnce disables automatic retries for every request.
	AtMostOnce bool

	// Window is the quarantine's sliding window (paper: 5 minutes).
	Window time.Duration
	// MaxConnFailures is M: more than M connection failures in Window
	// exclude a node (paper: 30).
	MaxConnFailures int
	// MaxReqFailures is N: more than N request failures in Window exclude a
	// node (paper: 50).
	MaxReqFailures int
	// QuarantineHold, if non-zero, keeps a node excluded for at least this
	// long after its latest trip even if its counts fall back earlier.
	QuarantineHold time.Duration

	// PathTries is K, the number of path changes (port affinity) tried on
	// the same replica before moving to another replica.
	PathTries int
	// Paths is the number of distinct paths (ports, or pinned paths
	// through the fabric) per destination; 1: the ladder skips the path
	// change (Selector.Stats.PathSkips). A runner should cap it at what
	// its topology offers (the failover workload: its spines).
	Paths int
	// ProbeInterval is how often a destination on TCP fallback is probed
	// for RDMA.
	ProbeInterval time.Duration
}

// DefaultConfig returns the paper's values (Tc, Tr, window, M, N) and this
// package's choices for the rest (see the package doc).
func DefaultConfig() Config {
	return Config{
		ConnTimeout:     10 * time.Millisecond,
		RequestTimeout:  40 * time.Millisecond,
		RetryProb:       0.5,
		MaxAttempts:     3,
		Window:          5 * time.Minute,
		MaxConnFailures: 30,
		MaxReqFailures:  50,
		PathTries:       2,
		Paths:           2,
		ProbeInterval:   30 * time.Second,
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.ConnTimeout <= 0:
		return errors.New("rpc: ConnTimeout must be > 0")
	case c.RequestTimeout <= 0:
		return errors.New("rpc: RequestTimeout must be > 0")
	case c.RetryProb < 0 || c.RetryProb > 1 || c.RetryProb != c.RetryProb:
		return fmt.Errorf("rpc: RetryProb %v not in [0,1]", c.RetryProb)
	case c.MaxAttempts < 1:
		return errors.New("rpc: MaxAttempts must be >= 1")
	case c.Window <= 0:
		return errors.New("rpc: Window must be > 0")
	case c.MaxConnFailures < 0 || c.MaxReqFailures < 0:
		return errors.New("rpc: MaxConnFailures and MaxReqFailures must be >= 0")
	case c.QuarantineHold < 0:
		return errors.New("rpc: QuarantineHold must be >= 0")
	case c.PathTries < 0:
		return errors.New("rpc: PathTries must be >= 0")
	case c.Paths < 1:
		return errors.New("rpc: Paths must be >= 1")
	case c.ProbeInterval <= 0:
		return errors.New("rpc: ProbeInterval must be > 0")
	}
	return nil
}
