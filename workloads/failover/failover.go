// Package failover is the application logic of the recovery experiment of
// paper §7.2, written once as a driven state machine: Shards shard groups,
// each replicated on two servers in different mini-pods; Clients keep
// Outstanding idempotent fetches in flight through byteexpress/rpc's
// Client, to random shards; the clients find a failed server by keepalive
// (an engine error) or by the request timeout Tr, and the RPC layer walks
// its ladder (path change, then the replica in the other mini-pod, then
// the TCP fallback).
//
// A runner builds each client's rpc.Client over its own transports (its
// Dialer) with NewPolicy, wraps it in a Client, and feeds the Client its
// start, the responses and engine errors it receives and its timer, with
// the time they happened (sim.Time since the run's start, virtual or
// wall-clock); the rpc.Client sends by itself through the Dialer. A
// server answers every fetch with ReplySize bytes that start with the
// request's header (EchoHeader). The package imports no simulator model:
// besim drives it in virtual time (package failoversim), berun in
// wall-clock time (berun/role).
package failover

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// Config is the workload, what both runners share.
//
// Host layout (the indices faults name, and the rpc.NodeIDs): clients are
// hosts 0..Clients-1; with L = Hosts() hosts per leaf, shard s's replica A
// is host L+s (leaf 1, mini-pod 1) and replica B host 2L+s (leaf 2,
// mini-pod 2).
type Config struct {
	Shards      int // default 4
	Clients     int // default 2
	Outstanding int // per client, default 4
	Response    int // fetch response bytes, default 16 KiB
	Request     int // fetch request bytes, default 64
	// HostsPerLeaf is L, at least max(Shards, Clients) (the default).
	HostsPerLeaf int
	// Spines is the spine switches of the simulated leaf-spine (0: the
	// runner's default); berun ignores it.
	Spines int
	// Warmup runs after setup, before the faults' clock starts. Default 0.
	Warmup sim.Time
	RPC    rpc.Config
	// KeepaliveInterval and KeepaliveTimeout are the core's keepalive
	// (§7.1) as the scenario says; negative interval: off; 0: the core's
	// defaults.
	KeepaliveInterval, KeepaliveTimeout time.Duration
	CrashAt                             sim.Time // default 5 ms after setup (when the runner has no faults)
	// TCPFallback gives the clients' RPC layer a TCP transport to fall
	// back to when RDMA stays unavailable (paper §7.2).
	TCPFallback bool
	Run         sim.Time // run after setup, default 150 ms
	Bin         sim.Time // completion-rate bin; default 1 ms
	Seed        uint64
}

// Prepare applies the defaults and checks the sizes.
func (c *Config) Prepare() error {
	if c.Shards == 0 {
		c.Shards = 4
	}
	if c.Clients == 0 {
		c.Clients = 2
	}
	if c.Outstanding == 0 {
		c.Outstanding = 4
	}
	if c.Response == 0 {
		c.Response = 16 << 10
	}
	if c.RPC.RequestTimeout == 0 {
		c.RPC = rpc.DefaultConfig()
	}
	if c.CrashAt == 0 {
		c.CrashAt = 5 * sim.Millisecond
	}
	if c.Bin == 0 {
		c.Bin = sim.Millisecond
	}
	if c.Run == 0 {
		c.Run = 150 * sim.Millisecond
	}
	if c.Shards < 1 || c.Clients < 1 || c.Outstanding < 1 || c.Response < rpc.HeaderSize {
		return errors.New("workloads: failover needs shards, clients, outstanding >= 1 and a response of at least the RPC header")
	}
	if c.Request == 0 {
		c.Request = 64
	}
	if c.HostsPerLeaf != 0 && c.HostsPerLeaf < max(c.Shards, c.Clients) {
		return fmt.Errorf("workloads: failover: %d hosts per leaf cannot hold %d shards or %d clients", c.HostsPerLeaf, c.Shards, c.Clients)
	}
	if c.Request < rpc.HeaderSize {
		return fmt.Errorf("workloads: failover: request %d B is below the %d-byte RPC header", c.Request, rpc.HeaderSize)
	}
	return nil
}

// Hosts is L, the hosts per leaf: max(Shards, Clients, HostsPerLeaf).
func (c *Config) Hosts() int { return max(c.Shards, c.Clients, c.HostsPerLeaf) }

// ReplicaA is the host of shard s's replica in mini-pod 1.
func (c *Config) ReplicaA(s int) int { return c.Hosts() + s }

// ReplicaB is the host of shard s's replica in mini-pod 2.
func (c *Config) ReplicaB(s int) int { return 2*c.Hosts() + s }

// Service is the shard map the clients' RPC layer walks: shard s on
// replicas A and B, node ids the host indices.
func (c *Config) Service() rpc.Service {
	svc := rpc.Service{Shards: make([][]rpc.Replica, c.Shards)}
	for s := range c.Shards {
		svc.Shards[s] = []rpc.Replica{{Node: rpc.NodeID(c.ReplicaA(s)), MiniPod: 1}, {Node: rpc.NodeID(c.ReplicaB(s)), MiniPod: 2}}
	}
	return svc
}

// ClientStream and RetryStream name client i's random streams (sim.Stream
// with the seed): the shards it draws, and its RPC layer's retry coin.
func ClientStream(i int) string { return fmt.Sprintf("failover/client%d", i) }

// RetryStream: see ClientStream.
func RetryStream(i int) string { return fmt.Sprintf("failover/retry%d", i) }

// NewPolicy is client i's RPC policy; the runner binds it to its
// transports with rpc.NewClient.
func NewPolicy(cfg *Config, i int) (*rpc.Policy, error) {
	return rpc.NewPolicy(cfg.RPC, cfg.Service(), 0, sim.Stream(cfg.Seed, RetryStream(i)))
}

// FromScenario translates the workload section of a failover scenario
// (the scenario's defaults already in): everything but the cluster, the
// TCP model and the faults, which are the runner's.
func FromScenario(s *scenarios.Scenario) (Config, error) {
	w := s.Workload
	rc := rpc.DefaultConfig()
	rc.ConnTimeout = CoreTime(w.RPC.ConnectTimeout.Time())
	rc.RequestTimeout = CoreTime(w.RPC.RequestTimeout.Time())
	rc.RetryProb, rc.MaxAttempts = w.RPC.RetryProb.Float64(), w.RPC.MaxAttempts
	rc.Window, rc.ProbeInterval = CoreTime(w.RPC.QuarantineWindow.Time()), CoreTime(w.RPC.ProbeInterval.Time())
	rc.MaxConnFailures, rc.MaxReqFailures = w.RPC.MaxConnFailures, w.RPC.MaxReqFailures
	cfg := Config{Shards: w.Shards, Clients: w.Clients, Outstanding: w.Outstanding,
		Response: int(w.Response.Size), Request: int(w.Request), HostsPerLeaf: w.HostsPerLeaf, Spines: w.Spines, Warmup: w.Warmup.Time(),
		RPC: rc, Run: s.Duration.Time(), Seed: s.Seed, TCPFallback: w.TCPFallback}
	if k := w.Keepalive; k != nil {
		cfg.KeepaliveInterval, cfg.KeepaliveTimeout = CoreTime(k.Interval.Time()), CoreTime(k.Timeout.Time())
		if k.Interval == 0 {
			cfg.KeepaliveInterval = -1 // the scenario's 0 is "off"; byteexpress reads 0 as its default
		}
	}
	return cfg, nil
}

// CoreTime is t as the core's and the RPC layer's time.Duration (exact in
// nanoseconds, as simhost.CoreTime).
func CoreTime(t sim.Time) time.Duration { return time.Duration(t / sim.Nanosecond) }

// SimTime is d as sim.Time; byteexpress.Never (and anything beyond the
// sim.Time range) is sim.Never (as simhost.SimTime).
func SimTime(d time.Duration) sim.Time {
	if d >= time.Duration(sim.Never/sim.Nanosecond) {
		return sim.Never
	}
	return sim.Time(d) * sim.Nanosecond
}

// ReplySize is how many bytes a server answers a fetch with; the answer
// starts with the request's RPC header (EchoHeader).
func (c *Config) ReplySize() int { return c.Response }

// EchoHeader copies the RPC header of request req to the start of reply
// dst; both must hold at least rpc.HeaderSize bytes.
func EchoHeader(dst, req []byte) error {
	if len(dst) < rpc.HeaderSize || len(req) < rpc.HeaderSize {
		return fmt.Errorf("workloads: failover: reply of %d and request of %d bytes, the RPC header needs %d", len(dst), len(req), rpc.HeaderSize)
	}
	copy(dst[:rpc.HeaderSize], req[:rpc.HeaderSize])
	return nil
}

// Stats is what the clients of one runner record together, in the
// runner's clock (sim.Time since its start).
type Stats struct {
	Started, Completed, Failed int
	// DetectedAfter is from the first fault to the first failure the
	// clients saw (an engine error, or a request timeout that retried).
	DetectedAfter sim.Time
	// RecoveredAfter is from the first fault to the first fetch answered
	// after it had to be sent again (by a server other than a crashed one).
	RecoveredAfter sim.Time
	// Served counts the fetches each host answered; LastServed is when it
	// last did (absolute: the runner's clock).
	Served     []int
	LastServed []sim.Time
	// Bins counts the fetches completed per Bin from Start (SetBins).
	Bins   []int
	Start  sim.Time
	Bin    sim.Time
	Errors []error // the first few errors
	// faultAt is when the first fault struck (absolute), crashed the host
	// that crashed first (-1: none).
	faultAt sim.Time
	crashed int
}

// NewStats returns empty statistics for hosts hosts, no fault known yet
// (SetFault) and no bins (SetBins).
func NewStats(hosts int) *Stats {
	return &Stats{Served: make([]int, hosts), LastServed: make([]sim.Time, hosts), crashed: -1}
}

// SetFault says when the first fault strikes (absolute) and which host
// crashes first (-1: none crashes); detection and recovery are measured
// from it.
func (s *Stats) SetFault(at sim.Time, crashed int) { s.faultAt, s.crashed = at, crashed }

// FaultAt is the time SetFault set.
func (s *Stats) FaultAt() sim.Time { return s.faultAt }

// SetBins starts counting completions per bin, n bins from start.
func (s *Stats) SetBins(start, bin sim.Time, n int) {
	s.Start, s.Bin, s.Bins = start, bin, make([]int, n)
}

func (s *Stats) detected(now sim.Time) {
	if now >= s.faultAt && s.DetectedAfter == 0 {
		s.DetectedAfter = max(1, now-s.faultAt)
	}
}

// Fail records err among the first errors.
func (s *Stats) Fail(err error) {
	if len(s.Errors) < 8 {
		s.Errors = append(s.Errors, err)
	}
}

// Client is one client's application: it keeps Outstanding fetches in
// flight through its rpc.Client. Not safe for concurrent use.
type Client struct {
	cfg     *Config
	rng     *rand.Rand
	rpc     *rpc.Client
	st      *Stats
	stopped bool
}

// NewClient returns client i of cfg (prepared) calling through c and
// recording into st.
func NewClient(cfg *Config, i int, c *rpc.Client, st *Stats) *Client {
	return &Client{cfg: cfg, rng: sim.Stream(cfg.Seed, ClientStream(i)), rpc: c, st: st}
}

// RPC is the client's rpc.Client.
func (c *Client) RPC() *rpc.Client { return c.rpc }

// Start sends the client's Outstanding fetches at now.
func (c *Client) Start(now sim.Time) {
	for range c.cfg.Outstanding {
		c.call(now)
	}
}

// Stop ends the load: no fetch is started after it.
func (c *Client) Stop() { c.stopped = true }

func (c *Client) call(now sim.Time) {
	if c.stopped {
		return
	}
	shard := c.rng.IntN(c.cfg.Shards)
	if _, err := c.rpc.Call(rpc.Request{Shard: shard, Idempotent: true}, 0, c.cfg.Request, CoreTime(now)); err != nil {
		c.st.Failed++
		c.st.Fail(err)
		return
	}
	c.st.Started++
}

// Deadline is when the runner must call Tick next (never before now+1),
// or ok false when nothing is due (the runner leaves its timer as it is).
func (c *Client) Deadline(now sim.Time) (at sim.Time, ok bool) {
	d := c.rpc.NextDeadline()
	if d == byteexpress.Never {
		return 0, false
	}
	return max(SimTime(d), now+1), true
}

func (c *Client) finished(done []rpc.Completion, now sim.Time) {
	for _, comp := range done {
		if comp.Err != nil {
			c.st.Failed++
			c.st.Fail(comp.Err)
		}
		c.call(now)
	}
}

// Tick is the client's timer at now: the RPC layer retries or fails the
// calls whose Tr expired (a retry is a detected failure) and a fetch
// starts for each that finished.
func (c *Client) Tick(now sim.Time) {
	before := c.rpc.Policy.Tracker.Stats.Retries
	done := c.rpc.Tick(CoreTime(now))
	if c.rpc.Policy.Tracker.Stats.Retries > before {
		c.st.detected(now)
	}
	c.finished(done, now)
}

// EngineError is the core's engine error (keepalive, QP error) on the
// connection to host node at now: a detected failure; the RPC layer
// re-sends the fetches it carried. Report it once per engine, not once
// per socket.
func (c *Client) EngineError(node int, now sim.Time) {
	c.st.detected(now)
	c.finished(c.rpc.OnEngineError(rpc.NodeID(node), CoreTime(now)), now)
}

// Response is the answer with header h from host from (-1: unknown),
// arriving at now: it is counted and the next fetch starts. A late answer
// to a call already finished is ignored.
func (c *Client) Response(h rpc.Header, from int, now sim.Time) {
	comp, ok := c.rpc.OnResponse(h, CoreTime(now))
	if !ok {
		return
	}
	st := c.st
	st.Completed++
	if from >= 0 && from < len(st.Served) {
		st.Served[from]++
		st.LastServed[from] = now
	}
	if st.Bin > 0 {
		if b := int((now - st.Start) / st.Bin); b >= 0 && b < len(st.Bins) {
			st.Bins[b]++
		}
	}
	if st.RecoveredAfter == 0 && now > st.faultAt && from != st.crashed && comp.Sends > 1 {
		st.RecoveredAfter = now - st.faultAt
	}
	c.call(now)
}

// RateRecovery is the mean completion rate per bin before faultAt and how
// long after faultAt it took to be back at 90% of it, having dropped below
// it (0: it never dropped; -1: it never recovered). With no full bin
// before the fault, or a fault at or after the last bin, there is no rate
// to recover: 0, 0.
func RateRecovery(bins []int, bin, faultAt sim.Time) (float64, sim.Time) {
	if bin <= 0 || faultAt < 0 {
		return 0, 0
	}
	pre := faultAt / bin
	if pre < 1 || pre > sim.Time(len(bins)) {
		return 0, 0
	}
	var sum int
	for _, b := range bins[:pre] {
		sum += b
	}
	base := float64(sum) / float64(pre)
	dropped := false
	for i := int(pre); i < len(bins); i++ {
		ok := float64(bins[i]) >= 0.9*base
		if !ok {
			dropped = true
		}
		if ok && dropped {
			return base, sim.Time(i+1)*bin - faultAt
		}
	}
	if dropped {
		return base, -1
	}
	return base, 0
}

// Summary is what one run measured, summed over its clients: the numbers
// both runners reduce to the same metric names (Metrics).
type Summary struct {
	Started, Completed, Failed, Retries, Resent, Stranded, TCPSends int
	ConnFailures, ReqFailures                                       int
	QuarantineTrips, QuarantineReleases, QuarantinedAtEnd           int
	PathChanges, PathSkips                                          int
	// DetectedAfter, RecoveredAfter and RateRecoveredAfter as in Stats
	// and RateRecovery (negative: never); BaseRate is fetches per Bin.
	DetectedAfter, RecoveredAfter, RateRecoveredAfter sim.Time
	BaseRate                                          float64
	Bin                                               sim.Time
}

// Metric is one number of a run: its name under failover/, unit, the
// table row it fills and its value.
type Metric struct {
	Name, Unit, Row string
	V               float64
}

// Metrics lists the run's metrics in the order of its table.
func (s *Summary) Metrics() []Metric {
	ms := func(t sim.Time) float64 {
		if t < 0 {
			return math.NaN() // never: a missing value (null in JSON)
		}
		return t.Seconds() * 1e3
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	return []Metric{
		{"started", "", "fetches started", float64(s.Started)},
		{"completed", "", "completed", float64(s.Completed)},
		{"failed", "", "failed", float64(s.Failed)},
		{"retried", "", "retried (request timeout)", float64(s.Retries)},
		{"resent", "", "re-sent (after a timeout or an engine error)", float64(s.Resent)},
		{"stranded", "", "outstanding at the end", float64(s.Stranded)},
		{"tcp_sends", "", "sent over the TCP fallback", float64(s.TCPSends)},
		{"conn_failures", "", "connection failures (summed over clients)", float64(s.ConnFailures)},
		{"req_failures", "", "request failures", float64(s.ReqFailures)},
		{"path_changes", "", "path changes (ladder step 1)", float64(s.PathChanges)},
		{"path_skips", "", "path changes skipped (one path to the server)", float64(s.PathSkips)},
		{"quarantine_trips", "", "quarantine trips", float64(s.QuarantineTrips)},
		{"quarantine_releases", "", "quarantine releases", float64(s.QuarantineReleases)},
		{"quarantined_at_end", "", "nodes quarantined at the end", float64(s.QuarantinedAtEnd)},
		{"detected_after", "ms", "detected after (ms)", ms(s.DetectedAfter)},
		{"recovered_after", "ms", "first retried fetch answered after (ms)", ms(s.RecoveredAfter)},
		{"rate_before", "fetches/ms", "rate before the fault (fetches/ms)", s.BaseRate / ms(s.Bin)}, // per ms bin
		{"rate_recovered_after", "ms", "rate back to 90% after (ms; 0 never dipped, missing if never back)", ms(s.RateRecoveredAfter)},
		{"rate_never_recovered", "", "rate never back to 90% (1 yes, 0 no)", b2f(s.RateRecoveredAfter < 0)},
	}
}

// AddRPC adds client c's RPC-layer counters at now (the end of the run)
// to s: retries, re-sends, stranded calls, TCP sends and the quarantine's
// (releases due by now count).
func (s *Summary) AddRPC(c *rpc.Client, now time.Duration) {
	s.Retries += c.Policy.Tracker.Stats.Retries
	s.Resent += c.Resent
	s.Stranded += c.Outstanding()
	s.TCPSends += c.TCPSends
	s.PathChanges += c.Policy.Selector.Stats.PathChanges
	s.PathSkips += c.Policy.Selector.Stats.PathSkips
	q := c.Policy.Quarantine
	q.Tick(now)
	s.ConnFailures += q.Stats.ConnFailures
	s.ReqFailures += q.Stats.ReqFailures
	s.QuarantineTrips += q.Stats.Trips
	s.QuarantineReleases += q.Stats.Releases
	s.QuarantinedAtEnd += len(q.ExcludedNodes(now))
}

// Table adds s's metrics to r (as failover/NAME) and returns them as the
// run's table, in the same order: both runners' reduction.
func Table(r *report.Result, s *Summary) report.Table {
	tbl := report.Table{Name: "failover", Title: "Recovery (paper §7.2): fetches through the RPC layer, times after the first fault",
		KeyName: "what", Columns: []report.Column{{Name: "value"}}}
	for _, m := range s.Metrics() {
		r.Add("failover/"+m.Name, m.V, m.Unit)
		tbl.AddRow(m.Row, m.V)
	}
	return tbl
}

// RateSeries is the completion rate per bin (fetches/ms), each point at
// its bin's end.
func RateSeries(bins []int, bin sim.Time) report.Series {
	ser := report.Series{Name: "failover/rate", Unit: "fetches/ms"}
	for i, v := range bins {
		ser.T = append(ser.T, (sim.Time(i+1) * bin).Seconds())
		ser.V = append(ser.V, float64(v)/(bin.Seconds()*1e3))
	}
	return ser
}
