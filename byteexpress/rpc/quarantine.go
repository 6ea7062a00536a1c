package rpc

import (
	"sort"
	"time"

	"github.com/besim/besim/byteexpress"
)

// NodeID names a destination node.
type NodeID int

// ring keeps the last cap timestamps (cap = limit+1).
type ring struct {
	ts   []time.Duration
	next int
	n    int
}

func newRing(c int) ring { return ring{ts: make([]time.Duration, c)} }

func (r *ring) add(t time.Duration) {
	r.ts[r.next] = t
	r.next = (r.next + 1) % len(r.ts)
	if r.n < len(r.ts) {
		r.n++
	}
}

// oldest is the oldest kept timestamp; ok only when the ring is full.
func (r *ring) oldest() (time.Duration, bool) {
	if r.n < len(r.ts) {
		return 0, false
	}
	return r.ts[r.next], true
}

// newest is the latest kept timestamp; ok when the ring is not empty.
func (r *ring) newest() (time.Duration, bool) {
	if r.n == 0 {
		return 0, false
	}
	return r.ts[(r.next+len(r.ts)-1)%len(r.ts)], true
}

// count is the number of kept timestamps t with now-t < w (at most cap).
func (r *ring) count(now, w time.Duration) int {
	c := 0
	for i := 0; i < r.n; i++ {
		if now-r.ts[i] < w {
			c++
		}
	}
	return c
}

type nodeQ struct {
	conn, req ring
	until     time.Duration // excluded while now < until
	excluded  bool          // as of the last Tick / record
}

// QuarantineStats are cumulative counters.
type QuarantineStats struct {
	ConnFailures, ReqFailures int // failures recorded
	Trips                     int // times a node entered exclusion
	Releases                  int // times a node left exclusion (seen by Tick)
}

// Quarantine is the per-destination exclusion list of §7.2. A failure at t
// counts in the window at now iff now-t < Window.
type Quarantine struct {
	cfg   Config
	nodes map[NodeID]*nodeQ
	Stats QuarantineStats
}

// NewQuarantine returns an empty exclusion list; cfg must be valid.
func NewQuarantine(cfg Config) *Quarantine {
	return &Quarantine{cfg: cfg, nodes: map[NodeID]*nodeQ{}}
}

func (q *Quarantine) node(n NodeID) *nodeQ {
	s := q.nodes[n]
	if s == nil {
		s = &nodeQ{conn: newRing(q.cfg.MaxConnFailures + 1), req: newRing(q.cfg.MaxReqFailures + 1)}
		q.nodes[n] = s
	}
	return s
}

func (q *Quarantine) record(n NodeID, r *ring, now time.Duration) {
	s := q.node(n)
	r.add(now)
	if old, ok := r.oldest(); ok && now-old < q.cfg.Window {
		// More than the limit inside the window: (re)trip.
		if now >= s.until {
			q.Stats.Trips++
		}
		s.until = max(s.until, old+q.cfg.Window, now+q.cfg.QuarantineHold)
		s.excluded = true
	}
}

// ConnFailed records a connection failure to n at now.
func (q *Quarantine) ConnFailed(n NodeID, now time.Duration) {
	q.Stats.ConnFailures++
	q.record(n, &q.node(n).conn, now)
}

// ReqFailed records a request failure to n at now.
func (q *Quarantine) ReqFailed(n NodeID, now time.Duration) {
	q.Stats.ReqFailures++
	q.record(n, &q.node(n).req, now)
}

// Excluded reports whether n is on the exclusion list at now. It does not
// depend on whether Tick was called.
func (q *Quarantine) Excluded(n NodeID, now time.Duration) bool {
	s := q.nodes[n]
	return s != nil && now < s.until
}

// Counts returns n's connection and request failures in the window at now,
// each capped at its limit+1.
func (q *Quarantine) Counts(n NodeID, now time.Duration) (conn, req int) {
	s := q.nodes[n]
	if s == nil {
		return 0, 0
	}
	return s.conn.count(now, q.cfg.Window), s.req.count(now, q.cfg.Window)
}

// ExcludedNodes lists the nodes excluded at now, sorted.
func (q *Quarantine) ExcludedNodes(now time.Duration) []NodeID {
	var out []NodeID
	for n := range q.nodes {
		if q.Excluded(n, now) {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// NextDeadline is the earliest release time of an excluded node, or
// byteexpress.Never.
func (q *Quarantine) NextDeadline() time.Duration {
	d := byteexpress.Never
	for _, s := range q.nodes {
		if s.excluded && s.until < d {
			d = s.until
		}
	}
	return d
}

// Tick releases the nodes whose exclusion ended at or before now and returns
// them, sorted. It also forgets nodes that are not excluded and have no
// failure left in the window, so memory is bounded by the nodes that failed
// in the last Window (each holding M+1 and N+1 timestamps).
func (q *Quarantine) Tick(now time.Duration) []NodeID {
	var out []NodeID
	for n, s := range q.nodes {
		if s.excluded && now >= s.until {
			s.excluded = false
			q.Stats.Releases++
			out = append(out, n)
		}
		if !s.excluded && now >= s.until && !q.recent(&s.conn, now) && !q.recent(&s.req, now) {
			delete(q.nodes, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (q *Quarantine) recent(r *ring, now time.Duration) bool {
	t, ok := r.newest()
	return ok && now-t < q.cfg.Window
}

// Tracked is the number of nodes the quarantine currently holds state for.
func (q *Quarantine) Tracked() int { return len(q.nodes) }
