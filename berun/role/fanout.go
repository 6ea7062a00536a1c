package role

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/besim/besim/berun/internal/tcpx"
	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/sim"
)

// The fan-out runner drives a besim workload's state machines (package
// workloads/<experiment>) in wall-clock time: clients that send requests
// to a set of servers and receive one answer per request (the ps-cluster
// and incast-pull workloads). A server role answers each request with the
// size its machine draws, the request's header echoed; a client role runs
// its machine on one goroutine, with reader goroutines (TCP) or the I/O
// threads (verbs) feeding it the answers, and performs the sends and the
// timer the machine asks for. Times given to the machines are sim.Time
// since the run's start (Spec.Start); headers carry them.
//
// At the end of the load (Spec.End) the client stops its machine, waits
// for every answer still in flight, then sends each server an end marker
// (a header whose first 8 bytes are all ones, which no workload's header
// can start with) and checks the server's count of its requests against
// what it sent: a request lost or answered twice is an error.
//
// Over verbs both roles run the ByteExpress core on the host's RDMA device
// (fanverbs.go); over kernel TCP, one tcpx connection per (client, server).

// fanWorkload is what a workload supplies to the fan-out roles.
type fanWorkload struct {
	servers   int // server instances
	clients   int // client instances
	headLen   int // the header every request starts with and every answer echoes (<= 24 for newClient's machines)
	maxMsg    int // largest message either side sends
	warmup    sim.Time
	newServer func(i int) fanServerM
	newClient func(i int) fanClientM
	// rpc, when not nil, is a ps-cluster with the RPC layer on: its
	// clients run psrpc.go's loop instead of newClient's machine (verbs
	// only), its servers echo headLen (ps.RPCEcho) bytes.
	rpc *psRPC
}

// fanServerM is a workload's server machine. Calls are serialized.
type fanServerM interface {
	// reply accounts request p and returns the size of its answer (at
	// least the header length).
	reply(p []byte) (int, error)
	metrics(m map[string]float64)
}

// fanClientM is a workload's client machine, driven by one goroutine.
type fanClientM interface {
	setInterval(from, to sim.Time)
	start(now sim.Time) *fanOut
	tick(now sim.Time) *fanOut
	// response is the answer p (its header; n bytes in all) from server
	// srv at now.
	response(now sim.Time, srv int, p []byte, n int) (*fanOut, error)
	stop(now sim.Time)
	idle() bool
	// result adds the client's metrics and detail.
	result(r *Result)
}

// fanMsg is one request to send: size bytes to server srv, starting with
// head[:hlen] (the rest zero).
type fanMsg struct {
	srv, size int
	head      [24]byte
}

// fanOut is what a client machine asks for after one input.
type fanOut struct {
	msgs     []fanMsg
	setTimer bool
	timer    sim.Time
}

const (
	fanEndLen = 16 // end-marker answer: requests counted (8), request bytes (8)
	fanMaxMsg = 64 << 20
)

// fanEnd reports whether p is an end marker.
func fanEnd(p []byte) bool { return len(p) >= 8 && binary.LittleEndian.Uint64(p) == ^uint64(0) }

// fanRole is a server or client instance of a fan-out workload.
type fanRole struct {
	w      fanWorkload
	server bool
	idx    int
	verbs  bool
	device string
	qos    verbsQoS
	be     byteexpress.Config
	in     *inbound
	node   *beNode
	muteAt time.Duration // server: stop answering requests then (0: never)
}

func (r *fanRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	if r.verbs {
		// Servers and clients alike: the engine exchange listens on the
		// role's bind address.
		n, err := newBENode(ctx, spec, r.device, r.qos, r.be)
		if err != nil {
			return "", err
		}
		r.node = n
		return n.ln.Addr().String(), nil
	}
	if !r.server {
		return "", nil
	}
	ln, err := listen(ctx, spec.Bind)
	if err != nil {
		return "", err
	}
	r.in = &inbound{ln: ln, opts: tcpx.Options{MaxMessage: r.w.maxMsg + 64}}
	return ln.Addr().String(), nil
}

func (r *fanRole) Close() error {
	if r.node != nil {
		return r.node.close()
	}
	if r.in != nil {
		return r.in.ln.Close()
	}
	return nil
}

func (r *fanRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	if r.server {
		srv := &fanSrv{w: &r.w, m: r.w.newServer(r.idx), muteAt: r.muteAt}
		if r.verbs {
			return srv.runBE(ctx, spec, r.node)
		}
		return srv.runTCP(ctx, spec, r.in)
	}
	if r.w.rpc != nil {
		return r.runPSRPC(ctx, spec, peers)
	}
	return r.runClient(ctx, spec, peers)
}

// fanSrv is a server instance: its machine behind a lock, and its count
// of each client's requests (checked against the client's own at the end).
type fanSrv struct {
	w      *fanWorkload
	mu     sync.Mutex
	m      fanServerM
	n, rx  int64 // requests answered and their bytes, all clients
	seen   int
	ended  int
	closed bool
	// muteAt (verbs): requests after it are taken in and counted but not
	// answered (mute_at); muted counts them.
	muteAt time.Duration
	muted  int64
}

// fanPeer is a server's count of one client's requests; ended once the
// client's end marker is answered.
type fanPeer struct {
	n, rx int64
	ended bool
}

// answer is the reply to request p from client c: its size, or the
// end-marker count written into head (hlen + fanEndLen bytes). It copies
// p's header into head. Call it with s.mu held.
func (s *fanSrv) answer(c *fanPeer, p []byte, head []byte) (size int, end bool, err error) {
	hl := s.w.headLen
	if len(p) < hl {
		return 0, false, fmt.Errorf("a request of %d bytes, the header is %d", len(p), hl)
	}
	copy(head, p[:hl])
	if fanEnd(p) {
		binary.LittleEndian.PutUint64(head[hl:], uint64(c.n))
		binary.LittleEndian.PutUint64(head[hl+8:], uint64(c.rx))
		s.ended++
		c.ended = true
		return hl + fanEndLen, true, nil
	}
	if size, err = s.m.reply(p); err != nil {
		return 0, false, err
	}
	c.n++
	c.rx += int64(len(p))
	s.n++
	s.rx += int64(len(p))
	return max(size, hl), false, nil
}

func (s *fanSrv) result(expected int) Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]float64{"requests": float64(s.n), "rx_bytes": float64(s.rx), "clients_expected": float64(expected),
		"clients_seen": float64(s.seen), "clients_ended": float64(s.ended)}
	s.m.metrics(m)
	if s.muteAt > 0 {
		m["unanswered"] = float64(s.muted)
	}
	return Result{Metrics: m}
}

// runTCP serves one tcpx connection per client until every expected
// client has sent its end marker.
func (s *fanSrv) runTCP(ctx context.Context, spec Spec, in *inbound) (Result, error) {
	outs, notes, err := in.serve(ctx, spec, func(c *tcpx.Conn, h dataHello) (any, error) {
		s.mu.Lock()
		s.seen++
		s.mu.Unlock()
		var peer fanPeer
		var req, resp []byte
		head := make([]byte, s.w.headLen+fanEndLen)
		for {
			m, err := c.ReadMsg(req[:0])
			if err != nil {
				if err == io.EOF {
					err = fmt.Errorf("connection closed without the end marker after %d requests", peer.n)
				}
				return nil, err
			}
			req = m
			s.mu.Lock()
			n, end, err := s.answer(&peer, m, head)
			s.mu.Unlock()
			if err != nil {
				return nil, err
			}
			if cap(resp) < n {
				resp = make([]byte, n)
			}
			// Only the header means anything; the payload past it is
			// opaque and not cleared (an O(size) pass per answer).
			resp = resp[:n]
			if end {
				copy(resp, head)
			} else {
				copy(resp, head[:s.w.headLen])
			}
			if err := c.WriteMsg(resp); err != nil || end {
				return nil, err
			}
		}
	})
	res := s.result(len(spec.From))
	res.Notes = notes
	if err == nil {
		err = joinErrs(outs)
	}
	return res, err
}

// fanIn is one answer (or failure) for a client's loop.
type fanIn struct {
	srv  int
	head [24 + fanEndLen]byte
	hl   int // bytes of head filled
	n    int
	at   time.Time
	err  error
	end  bool // the end-marker count
}

func newFanIn(srv int, p []byte, at time.Time) fanIn {
	in := fanIn{srv: srv, n: len(p), at: at, end: fanEnd(p)}
	in.hl = copy(in.head[:], p)
	return in
}

// fanCli is a client instance while it runs.
type fanCli struct {
	w      *fanWorkload
	idx    int
	m      fanClientM
	conns  []msgConn
	perSrv []int64
	sent   int64
	got    int64
	base   time.Time
	buf    []byte
}

func (r *fanRole) runClient(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	c := &fanCli{w: &r.w, idx: r.idx, m: r.w.newClient(r.idx), perSrv: make([]int64, len(spec.Peers))}
	res := Result{Metrics: map[string]float64{}}
	in := make(chan fanIn, 4096)
	var wg sync.WaitGroup
	quit := make(chan struct{})
	defer func() {
		close(quit)
		for _, cn := range c.conns {
			cn.Close()
		}
		wg.Wait()
	}()
	var err error
	if r.verbs {
		err = c.dialBE(spec, peers, r.node, in, quit)
	} else {
		err = c.dialTCP(ctx, spec, peers, in, quit, &wg)
	}
	if err == nil {
		err = c.loop(ctx, spec, in)
	}
	res.Metrics["requests"] = float64(c.sent)
	res.Metrics["responses"] = float64(c.got)
	res.Metrics["lost"] = float64(c.sent - c.got)
	c.m.result(&res)
	return res, err
}

func (c *fanCli) dialTCP(ctx context.Context, spec Spec, peers PeerMap, in chan<- fanIn, quit <-chan struct{}, wg *sync.WaitGroup) error {
	src, _, _ := net.SplitHostPort(spec.Bind)
	for i, id := range spec.Peers {
		p, ok := peers[id]
		if !ok || p.Addr == "" {
			return fmt.Errorf("peer %s has no data address", id)
		}
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		cn, err := tcpx.Dial(dctx, p.Addr, src, tcpx.Options{MaxMessage: c.w.maxMsg + 64})
		cancel()
		if err != nil {
			return fmt.Errorf("connect to %s (%s on %s): %w", id, p.Addr, p.Host, err)
		}
		c.conns = append(c.conns, cn)
		if err := writeJSON(cn, dataHello{From: spec.ID, Role: spec.Role, Conn: 0, Conns: 1}); err != nil {
			return fmt.Errorf("hello to %s: %w", id, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b []byte
			for {
				m, err := cn.ReadMsg(b[:0])
				b = m
				f := fanIn{srv: i, err: err}
				if err == nil {
					f = newFanIn(i, m, time.Now())
				}
				select {
				case in <- f:
				case <-quit:
					return
				}
				if f.err != nil || f.end {
					return
				}
			}
		}()
	}
	return nil
}

// now is t as the machines' clock: sim.Time since the run's start.
func (c *fanCli) now(t time.Time) sim.Time {
	return sim.Time(t.Sub(c.base).Nanoseconds()) * sim.Nanosecond
}

func (c *fanCli) loop(ctx context.Context, spec Spec, in <-chan fanIn) error {
	c.base = spec.Start
	if c.base.IsZero() {
		c.base = time.Now()
	}
	c.m.setInterval(c.w.warmup, sim.Time(spec.Duration.Nanoseconds())*sim.Nanosecond)
	end := time.NewTimer(time.Until(c.base.Add(spec.Duration)))
	defer end.Stop()
	// One timer serves the machine's single timer.
	tick := time.NewTimer(time.Hour)
	tick.Stop()
	defer tick.Stop()
	if err := c.do(c.m.start(c.now(time.Now())), tick); err != nil {
		return err
	}
	stopping := false
	for {
		if stopping && c.m.idle() {
			return c.finish(ctx, in)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped (%v) with %d of %d requests answered", context.Cause(ctx), c.got, c.sent)
		case <-end.C:
			stopping = true
			c.m.stop(c.now(time.Now()))
		case <-tick.C:
			if err := c.do(c.m.tick(c.now(time.Now())), tick); err != nil {
				return err
			}
		case f := <-in:
			if f.err != nil {
				return fmt.Errorf("server %d: %w", f.srv, f.err)
			}
			if f.end {
				return fmt.Errorf("server %d: an end-marker answer before the end", f.srv)
			}
			c.got++
			out, err := c.m.response(c.now(f.at), f.srv, f.head[:f.hl], f.n)
			if err != nil {
				return fmt.Errorf("server %d: %w", f.srv, err)
			}
			if err := c.do(out, tick); err != nil {
				return err
			}
		}
	}
}

// do performs what the machine asked for: its sends, then its timer.
func (c *fanCli) do(out *fanOut, tick *time.Timer) error {
	for i := range out.msgs {
		m := &out.msgs[i]
		if m.srv < 0 || m.srv >= len(c.conns) {
			return fmt.Errorf("the workload sent to server %d of %d", m.srv, len(c.conns))
		}
		if m.size > len(c.buf) {
			c.buf = make([]byte, m.size)
		}
		p := c.buf[:m.size]
		copy(p, m.head[:min(c.w.headLen, m.size)])
		if err := c.conns[m.srv].WriteMsg(p); err != nil {
			return fmt.Errorf("request to server %d: %w", m.srv, err)
		}
		c.sent++
		c.perSrv[m.srv]++
	}
	if out.setTimer {
		tick.Reset(time.Until(c.base.Add(time.Duration(out.timer / sim.Nanosecond))))
	}
	return nil
}

// finish sends every server the end marker and checks its count of this
// client's requests against what was sent.
func (c *fanCli) finish(ctx context.Context, in <-chan fanIn) error {
	marker := make([]byte, c.w.headLen)
	binary.LittleEndian.PutUint64(marker, ^uint64(0))
	for srv, cn := range c.conns {
		if err := cn.WriteMsg(marker); err != nil {
			return fmt.Errorf("end marker to server %d: %w", srv, err)
		}
	}
	wait := time.NewTimer(helloTimeout)
	defer wait.Stop()
	hl := c.w.headLen
	var errs []error
	done := make([]bool, len(c.conns))
	for left := len(c.conns); left > 0; {
		select {
		case f := <-in:
			if done[f.srv] {
				// A server that has its count may close its endpoint
				// (its last client ended): the engines to it fail.
				continue
			}
			if f.end {
				// The server lingers until its count's socket is
				// closed: it can go now.
				_ = c.conns[f.srv].Close()
			}
			switch {
			case f.err != nil:
				errs = append(errs, fmt.Errorf("server %d: %w", f.srv, f.err))
			case !f.end:
				errs = append(errs, fmt.Errorf("server %d: an answer after the end marker", f.srv))
				continue
			case f.hl < hl+fanEndLen:
				errs = append(errs, fmt.Errorf("server %d: an end-marker answer of %d bytes", f.srv, f.hl))
			default:
				if n := int64(binary.LittleEndian.Uint64(f.head[hl:])); n != c.perSrv[f.srv] {
					errs = append(errs, fmt.Errorf("server %d counted %d requests, %d were sent", f.srv, n, c.perSrv[f.srv]))
				}
			}
			done[f.srv] = true
			left--
		case <-wait.C:
			return errors.Join(append(errs, fmt.Errorf("%d servers did not answer the end marker within %v", left, helloTimeout))...)
		case <-ctx.Done():
			return errors.Join(append(errs, fmt.Errorf("stopped (%v) waiting for the servers' counts", context.Cause(ctx)))...)
		}
	}
	return errors.Join(errs...)
}
