package workloads

import (
	"testing"
	"time"

	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
)

// TestFailoverCompletesIdempotentFetches: a parameter server crashes; the
// clients detect it (keepalive or Tr), move its shard's fetches to the
// replica in the other mini-pod, and every idempotent fetch completes.
func TestFailoverCompletesIdempotentFetches(t *testing.T) {
	// The paper's retry is probabilistic (DefaultConfig: a coin of 0.5, 3
	// attempts), so a few fetches to the crashed server give up; to check
	// that every idempotent fetch completes, retry always, with attempts
	// enough for the ladder (2 path changes, then the replica).
	rc := rpc.DefaultConfig()
	rc.RetryProb, rc.MaxAttempts = 1, 5
	r, err := RunFailover(FailoverConfig{Seed: 1, RPC: rc})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started %d completed %d failed %d retries %d resent %d stranded %d; detected after %v, recovered after %v; errors %v",
		r.Started, r.Completed, r.Failed, r.Retries, r.Resent, r.Stranded, r.DetectedAfter, r.RecoveredAfter, r.Errors)
	if r.Failed != 0 || len(r.Errors) != 0 {
		t.Errorf("%d fetches failed: %v", r.Failed, r.Errors)
	}
	if r.Completed < 1000 || r.Completed+r.Failed+r.Stranded != r.Started {
		t.Errorf("started %d, completed %d, stranded %d", r.Started, r.Completed, r.Stranded)
	}
	if r.DetectedAfter <= 0 || r.RecoveredAfter < r.DetectedAfter {
		t.Errorf("detected after %v, recovered after %v", r.DetectedAfter, r.RecoveredAfter)
	}
	// Detection is bounded by the request timeout Tr = 40 ms (or keepalive,
	// if sooner); recovery needs at most the path changes' Tr timeouts more.
	if r.DetectedAfter > 41*sim.Millisecond || r.RecoveredAfter > 130*sim.Millisecond {
		t.Errorf("detected after %v, recovered after %v: slower than the timeouts allow", r.DetectedAfter, r.RecoveredAfter)
	}
	r2, _ := RunFailover(FailoverConfig{Seed: 1, RPC: rc})
	if r2.Completed != r.Completed || r2.RecoveredAfter != r.RecoveredAfter {
		t.Error("not deterministic")
	}
	// With the defaults, the fetches the coin declines fail, and only those.
	d, err := RunFailover(FailoverConfig{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("defaults: started %d completed %d failed %d retries %d", d.Started, d.Completed, d.Failed, d.Retries)
	if d.Completed+d.Failed+d.Stranded != d.Started || d.Failed*100 > d.Started {
		t.Errorf("defaults: started %d, completed %d, failed %d, stranded %d", d.Started, d.Completed, d.Failed, d.Stranded)
	}

	// With a fast keepalive (1 ms, 5 ms timeout) the engine error arrives
	// well before Tr; the ladder's first step is a path change to the same
	// (dead) server, which only Tr can expose, so recovery still takes
	// about one Tr: path change before replica change costs that.
	var ka simhost.Config
	ka.BE.KeepaliveInterval, ka.BE.KeepaliveTimeout = time.Millisecond, 5*time.Millisecond
	k, err := RunFailover(FailoverConfig{Seed: 1, RPC: rc, Cluster: ka})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("keepalive 1ms/5ms: completed %d failed %d resent %d; detected after %v, recovered after %v; %v", k.Completed, k.Failed, k.Resent, k.DetectedAfter, k.RecoveredAfter, k.Errors)
	if k.Failed != 0 || k.DetectedAfter > 7*sim.Millisecond || k.RecoveredAfter > 45*sim.Millisecond {
		t.Errorf("keepalive: failed %d, detected after %v, recovered after %v", k.Failed, k.DetectedAfter, k.RecoveredAfter)
	}
}
