package failoversim

import (
	"testing"
	"time"

	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/faults"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/failover"
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
	r, err := Run(Config{Config: failover.Config{Seed: 1, RPC: rc}})
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
	r2, _ := Run(Config{Config: failover.Config{Seed: 1, RPC: rc}})
	if r2.Completed != r.Completed || r2.RecoveredAfter != r.RecoveredAfter {
		t.Error("not deterministic")
	}
	// With the defaults, the fetches the coin declines fail, and only those.
	d, err := Run(Config{Config: failover.Config{Seed: 1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("defaults: started %d completed %d failed %d retries %d", d.Started, d.Completed, d.Failed, d.Retries)
	if d.Completed+d.Failed+d.Stranded != d.Started || d.Failed*100 > d.Started {
		t.Errorf("defaults: started %d, completed %d, failed %d, stranded %d", d.Started, d.Completed, d.Failed, d.Stranded)
	}

	// With a fast keepalive (1 ms, 5 ms timeout) the engine error arrives
	// well before Tr. The ladder's first two steps are path changes to the
	// same (dead) server: each dials a new engine, whose connect misses Tc
	// (10 ms), so the replica takes over after about 5 ms + 2 Tc.
	var ka simhost.Config
	ka.BE.KeepaliveInterval, ka.BE.KeepaliveTimeout = time.Millisecond, 5*time.Millisecond
	k, err := Run(Config{Config: failover.Config{Seed: 1, RPC: rc}, Cluster: ka})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("keepalive 1ms/5ms: completed %d failed %d resent %d; detected after %v, recovered after %v; %v", k.Completed, k.Failed, k.Resent, k.DetectedAfter, k.RecoveredAfter, k.Errors)
	if k.Failed != 0 || k.DetectedAfter > 7*sim.Millisecond || k.RecoveredAfter > 45*sim.Millisecond {
		t.Errorf("keepalive: failed %d, detected after %v, recovered after %v", k.Failed, k.DetectedAfter, k.RecoveredAfter)
	}
}

// Every fault kind the failover experiment can take, with what recovery
// must look like (times after the fault, virtual).
func TestFailoverFaults(t *testing.T) {
	rc := rpc.DefaultConfig()
	rc.RetryProb, rc.MaxAttempts = 1, 5
	const serverA0 = 4 // L = max(4 shards, 2 clients): replica A of shard 0
	at := 5 * sim.Millisecond
	run := func(t *testing.T, cfg Config) *Result {
		t.Helper()
		cfg.Seed, cfg.RPC = 1, rc
		r, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("started %d completed %d failed %d retries %d resent %d; detected %v, recovered %v; base %.0f/ms, rate back after %v; %v",
			r.Started, r.Completed, r.Failed, r.Retries, r.Resent, r.DetectedAfter, r.RecoveredAfter, r.BaseRate, r.RateRecoveredAfter, r.Faults)
		if r.Failed != 0 || r.Completed+r.Stranded != r.Started {
			t.Errorf("failed %d (%v); started %d = completed %d + stranded %d?", r.Failed, r.Errors, r.Started, r.Completed, r.Stranded)
		}
		return r
	}
	t.Run("server link down", func(t *testing.T) {
		r := run(t, Config{Faults: []faults.Spec{{Kind: faults.LinkDown, At: at, Host: serverA0, Switch: -1}}})
		if r.DetectedAfter <= 0 || r.DetectedAfter > 41*sim.Millisecond || r.RecoveredAfter < r.DetectedAfter || r.RecoveredAfter > 130*sim.Millisecond {
			t.Errorf("detected after %v, recovered after %v", r.DetectedAfter, r.RecoveredAfter)
		}
	})
	t.Run("link flap", func(t *testing.T) {
		// Down 2 ms every 10 ms, 3 times. A lost frame waits for the RC
		// ACK timeout (4.096 us x 2^14, 67 ms), longer than Tr, so the RPC
		// layer times out first and retries: the rate is back about one Tr
		// after the first flap.
		r := run(t, Config{Config: failover.Config{Run: 60 * sim.Millisecond}, Faults: []faults.Spec{{Kind: faults.LinkFlap, At: at, Host: serverA0, Switch: -1,
			Duration: 2 * sim.Millisecond, Period: 10 * sim.Millisecond, Count: 3}}})
		if len(r.Faults) != 6 || r.RateRecoveredAfter < 40*sim.Millisecond || r.RateRecoveredAfter > 50*sim.Millisecond {
			t.Errorf("%d fault steps (want 6), rate recovered after %v", len(r.Faults), r.RateRecoveredAfter)
		}
	})
	t.Run("qp error at a client", func(t *testing.T) {
		// The client's own QPs fail: its engine reports the error at once
		// and the RPC layer re-sends the idempotent fetches.
		r := run(t, Config{Config: failover.Config{Run: 60 * sim.Millisecond}, Faults: []faults.Spec{{Kind: faults.QPError, At: at, Host: 0, Switch: -1}}})
		if r.DetectedAfter <= 0 || r.DetectedAfter > sim.Millisecond || r.Resent == 0 {
			t.Errorf("QP error: detected after %v (want an engine error at once), %d re-sent", r.DetectedAfter, r.Resent)
		}
	})
	t.Run("qp error at a server", func(t *testing.T) {
		// A QP in the error state drops what arrives, so the clients learn
		// of a server's QP error only by Tr. Their path change dials a new
		// engine on the next path, a fresh QP pair at the server too, so
		// the fetches are answered by the same server right after that Tr.
		r := run(t, Config{Config: failover.Config{Run: 150 * sim.Millisecond}, Faults: []faults.Spec{{Kind: faults.QPError, At: at, Host: serverA0, Switch: -1}}})
		if r.DetectedAfter < 39*sim.Millisecond || r.DetectedAfter > 41*sim.Millisecond || r.RecoveredAfter > r.DetectedAfter+5*sim.Millisecond || r.PathChanges == 0 {
			t.Errorf("detected after %v, recovered after %v, %d path changes; want about Tr, then a path change recovering at once", r.DetectedAfter, r.RecoveredAfter, r.PathChanges)
		}
		if r.LastServed[serverA0] < r.RecoveredAfter {
			t.Errorf("server %d last served at %v: the path change should keep its fetches there", serverA0, r.LastServed[serverA0])
		}
	})
	t.Run("lossy link", func(t *testing.T) {
		// 5% loss on a server's link for 20 ms. A lost last frame of a
		// message has no successor to draw a NAK, so it waits for the RC
		// ACK timeout (67 ms); Tr fires first and moves that server's
		// fetches to the replica; fetches that still go to it (path change
		// first) wait until its QPs' timers fire and go-back-N resumes.
		r := run(t, Config{Config: failover.Config{Run: 150 * sim.Millisecond}, Faults: []faults.Spec{{Kind: faults.Loss, At: at, Host: serverA0, Switch: -1,
			Drop: 0.04, Corrupt: 0.01, Duration: 20 * sim.Millisecond}}})
		if r.DetectedAfter <= 0 || r.RateRecoveredAfter <= 0 || r.RateRecoveredAfter > 140*sim.Millisecond {
			t.Errorf("detected after %v, rate back after %v", r.DetectedAfter, r.RateRecoveredAfter)
		}
	})
	t.Run("pfc storm", func(t *testing.T) {
		// Client 0's NIC asserts pause on the RoCE priority for good. Its
		// fetches fail (its own NIC is the broken one), but the storm stays
		// local: receive credits and the window bound what the servers
		// have queued for host 0 below the leaf's XOFF, so no pause
		// spreads and client 1 keeps its share throughout. (Storms that do
		// spread, and the watchdog that contains them, are in package
		// faults' tests.)
		storm := []faults.Spec{{Kind: faults.PFCStorm, At: at, Host: 0, Switch: -1, Prio: 3}}
		cfg := Config{Config: failover.Config{Run: 250 * sim.Millisecond, Outstanding: 64, Response: 64 << 10, Seed: 1, RPC: rc}, Faults: storm}
		r, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		a, b := int((at+10*sim.Millisecond)/r.Bin), len(r.Rate)
		low := r.Rate[a]
		for _, v := range r.Rate[a:b] {
			low = min(low, v)
		}
		t.Logf("base %.0f/ms; lowest bin during the storm %d/ms; %d fetches failed: %v", r.BaseRate, low, r.Failed, r.Faults)
		if float64(low) < 0.4*r.BaseRate || r.Failed == 0 || r.Failed > 3*64 {
			t.Errorf("storm: lowest rate %d/ms of %.0f, %d failed; want client 1's half throughout and only client 0's fetches failing (64 slots, each failing at most a timeout and a refused call or two)", low, r.BaseRate, r.Failed)
		}
	})
}

// RDMA disabled on a path: client 0's ToR port black-holes the RoCE
// priority (a loss fault on priority 3 only). Its fetches time out, the
// ladder walks both replicas' paths, and the RPC layer falls back to TCP
// (priority 0, untouched): the rate comes back. Without a TCP transport
// client 0's fetches fail.
func TestFailoverTCPFallback(t *testing.T) {
	rc := rpc.DefaultConfig()
	rc.RetryProb, rc.MaxAttempts = 1, 8
	black := []faults.Spec{{Kind: faults.Loss, At: 5 * sim.Millisecond, Host: 0, Switch: -1, Drop: 1, Prios: 1 << 3}}
	r, err := Run(Config{Config: failover.Config{Seed: 1, RPC: rc, TCPFallback: true, Run: 700 * sim.Millisecond}, Faults: black})
	if err != nil {
		t.Fatal(err)
	}
	// Client 1 keeps its half throughout. Each of client 0's shards walks
	// the ladder (6 Tr) on its own, and only when a fetch goes to it, while
	// its 4 fetch slots sit on whichever shard is still on the black hole:
	// the first fetch over TCP is answered after 6 Tr, the last shard
	// reaches TCP later. Then the total is back near the RDMA rate, a little
	// lower (interrupt moderation on both ends, system calls).
	var late int
	for _, v := range r.Rate[len(r.Rate)-100:] {
		late += v
	}
	rate := float64(late) / 100
	t.Logf("fallback: completed %d failed %d retries %d tcp sends %d; detected %v, first retried fetch answered %v; base %.0f/ms, last 100 ms %.0f/ms",
		r.Completed, r.Failed, r.Retries, r.TCPSends, r.DetectedAfter, r.RecoveredAfter, r.BaseRate, rate)
	if r.Failed != 0 || r.TCPSends == 0 || r.RecoveredAfter < 6*40*sim.Millisecond || r.RecoveredAfter > 250*sim.Millisecond || rate < 0.8*r.BaseRate {
		t.Errorf("fallback: %d failed (%v), %d TCP sends, first answer over TCP after %v (want 6 Tr), rate in the last 100 ms %.0f/ms of %.0f",
			r.Failed, r.Errors, r.TCPSends, r.RecoveredAfter, rate, r.BaseRate)
	}
	n, err := Run(Config{Config: failover.Config{Seed: 1, RPC: rc, Run: 300 * sim.Millisecond}, Faults: black})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("no fallback: completed %d failed %d, rate back after %v", n.Completed, n.Failed, n.RateRecoveredAfter)
	if n.Failed == 0 || n.RateRecoveredAfter > 0 {
		t.Errorf("without TCP: %d failed, rate back after %v; want failures and no recovery", n.Failed, n.RateRecoveredAfter)
	}
}

// A crashed server restarts as a fresh machine and serves again: replica A
// of shard 0 crashes at 5 ms and comes back at 20 ms; replica B crashes at
// 200 ms, so from then on shard 0's fetches must reach the restarted A
// (the clients' old engines to it died by keepalive; they dial new ones,
// and the RPC layer's probe takes A back from RDMA-down).
func TestFailoverRestart(t *testing.T) {
	// A destination found dead is marked RDMA-down and probed again only
	// after ProbeInterval (30 s by default); 50 ms lets the test see the
	// restarted server taken back.
	rc := rpc.DefaultConfig()
	rc.RetryProb, rc.MaxAttempts, rc.ProbeInterval = 1, 8, 50*time.Millisecond
	var ka simhost.Config
	ka.BE.KeepaliveInterval, ka.BE.KeepaliveTimeout = 10*time.Millisecond, 50*time.Millisecond
	const a0, b0 = 4, 8 // L = 4: replicas A and B of shard 0
	r, err := Run(Config{Config: failover.Config{Seed: 1, RPC: rc, Run: 500 * sim.Millisecond}, Cluster: ka, Faults: []faults.Spec{
		{Kind: faults.HostCrash, At: 5 * sim.Millisecond, Host: a0, Switch: -1, Duration: 15 * sim.Millisecond},
		{Kind: faults.HostCrash, At: 200 * sim.Millisecond, Host: b0, Switch: -1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started %d completed %d failed %d retries %d resent %d; detected %v, recovered %v; %v; errors %v",
		r.Started, r.Completed, r.Failed, r.Retries, r.Resent, r.DetectedAfter, r.RecoveredAfter, r.Faults, r.Errors)
	if len(r.Faults) != 3 {
		t.Fatalf("fault log %v: want crash, restart, crash", r.Faults)
	}
	if r.Failed != 0 || r.Completed+r.Stranded != r.Started {
		t.Errorf("%d fetches failed (%v); started %d, completed %d, stranded %d", r.Failed, r.Errors, r.Started, r.Completed, r.Stranded)
	}
	// After B's crash, shard 0 is only on the restarted A: the rate in the
	// last 100 ms must be back to (nearly) the rate before any fault.
	var late int
	for _, v := range r.Rate[400:] {
		late += v
	}
	if got := float64(late) / 100; got < 0.9*r.BaseRate {
		t.Errorf("rate in the last 100 ms %.0f/ms, before the faults %.0f/ms: shard 0 did not come back on the restarted server", got, r.BaseRate)
	}
}

// The quarantine fills and drains in a cluster. The paper's limits (more
// than 30 connection or 50 request failures in 5 minutes) need minutes of
// virtual time, so they are scaled down here: more than 5 request
// failures in 150 ms (a crash costs each client 8 here). Replica A of shard 0 crashes at 5 ms and restarts
// at 60 ms. Every client's fetches to it time out (up to Outstanding at
// once, each a request failure charged to A) while the ladder walks two
// path changes: A trips every client's limit, shard 0 is served by B, and
// A is released once its failures slide out of the window. Replica B then
// crashes at 400 ms; shard 0 can only be served by the released A, and no
// fetch fails.
func TestFailoverQuarantine(t *testing.T) {
	rc := rpc.DefaultConfig()
	rc.RetryProb, rc.MaxAttempts = 1, 8
	rc.Window, rc.MaxReqFailures = 150*time.Millisecond, 5
	rc.ProbeInterval = 50 * time.Millisecond
	// As in TestFailoverRestart, keepalive retires the clients' engines to
	// the crashed A, so that they dial the restarted A afresh.
	var ka simhost.Config
	ka.BE.KeepaliveInterval, ka.BE.KeepaliveTimeout = 10*time.Millisecond, 50*time.Millisecond
	const a0, b0 = 4, 8
	crash := []faults.Spec{
		{Kind: faults.HostCrash, At: 5 * sim.Millisecond, Host: a0, Switch: -1, Duration: 55 * sim.Millisecond},
		{Kind: faults.HostCrash, At: 400 * sim.Millisecond, Host: b0, Switch: -1},
	}
	r, err := Run(Config{Config: failover.Config{Seed: 1, RPC: rc, Outstanding: 8, Run: 700 * sim.Millisecond}, Cluster: ka, Faults: crash})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started %d completed %d failed %d retries %d resent %d; failures conn %d req %d; quarantine trips %d releases %d excluded at end %d; A served %d (last %v), B served %d (last %v); %v",
		r.Started, r.Completed, r.Failed, r.Retries, r.Resent, r.ConnFailures, r.ReqFailures, r.QuarantineTrips, r.QuarantineReleases, r.QuarantinedAtEnd,
		r.Served[a0], r.LastServed[a0], r.Served[b0], r.LastServed[b0], r.Errors)
	if r.Failed != 0 {
		t.Errorf("%d fetches failed: %v", r.Failed, r.Errors)
	}
	// Each of the 2 clients trips A's limit, and B's after its crash; every
	// trip is released within the window.
	if r.QuarantineTrips < 2 || r.QuarantineReleases != r.QuarantineTrips || r.QuarantinedAtEnd != 0 {
		t.Errorf("quarantine trips %d, releases %d, excluded at end %d: want every client to trip A and every trip released",
			r.QuarantineTrips, r.QuarantineReleases, r.QuarantinedAtEnd)
	}
	// After B's crash, shard 0 is A's again, to the end of the run.
	if r.LastServed[a0] < 690*sim.Millisecond || r.LastServed[b0] > 401*sim.Millisecond {
		t.Errorf("A last served at %v, B at %v: shard 0 did not return to the released replica", r.LastServed[a0], r.LastServed[b0])
	}
}

// TestFailoverPathChange: the RoCE direction from the clients' leaf to one
// spine black-holes (a loss fault on the leaf's uplink port, frames out).
// The fetches whose connections the fabric pinned to that spine time out
// (Tr); the ladder's first step dials the same server on the next path,
// which the fabric pins to the other spine, and they are answered there:
// no replica change, no TCP, every fetch completes about one Tr after the
// fault. With one spine a client has one path to each server, and the
// ladder skips the path change (counted) and moves on to the replica.
func TestFailoverPathChange(t *testing.T) {
	rc := rpc.DefaultConfig()
	rc.RetryProb, rc.MaxAttempts = 1, 5
	const (
		hpl      = 4 // hosts per leaf: L = max(4 shards, 2 clients)
		serverA0 = hpl
		leaf0    = 0   // switch index: the leaves come first
		uplink0  = hpl // leaf 0's port to spine 0: after its host ports
	)
	at := 5 * sim.Millisecond
	black := []faults.Spec{{Kind: faults.Loss, At: at, Switch: leaf0, Port: uplink0, Drop: 1, Dir: faults.Out}}
	r, err := Run(Config{Config: failover.Config{Seed: 1, RPC: rc, Spines: 2, Run: 150 * sim.Millisecond}, Faults: black})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("two spines: completed %d failed %d retries %d; path changes %d, skips %d, tcp %d; detected %v, recovered %v; served %v",
		r.Completed, r.Failed, r.Retries, r.PathChanges, r.PathSkips, r.TCPSends, r.DetectedAfter, r.RecoveredAfter, r.Served)
	if r.Failed != 0 || r.Retries == 0 || r.PathChanges == 0 || r.PathSkips != 0 || r.TCPSends != 0 {
		t.Errorf("two spines: %d failed (%v), %d retries, %d path changes, %d skips, %d TCP sends; want path changes to recover every fetch", r.Failed, r.Errors, r.Retries, r.PathChanges, r.PathSkips, r.TCPSends)
	}
	if r.DetectedAfter < 39*sim.Millisecond || r.RecoveredAfter > r.DetectedAfter+5*sim.Millisecond {
		t.Errorf("two spines: detected after %v, recovered after %v; want Tr, then an answer over the other spine at once", r.DetectedAfter, r.RecoveredAfter)
	}
	// Nothing moved to replica B: the replicas B (hosts 2 hpl..) serve
	// nothing, A keeps serving to the end.
	for i := 2 * hpl; i < 3*hpl; i++ {
		if r.Served[i] != 0 {
			t.Errorf("two spines: replica B host %d served %d fetches; the path change should have kept them on A", i, r.Served[i])
		}
	}
	if r.LastServed[serverA0] < r.RecoveredAfter {
		t.Errorf("two spines: server %d last served at %v", serverA0, r.LastServed[serverA0])
	}

	// One spine: the ladder skips the path change. A server crash is then
	// detected by Tr and its fetches go straight to the replica.
	one, err := Run(Config{Config: failover.Config{Seed: 1, RPC: rc, Spines: 1, Run: 150 * sim.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one spine, crash: completed %d failed %d; path changes %d, skips %d; detected %v, recovered %v",
		one.Completed, one.Failed, one.PathChanges, one.PathSkips, one.DetectedAfter, one.RecoveredAfter)
	if one.Failed != 0 || one.PathChanges != 0 || one.PathSkips == 0 || one.RecoveredAfter > one.DetectedAfter+5*sim.Millisecond {
		t.Errorf("one spine: %d failed, %d path changes, %d skips, recovered after %v (detected %v); want skips and the replica at once",
			one.Failed, one.PathChanges, one.PathSkips, one.RecoveredAfter, one.DetectedAfter)
	}
}
