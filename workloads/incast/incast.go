// Package incast is the synthetic incast workload, written once for both
// runners and free of the simulator; it follows the paper's §6.3 (Figure
// 14's setup; Table 4 and Figure 15 measure it). It holds the
// configuration and its translation from a scenario, and the application
// logic as driven state machines: Worker pulls from every server (closed
// loop or open-loop Poisson), Server answers each pull with a response
// drawn from the size distribution. besim drives them over the simulated
// leaf-spine (package incastsim, which also runs the victim and bandwidth
// flows on the simulated NICs); berun's incast roles over the ByteExpress
// core on verbs or over kernel TCP. It imports no simulator model.
package incast

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/besim/besim/metrics"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/app"
)

// Config is the incast workload of the paper's Figure 14: Workers workers
// each pull from every one of Servers servers: a Request-byte fetch
// answered by a response whose size is drawn from Response. A victim flow
// and bandwidth flows (bandwidth tests beside the pulls) are runner
// matters: besim runs them on its simulated NICs, berun as kernel TCP
// streams.
type Config struct {
	// HostsPerLeaf is the hosts of every leaf switch; default
	// app.DefaultHostsPerLeaf.
	HostsPerLeaf int
	// Spines is the spine switches of the leaf-spine (every leaf has one
	// uplink to each); default app.DefaultSpines.
	Spines  int
	Workers int
	Servers int // 0 is allowed: the victim (and bandwidth flows) alone, a baseline
	// Request is the fetch request size (>= HeaderSize: it carries the
	// request's sequence number and send time). Default 64 B.
	Request  int
	Response app.SizeDist // default fixed 16 KiB; samples clamped to 64 MiB
	// Outstanding is the closed-loop concurrency: requests each worker keeps
	// outstanding to each server. Ignored when Rate > 0.
	Outstanding int
	// Rate > 0 selects open-loop Poisson arrivals: requests per second from
	// each worker to each server, sent round-robin over the servers.
	Rate float64
	// Victim adds the victim flow (Figure 14): a bandwidth test from a host
	// on the servers' leaf to an idle host on the workers' leaf:
	// VictimMessage-byte messages, VictimWindow outstanding. It is not a
	// ByteExpress engine, so the software window does not limit it.
	Victim        bool
	VictimMessage int // default 64 KiB (perftest's default size)
	VictimWindow  int // messages outstanding; default 16
	// BandwidthFlows are more such bandwidth tests, from hosts on the
	// servers' leaf into the workers (round-robin), adding to the incast.
	BandwidthFlows int
	// Sockets is the sockets each worker opens to each server (0: one);
	// the runner spreads a worker's pulls to a server round-robin over
	// them. With the engines multiplexed (the default) they share one
	// engine per host pair; with one engine per socket each is a QP pair.
	Sockets int
	// Warmup is excluded from the statistics; Measure is the measured
	// interval.
	Warmup, Measure sim.Time
	Seed            uint64
}

// HeaderSize is the pull header: sequence number (8 bytes, little endian)
// | send time (8). A server echoes it on its response.
const HeaderSize = 16

// MaxResponse clamps the response size distribution's samples.
const MaxResponse = 64 << 20

// Prepare applies the defaults, checks c and prepares its size
// distribution.
func (c *Config) Prepare() error {
	if c.HostsPerLeaf == 0 {
		c.HostsPerLeaf = app.DefaultHostsPerLeaf
	}
	if c.Spines == 0 {
		c.Spines = app.DefaultSpines
	}
	if c.Request == 0 {
		c.Request = 64
	}
	if c.Outstanding == 0 {
		c.Outstanding = 1
	}
	if c.VictimMessage == 0 {
		c.VictimMessage = 64 << 10
	}
	if c.VictimWindow == 0 {
		c.VictimWindow = 16
	}
	if c.Warmup == 0 {
		c.Warmup = 200 * sim.Microsecond
	}
	if c.Measure == 0 {
		c.Measure = sim.Millisecond
	}
	switch {
	case c.Sockets < 0:
		return errors.New("workloads: incast sockets per worker-server pair must be >= 0 (0: one)")
	case c.Workers < 1 || c.Servers < 0 || c.BandwidthFlows < 0:
		return errors.New("workloads: incast needs workers >= 1, servers >= 0, bandwidth flows >= 0")
	case c.Request < HeaderSize:
		return fmt.Errorf("workloads: incast request must be >= %d bytes", HeaderSize)
	case c.Outstanding < 1 || c.Rate < 0:
		return errors.New("workloads: incast needs outstanding >= 1 and rate >= 0")
	case c.VictimMessage < 64 || c.VictimWindow < 1:
		return errors.New("workloads: victim message >= 64 B and window >= 1")
	case c.Warmup < 0 || c.Measure <= 0:
		return errors.New("workloads: warmup >= 0 and measure > 0")
	}
	if c.Response.Kind == "" {
		c.Response = app.SizeDist{Kind: app.Fixed, Size: 16 << 10}
	}
	if err := c.Response.Prepare(); err != nil {
		return fmt.Errorf("workloads: response size: %w", err)
	}
	if c.Response.MaxSize == 0 || c.Response.MaxSize > MaxResponse {
		c.Response.MaxSize = MaxResponse
	}
	return nil
}

// FromScenario translates the workload section of an incast-pull scenario
// (its size distribution prepared, no defaults applied). besim and berun
// both use it, so they run the same workload.
func FromScenario(s *scenarios.Scenario) (Config, error) {
	w := s.Workload
	cfg := Config{HostsPerLeaf: w.HostsPerLeaf, Spines: w.Spines, Workers: w.Workers, Servers: w.Servers,
		Request: int(w.Request), Outstanding: w.Outstanding, Rate: w.Rate,
		Victim: w.VictimOn(), VictimMessage: int(w.VictimMessage), VictimWindow: w.VictimDepth,
		BandwidthFlows: w.BandwidthFlows, Sockets: w.Sockets, Warmup: w.Warmup.Time(), Measure: s.Duration.Time(), Seed: s.Seed,
		Response: app.Sizes(w.Response)}
	if err := cfg.Response.Prepare(); err != nil {
		return cfg, s.Errorf("workload.response", "%v", err)
	}
	return cfg, nil
}

// Header is the pull header.
type Header struct {
	Seq  uint64   // the worker's pull number
	Sent sim.Time // when the worker sent it, in the runner's clock
}

// Put writes h into the first HeaderSize bytes of p.
func (h Header) Put(p []byte) {
	_ = p[HeaderSize-1]
	binary.LittleEndian.PutUint64(p[0:], h.Seq)
	binary.LittleEndian.PutUint64(p[8:], uint64(h.Sent))
}

// ParseHeader reads the header at the start of p.
func ParseHeader(p []byte) (Header, error) {
	if len(p) < HeaderSize {
		return Header{}, fmt.Errorf("message of %d bytes, a header needs %d", len(p), HeaderSize)
	}
	return Header{Seq: binary.LittleEndian.Uint64(p[0:]), Sent: sim.Time(binary.LittleEndian.Uint64(p[8:]))}, nil
}

// WorkerStream and ServerStream name the random streams of worker i (its
// open-loop arrivals) and server i (its response sizes, drawn in the
// order it answers), the same in both runners.
func WorkerStream(i int) string { return fmt.Sprintf("incast/worker%d", i) }

// ServerStream: see WorkerStream.
func ServerStream(i int) string { return fmt.Sprintf("incast/server%d", i) }

// Stats is what workers record, shared by the workers of one runner (or
// one worker's, merged later); the interval counts are empty until
// SetInterval.
type Stats struct {
	from, to sim.Time
	set      bool
	// Latency holds the pulls sent in the interval, nanoseconds.
	Latency *metrics.Histogram
	Pulls   int64 // responses received in the interval
	SentIn  int64 // pulls sent in the interval
	Sent    int64 // pulls sent, whole run
	Done    int64 // responses received, whole run
	RxBytes int64 // response bytes received in the interval
}

// NewStats returns empty statistics with no measured interval yet.
func NewStats() *Stats { return &Stats{Latency: metrics.New(3)} }

// SetInterval sets the measured interval [from, to).
func (s *Stats) SetInterval(from, to sim.Time) { s.from, s.to, s.set = from, to, true }

// Interval is the measured interval (zero until set).
func (s *Stats) Interval() (from, to sim.Time) { return s.from, s.to }

// Measured reports whether t is inside the measured interval.
func (s *Stats) Measured(t sim.Time) bool { return s.set && t >= s.from && t < s.to }

// Unfinished is the pulls sent in the interval and not yet answered.
func (s *Stats) Unfinished() int64 { return s.SentIn - s.Latency.Count() }

// Merge adds o's histogram and counts to s.
func (s *Stats) Merge(o *Stats) error {
	if err := s.Latency.Merge(o.Latency); err != nil {
		return err
	}
	s.Pulls += o.Pulls
	s.SentIn += o.SentIn
	s.Sent += o.Sent
	s.Done += o.Done
	s.RxBytes += o.RxBytes
	return nil
}

// Send is one pull a worker asks its runner to send: Size bytes to server
// Server, starting with Header.
type Send struct {
	Server int
	Size   int
	Header Header
}

// Out is what a worker asks of its runner after an input: the pulls to
// send, in order, and, if SetTimer, to (re)arm its one timer for Timer.
// It is reused by the next input.
type Out struct {
	Sends    []Send
	SetTimer bool
	Timer    sim.Time
}

// Worker is worker i: it pulls from every server, closed loop
// (Outstanding per server, the next when a response arrives) or open
// loop (Poisson arrivals at Rate x Servers per second, round-robin over
// the servers, once every server is connected). Not safe for concurrent
// use.
type Worker struct {
	cfg     *Config
	st      *Stats
	rng     *rand.Rand
	seq     uint64
	next    int // open loop: the next server
	up      int // servers connected
	out     Out
	stopped bool
}

// NewWorker returns worker i of cfg (prepared), recording into st.
func NewWorker(cfg *Config, i int, st *Stats) *Worker {
	w := &Worker{cfg: cfg, st: st}
	if cfg.Rate > 0 {
		w.rng = sim.Stream(cfg.Seed, WorkerStream(i))
	}
	return w
}

func (w *Worker) reset() *Out {
	w.out.Sends, w.out.SetTimer = w.out.Sends[:0], false
	return &w.out
}

func (w *Worker) gap() sim.Time {
	rate := w.cfg.Rate * float64(w.cfg.Servers)
	return max(1, sim.Time(w.rng.ExpFloat64()/rate*float64(sim.Second)))
}

// Connected is the connection to server srv coming up at now: a closed
// loop sends its Outstanding pulls there; an open loop starts its
// arrivals when the last server is up.
func (w *Worker) Connected(srv int, now sim.Time) *Out {
	out := w.reset()
	w.up++
	switch {
	case w.stopped:
	case w.cfg.Rate == 0:
		for range w.cfg.Outstanding {
			w.pull(srv, now)
		}
	case w.up == w.cfg.Servers:
		out.SetTimer, out.Timer = true, now+w.gap()
	}
	return out
}

// Tick is the worker's timer at now: the next open-loop arrival.
func (w *Worker) Tick(now sim.Time) *Out {
	out := w.reset()
	if w.stopped || w.cfg.Rate == 0 || w.cfg.Servers == 0 {
		return out
	}
	out.SetTimer, out.Timer = true, now+w.gap()
	w.pull(w.next%w.cfg.Servers, now)
	w.next++
	return out
}

// Response is server srv's answer with header h, n bytes long, arriving at
// now: its latency is recorded if it was sent in the interval, and a
// closed loop sends the next pull to that server.
func (w *Worker) Response(now sim.Time, srv int, h Header, n int) *Out {
	out := w.reset()
	st := w.st
	if st.Measured(h.Sent) {
		st.Latency.Record(int64((now - h.Sent) / sim.Nanosecond))
	}
	st.Done++
	if st.Measured(now) {
		st.Pulls++
		st.RxBytes += int64(n)
	}
	if w.cfg.Rate == 0 && !w.stopped {
		w.pull(srv, now)
	}
	return out
}

// Stop ends the load: no pull is sent after it.
func (w *Worker) Stop() { w.stopped = true }

func (w *Worker) pull(srv int, now sim.Time) {
	w.out.Sends = append(w.out.Sends, Send{Server: srv, Size: w.cfg.Request, Header: Header{Seq: w.seq, Sent: now}})
	w.seq++
	w.st.Sent++
	if w.st.Measured(now) {
		w.st.SentIn++
	}
}

// Server is server i: it answers every pull with a response of
// max(Response sample, HeaderSize) bytes, drawing from its stream in the
// order it answers. Not safe for concurrent use.
type Server struct {
	cfg     *Config
	rng     *rand.Rand
	Pulls   int64 // pulls answered
	TxBytes int64 // response bytes
}

// NewServer returns server i of cfg (prepared).
func NewServer(cfg *Config, i int) *Server {
	return &Server{cfg: cfg, rng: sim.Stream(cfg.Seed, ServerStream(i))}
}

// Reply accounts one pull and returns the size of its response, which
// starts with the pull's header.
func (s *Server) Reply() int {
	n := max(s.cfg.Response.Sample(s.rng), HeaderSize)
	s.Pulls++
	s.TxBytes += int64(n)
	return n
}
