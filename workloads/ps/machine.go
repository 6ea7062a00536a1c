package ps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/besim/besim/metrics"
	"github.com/besim/besim/sim"
)

// The application logic of the workload, written once as driven state
// machines in the style of the core: a runner feeds a Client its start,
// its timer and the responses it receives, with the time they happened,
// and performs the sends (and the timer) it asks for; a Server is told
// each request and answers with the reply size. Neither knows what carries
// the messages or what clock the times come from: besim drives them in
// virtual time over simulated ByteExpress or kernel TCP (package pssim),
// berun in wall-clock time over the core on verbs or over kernel TCP
// (berun/role), with times in sim.Time since the run's start.

// Header is the message header both runners put on the wire: slot (8
// bytes, little endian) | send time (8) | op (1) | shard count (4) | pad
// (3), HeaderSize bytes. A server echoes a request's header on its answer.
type Header struct {
	Slot   uint64   // the client's slot (user request or iteration) it belongs to
	Sent   sim.Time // when the client sent the request, in the runner's clock
	Op     byte     // OpFetch or OpPush
	Shards int      // shards asked for (fetch) or updated (push)
}

// Put writes h into the first HeaderSize bytes of p.
func (h Header) Put(p []byte) {
	_ = p[HeaderSize-1]
	binary.LittleEndian.PutUint64(p[0:], h.Slot)
	binary.LittleEndian.PutUint64(p[8:], uint64(h.Sent))
	p[16] = h.Op
	binary.LittleEndian.PutUint32(p[17:], uint32(h.Shards))
	p[21], p[22], p[23] = 0, 0, 0
}

// ParseHeader reads the header at the start of p: an error if p is
// shorter than HeaderSize or its op is neither a fetch nor a push.
func ParseHeader(p []byte) (Header, error) {
	if len(p) < HeaderSize {
		return Header{}, fmt.Errorf("message of %d bytes, a header needs %d", len(p), HeaderSize)
	}
	h := Header{Slot: binary.LittleEndian.Uint64(p[0:]), Sent: sim.Time(binary.LittleEndian.Uint64(p[8:])),
		Op: p[16], Shards: int(binary.LittleEndian.Uint32(p[17:]))}
	if h.Op != OpFetch && h.Op != OpPush {
		return h, fmt.Errorf("unknown op %d (fetch %d, push %d)", h.Op, OpFetch, OpPush)
	}
	return h, nil
}

// Words is h as four words, for transports that carry metadata instead of
// bytes (tcpsim's Meta).
func (h Header) Words() [4]uint64 {
	return [4]uint64{h.Slot, uint64(h.Sent), uint64(h.Op), uint64(h.Shards)}
}

// FromWords is the inverse of Words.
func FromWords(w [4]uint64) Header {
	return Header{Slot: w[0], Sent: sim.Time(w[1]), Op: byte(w[2]), Shards: int(w[3])}
}

// Stats is what clients record, shared by the clients of one runner (or
// one client's, merged later): everything is counted only for what started
// (histograms) or ended (counts) in the measured interval, empty until
// SetInterval. Histograms hold nanoseconds.
type Stats struct {
	from, to sim.Time
	set      bool
	// User holds ranker user requests; Fetch, the fetch sub-requests of
	// rankers and trainers; Push, trainer pushes until acknowledged;
	// Iteration, trainer iterations (fetch, compute, push); FetchPhase and
	// PushPhase, a trainer's whole fetch and push (first request sent to
	// last answer, so one slow server makes the phase slow).
	User, Fetch, Push, Iteration, FetchPhase, PushPhase *metrics.Histogram
	Users                                               int64 // user requests completed in the interval
	Iterations                                          int64 // trainer iterations completed in the interval
	Dropped                                             int64 // open-loop arrivals in the interval that found every slot busy
	// FetchOpen and PushOpen count the requests sent in the interval and
	// still unanswered at its end (Censor): they are in Fetch and Push at
	// their age then, so those percentiles are lower bounds when non-zero.
	FetchOpen, PushOpen int64
	Sent, Answered      int64 // requests sent and answers received, whole run
	// Failed counts the requests the runner's transport gave up on (an
	// RPC layer's timeout without retry, or no usable replica), whole run:
	// each ends its request as an answer would (Client.Failed), so Sent =
	// Answered + Failed + what is still open. UsersFailed counts the user
	// requests completed in the interval with at least one failed request
	// (they are in User, not in Users).
	Failed, UsersFailed int64
	RxBytes             int64 // answer bytes received in the interval
	// Window, when SetWindows set it, splits the measured interval into
	// windows of this length (the last may be shorter): UserWin[i] and
	// FetchWin[i] hold the user requests and fetch sub-requests that
	// started in window i, recorded as User and Fetch are (a time series
	// of latency: the paper's Figure 16). Nil without windows.
	Window            sim.Time
	UserWin, FetchWin []*metrics.Histogram
}

// NewStats returns empty statistics with no measured interval yet.
func NewStats() *Stats {
	return &Stats{User: metrics.New(3), Fetch: metrics.New(3), Push: metrics.New(3), Iteration: metrics.New(3),
		FetchPhase: metrics.New(3), PushPhase: metrics.New(3)}
}

// SetInterval sets the measured interval [from, to).
func (s *Stats) SetInterval(from, to sim.Time) { s.from, s.to, s.set = from, to, true }

// MaxWindows bounds the latency windows of SetWindows (as the fabric's
// series keep at most 1024 points): a shorter window is widened to fit.
const MaxWindows = 1024

// SetWindows splits the measured interval (SetInterval first) into
// windows of w > 0, widened so that there are at most MaxWindows, and
// creates their histograms (two significant digits: P99 within 1%; the
// interval's whole histograms keep three). It returns the window used.
func (s *Stats) SetWindows(w sim.Time) (sim.Time, error) {
	if !s.set || w <= 0 || s.to <= s.from {
		return 0, fmt.Errorf("workloads: ps: latency windows need a measured interval and a window > 0 (window %v)", w)
	}
	span := s.to - s.from
	w = max(w, (span+MaxWindows-1)/MaxWindows)
	n := int((span + w - 1) / w)
	s.Window = w
	s.UserWin, s.FetchWin = make([]*metrics.Histogram, n), make([]*metrics.Histogram, n)
	for i := range n {
		s.UserWin[i], s.FetchWin[i] = metrics.New(2), metrics.New(2)
	}
	return w, nil
}

// Interval is the measured interval (zero until set).
func (s *Stats) Interval() (from, to sim.Time) { return s.from, s.to }

// Measured reports whether t is inside the measured interval.
func (s *Stats) Measured(t sim.Time) bool { return s.set && t >= s.from && t < s.to }

func (s *Stats) record(h *metrics.Histogram, start, now sim.Time) {
	if !s.Measured(start) {
		return
	}
	d := int64((now - start) / sim.Nanosecond)
	h.Record(d)
	if s.Window > 0 {
		switch i := int((start - s.from) / s.Window); h {
		case s.User:
			s.UserWin[i].Record(d)
		case s.Fetch:
			s.FetchWin[i].Record(d)
		}
	}
}

// Merge adds o's histograms and counts to s, and o's latency windows to
// s's (which must then be the same windows).
func (s *Stats) Merge(o *Stats) error {
	if len(o.UserWin) > 0 && (s.Window != o.Window || len(s.UserWin) != len(o.UserWin)) {
		return fmt.Errorf("workloads: ps: merging latency windows of %v x %d into %v x %d", o.Window, len(o.UserWin), s.Window, len(s.UserWin))
	}
	for _, p := range [][2]*metrics.Histogram{{s.User, o.User}, {s.Fetch, o.Fetch}, {s.Push, o.Push},
		{s.Iteration, o.Iteration}, {s.FetchPhase, o.FetchPhase}, {s.PushPhase, o.PushPhase}} {
		if err := p[0].Merge(p[1]); err != nil {
			return err
		}
	}
	if len(o.UserWin) > 0 {
		for i := range o.UserWin {
			if err := s.UserWin[i].Merge(o.UserWin[i]); err != nil {
				return err
			}
			if err := s.FetchWin[i].Merge(o.FetchWin[i]); err != nil {
				return err
			}
		}
	}
	s.Users += o.Users
	s.Iterations += o.Iterations
	s.Dropped += o.Dropped
	s.FetchOpen += o.FetchOpen
	s.PushOpen += o.PushOpen
	s.Sent += o.Sent
	s.Answered += o.Answered
	s.Failed += o.Failed
	s.UsersFailed += o.UsersFailed
	s.RxBytes += o.RxBytes
	return nil
}

// ClientStream and ServerStream name the random streams of client i and
// server i (sim.Stream with the scenario's seed), the same in both
// runners: a client draws its shards, push sizes and open-loop arrivals
// from its own, a server its reply sizes, in the order it answers.
func ClientStream(i int) string { return fmt.Sprintf("ps/client%d", i) }

// ServerStream: see ClientStream.
func ServerStream(i int) string { return fmt.Sprintf("ps/server%d", i) }

// Send is one message a client asks its runner to send: Size bytes (at
// least HeaderSize) to server Server, starting with Header.
type Send struct {
	Server int
	Size   int
	Header Header
}

// Out is what a client asks of its runner after an input: the messages to
// send, in order, and, if SetTimer, to (re)arm its one timer for Timer,
// replacing any earlier setting. It is reused by the next input.
type Out struct {
	Sends    []Send
	SetTimer bool
	Timer    sim.Time
}

// clientSlot is one user request (ranker) or iteration (trainer).
type clientSlot struct {
	start   sim.Time
	pushAt  sim.Time // trainers: when the pushes were sent
	pending int      // requests (fetches or pushes) outstanding
	failed  bool     // a request of this user request or iteration failed (Client.Failed)
	push    bool
	compute bool  // trainers: between the fetch phase and the pushes
	servers []int // distinct servers touched, in first-drawn order
	shards  []int // per entry of servers: its shard count
}

// Client is a ranker (Rankers of them, clients 0..) or a trainer (the
// next Trainers), as Config describes. Not safe for concurrent use.
type Client struct {
	cfg     *Config
	trainer bool
	rng     *rand.Rand
	shardOf []int
	st      *Stats
	slots   []clientSlot
	out     Out
	stopped bool
	perSrv  []int64
}

// NewClient returns client i of cfg (prepared), placing shards with
// shardOf (ShardServers) and recording into st.
func NewClient(cfg *Config, i int, shardOf []int, st *Stats) *Client {
	c := &Client{cfg: cfg, trainer: i >= cfg.Rankers, rng: sim.Stream(cfg.Seed, ClientStream(i)), shardOf: shardOf, st: st,
		perSrv: make([]int64, cfg.Servers)}
	n := cfg.RankerOutstanding
	if c.trainer {
		n = 1
	}
	c.slots = make([]clientSlot, n)
	return c
}

// Trainer reports whether the client is a trainer.
func (c *Client) Trainer() bool { return c.trainer }

// PerServer is how many requests the client has sent to each server.
func (c *Client) PerServer() []int64 { return c.perSrv }

func (c *Client) reset() *Out {
	c.out.Sends, c.out.SetTimer = c.out.Sends[:0], false
	return &c.out
}

func (c *Client) timer(t sim.Time) {
	c.out.SetTimer, c.out.Timer = true, t
}

func (c *Client) arrival(now sim.Time) sim.Time {
	return now + max(1, sim.Time(c.rng.ExpFloat64()/c.cfg.RankerRate*float64(sim.Second)))
}

// Start begins the client's load at now: a trainer's first fetch, a
// closed-loop ranker's RankerOutstanding user requests, or an open-loop
// ranker's first arrival.
func (c *Client) Start(now sim.Time) *Out {
	out := c.reset()
	switch {
	case c.trainer:
		c.fetch(0, now)
	case c.cfg.RankerRate > 0:
		c.timer(c.arrival(now))
	default:
		for i := range c.slots {
			c.fetch(i, now)
		}
	}
	return out
}

// Tick is the client's timer firing at now: a trainer's compute ends and
// it pushes; an open-loop ranker's user request arrives (dropped and
// counted if every slot is busy) and the next arrival is drawn. After Stop
// it does nothing.
func (c *Client) Tick(now sim.Time) *Out {
	out := c.reset()
	if c.stopped {
		return out
	}
	if c.trainer {
		if c.slots[0].compute {
			c.push(0, now)
		}
		return out
	}
	if c.cfg.RankerRate == 0 {
		return out
	}
	c.timer(c.arrival(now))
	for i := range c.slots {
		if c.slots[i].pending == 0 {
			c.fetch(i, now)
			return out
		}
	}
	if c.st.Measured(now) {
		c.st.Dropped++
	}
	return out
}

// Response is the answer with header h, n bytes long, arriving at now. It
// records the request's latency, and when it was the last one its slot
// waited for, the slot's, and moves the slot on (the next user request,
// the compute phase, or the next iteration). An answer for a slot with
// nothing pending is an error.
func (c *Client) Response(now sim.Time, h Header, n int) (*Out, error) {
	out := c.reset()
	st := c.st
	if h.Slot >= uint64(len(c.slots)) || c.slots[h.Slot].pending == 0 {
		return out, fmt.Errorf("an answer for slot %d, which has nothing pending", h.Slot)
	}
	st.Answered++
	if st.Measured(now) {
		st.RxBytes += int64(n)
	}
	return c.done(now, h)
}

// Failed is the runner's transport giving up, at now, on the request with
// header h (a request timeout that is not retried, or no usable replica):
// it ends the request as an answer would, so the slot moves on, and is
// counted in Stats.Failed; a ranker's user request with a failed request
// completes into UsersFailed instead of Users. Its latency (until the
// failure) is recorded like an answer's. A failure for a slot with nothing
// pending is an error.
func (c *Client) Failed(now sim.Time, h Header) (*Out, error) {
	out := c.reset()
	if h.Slot >= uint64(len(c.slots)) || c.slots[h.Slot].pending == 0 {
		return out, fmt.Errorf("a failure for slot %d, which has nothing pending", h.Slot)
	}
	c.st.Failed++
	c.slots[h.Slot].failed = true
	return c.done(now, h)
}

// done ends one request of slot h.Slot at now (answered or failed).
func (c *Client) done(now sim.Time, h Header) (*Out, error) {
	out := &c.out
	st := c.st
	if h.Op == OpFetch {
		st.record(st.Fetch, h.Sent, now)
	} else {
		st.record(st.Push, h.Sent, now)
	}
	i := int(h.Slot)
	sl := &c.slots[i]
	if sl.pending--; sl.pending > 0 {
		return out, nil
	}
	switch {
	case c.trainer && !sl.push:
		st.record(st.FetchPhase, sl.start, now)
		if c.stopped {
			st.record(st.Iteration, sl.start, now) // cut short: in at its age
			return out, nil
		}
		sl.compute = true
		c.timer(now + c.cfg.Compute)
		return out, nil
	case c.trainer:
		st.record(st.PushPhase, sl.pushAt, now)
		st.record(st.Iteration, sl.start, now)
		if st.Measured(now) {
			st.Iterations++
		}
	default:
		st.record(st.User, sl.start, now)
		if st.Measured(now) {
			if sl.failed {
				st.UsersFailed++
			} else {
				st.Users++
			}
		}
		if c.cfg.RankerRate > 0 {
			return out, nil
		}
	}
	if !c.stopped {
		c.fetch(i, now)
	}
	return out, nil
}

// Stop ends the load at now: no new request is sent after it, answers
// still arriving are recorded, and a trainer in its compute phase records
// its iteration at its age now. A runner that drains the answers (berun)
// calls Stop; one that cuts the run at the interval's end (besim) calls
// Censor instead.
func (c *Client) Stop(now sim.Time) {
	if c.stopped {
		return
	}
	c.stopped = true
	if sl := &c.slots[0]; c.trainer && sl.compute {
		sl.compute = false
		c.st.record(c.st.Iteration, sl.start, now)
	}
}

// Idle reports whether no request is outstanding.
func (c *Client) Idle() bool {
	for i := range c.slots {
		if c.slots[i].pending > 0 {
			return false
		}
	}
	return true
}

// Censor records, at the interval's end to, every user request,
// iteration, phase and request that started in the interval and is still
// open, at its age then (a lower bound), so that a stall shows in the
// percentiles instead of dropping out of them; it counts the open
// requests in FetchOpen and PushOpen.
func (c *Client) Censor(to sim.Time) {
	st := c.st
	for i := range c.slots {
		sl := &c.slots[i]
		// A trainer's slot is always in an iteration (computing when
		// nothing is pending); a ranker's is a user request while
		// requests are pending.
		if c.trainer {
			st.record(st.Iteration, sl.start, to)
		} else if sl.pending > 0 {
			st.record(st.User, sl.start, to)
		}
		if sl.pending == 0 {
			continue
		}
		at, h, n, phase := sl.start, st.Fetch, &st.FetchOpen, st.FetchPhase
		if sl.push {
			at, h, n, phase = sl.pushAt, st.Push, &st.PushOpen, st.PushPhase
		}
		if !st.Measured(at) {
			continue
		}
		if c.trainer {
			st.record(phase, at, to)
		}
		for range sl.pending {
			st.record(h, at, to)
			*n++
		}
	}
}

// fetch starts slot i: draws its shards and sends one fetch per distinct
// server holding them.
func (c *Client) fetch(i int, now sim.Time) {
	n := c.cfg.FanOut
	if c.trainer {
		n = c.cfg.TrainerShards
	}
	sl := &c.slots[i]
	sl.start, sl.push, sl.compute, sl.failed = now, false, false, false
	sl.servers, sl.shards = DrawFetch(c.rng, n, c.shardOf, sl.servers[:0], sl.shards[:0])
	sl.pending = len(sl.servers)
	for j, srv := range sl.servers {
		c.send(srv, Header{Slot: uint64(i), Sent: now, Op: OpFetch, Shards: sl.shards[j]}, c.cfg.Request)
	}
}

// push sends slot i's updates (trainers): one message per server fetched
// from, PushSize per shard.
func (c *Client) push(i int, now sim.Time) {
	sl := &c.slots[i]
	sl.push, sl.pushAt, sl.compute = true, now, false
	sl.pending = len(sl.servers)
	for j, srv := range sl.servers {
		n := 0
		for range sl.shards[j] {
			n += c.cfg.PushSize.Sample(c.rng)
		}
		c.send(srv, Header{Slot: uint64(i), Sent: now, Op: OpPush, Shards: sl.shards[j]}, max(n, HeaderSize))
	}
}

func (c *Client) send(srv int, h Header, size int) {
	c.out.Sends = append(c.out.Sends, Send{Server: srv, Size: size, Header: h})
	c.st.Sent++
	c.perSrv[srv]++
}

// Server is parameter server i: it answers a fetch with one FetchResponse
// value per shard asked for (at least a header) and a push with a header
// and 8 bytes, drawing sizes from its stream in the order it answers. Not
// safe for concurrent use: a runner serving connections in parallel
// serializes its calls.
type Server struct {
	cfg             *Config
	rng             *rand.Rand
	Fetches, Pushes int64 // requests answered
	RxBytes         int64 // request bytes received
	TxBytes         int64 // answer bytes
}

// NewServer returns server i of cfg (prepared).
func NewServer(cfg *Config, i int) *Server {
	return &Server{cfg: cfg, rng: sim.Stream(cfg.Seed, ServerStream(i))}
}

// Reply accounts a request of n bytes with header h and returns the size
// of its answer, which starts with h.
func (s *Server) Reply(h Header, n int) (int, error) {
	switch h.Op {
	case OpFetch:
		s.Fetches++
	case OpPush:
		s.Pushes++
	default:
		return 0, errors.New("unknown op")
	}
	s.RxBytes += int64(n)
	size := s.cfg.ReplySize(s.rng, h.Op, h.Shards)
	s.TxBytes += int64(size)
	return size, nil
}
