package rpc

import (
	"fmt"
	"sort"
	"time"

	"github.com/besim/besim/byteexpress"
)

// Replica is one copy of a shard, placed on Node in mini-pod MiniPod.
type Replica struct {
	Node    NodeID
	MiniPod int
}

// Service is a sharded, replicated service: Shards[s] lists the R replicas
// of shard s, each in a different mini-pod.
type Service struct {
	Shards [][]Replica
}

// Validate checks that every shard has at least one replica and that no two
// replicas of a shard share a mini-pod.
func (s Service) Validate() error {
	if len(s.Shards) == 0 {
		return fmt.Errorf("rpc: service has no shards")
	}
	for i, rs := range s.Shards {
		if len(rs) == 0 {
			return fmt.Errorf("rpc: shard %d has no replicas", i)
		}
		pods := map[int]bool{}
		for _, r := range rs {
			if pods[r.MiniPod] {
				return fmt.Errorf("rpc: shard %d has two replicas in mini-pod %d", i, r.MiniPod)
			}
			pods[r.MiniPod] = true
		}
	}
	return nil
}

// Action is what a Decision asks the caller to do.
type Action int

const (
	// Use: send over the given replica, path and transport (no failure to
	// recover from).
	Use Action = iota
	// PathChange: reconnect to the same replica over a different path
	// (RNIC port affinity).
	PathChange
	// SwitchReplica: move to another replica, in another mini-pod.
	SwitchReplica
	// TCPFallback: RDMA stays unavailable; use TCP to the given replica.
	TCPFallback
	// Probe: try an RDMA connection to Node (which is on TCP fallback) and
	// report the result with OnProbe.
	Probe
	// Fail: no usable replica; Reason says why.
	Fail
)

var actionNames = [...]string{"Use", "PathChange", "SwitchReplica", "TCPFallback", "Probe", "Fail"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

// Transport is RDMA (ByteExpress) or TCP.
type Transport int

const (
	RDMA Transport = iota
	TCP
)

func (t Transport) String() string {
	if t == TCP {
		return "TCP"
	}
	return "RDMA"
}

// Decision is the selector's answer, as plain data.
type Decision struct {
	Action    Action
	Shard     int
	Replica   int // index into Service.Shards[Shard]; -1 when none
	Node      NodeID
	Path      int // path (port-affinity) index in [0, Config.Paths)
	Transport Transport
	Reason    string // set for Fail
}

type dest struct {
	path      int
	pathTries int           // path changes made since the last success
	rdmaDown  bool          // RDMA given up for this node: use TCP
	probeAt   time.Duration // next RDMA probe while rdmaDown
}

// Selector chooses replicas for the shards of one Service from the point of
// view of a client in mini-pod LocalPod, and walks the recovery ladder of
// §7.2 on failures: up to PathTries path changes on the same replica, then
// the nearest other replica over RDMA, then TCP fallback (to the nearest
// replica not quarantined) when no replica is reachable over RDMA. A
// destination on TCP fallback is probed every ProbeInterval (Probe
// decisions from Tick); a successful probe (OnProbe) returns it to RDMA.
//
// "Nearest" is: same mini-pod first, then by |MiniPod-LocalPod|, then by
// replica index — a stand-in for the real topology distance. Quarantined
// replicas (per the shared Quarantine) are never chosen; failures reported
// to the Selector are also recorded in the Quarantine.
type Selector struct {
	// Stats counts the ladder's first step: path changes made, and
	// failures where a path change was due but Config.Paths is 1 (the
	// destination has one path, so the step is skipped).
	Stats struct{ PathChanges, PathSkips int }

	cfg      Config
	svc      Service
	local    int
	q        *Quarantine
	cur      []int // current replica per shard, -1 none yet
	dests    map[NodeID]*dest
	probeSeq []NodeID
}

// NewSelector returns a selector; cfg and svc must be valid.
func NewSelector(cfg Config, svc Service, localPod int, q *Quarantine) *Selector {
	s := &Selector{cfg: cfg, svc: svc, local: localPod, q: q, dests: map[NodeID]*dest{}}
	s.cur = make([]int, len(svc.Shards))
	for i := range s.cur {
		s.cur[i] = -1
	}
	return s
}

func (s *Selector) dest(n NodeID) *dest {
	d := s.dests[n]
	if d == nil {
		d = &dest{}
		s.dests[n] = d
	}
	return d
}

// order returns the replica indices of shard in preference order.
func (s *Selector) order(shard int) []int {
	rs := s.svc.Shards[shard]
	idx := make([]int, len(rs))
	for i := range idx {
		idx[i] = i
	}
	dist := func(i int) int {
		d := rs[i].MiniPod - s.local
		if d < 0 {
			d = -d
		}
		return d
	}
	sort.SliceStable(idx, func(a, b int) bool { return dist(idx[a]) < dist(idx[b]) })
	return idx
}

func (s *Selector) decision(a Action, shard, r int) Decision {
	n := s.svc.Shards[shard][r].Node
	d := s.dest(n)
	t := RDMA
	if d.rdmaDown {
		t = TCP
	}
	return Decision{Action: a, Shard: shard, Replica: r, Node: n, Path: d.path, Transport: t}
}

func (s *Selector) fail(shard int, why string) Decision {
	s.cur[shard] = -1
	return Decision{Action: Fail, Shard: shard, Replica: -1, Reason: fmt.Sprintf("shard %d: %s", shard, why)}
}

// Pick returns where to send the next request of shard: the current replica
// if it is still usable, else the nearest replica not quarantined
// (preferring RDMA-reachable ones). Action is Use, or Fail when every
// replica is quarantined.
func (s *Selector) Pick(shard int, now time.Duration) Decision {
	if r := s.cur[shard]; r >= 0 && !s.q.Excluded(s.svc.Shards[shard][r].Node, now) {
		return s.decision(Use, shard, r)
	}
	r, ok := s.choose(shard, -1, now, true)
	if !ok {
		r, ok = s.choose(shard, -1, now, false)
	}
	if !ok {
		return s.fail(shard, s.allQuarantined(shard))
	}
	s.cur[shard] = r
	return s.decision(Use, shard, r)
}

func (s *Selector) allQuarantined(shard int) string {
	return fmt.Sprintf("all %d replicas quarantined", len(s.svc.Shards[shard]))
}

// choose returns the most preferred replica of shard other than skip that is
// not quarantined and, if rdmaOnly, not on TCP fallback.
func (s *Selector) choose(shard, skip int, now time.Duration, rdmaOnly bool) (int, bool) {
	for _, r := range s.order(shard) {
		n := s.svc.Shards[shard][r].Node
		if r == skip || s.q.Excluded(n, now) {
			continue
		}
		if rdmaOnly && s.dest(n).rdmaDown {
			continue
		}
		return r, true
	}
	return -1, false
}

// Target is where one attempt went: the Node and Path (and, for a
// fallback attempt, Transport) of the Decision it was sent along.
type Target struct {
	Node      NodeID
	Path      int
	Transport Transport
}

// Target is where an attempt sent along d goes.
func (d Decision) Target() Target { return Target{d.Node, d.Path, d.Transport} }

// OnConnectFailed reports that connecting to t for shard failed (e.g. no
// connection within Tc) and returns the next recovery step.
func (s *Selector) OnConnectFailed(shard int, t Target, now time.Duration) Decision {
	return s.onFailure(shard, t, now, true)
}

// OnEngineError reports a ByteExpress engine/connection error (QP error,
// keepalive loss) on t while it served shard. It counts as a connection
// failure.
func (s *Selector) OnEngineError(shard int, t Target, now time.Duration) Decision {
	return s.onFailure(shard, t, now, true)
}

// OnRequestTimeout reports that a request for shard sent to t timed out
// (Tr). It counts as a request failure.
func (s *Selector) OnRequestTimeout(shard int, t Target, now time.Duration) Decision {
	return s.onFailure(shard, t, now, false)
}

// onFailure charges the failure to the node the attempt went to, which is
// not always the shard's current replica: attempts sent to A before an
// earlier failure moved the shard to B time out later, and must count
// against A (charging B would quarantine the healthy replica). Only a
// failure of the current choice (replica, path and transport) walks the
// ladder: the attempts in flight on the old path all time out together,
// and one step is taken for them, not one per attempt. A stale failure
// returns the current choice.
func (s *Selector) onFailure(shard int, t Target, now time.Duration, conn bool) Decision {
	n := t.Node
	if conn {
		s.q.ConnFailed(n, now)
	} else {
		s.q.ReqFailed(n, now)
	}
	r := s.cur[shard]
	if r < 0 || s.decision(Use, shard, r).Target() != t {
		return s.Pick(shard, now)
	}
	d := s.dest(n)
	wasTCP := d.rdmaDown
	excluded := s.q.Excluded(n, now)
	// 1. Path change on the same replica (RDMA only); skipped where the
	// destination has a single path.
	if !d.rdmaDown && !excluded && d.pathTries < s.cfg.PathTries {
		if s.cfg.Paths > 1 {
			d.pathTries++
			d.path = (d.path + 1) % s.cfg.Paths
			s.Stats.PathChanges++
			return s.decision(PathChange, shard, r)
		}
		s.Stats.PathSkips++
	}
	if !d.rdmaDown {
		// Path changes did not help: RDMA to this node is considered
		// unavailable until a success or a probe says otherwise.
		s.markDown(n, now)
	}
	// 2. Another replica, reachable over RDMA.
	if nr, ok := s.choose(shard, r, now, true); ok {
		s.cur[shard] = nr
		return s.decision(SwitchReplica, shard, nr)
	}
	// 3. TCP fallback: nearest replica not quarantined (the current one
	// included, unless it failed over TCP already).
	skip := -1
	if wasTCP {
		skip = r
	}
	if nr, ok := s.choose(shard, skip, now, false); ok {
		s.cur[shard] = nr
		s.markDown(s.svc.Shards[shard][nr].Node, now)
		return s.decision(TCPFallback, shard, nr)
	}
	if _, ok := s.choose(shard, -1, now, false); !ok {
		return s.fail(shard, s.allQuarantined(shard))
	}
	return s.fail(shard, "no replica reachable over RDMA or TCP")
}

func (s *Selector) markDown(n NodeID, now time.Duration) {
	d := s.dest(n)
	if !d.rdmaDown {
		d.rdmaDown = true
		d.probeAt = now + s.cfg.ProbeInterval
	}
}

// OnSuccess reports a request answered by node; it resets that
// destination's path-change budget.
func (s *Selector) OnSuccess(node NodeID, now time.Duration) {
	if d := s.dests[node]; d != nil {
		d.pathTries = 0
	}
}

// OnProbe reports the result of an RDMA probe of n (after a Probe
// decision): success returns n to RDMA; failure schedules the next probe.
func (s *Selector) OnProbe(n NodeID, ok bool, now time.Duration) {
	d := s.dest(n)
	if !d.rdmaDown {
		return
	}
	if ok {
		d.rdmaDown = false
		d.pathTries = 0
		return
	}
	d.probeAt = now + s.cfg.ProbeInterval
}

// OnTCP reports whether n is currently on TCP fallback.
func (s *Selector) OnTCP(n NodeID) bool {
	d := s.dests[n]
	return d != nil && d.rdmaDown
}

// NextDeadline is the earliest pending probe, or byteexpress.Never.
func (s *Selector) NextDeadline() time.Duration {
	t := byteexpress.Never
	for _, d := range s.dests {
		if d.rdmaDown && d.probeAt < t {
			t = d.probeAt
		}
	}
	return t
}

// Tick returns a Probe decision for every node on TCP fallback whose probe
// is due at now, sorted by node, and schedules the following probe (so a
// probe whose result is never reported is repeated).
func (s *Selector) Tick(now time.Duration) []Decision {
	var ns []NodeID
	for n, d := range s.dests {
		if d.rdmaDown && d.probeAt <= now {
			ns = append(ns, n)
			d.probeAt = now + s.cfg.ProbeInterval
		}
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] })
	out := make([]Decision, 0, len(ns))
	for _, n := range ns {
		out = append(out, Decision{Action: Probe, Replica: -1, Shard: -1, Node: n, Path: s.dests[n].path, Transport: RDMA})
	}
	return out
}
