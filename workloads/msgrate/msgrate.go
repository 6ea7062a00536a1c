// Package msgrate is the paper's Figure 11 workload (§6.2.1), written
// free of the simulator: Threads I/O threads of one process post
// MsgSize-byte RDMA WRITEs on QPs RC QPs, spread over the threads in a
// seeded random creation order (Owners); each thread (Poster) posts one WR
// per step to the next of its QPs with room, signals one WR in
// SignalEvery, and does AppWork of application work (jittered) per
// message. It holds the configuration, the poster state machine, the
// random-stream names and the reduction to the msgrate table and metrics.
// besim drives it on the simulated NIC's doorbell and lock model (package
// msgratesim, which also says what the model produces). It imports no
// simulator model.
package msgrate

import (
	"fmt"
	"github.com/besim/besim/units"
	"math/rand/v2"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// Config is the message-rate benchmark of paper §6.2.1 (Figure 11):
// Threads I/O threads in one process share one NIC and post MsgSize-byte
// RDMA WRITEs on QPs RC QPs, assigned to threads round-robin in a random
// creation order; each thread busy-polls its own CQ and posts one WR per
// step to the next of its QPs that has room. Without thread domains the
// QPs beyond the provider's dedicated doorbell registers share locked ones
// across threads; with ThreadDomains each thread's QPs ring its own
// register without a lock.
type Config struct {
	Threads       int      // default 8
	QPs           int      // default 64
	ThreadDomains bool     // one thread domain per thread
	MsgSize       int      // default 512
	Rate          int64    // link rate, default 200 Gb/s
	Depth         int      // WRs outstanding per QP, default 16
	SignalEvery   int      // one signalled WR in this many, default 8 (at most Depth)
	AppWork       sim.Time // mean per-message CPU work outside verbs, default 150 ns
	// Jitter spreads AppWork uniformly over ±Jitter×AppWork (default 0.5),
	// drawn from a per-thread stream seeded with Seed, so threads do not
	// run in lockstep.
	Jitter   float64
	Seed     uint64
	Warmup   sim.Time // default 500 us
	Duration sim.Time // default 1 ms
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.Threads == 0 {
		c.Threads = 8
	}
	if c.QPs == 0 {
		c.QPs = 64
	}
	if c.MsgSize == 0 {
		c.MsgSize = 512
	}
	if c.Rate == 0 {
		c.Rate = 200 * units.Gbps
	}
	if c.Depth == 0 {
		c.Depth = 16
	}
	if c.SignalEvery == 0 {
		c.SignalEvery = 8
	}
	c.SignalEvery = min(c.SignalEvery, c.Depth)
	if c.AppWork == 0 {
		c.AppWork = 150 * sim.Nanosecond
	}
	if c.Jitter == 0 {
		c.Jitter = 0.5
	}
	if c.Warmup == 0 {
		c.Warmup = 500 * sim.Microsecond
	}
	if c.Duration == 0 {
		c.Duration = 1000 * sim.Microsecond
	}
	return c
}

// FromScenario translates a benchmark scenario of kind msgrate for one
// (QP count, thread domains) point (no defaults applied).
func FromScenario(s *scenarios.Scenario, qps int, td bool) Config {
	b := s.Benchmark
	return Config{Threads: b.Threads, QPs: qps, ThreadDomains: td,
		MsgSize: int(b.Message), Rate: int64(b.Rate), Depth: b.Depth, SignalEvery: b.SignalEvery,
		AppWork: b.AppWork.Time(), Jitter: b.Jitter.Float64(), Seed: s.Seed,
		Warmup: b.Warmup.Time(), Duration: s.Duration.Time()}
}

// ThreadStream names I/O thread i's random stream (its AppWork jitter).
func ThreadStream(i int) string { return fmt.Sprintf("msgrate-io%d", i) }

// Owners is the thread of each QP in creation order: every thread
// creates QPs/Threads QPs (engines are spread round-robin, §6.2.1), all at
// start-up and concurrently, so the order in which the provider hands out
// doorbell registers interleaves the threads at random (stream
// "msgrate-create").
func Owners(c *Config) []int {
	owner := make([]int, c.QPs)
	for i := range owner {
		owner[i] = i % c.Threads
	}
	mix := sim.Stream(c.Seed, "msgrate-create")
	mix.Shuffle(len(owner), func(i, j int) { owner[i], owner[j] = owner[j], owner[i] })
	return owner
}

// Poster is one I/O thread's posting logic over its QPs (indexed in the
// order AddQP added them). Not safe for concurrent use.
type Poster struct {
	cfg    *Config
	rng    *rand.Rand
	out    []int    // WRs outstanding per QP
	posted []uint64 // WRs posted per QP
	rr     int
}

// NewPoster returns thread i's poster for cfg (with defaults).
func NewPoster(cfg *Config, i int) *Poster {
	return &Poster{cfg: cfg, rng: sim.Stream(cfg.Seed, ThreadStream(i))}
}

// AddQP adds a QP and returns its index.
func (p *Poster) AddQP() int {
	p.out = append(p.out, 0)
	p.posted = append(p.posted, 0)
	return len(p.out) - 1
}

// QPs is the number of QPs added.
func (p *Poster) QPs() int { return len(p.out) }

// Completed is a signalled completion on QP q: SignalEvery WRs retire.
func (p *Poster) Completed(q int) { p.out[q] -= p.cfg.SignalEvery }

// Next picks the next QP with room, round-robin: its index, the WR's ID
// (its post count) and whether the WR is signalled; ok is false when every
// QP is full. Posted must follow a successful post.
func (p *Poster) Next() (q int, id uint64, signaled, ok bool) {
	for range len(p.out) {
		q = p.rr
		p.rr = (p.rr + 1) % len(p.out)
		if p.out[q] >= p.cfg.Depth {
			continue
		}
		p.posted[q]++
		return q, p.posted[q], p.posted[q]%uint64(p.cfg.SignalEvery) == 0, true
	}
	return 0, 0, false, false
}

// Posted is the WR Next chose for QP q posted: it counts as outstanding,
// and the returned application work (AppWork, jittered) follows it.
func (p *Poster) Posted(q int) sim.Time {
	p.out[q]++
	j := 1 + p.cfg.Jitter*(2*p.rng.Float64()-1)
	return sim.Time(float64(p.cfg.AppWork) * j)
}

// Point is one measurement: the message rate, the QPs on shared doorbell
// registers and the share of thread CPU time in doorbell locks (percent);
// -1 where not measured.
type Point struct {
	Mmps, LockPct float64
	Shared        int
}

// Reduce reduces the points of scenario s (points[i][j]: QP count i,
// thread-domain setting j, in the scenario's order) to the msgrate table
// and the metrics msgrate/<td|no_td>/<QPs>/mmps of r.
func Reduce(s *scenarios.Scenario, points [][]Point, r *report.Result) {
	b := s.Benchmark
	var cols []report.Column
	label := func(td bool) string {
		if td {
			return "TD"
		}
		return "no TD"
	}
	for _, td := range b.ThreadDomains {
		l := label(td)
		cols = append(cols, report.Column{Name: l, Unit: "Mmsg/s"}, report.Column{Name: l + " of peak", Unit: "%"},
			report.Column{Name: l + " shared-doorbell QPs"}, report.Column{Name: l + " CPU in doorbell locks", Unit: "%"})
	}
	both := len(b.ThreadDomains) == 2
	if both {
		cols = append(cols, report.Column{Name: "no TD / TD", Unit: "%"})
	}
	title := fmt.Sprintf("%d B message rate, %d I/O threads, vs QP count, with and without thread domains (paper Figure 11 shape)", b.Message, b.Threads)
	if b.Through == scenarios.ThroughCore {
		title = fmt.Sprintf("%d B message rate through the ByteExpress core, %d I/O threads, vs QP count, with and without thread domains (paper Figure 11 shape)", b.Message, b.Threads)
	}
	tbl := report.Table{Name: "msgrate", KeyName: "QPs", Columns: cols, Title: title}
	peak := make([]float64, len(b.ThreadDomains))
	for i, q := range b.QPs {
		for j, td := range b.ThreadDomains {
			p := points[i][j]
			peak[j] = max(peak[j], p.Mmps)
			key := "no_td"
			if td {
				key = "td"
			}
			r.Add(fmt.Sprintf("msgrate/%s/%d/mmps", key, q), p.Mmps, "Mmsg/s")
		}
	}
	for i, q := range b.QPs {
		var row []float64
		for j := range b.ThreadDomains {
			p := points[i][j]
			of := -1.0
			if peak[j] > 0 && p.Mmps >= 0 {
				of = 100 * p.Mmps / peak[j]
			}
			row = append(row, p.Mmps, of, float64(p.Shared), p.LockPct)
		}
		if both {
			ratio := -1.0
			a, c := points[i][0], points[i][1]
			if b.ThreadDomains[0] {
				a, c = c, a
			}
			if c.Mmps > 0 && a.Mmps >= 0 {
				ratio = 100 * a.Mmps / c.Mmps
			}
			row = append(row, ratio)
		}
		tbl.AddRow(fmt.Sprint(q), row...)
	}
	r.Tables = append(r.Tables, tbl)
}

// CoreClient is the client's logic of the workload through the ByteExpress
// core (benchmark through: core): every socket keeps Depth messages
// outstanding (Start) and each answer costs AppWork of application work
// (jittered) before one more message follows it (Answer), until Stop. The
// jitter of a socket's answers is drawn from stream ThreadStream(ID mod
// Threads), ID being the socket's (byteexpress Socket.ID), so the sockets
// are split into Threads independent streams (Stream): a driver with
// concurrent I/O threads locks per stream. Not safe for concurrent use
// within one stream. besim's msgratesim and berun's msgrate-core roles
// drive it.
type CoreClient struct {
	Streams []*CoreStream
}

// CoreStream is one stream of a CoreClient: its sockets' jitter and
// counts.
type CoreStream struct {
	cfg     *Config
	rng     *rand.Rand
	stopped bool
	// Sent counts the messages the stream asked for; Answers the answers
	// it was given.
	Sent, Answers uint64
}

// NewCoreClient returns the client of cfg (with defaults).
func NewCoreClient(cfg *Config) *CoreClient {
	c := &CoreClient{}
	for i := range cfg.Threads {
		c.Streams = append(c.Streams, &CoreStream{cfg: cfg, rng: sim.Stream(cfg.Seed, ThreadStream(i))})
	}
	return c
}

// Stream is the stream of the socket with ID id.
func (c *CoreClient) Stream(id uint64) *CoreStream { return c.Streams[id%uint64(len(c.Streams))] }

// Counts sums the streams' messages sent and answers received (not safe
// while the streams run).
func (c *CoreClient) Counts() (sent, answers uint64) {
	for _, s := range c.Streams {
		sent += s.Sent
		answers += s.Answers
	}
	return sent, answers
}

// Start is the number of messages to send on a new socket of the stream:
// Depth (0 once stopped).
func (s *CoreStream) Start() int {
	if s.stopped {
		return 0
	}
	s.Sent += uint64(s.cfg.Depth)
	return s.cfg.Depth
}

// Answer is an answer on a socket of the stream: the application work to
// do for it (AppWork, jittered) and the messages to send on that socket
// after it (1; 0 once stopped).
func (s *CoreStream) Answer() (work sim.Time, send int) {
	s.Answers++
	j := 1 + s.cfg.Jitter*(2*s.rng.Float64()-1)
	work = sim.Time(float64(s.cfg.AppWork) * j)
	if s.stopped {
		return work, 0
	}
	s.Sent++
	return work, 1
}

// Stop ends the stream's sending: answers still cost their work but
// no message follows them.
func (s *CoreStream) Stop() { s.stopped = true }
