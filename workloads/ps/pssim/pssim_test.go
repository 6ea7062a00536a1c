package pssim

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/faults"
	"github.com/besim/besim/report"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/ps"
)

func psCfg() Config {
	return Config{Cluster: simhost.DefaultConfig(2), Config: ps.Config{Servers: 8, Shards: 64, Rankers: 2, Trainers: 2,
		FanOut: 8, Warmup: 300 * sim.Microsecond, Measure: sim.Millisecond, Seed: 1}}
}

func TestPSCluster(t *testing.T) {
	r, err := Run(psCfg())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("user reqs %d (p50 %d us, p99 %d us), sub p50 %d us, iterations %d (p50 %d us), clients %.2f Gbps, servers %.2f Gbps, pfc %d, events %d",
		r.UserRequests, r.UserLatency.P50()/1000, r.UserLatency.P99()/1000, r.SubLatency.P50()/1000, r.Iterations,
		r.IterTime.P50()/1000, r.ClientGbps, r.ServerGbps, r.Report.Totals.PFCFramesTx, r.Events)
	switch {
	case len(r.Errors) > 0:
		t.Fatal(r.Errors)
	case r.UserRequests == 0 || r.UserLatency.Count() == 0:
		t.Error("no ranker requests completed")
	case r.Iterations == 0 || r.IterTime.Count() == 0:
		t.Error("no trainer iterations completed")
	case r.ServerGbps <= 0:
		t.Error("no pushes reached the servers")
	case r.UserLatency.P50() < r.SubLatency.P50():
		t.Error("a fan-out request cannot finish before its median sub-request")
	case r.IterTime.P50() < int64(psCfg().Compute/sim.Nanosecond):
		t.Error("an iteration includes the compute time")
	}
	r2, err := Run(psCfg())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual([]any{r.UserRequests, r.Iterations, r.Events, r.ClientGbps, r.UserLatency.P99()},
		[]any{r2.UserRequests, r2.Iterations, r2.Events, r2.ClientGbps, r2.UserLatency.P99()}) {
		t.Error("two runs differ")
	}
	c := psCfg()
	c.RankerRate = 20_000
	c.Trainers = 0
	r3, err := Run(c)
	if err != nil || r3.UserRequests == 0 || len(r3.Errors) > 0 {
		t.Errorf("open loop: %v, %d requests, %v", err, r3.UserRequests, r3.Errors)
	}
}

// The same PS workload over the kernel TCP model: every request
// completes, the run is deterministic, and at matched (open-loop) load the
// CPU classes come out the way the paper's Table 5 attributes them:
// ByteExpress spends no system or softirq time (it polls from user space),
// TCP spends both, and its total is higher.
func TestPSOverTCP(t *testing.T) {
	c := psCfg()
	c.Transport = ps.TCP
	r, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case len(r.Errors) > 0:
		t.Fatal(r.Errors)
	case r.UserRequests == 0 || r.Iterations == 0 || r.ServerGbps <= 0:
		t.Fatalf("tcp: %d user requests, %d iterations, %.2f Gbps of pushes", r.UserRequests, r.Iterations, r.ServerGbps)
	case r.TCP == nil || r.TCP.TxSegments == 0:
		t.Fatal("no TCP statistics")
	}
	r2, _ := Run(c)
	if !reflect.DeepEqual([]any{r.UserRequests, r.Iterations, r.Events, r.CPU}, []any{r2.UserRequests, r2.Iterations, r2.Events, r2.CPU}) {
		t.Error("two TCP runs differ")
	}

	open := func(transport string) *Result {
		c := psCfg()
		c.Transport, c.RankerRate, c.Trainers, c.RankerOutstanding = transport, 20_000, 0, 64
		c.Measure = 5 * sim.Millisecond
		r, err := Run(c)
		if err != nil || len(r.Errors) > 0 {
			t.Fatalf("%s: %v %v", transport, err, r.Errors)
		}
		return r
	}
	be, tcp := open(ps.RDMA), open(ps.TCP)
	t.Logf("matched load: rdma %d requests, cpu %+v; tcp %d requests, cpu %+v, fetch p50 %d/%d us",
		be.UserRequests, be.CPU[0], tcp.UserRequests, tcp.CPU[0], be.SubLatency.P50()/1000, tcp.SubLatency.P50()/1000)
	// The arrivals are the same Poisson draws for both (same streams), so
	// the offered load matches by construction; both must serve it all
	// (no arrival finding every slot busy), and complete about as many in
	// the interval (they differ by what is in flight at its ends).
	if d := be.UserRequests - tcp.UserRequests; d*d*100 > be.UserRequests*be.UserRequests || be.UserDropped+tcp.UserDropped > 0 {
		t.Errorf("open-loop load not matched: rdma %d requests (%d dropped), tcp %d (%d dropped)", be.UserRequests, be.UserDropped, tcp.UserRequests, tcp.UserDropped)
	}
	for i, who := range []string{"clients", "servers"} {
		b, k := be.CPU[i], tcp.CPU[i]
		if b.Sys != 0 || b.Softirq != 0 || b.User <= 0 {
			t.Errorf("rdma %s: %+v, want user time only", who, b)
		}
		if k.Sys <= 0 || k.Softirq <= 0 || k.Total() <= b.Total() {
			t.Errorf("tcp %s: %+v, want system and softirq time and a total above rdma's %.2f%%", who, k, b.Total())
		}
	}
}

// A trainer's fetch (push) phase is the slowest of its sub-requests
// (pushes), all sent at the phase's start: with trainers only, the phases'
// maximum is the sub-requests' maximum, no phase is faster than the
// fastest sub-request, and there are between 1/TrainerShards and 1 phase
// per sub-request. With one server every phase is one sub-request, so the
// two histograms are the same. Over both transports.
func TestPSTrainerPhases(t *testing.T) {
	for _, tc := range []struct {
		name      string
		transport string
		servers   int
	}{{"rdma", ps.RDMA, 8}, {"tcp", ps.TCP, 8}, {"rdma one server", ps.RDMA, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			c := psCfg()
			c.Transport, c.Rankers, c.Trainers, c.Servers, c.TrainerShards = tc.transport, 0, 4, tc.servers, 8
			r, err := Run(c)
			if err != nil || len(r.Errors) > 0 {
				t.Fatalf("%v %v", err, r.Errors)
			}
			t.Logf("fetch phase p50/p99 %d/%d us (sub %d/%d), push phase %d/%d us (push %d/%d), %d iterations",
				r.FetchPhase.P50()/1000, r.FetchPhase.P99()/1000, r.SubLatency.P50()/1000, r.SubLatency.P99()/1000,
				r.PushPhase.P50()/1000, r.PushPhase.P99()/1000, r.PushLatency.P50()/1000, r.PushLatency.P99()/1000, r.Iterations)
			for _, p := range []struct {
				name       string
				phase, sub interface {
					Count() int64
					Min() int64
					Max() int64
					P50() int64
					P99() int64
				}
			}{{"fetch", r.FetchPhase, r.SubLatency}, {"push", r.PushPhase, r.PushLatency}} {
				ph, sub := p.phase, p.sub
				switch {
				case ph.Count() == 0:
					t.Errorf("%s: no phases", p.name)
				case ph.Max() != sub.Max():
					t.Errorf("%s: slowest phase %d ns, slowest sub-request %d ns", p.name, ph.Max(), sub.Max())
				case ph.Min() < sub.Min():
					t.Errorf("%s: a phase (%d ns) faster than every sub-request (%d ns)", p.name, ph.Min(), sub.Min())
				case ph.Count() > sub.Count() || ph.Count()*int64(c.TrainerShards) < sub.Count():
					t.Errorf("%s: %d phases for %d sub-requests of at most %d servers", p.name, ph.Count(), sub.Count(), c.TrainerShards)
				case tc.servers == 1 && (ph.Count() != sub.Count() || ph.P50() != sub.P50() || ph.P99() != sub.P99()):
					t.Errorf("%s, one server: phases %d/%d/%d, sub-requests %d/%d/%d (count/p50/p99)", p.name,
						ph.Count(), ph.P50(), ph.P99(), sub.Count(), sub.P50(), sub.P99())
				}
			}
		})
	}
}

// The RDMA loss counters: a lossless run loses nothing, so it has no
// NAKs, timeouts or retransmissions; with 1% of a trainer's RoCE frames
// dropped, lost frames are revealed (NAKs) and sent again, every
// retransmission is counted, and the trainers still complete iterations.
func TestPSRDMALossCounters(t *testing.T) {
	c := psCfg()
	c.Rankers, c.Trainers = 0, 2
	c.Measure = 3 * sim.Millisecond
	clean, err := Run(c)
	if err != nil || len(clean.Errors) > 0 {
		t.Fatalf("%v %v", err, clean.Errors)
	}
	if clean.NAKs+clean.RCTimeouts+clean.Retransmits != 0 {
		t.Errorf("lossless run: %d NAKs, %d timeouts, %d retransmits", clean.NAKs, clean.RCTimeouts, clean.Retransmits)
	}
	c.Faults = []faults.Spec{{Kind: faults.Loss, At: 0, Host: 0, Switch: -1, Drop: 0.01, Prios: 1 << 3}}
	lossy, err := Run(c)
	if err != nil || len(lossy.Errors) > 0 {
		t.Fatalf("%v %v", err, lossy.Errors)
	}
	t.Logf("1%% loss on host 0: %d NAKs, %d timeouts, %d retransmits, %d iterations (lossless %d)",
		lossy.NAKs, lossy.RCTimeouts, lossy.Retransmits, lossy.Iterations, clean.Iterations)
	switch {
	case lossy.NAKs == 0:
		t.Error("no NAKs with 1% loss")
	case lossy.Retransmits < lossy.NAKs:
		t.Errorf("%d retransmits for %d NAKs: each NAK makes the requester send again", lossy.Retransmits, lossy.NAKs)
	case lossy.Iterations == 0:
		t.Error("no iterations completed under loss")
	}
}

// The RC ACK timeout sets the tail under loss: a lost frame that no later
// frame of its QP reveals waits 4.096 us x 2^t before it is sent again,
// so with timeouts in the run the slowest phase lasts at least that long,
// and a longer timeout makes the slowest phase slower.
func TestPSAckTimeoutTail(t *testing.T) {
	var slowest [2]int64
	for i, exp := range []uint8{8, 11} { // 1.05 ms, 8.4 ms
		c := psCfg()
		c.Rankers, c.Trainers = 0, 2
		c.Measure = 30 * sim.Millisecond
		c.Cluster.BE.AckTimeout = exp
		c.Faults = []faults.Spec{{Kind: faults.Loss, At: 0, Host: 0, Switch: -1, Drop: 0.02, Prios: 1 << 3}}
		r, err := Run(c)
		if err != nil || len(r.Errors) > 0 {
			t.Fatalf("%v %v", err, r.Errors)
		}
		timeout := int64(4096) << exp // ns
		slowest[i] = max(r.FetchPhase.Max(), r.PushPhase.Max())
		t.Logf("ack timeout %d (%d us): %d RC timeouts, %d NAKs, slowest phase %d us, %d iterations",
			exp, timeout/1000, r.RCTimeouts, r.NAKs, slowest[i]/1000, r.Iterations)
		if r.RCTimeouts == 0 {
			t.Fatalf("ack timeout %d: no RC timeout at 2%% loss", exp)
		}
		if slowest[i] < timeout {
			t.Errorf("ack timeout %d: slowest phase %d ns, below one timeout (%d ns)", exp, slowest[i], timeout)
		}
	}
	if slowest[1] <= slowest[0] {
		t.Errorf("slowest phase %d ns with the longer timeout, %d ns with the shorter", slowest[1], slowest[0])
	}
}

// What stalls counts at its age: when every client's RoCE traffic is
// black-holed 1 ms into a 5 ms interval, the user requests and iterations
// then in flight never complete, and they are in the histograms at their
// age at the end (over 4 ms, against well under 1 ms for one that
// completes), not left out as survivors only.
func TestPSStalledCountsAtAge(t *testing.T) {
	c := psCfg()
	c.Measure = 5 * sim.Millisecond
	at := sim.Millisecond
	for h := range c.Rankers + c.Trainers {
		c.Faults = append(c.Faults, faults.Spec{Kind: faults.Loss, At: at, Host: h, Switch: -1, Drop: 1, Prios: 1 << 3})
	}
	r, err := Run(c)
	if err != nil || len(r.Errors) > 0 {
		t.Fatalf("%v %v", err, r.Errors)
	}
	t.Logf("user requests %d recorded, %d completed, p50 %d us, max %d us; iterations %d recorded, %d completed, p50 %d us, max %d us",
		r.UserLatency.Count(), r.UserRequests, r.UserLatency.P50()/1000, r.UserLatency.Max()/1000,
		r.IterTime.Count(), r.Iterations, r.IterTime.P50()/1000, r.IterTime.Max()/1000)
	stalled := int64((c.Measure - at) / sim.Nanosecond)
	for _, h := range []struct {
		name     string
		p50, max int64
	}{{"user requests", r.UserLatency.P50(), r.UserLatency.Max()}, {"iterations", r.IterTime.P50(), r.IterTime.Max()}} {
		if h.p50 >= stalled || h.max < stalled {
			t.Errorf("%s: median %d ns, slowest %d ns; want the completed ones under %d ns and the stalled ones at least that old", h.name, h.p50, h.max, stalled)
		}
	}
}

// rpcCheck is the RPC layer's bookkeeping: every call is answered, failed
// or still outstanding at the end, and the machine saw exactly one outcome
// per request (its failures are the layer's).
func rpcCheck(t *testing.T, r *Result) {
	t.Helper()
	q := r.RPC
	if q == nil {
		t.Fatal("no RPC statistics with the RPC layer on")
	}
	calls, done := q.Calls[0]+q.Calls[1], q.Answered[0]+q.Answered[1]+q.Failed[0]+q.Failed[1]
	if calls != done+q.Outstanding {
		t.Errorf("%d calls, %d answered or failed, %d outstanding: a call is lost", calls, done, q.Outstanding)
	}
	if f := q.Failed[0] + q.Failed[1]; f != r.FailedRequests {
		t.Errorf("the layer failed %d calls, the machine saw %d failures", f, r.FailedRequests)
	}
	if q.Timeouts < q.Retries {
		t.Errorf("%d retries for %d timeouts: every retry follows a timeout", q.Retries, q.Timeouts)
	}
}

// With the RPC layer on a clean fabric (no loss, Tr far above every
// latency) the clients do the same work as without it: no timeout, retry,
// failure or late answer, every call accounted, and the same order of
// user requests and iterations completed (each message is 24 bytes
// longer, so the counts may differ a little; they are the same requests,
// drawn from the same streams).
func TestPSRPCClean(t *testing.T) {
	c := psCfg()
	off, err := Run(c)
	if err != nil || len(off.Errors) > 0 {
		t.Fatalf("%v %v", err, off.Errors)
	}
	if off.RPC != nil {
		t.Fatal("RPC statistics without the RPC layer")
	}
	rc := rpc.DefaultConfig()
	c.RPC = &rc
	on, err := Run(c)
	if err != nil || len(on.Errors) > 0 {
		t.Fatalf("%v %v", err, on.Errors)
	}
	q := on.RPC
	t.Logf("rpc off: %d user requests, %d iterations; on: %d, %d (%d calls)", off.UserRequests, off.Iterations, on.UserRequests, on.Iterations, q.Calls[0]+q.Calls[1])
	rpcCheck(t, on)
	if q.Retries+q.Timeouts+q.Resent+q.Failed[0]+q.Failed[1]+q.Stale[0]+q.Stale[1] != 0 || on.UsersFailed != 0 {
		t.Errorf("clean fabric: %+v, %d user requests failed", *q, on.UsersFailed)
	}
	for _, p := range [][2]int64{{off.UserRequests, on.UserRequests}, {off.Iterations, on.Iterations}} {
		if p[1] == 0 || 10*abs(p[0]-p[1]) > p[0] {
			t.Errorf("rpc off %d, on %d completed: more than 10%% apart", p[0], p[1])
		}
	}
	c.Transport = ps.TCP
	if _, err := Run(c); err == nil || !strings.Contains(err.Error(), "needs transport rdma") {
		t.Errorf("rpc over tcp: %v", err)
	}
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// With 2% of one client's RoCE frames dropped, a lost frame that no later
// frame of its QP reveals waits for the RC ACK timeout (67 ms at the
// default exponent 14); the RPC layer's Tr (1 ms here, so the test is
// short) expires first: fetches are retried (the retry's frames reveal the
// loss, and the original's answer then comes late and is dropped as
// stale), pushes, which are not idempotent, fail. Every call is answered,
// failed or outstanding, and the machine sees one outcome per request.
func TestPSRPCRetriesUnderLoss(t *testing.T) {
	c := psCfg()
	c.Measure = 10 * sim.Millisecond
	rc := rpc.DefaultConfig()
	rc.RequestTimeout = time.Millisecond
	c.RPC = &rc
	c.Faults = []faults.Spec{{Kind: faults.Loss, At: 0, Host: 0, Switch: -1, Drop: 0.02, Prios: 1 << 3}}
	r, err := Run(c)
	if err != nil || len(r.Errors) > 0 {
		t.Fatalf("%v %v", err, r.Errors)
	}
	q := r.RPC
	t.Logf("2%% loss on host 0: %+v; %d user requests (%d failed), %d iterations, %d RC timeouts, %d NAKs", *q, r.UserRequests, r.UsersFailed, r.Iterations, r.RCTimeouts, r.NAKs)
	rpcCheck(t, r)
	if q.Retries == 0 || q.Timeouts == 0 || q.Resent < q.Retries {
		t.Errorf("no RPC retries under loss (%d timeouts, %d retries, %d re-sent)", q.Timeouts, q.Retries, q.Resent)
	}
	if r.UserRequests == 0 || r.Iterations == 0 {
		t.Errorf("%d user requests, %d iterations completed under loss", r.UserRequests, r.Iterations)
	}
}

// Config.Series: latency windows over the measured interval and
// registered-memory samples from the start of the run, reported as
// series; none without it; the same run twice gives the same series; the
// memory series start at the connection setup and never exceed the pools'
// peak footprint.
func TestPSSeries(t *testing.T) {
	plain, err := Run(psCfg())
	if err != nil {
		t.Fatal(err)
	}
	if s := Series(plain); len(s) != 0 || plain.Window != 0 || len(plain.Memory) != 0 {
		t.Fatalf("without Series: %d series, window %v, %d memory samples", len(s), plain.Window, len(plain.Memory))
	}
	c := psCfg()
	c.Series = 100 * sim.Microsecond
	r, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.UserRequests != plain.UserRequests || r.SubLatency.P99() != plain.SubLatency.P99() || r.ClientGbps != plain.ClientGbps ||
		r.Events-uint64(len(r.Memory)-1) != plain.Events { // one sampler event per sample after the first
		t.Errorf("recording series changed the run: %d/%d user requests, fetch P99 %d/%d, %d events (%d samples)/%d events",
			r.UserRequests, plain.UserRequests, r.SubLatency.P99(), plain.SubLatency.P99(), r.Events, len(r.Memory), plain.Events)
	}
	ss := Series(r)
	byName := map[string]report.Series{}
	for _, s := range ss {
		byName[s.Name] = s
	}
	n := int(c.Measure / c.Series)
	for _, name := range []string{"user/mean", "user/p99", "fetch/mean", "fetch/p99"} {
		s, ok := byName[name]
		if !ok || len(s.T) != n {
			t.Fatalf("%s: %d windows, want %d", name, len(s.T), n)
		}
		if got, want := s.T[0], r.From.Seconds(); got != want {
			t.Errorf("%s starts at %g s, want the interval's start %g s", name, got, want)
		}
	}
	var windows int64
	for _, h := range r.FetchWin {
		windows += h.Count()
	}
	if windows != r.SubLatency.Count() {
		t.Errorf("fetch windows hold %d requests, the fetch histogram %d", windows, r.SubLatency.Count())
	}
	mean, p99 := byName["fetch/mean"], byName["fetch/p99"]
	for i := range mean.V {
		if !math.IsNaN(mean.V[i]) && mean.V[i] > p99.V[i]*1.01 {
			t.Errorf("window %d: fetch mean %g us above its P99 %g us", i, mean.V[i], p99.V[i])
		}
	}
	reg := byName["memory/client0/registered"]
	if len(reg.T) < n || reg.T[0] != 0 || reg.V[0] != 0 {
		t.Fatalf("client 0's registered memory: %d samples from %v s at %v bytes; want at least %d, from 0 s at 0 bytes (before setup)", len(reg.T), reg.T[0], reg.V[0], n)
	}
	last := reg.V[len(reg.V)-1]
	if last <= 0 || last > float64(r.Memory[len(r.Memory)-1].Client.PeakFootprint) {
		t.Errorf("client 0's registered memory ends at %g bytes (peak %d)", last, r.Memory[len(r.Memory)-1].Client.PeakFootprint)
	}
	if all := byName["memory/all/registered"]; all.V[len(all.V)-1] < last {
		t.Errorf("all hosts' registered memory %g below client 0's %g", all.V[len(all.V)-1], last)
	}
	r2, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fmt.Sprint(Series(r2)), fmt.Sprint(ss)) {
		t.Error("two runs give different series")
	}
}

// firstServer is the fabric host index of ps server 0 under c: the
// clients fill whole leaves from host 0, the servers start on the next.
func firstServer(c Config) int {
	d := c.Config
	d.Defaults()
	hpl := d.HostsPerLeaf
	return (d.Rankers + d.Trainers + hpl - 1) / hpl * hpl
}

// TestPSRPCReplicaTakesOver: ps server 0 is black-holed (every frame at
// its host port dropped, both ways) from the start of the measured
// interval. With the RPC layer and two replicas per shard group, the
// calls of group 0 time out after Tr, are retried (every time: retry
// probability 1), walk the ladder (two path changes to server 0, which
// cannot help: every path ends at its port) and are answered by the
// group's replica, server 1; the result reports the timeouts and retries.
// With one replica the same fault leaves group 0 nowhere to go: its calls
// fail and no call is answered by a replica.
func TestPSRPCReplicaTakesOver(t *testing.T) {
	c := psCfg()
	c.Measure = 8 * sim.Millisecond
	rc := rpc.DefaultConfig()
	rc.RequestTimeout = time.Millisecond
	rc.RetryProb, rc.MaxAttempts = 1, 4
	c.RPC = &rc
	c.Faults = []faults.Spec{{Kind: faults.Loss, At: 0, Host: firstServer(c), Switch: -1, Drop: 1}}
	tr := simhost.SimTime(rc.RequestTimeout)
	run := func(replicas int) *Result {
		t.Helper()
		c := c
		c.Replicas = replicas
		r, err := Run(c)
		if err != nil || len(r.Errors) > 0 {
			t.Fatalf("replicas %d: %v %v", replicas, err, r.Errors)
		}
		q := r.RPC
		t.Logf("replicas %d: %d calls, %d timeouts, %d retries, %d path changes, failed %v, by a replica %v, retried %v (first answer after %v); %d user requests (%d failed), %d iterations",
			replicas, q.Calls[0]+q.Calls[1], q.Timeouts, q.Retries, q.PathChanges, q.Failed, q.ByReplica, q.Retried, q.RetriedWait[0], r.UserRequests, r.UsersFailed, r.Iterations)
		rpcCheck(t, r)
		return r
	}
	two := run(2)
	q := two.RPC
	if q.Timeouts == 0 || q.Retries == 0 || q.PathChanges == 0 {
		t.Errorf("replicas 2: %d timeouts, %d retries, %d path changes: the black hole was not detected by Tr and walked down the ladder", q.Timeouts, q.Retries, q.PathChanges)
	}
	if q.ByReplica[0] == 0 || q.Retried[0] == 0 {
		t.Errorf("replicas 2: %d fetches answered by a replica, %d after a retry: server 1 did not take over group 0", q.ByReplica[0], q.Retried[0])
	}
	if q.RetriedWait[0] < tr {
		t.Errorf("replicas 2: a retried fetch was answered %v after it was sent, before Tr %v", q.RetriedWait[0], tr)
	}
	// The result reports them.
	var res report.Result
	cc := c
	cc.Replicas = 2
	Reduce(&res, &cc, two)
	for _, m := range []string{"rpc/timeouts", "rpc/retries", "rpc/path_changes", "rpc/replica_answers"} {
		if v, ok := res.Metric(m); !ok || v.Value <= 0 {
			t.Errorf("replicas 2: metric %s = %v (reported %v), want > 0", m, v.Value, ok)
		}
	}

	one := run(1)
	q1 := one.RPC
	if q1.ByReplica[0]+q1.ByReplica[1] != 0 {
		t.Errorf("replicas 1: %v calls answered by a replica that does not exist", q1.ByReplica)
	}
	if q1.Failed[0] <= q.Failed[0] || one.UsersFailed <= two.UsersFailed {
		t.Errorf("replicas 1: %d fetches and %d user requests failed, replicas 2: %d and %d; the replica should save group 0's fetches",
			q1.Failed[0], one.UsersFailed, q.Failed[0], two.UsersFailed)
	}
}

// TestPSRPCPathChange: the RoCE frames leaving the clients' leaf towards
// spine 0 are black-holed (a loss fault on the leaf's uplink port to spine
// 0, frames out). The calls whose connections the fabric pins to that
// spine time out; the ladder's first step dials the same server on the
// next path (byteexpress Endpoint.DialPath), which leaves the leaf on the
// other spine, and every retried fetch is answered there by the same
// server: no replica exists (replicas 1), nothing fails but the pushes
// that were on the dead path (not retried). With the layer told of one
// path only, the ladder skips the step, RDMA to the servers behind the
// dead spine is given up, and their fetches fail.
func TestPSRPCPathChange(t *testing.T) {
	c := psCfg()
	c.Spines = 2
	c.Measure = 6 * sim.Millisecond
	rc := rpc.DefaultConfig()
	rc.RequestTimeout = time.Millisecond
	rc.RetryProb, rc.MaxAttempts = 1, 3
	c.RPC = &rc
	d := c.Config
	d.Defaults()
	// Switch 0 is leaf 0 (the leaves come first); its ports are its
	// hosts' then one uplink per spine.
	c.Faults = []faults.Spec{{Kind: faults.Loss, At: 0, Switch: 0, Port: d.HostsPerLeaf, Drop: 1, Dir: faults.Out}}
	r, err := Run(c)
	if err != nil || len(r.Errors) > 0 {
		t.Fatalf("%v %v", err, r.Errors)
	}
	q := r.RPC
	t.Logf("two paths: %d timeouts, %d retries, %d path changes (%d skips), failed %v, retried %v; %d user requests (%d failed)",
		q.Timeouts, q.Retries, q.PathChanges, q.PathSkips, q.Failed, q.Retried, r.UserRequests, r.UsersFailed)
	rpcCheck(t, r)
	if q.Paths != 2 || q.Timeouts == 0 || q.PathChanges == 0 || q.PathSkips != 0 || q.Retried[0] == 0 {
		t.Errorf("two paths: %d paths, %d timeouts, %d path changes, %d skips, %d fetches answered after a retry: want the path change to move the stuck connections", q.Paths, q.Timeouts, q.PathChanges, q.PathSkips, q.Retried[0])
	}
	if q.Failed[0] != 0 || r.UsersFailed != 0 {
		t.Errorf("two paths: %d fetches failed (%d user requests): the path change should recover every one", q.Failed[0], r.UsersFailed)
	}

	one := rc
	one.Paths = 1
	c.RPC = &one
	s, err := Run(c)
	if err != nil || len(s.Errors) > 0 {
		t.Fatalf("%v %v", err, s.Errors)
	}
	qs := s.RPC
	t.Logf("one path: %d timeouts, %d path changes (%d skips), failed %v; %d user requests (%d failed)", qs.Timeouts, qs.PathChanges, qs.PathSkips, qs.Failed, s.UserRequests, s.UsersFailed)
	if qs.Paths != 1 || qs.PathChanges != 0 || qs.PathSkips == 0 || qs.Failed[0] == 0 {
		t.Errorf("one path: %d paths, %d path changes, %d skips, %d fetches failed: want the step skipped and the stuck fetches failed", qs.Paths, qs.PathChanges, qs.PathSkips, qs.Failed[0])
	}
}
