package role

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/besim/besim/berun/internal/tcpx"
	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/app"
	"github.com/besim/besim/workloads/failover"
)

// The failover roles replay a besim failover scenario (package
// workloads/failover, paper §7.2) over the ByteExpress core on verbs
// (param transport verbs) or over kernel TCP: failover-server answers the
// RPC layer's fetches as the scenario's replica host index (its node id),
// failover-client i is besim's client i, keeping the scenario's
// outstanding idempotent fetches in flight through byteexpress/rpc's
// Client to random shards, driven in wall-clock time by the state machine
// besim's simulation drives (failover.Client). Its peers are the servers
// in the order replica A of shards 0..S-1, then replica B of shards
// 0..S-1.
//
// A server with crash_at closes its endpoint (verbs: the ByteExpress
// endpoint and its exchange listener; tcp: its listener and every
// connection) abruptly that long after the start, the hardware analogue
// of besim's host crash: its clients find out by keepalive, a connection
// error or the request timeout and the RPC layer moves the shard to the
// replica in the other mini-pod. Clients told fault_at and crashed
// measure detection and recovery from it as besim does.
func init() {
	common := fanParams("")[1:] // transport, device, gid_index, prio, dscp
	Register(Info{Name: "failover-server", New: newFailover,
		Params: append([]Param{{Name: "index", Doc: "the server's host index in the scenario's layout, its RPC node id (required)"},
			{Name: "crash_at", Default: "0s", Doc: "close the endpoint abruptly this long after the start (0: never), the analogue of a host crash"}}, common...),
		Summary: "replica server of a besim failover scenario over verbs or kernel TCP: answers every fetch with the scenario's response size; crash_at crashes it"})
	Register(Info{Name: "failover-client", New: newFailover,
		Params: append([]Param{{Name: "index", Doc: "client index in the scenario (required)"},
			{Name: "fault_at", Default: "-1s", Doc: "when the first fault strikes, after the start (negative: none); detection and recovery are measured from it"},
			{Name: "crashed", Default: "-1", Doc: "the host index that crashes first (-1: none): recovery counts answers from other hosts"}}, common...),
		Summary: "client of a besim failover scenario over verbs or kernel TCP: keeps the scenario's idempotent fetches in flight through the RPC layer (byteexpress/rpc)"})
}

// foRole is a failover-server or failover-client instance.
type foRole struct {
	cfg     failover.Config
	server  bool
	idx     int
	verbs   bool
	device  string
	qos     verbsQoS
	be      byteexpress.Config
	crashAt time.Duration // server
	faultAt time.Duration // client; negative: none
	crashed int           // client
	node    *beNode
	ln      net.Listener
	closed  atomic.Bool // node or ln closed (a crash, or Close)
}

func newFailover(spec Spec) (Role, error) {
	info, _ := Lookup(spec.Role)
	server := spec.Role == "failover-server"
	p := ReadParams(info, spec)
	r := &foRole{server: server, idx: p.Int("index", 0, 1<<20), crashed: -1, faultAt: -1}
	transport := "tcp"
	if _, set := spec.Params["transport"]; set {
		transport = p.Enum("transport", "tcp", "verbs")
	}
	vp := readVerbsParams(p, spec)
	r.device = vp.device
	if server {
		r.crashAt = p.Duration("crash_at", 0, 24*time.Hour)
	} else {
		r.faultAt = p.Duration("fault_at", -time.Hour, 24*time.Hour)
		r.crashed = p.Int("crashed", -1, 1<<20)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	r.verbs = transport == "verbs"
	s, err := roleScenario(spec)
	if err != nil {
		return nil, err
	}
	if s.Workload == nil || s.Workload.Kind != scenarios.Failover {
		return nil, fmt.Errorf("the scenario has no %s workload", scenarios.Failover)
	}
	if r.cfg, err = failover.FromScenario(s); err != nil {
		return nil, err
	}
	if err := r.cfg.Prepare(); err != nil {
		return nil, err
	}
	r.qos = vp.qos(s)
	r.be = app.Engine(s.Workload)
	r.be.KeepaliveInterval, r.be.KeepaliveTimeout = r.cfg.KeepaliveInterval, r.cfg.KeepaliveTimeout
	r.be.ConnectTimeout = r.cfg.RPC.ConnTimeout // Tc bounds a new engine's exchange, as in besim
	L := r.cfg.Hosts()
	switch {
	case server && (r.idx < L || r.idx >= 2*L+r.cfg.Shards || r.idx >= L+r.cfg.Shards && r.idx < 2*L):
		return nil, fmt.Errorf("index %d is no replica host: the scenario's replicas are hosts %d..%d (A) and %d..%d (B)", r.idx, L, L+r.cfg.Shards-1, 2*L, 2*L+r.cfg.Shards-1)
	case server && len(spec.Peers) > 0:
		return nil, fmt.Errorf("a server connects to nobody; remove its peers %v", spec.Peers)
	case !server && r.idx >= r.cfg.Clients:
		return nil, fmt.Errorf("index %d: the scenario has %d clients", r.idx, r.cfg.Clients)
	case !server && len(spec.Peers) != 2*r.cfg.Shards:
		return nil, fmt.Errorf("a client needs the scenario's %d replica servers as peers, replica A of every shard then replica B (has %d)", 2*r.cfg.Shards, len(spec.Peers))
	}
	return r, nil
}

func (r *foRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	if r.verbs {
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
	r.ln = ln
	return ln.Addr().String(), nil
}

// shut closes the endpoint or listener once (a crash, then Close).
func (r *foRole) shut() error {
	if r.closed.Swap(true) {
		return nil
	}
	if r.node != nil {
		return r.node.close()
	}
	if r.ln != nil {
		return r.ln.Close()
	}
	return nil
}

func (r *foRole) Close() error { return r.shut() }

func (r *foRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	if r.server {
		return r.runServer(ctx, spec)
	}
	return r.runClient(ctx, spec, peers)
}

// foMaxMsg bounds a message either side sends.
func (r *foRole) foMaxMsg() int { return max(r.cfg.Request, r.cfg.ReplySize()) + 64 }

// runServer answers fetches until the end of the run, crashing at
// crash_at if set.
func (r *foRole) runServer(ctx context.Context, spec Spec) (Result, error) {
	var (
		mu         sync.Mutex
		served, tx int64
		errs       []error
		conns      = map[*tcpx.Conn]bool{}
		wg         sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		if len(errs) < 8 {
			errs = append(errs, err)
		}
		mu.Unlock()
	}
	size := r.cfg.ReplySize()
	if r.verbs {
		n := r.node
		n.setHandler(func(ev byteexpress.Event) {
			switch ev.Kind {
			case byteexpress.EvMessage:
				out, err := n.ep.Allocate(size)
				if err == nil {
					clear(out.Bytes()[:size])
					if err = failover.EchoHeader(out.Bytes(), ev.Buf.Bytes()[:ev.Len]); err != nil {
						_ = n.ep.Free(out)
					}
				}
				_ = n.ep.Free(ev.Buf)
				if err != nil {
					fail(fmt.Errorf("%s: %w", ev.Remote, err))
					return
				}
				if err := ev.Socket.Send(out, size); err != nil {
					_ = n.ep.Free(out)
					return
				}
				mu.Lock()
				served++
				tx += int64(size)
				mu.Unlock()
			case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
				_ = n.ep.Free(ev.Buf)
			}
		})
		n.listen()
	} else {
		opts := tcpx.Options{MaxMessage: r.foMaxMsg()}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				nc, err := r.ln.Accept()
				if err != nil {
					return // closed: the crash or the end
				}
				c, err := tcpx.New(nc, opts)
				if err != nil {
					_ = nc.Close()
					continue
				}
				mu.Lock()
				if r.closed.Load() {
					mu.Unlock()
					_ = c.Close()
					return
				}
				conns[c] = true
				mu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					var req []byte
					resp := make([]byte, size)
					for {
						m, err := c.ReadMsg(req[:0])
						if err != nil {
							return // the client closed it, or we did
						}
						req = m
						clear(resp)
						if err := failover.EchoHeader(resp, m); err != nil {
							fail(err)
							return
						}
						if err := c.WriteMsg(resp); err != nil {
							return
						}
						mu.Lock()
						served++
						tx += int64(size)
						mu.Unlock()
					}
				}()
			}
		}()
	}
	crash := make(<-chan time.Time)
	if r.crashAt > 0 {
		t := time.NewTimer(time.Until(spec.Start.Add(r.crashAt)))
		defer t.Stop()
		crash = t.C
	}
	// Serve a little past the end: the clients stop at it, and a server
	// that left first would look like a crash to them.
	end := time.NewTimer(time.Until(spec.End()) + min(spec.Grace/2, 500*time.Millisecond))
	defer end.Stop()
	crashed := false
	var err error
	closeAll := func() {
		_ = r.shut()
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
	}
wait:
	for {
		select {
		case <-crash:
			crashed = true
			closeAll()
			spec.logf("%s: crashed (endpoint closed) at %v", spec.ID, r.crashAt)
		case <-end.C:
			break wait
		case <-ctx.Done():
			err = fmt.Errorf("stopped (%v)", context.Cause(ctx))
			break wait
		}
	}
	closeAll()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	res := Result{Metrics: map[string]float64{"requests": float64(served), "tx_bytes": float64(tx), "node": float64(r.idx), "crashed": 0}}
	if crashed {
		res.Metrics["crashed"] = 1
		res.Metrics["crashed_at_s"] = r.crashAt.Seconds()
	}
	return res, errors.Join(append(errs, err)...)
}

// logf logs through the agent, if it gave a logger.
func (s *Spec) logf(format string, args ...any) {
	if s.Logf != nil {
		s.Logf(format, args...)
	}
}

// FailoverDetail is a failover-client's Detail: its counts (the RPC
// layer's included), detection and recovery times (ns after fault_at; 0:
// never), its completions per bin and the answers per host, so that the
// controller reduces the clients together as besim does.
type FailoverDetail struct {
	Summary failover.Summary `json:"summary"`
	Bins    []int            `json:"bins"`
	BinNs   int64            `json:"bin_ns"`
	// FaultAtNs is fault_at after the first bin's start (negative: no
	// fault).
	FaultAtNs int64    `json:"fault_at_ns"`
	Served    []int    `json:"served"`
	Errors    []string `json:"errors,omitempty"`
}

// foEv is what the transports hand the client's loop.
type foEv struct {
	node int
	hdr  rpc.Header
	at   time.Time
	err  error      // an engine or connection failure of node
	conn *foTCPConn // tcp: the connection it came on
}

func (r *foRole) runClient(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	cfg := &r.cfg
	S := cfg.Shards
	nodeOf := make([]int, len(spec.Peers)) // peer index -> node
	peerOf := map[int]string{}
	for i, id := range spec.Peers {
		nodeOf[i] = cfg.ReplicaA(i)
		if i >= S {
			nodeOf[i] = cfg.ReplicaB(i - S)
		}
		peerOf[nodeOf[i]] = id
		if p, ok := peers[id]; !ok || p.Addr == "" {
			return Result{}, fmt.Errorf("peer %s has no address", id)
		}
	}
	in := make(chan foEv, 4096)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	var dialer rpc.Dialer
	var td *foTCPDialer
	if r.verbs {
		n := r.node
		byAddr := map[byteexpress.Addr]int{}
		n.mu.Lock()
		for node, id := range peerOf {
			n.peers[byteexpress.Addr(id)] = peers[id].Addr
			byAddr[byteexpress.Addr(id)] = node
		}
		n.mu.Unlock()
		n.setHandler(func(ev byteexpress.Event) {
			node, known := byAddr[ev.Remote]
			var e foEv
			switch ev.Kind {
			case byteexpress.EvMessage:
				h, err := rpc.ParseHeader(ev.Buf.Bytes()[:ev.Len])
				_ = n.ep.Free(ev.Buf)
				e = foEv{node: node, hdr: h, at: time.Now(), err: err}
				if err != nil {
					e.node = -1 // not a failure of the node: a bad message
				}
			case byteexpress.EvEngineError:
				// One per engine; the EvSocketFailed of each socket it
				// carried would walk the ladder again for the same failure.
				e = foEv{node: node, at: time.Now(), err: fmt.Errorf("%v: %v", ev.Kind, ev.Err)}
			case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
				_ = n.ep.Free(ev.Buf)
				return
			default:
				return
			}
			if !known {
				return
			}
			select {
			case in <- e:
			case <-quit:
			}
		})
		dialer = foBEDialer{&rpc.SocketDialer{EP: n.ep, Addr: func(node rpc.NodeID) byteexpress.Addr { return byteexpress.Addr(peerOf[int(node)]) },
			Alloc: n.ep.Allocate, Free: n.ep.Free}}
	} else {
		src, _, _ := net.SplitHostPort(spec.Bind)
		td = &foTCPDialer{ctx: ctx, src: src, addr: map[int]string{}, in: in, quit: quit, wg: &wg,
			opts: tcpx.Options{MaxMessage: r.foMaxMsg()}, timeout: max(cfg.RPC.ConnTimeout, 10*time.Millisecond)}
		for node, id := range peerOf {
			td.addr[node] = peers[id].Addr
		}
		dialer = td
	}
	defer func() {
		close(quit)
		if td != nil {
			td.closeAll()
		}
		wg.Wait()
	}()
	pol, err := failover.NewPolicy(cfg, r.idx)
	if err != nil {
		return Result{}, err
	}
	base := spec.Start
	if base.IsZero() {
		base = time.Now()
	}
	now := func(t time.Time) sim.Time { return sim.Time(t.Sub(base).Nanoseconds()) * sim.Nanosecond }
	st := failover.NewStats(3 * cfg.Hosts())
	warm := cfg.Warmup
	runFor := sim.Time(spec.Duration.Nanoseconds())*sim.Nanosecond - warm
	faultAt := sim.Never
	if r.faultAt >= 0 {
		faultAt = sim.Time(r.faultAt.Nanoseconds()) * sim.Nanosecond
	}
	st.SetFault(faultAt, r.crashed)
	st.SetBins(warm, cfg.Bin, int(max(0, (runFor+cfg.Bin-1)/cfg.Bin)))
	m := failover.NewClient(cfg, r.idx, rpc.NewClient(pol, dialer, nil), st)
	tick := time.NewTimer(time.Hour)
	tick.Stop()
	defer tick.Stop()
	arm := func(t sim.Time) {
		if at, ok := m.Deadline(t); ok {
			tick.Reset(time.Until(base.Add(failover.CoreTime(at))))
		}
	}
	end := time.NewTimer(time.Until(spec.End()))
	defer end.Stop()
	t := now(time.Now())
	m.Start(t)
	arm(t)
	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			runErr = fmt.Errorf("stopped (%v)", context.Cause(ctx))
			break loop
		case <-end.C:
			break loop
		case <-tick.C:
			t := now(time.Now())
			m.Tick(t)
			arm(t)
		case e := <-in:
			t := now(e.at)
			switch {
			case e.err != nil && e.node < 0:
				st.Fail(e.err)
			case e.err != nil:
				if e.conn != nil && e.conn.dead.Load() {
					continue // a connection the RPC layer closed
				}
				m.EngineError(e.node, t)
			default:
				m.Response(e.hdr, e.node, t)
			}
			arm(t)
		}
	}
	m.Stop()
	endT := now(time.Now())
	sum := failover.Summary{Started: st.Started, Completed: st.Completed, Failed: st.Failed,
		DetectedAfter: st.DetectedAfter, RecoveredAfter: st.RecoveredAfter, Bin: cfg.Bin}
	sum.AddRPC(m.RPC(), failover.CoreTime(endT))
	d := &FailoverDetail{Summary: sum, Bins: st.Bins, BinNs: int64(cfg.Bin / sim.Nanosecond), FaultAtNs: -1, Served: st.Served}
	if faultAt != sim.Never {
		d.FaultAtNs = int64((faultAt - warm) / sim.Nanosecond)
	}
	for _, e := range st.Errors {
		d.Errors = append(d.Errors, e.Error())
	}
	res := Result{Detail: d, Metrics: map[string]float64{"started": float64(sum.Started), "completed": float64(sum.Completed),
		"failed": float64(sum.Failed), "stranded": float64(sum.Stranded), "retried": float64(sum.Retries), "resent": float64(sum.Resent)}}
	if sum.DetectedAfter > 0 {
		res.Metrics["detected_after_ms"] = sum.DetectedAfter.Seconds() * 1e3
	}
	if sum.RecoveredAfter > 0 {
		res.Metrics["recovered_after_ms"] = sum.RecoveredAfter.Seconds() * 1e3
	}
	res.Notes = d.Errors
	return res, runErr
}

// foTCPDialer is the RPC layer's transport over kernel TCP (param
// transport tcp): one tcpx connection per (node, path), opened when the
// RPC layer dials, with a reader goroutine handing the answers and the
// connection's failure to the client's loop.
type foTCPDialer struct {
	ctx     context.Context
	src     string
	addr    map[int]string
	in      chan<- foEv
	quit    <-chan struct{}
	wg      *sync.WaitGroup
	opts    tcpx.Options
	timeout time.Duration
	mu      sync.Mutex
	conns   []*foTCPConn
}

type foTCPConn struct {
	c    *tcpx.Conn
	buf  []byte
	dead atomic.Bool // closed by the RPC layer: its read error is no news
}

func (d *foTCPDialer) Dial(node rpc.NodeID, _ int) (rpc.Conn, error) {
	a, ok := d.addr[int(node)]
	if !ok {
		return nil, fmt.Errorf("no server for node %d", node)
	}
	ctx, cancel := context.WithTimeout(d.ctx, d.timeout)
	c, err := tcpx.Dial(ctx, a, d.src, d.opts)
	cancel()
	if err != nil {
		return nil, err
	}
	fc := &foTCPConn{c: c}
	d.mu.Lock()
	d.conns = append(d.conns, fc)
	d.mu.Unlock()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		var b []byte
		for {
			m, err := c.ReadMsg(b[:0])
			b = m
			e := foEv{node: int(node), at: time.Now(), err: err, conn: fc}
			if err == nil {
				if e.hdr, e.err = rpc.ParseHeader(m); e.err != nil {
					e.node = -1
				}
			}
			select {
			case d.in <- e:
			case <-d.quit:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return fc, nil
}

func (d *foTCPDialer) closeAll() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
}

func (c *foTCPConn) Send(hdr []byte, n int) error {
	if cap(c.buf) < n {
		c.buf = make([]byte, n)
	}
	p := c.buf[:n]
	clear(p)
	copy(p, hdr)
	if err := c.c.WriteMsg(p); err != nil {
		// The peer is gone (a crash), and the loop has not heard yet:
		// as over verbs (foBEDialer), the request went into a dead
		// connection. Closing it makes sure the reader reports the
		// failure, which re-sends it.
		_ = c.c.Close()
	}
	return nil
}

func (c *foTCPConn) Close() {
	c.dead.Store(true)
	_ = c.c.Close()
}

// foBEDialer is the RPC layer's socket transport with one difference the
// wall clock makes: the core reports a failed engine on its I/O thread
// and the loop hears of it a moment later, so a send in between can find
// the socket already closed. In besim the failure and the loop are one
// event apart and that send cannot happen; here it is taken as sent into
// the dead connection (what a crashed peer's QP does with it): the queued
// engine error re-sends it, or Tr does.
type foBEDialer struct{ d *rpc.SocketDialer }

type foBEConn struct{ c rpc.Conn }

func (d foBEDialer) Dial(node rpc.NodeID, path int) (rpc.Conn, error) {
	c, err := d.d.Dial(node, path)
	if err != nil {
		return nil, err
	}
	return foBEConn{c}, nil
}

func (c foBEConn) Send(hdr []byte, n int) error {
	if err := c.c.Send(hdr, n); err != nil && !errors.Is(err, byteexpress.ErrClosed) {
		return err
	}
	return nil
}

func (c foBEConn) Close() { c.c.Close() }
