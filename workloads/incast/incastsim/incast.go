// Package incastsim drives the incast workload (package incast, paper
// §6.3: Figure 14's setup, Table 4, Figure 15) over the simulated
// leaf-spine: ByteExpress on simhost's RNICs for the pulls, perftest-like
// RC WRITE streams on the same NICs for the victim and bandwidth flows. It
// registers scenario kind incast-pull and reduces a run to the result
// format.
package incastsim

import (
	"fmt"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/experiment"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/metrics"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/app"
	"github.com/besim/besim/workloads/incast"
	"github.com/besim/besim/workloads/internal/simrun"
)

// Config is an incast simulation: the workload (incast.Config) on a
// simulated cluster.
//
// Topology (built here; Cluster.Fabric.Topology is overwritten): a
// leaf-spine of HostsPerLeaf-host leaves and Spines spines (Layout), every
// leaf with one uplink to each spine, ECMP over them. Leaf 0
// holds the workers (hosts 0..Workers-1) and the victim's receiver (host
// Workers); from the first host of leaf 1 on come the victim's sender,
// the parameter servers and the bandwidth-flow senders, filling as many
// leaves as they need, so the victim shares leaf 1's uplink with servers.
// Each worker pulls from every server over one ByteExpress socket (one
// engine per host pair). All responses converge on the workers' 25 Gb/s
// ports, so the queue builds at leaf 0's egress to the workers, which PFC
// accounts to leaf 0's ingress from the spine; when that crosses XOFF,
// leaf 0 pauses the spine, the spine's egress to leaf 0 backs up into its
// ingress from the servers' leaves, and the spine pauses them (PFC
// propagation). The victim's traffic takes the same leaf 1 -> spine ->
// leaf 0 path to an idle receiver, so it is stalled by pauses caused by a
// port it never uses. The victim and bandwidth flows are perftest
// ib_write_bw-like RC WRITE streams on the simulated NICs (see stream).
//
// The per-engine send window is Cluster.BE.Cwnd (0: none) and the fragment
// size Cluster.BE.FragSize; they apply to every engine, so a server can
// have at most Cwnd response bytes posted and unacknowledged per worker.
// PFC counters cover the whole run (a pause at any time counts for
// "servers before PFC").
type Config struct {
	incast.Config
	Cluster simhost.Config
	// Watch, when set, stops the run as soon as its condition is decided
	// (a search probe, experiment.SimulateWatched); the Result then has
	// Stopped set and nothing else measured.
	Watch *experiment.Watch
}

// Result is what one run measured.
type Result struct {
	Hosts        int
	Latency      *metrics.Histogram // pull latency, nanoseconds, requests sent in the measured interval
	Pulls        int64              // responses received in the measured interval
	Unfinished   int64              // pulls sent in the interval still unanswered at the drain limit
	WorkerGbps   float64            // payload received by the workers' NICs per second (all workers)
	VictimGbps   float64            // payload received by the victim's receiver
	ResponseMean float64            // bytes, the distribution's mean
	ServerCPU    float64            // mean I/O-thread utilisation of a server over the measured interval
	WorkerCPU    float64            // mean of a worker
	VictimPaused sim.Time           // how long the victim sender's uplink was paused (whole run)
	// QP context cache lookups of the servers' and the workers' NICs in
	// the measured interval.
	ServerQPHits, ServerQPMisses uint64
	WorkerQPHits, WorkerQPMisses uint64
	Engines                      int            // ByteExpress engines of all workers at the end of the interval
	Report                       *fabric.Report // fabric counters at the end
	Setup                        sim.Time       // virtual time until every socket was connected
	PoolWarm                     sim.Time       // and until every request slot had completed once
	Events                       uint64
	Errors                       []error
	Stopped                      bool // Config.Watch stopped the run: only Events is set
}

// Layout returns the topology Run builds: leaves of HostsPerLeaf
// hosts (the workers' leaf first, then as many leaves as the victim's
// sender, the servers and the bandwidth-flow senders need, at least one).
func (c *Config) Layout() (leaves, hostsPerLeaf int) {
	hpl := c.HostsPerLeaf
	if hpl == 0 {
		hpl = app.DefaultHostsPerLeaf
	}
	n := c.Servers + c.BandwidthFlows
	if c.Victim {
		n++
	}
	return 1 + max(1, (n+hpl-1)/hpl), hpl
}

// simrun.SetupLimit bounds the connection phase, poolWarmLimit the pool warmup.
const (
	poolWarmLimit = 100 * sim.Millisecond
	drainLimit    = 100 * sim.Millisecond
)

// Run builds and runs one incast simulation.
func Run(cfg Config) (*Result, error) {
	if err := cfg.Prepare(); err != nil {
		return nil, err
	}
	v := 0
	if cfg.Victim {
		v = 1
	}
	if cfg.Workers+v > cfg.HostsPerLeaf {
		return nil, fmt.Errorf("workloads: %d workers (and the victim's receiver) do not fit on a leaf of %d hosts", cfg.Workers, cfg.HostsPerLeaf)
	}
	leaves, hpl := cfg.Layout()
	sc := cfg.Cluster
	if sc.Fabric.MTU == 0 {
		sc.Fabric = fabric.DefaultConfig()
	}
	sc.Fabric.Seed = cfg.Seed
	sc.Fabric.Topology = fabric.Topology{Kind: fabric.LeafSpine, Leaves: leaves, HostsPerLeaf: hpl, Spines: cfg.Spines}
	sc.Hosts = leaves * hpl
	if sc.BE.CQDepth == 0 {
		// A worker's one I/O thread holds an engine per server: size its CQ
		// for all of them (the byteexpress default, 16384, fits 256).
		d := sc.BE.Defaults()
		engines := cfg.Servers + cfg.Workers
		if sc.BE.EnginePerSocket {
			engines *= max(1, cfg.Sockets)
		}
		sc.BE.CQDepth = max(d.CQDepth, (engines+8)*(d.SQDepth+d.RQDepth))
	}
	c, err := simhost.New(sc)
	if err != nil {
		return nil, err
	}
	// Release the hosts' registered memory (bemalloc pools are mmap'ed
	// outside the Go heap) on every return: a sweep runs many simulations,
	// failed ones too, in one process.
	closed := false
	defer func() {
		if !closed {
			_ = c.Close()
		}
	}()
	run := &incastRun{cfg: &cfg, c: c, st: incast.NewStats()}
	if cfg.Watch != nil {
		cfg.Watch.Start(c.Kernel(), c.Network())
	}
	// stopped is the result of a run the watch stopped.
	stopped := func() (*Result, error) {
		run.stopped = true
		return &Result{Stopped: true, Events: c.Kernel().Events()}, nil
	}
	if err := run.setup(hpl); err != nil {
		return nil, err
	}
	// Connection setup (engine creation, QP and memory registration) takes
	// virtual time that grows with the engine count; the warmup starts once
	// every socket is connected.
	want := cfg.Workers * cfg.Servers * max(1, cfg.Sockets)
	for run.connected < want && c.Now() < simrun.SetupLimit && !cfg.Watch.Stopped() {
		c.RunFor(20 * sim.Microsecond)
	}
	if cfg.Watch.Stopped() {
		return stopped()
	}
	if run.connected < want {
		return nil, fmt.Errorf("workloads: only %d of %d sockets connected after %v", run.connected, want, simrun.SetupLimit)
	}
	run.setupDone = c.Now()
	for _, st := range run.streams {
		st.start()
	}
	// The first rounds of pulls grow the receivers' bemalloc pools (memory
	// registration is charged to the I/O threads, and with hundreds of
	// engines it keeps a worker busy for milliseconds); the paper measures
	// a running service, so wait until every request slot has completed
	// once (closed loop) before the warmup proper.
	if cfg.Rate == 0 {
		target := int64(cfg.Workers * cfg.Servers * cfg.Outstanding)
		for limit := c.Now() + poolWarmLimit; run.st.Done < target && c.Now() < limit && !cfg.Watch.Stopped(); {
			c.RunFor(20 * sim.Microsecond)
		}
	}
	if cfg.Watch.Stopped() {
		return stopped()
	}
	run.warmDone = c.Now()
	run.from, run.to = c.Now()+cfg.Warmup, c.Now()+cfg.Warmup+cfg.Measure
	run.st.SetInterval(run.from, run.to)
	if c.Run(run.from); cfg.Watch.Stopped() {
		return stopped()
	}
	snap := run.snapshot()
	if c.Run(run.to); cfg.Watch.Stopped() {
		return stopped()
	}
	res := run.result(snap)
	// Keep the traffic going until every pull sent in the window has
	// finished, so slow ones count in the latency histogram (no
	// survivorship bias); bounded by drainLimit.
	for limit := run.to + drainLimit; run.st.Unfinished() > 0 && c.Now() < limit && !cfg.Watch.Stopped(); {
		c.RunFor(20 * sim.Microsecond)
	}
	if cfg.Watch.Stopped() {
		return stopped()
	}
	res.Unfinished = run.st.Unfinished()
	res.Report = c.Network().Report()
	run.stopped = true
	res.Events = c.Kernel().Events()
	// Buffers still in flight at the cut-off are not an error of the
	// workload.
	_ = c.Close()
	closed = true
	res.Errors = run.Errs
	res.Setup = run.setupDone
	res.PoolWarm = run.warmDone
	return res, nil
}

type incastRun struct {
	cfg       *Config
	c         *simhost.Cluster
	from, to  sim.Time
	st        *incast.Stats
	stopped   bool
	connected int
	setupDone sim.Time
	warmDone  sim.Time
	workers   []*simhost.Host
	servers   []*simhost.Host
	vtx, vrx  *simhost.Host
	streams   []*stream
	simrun.Failures
}

func (r *incastRun) setup(hpl int) error {
	cfg := r.cfg
	hs := r.c.Hosts()
	next := hpl // the first host of leaf 1
	if cfg.Victim {
		r.vtx, r.vrx = hs[next], hs[cfg.Workers]
		next++
	}
	for i := range cfg.Workers {
		r.workers = append(r.workers, hs[i])
	}
	for i := range cfg.Servers {
		r.servers = append(r.servers, hs[next+i])
	}
	next += cfg.Servers
	for i, h := range r.servers {
		h.SetApp(&serverApp{run: r, m: incast.NewServer(&cfg.Config, i)})
		h.Listen()
	}
	for i, h := range r.workers {
		w := &workerApp{run: r, h: h, m: incast.NewWorker(&cfg.Config, i, r.st), index: map[*byteexpress.Socket]int{}}
		w.timer.Init(r.c.Kernel(), arrivals{w}, 0)
		h.SetApp(w)
		h.Listen() // bandwidth flows come in
		w.per = max(1, cfg.Sockets)
		w.up = make([]int, len(r.servers))
		w.rr = make([]int, len(r.servers))
		for j, s := range r.servers {
			for range w.per {
				sk, err := h.Dial(s)
				if err != nil {
					return err
				}
				w.socks = append(w.socks, sk)
				w.index[sk] = j
			}
		}
	}
	if cfg.Victim {
		st, err := newStream(r, r.vtx, r.vrx, cfg.VictimMessage, cfg.VictimWindow, "victim")
		if err != nil {
			return fmt.Errorf("workloads: victim flow: %w", err)
		}
		r.streams = append(r.streams, st)
	}
	for i := range cfg.BandwidthFlows {
		st, err := newStream(r, hs[next+i], r.workers[i%len(r.workers)], cfg.VictimMessage, cfg.VictimWindow, fmt.Sprintf("bw%d", i))
		if err != nil {
			return fmt.Errorf("workloads: bandwidth flow %d: %w", i, err)
		}
		r.streams = append(r.streams, st)
	}
	return nil
}

// snap is the counters at the start of the measured interval.
type snap struct {
	workerRx, victimRx uint64
	serverCPU          sim.Time
	workerCPU          sim.Time
	wHit, wMiss        uint64
	sHit, sMiss        uint64
}

func (r *incastRun) snapshot() snap {
	var s snap
	for _, h := range r.workers {
		st := h.NIC().Stats()
		s.workerRx += st.RxPayload
		s.wHit += st.QPCacheHits
		s.wMiss += st.QPCacheMisses
		s.workerCPU += h.CPUBusy()
	}
	for _, h := range r.servers {
		st := h.NIC().Stats()
		s.sHit += st.QPCacheHits
		s.sMiss += st.QPCacheMisses
		s.serverCPU += h.CPUBusy()
	}
	if r.vrx != nil {
		s.victimRx = r.vrx.NIC().Stats().RxPayload
	}
	return s
}

func (r *incastRun) result(s0 snap) *Result {
	s1 := r.snapshot()
	sec := (r.to - r.from).Seconds()
	res := &Result{Hosts: len(r.c.Hosts()), Latency: r.st.Latency, Pulls: r.st.Pulls,
		WorkerGbps:   float64(s1.workerRx-s0.workerRx) * 8 / sec / 1e9,
		VictimGbps:   float64(s1.victimRx-s0.victimRx) * 8 / sec / 1e9,
		ResponseMean: r.cfg.Response.MeanSize(),
		Report:       r.c.Network().Report(),
		ServerQPHits: s1.sHit - s0.sHit, ServerQPMisses: s1.sMiss - s0.sMiss,
		WorkerQPHits: s1.wHit - s0.wHit, WorkerQPMisses: s1.wMiss - s0.wMiss}
	for _, h := range r.workers {
		res.Engines += h.Endpoint().Stats().Engines
	}
	span := float64(r.to - r.from)
	if n := len(r.servers); n > 0 {
		res.ServerCPU = float64(s1.serverCPU-s0.serverCPU) / span / float64(n)
	}
	if n := len(r.workers); n > 0 {
		res.WorkerCPU = float64(s1.workerCPU-s0.workerCPU) / span / float64(n)
	}
	if r.vtx != nil {
		for _, d := range res.Report.Hosts[r.vtx.Index()].PausedTime {
			res.VictimPaused = max(res.VictimPaused, d)
		}
	}
	return res
}

// ---- applications (one long-lived value per host; no closure per message) ----

// workerApp drives a worker (incast.Worker) over its sockets, per (one
// by default) to each server: server j's are socks[j*per:(j+1)*per], its
// pulls go round-robin over them. It also sinks bandwidth flows.
type workerApp struct {
	run   *incastRun
	h     *simhost.Host
	m     *incast.Worker
	socks []*byteexpress.Socket
	index map[*byteexpress.Socket]int // socket -> server
	per   int                         // sockets per server
	up    []int                       // sockets connected per server
	rr    []int                       // next socket per server
	timer sim.Timer
}

// arrivals is a worker's timer (a sim.Handler): open-loop arrivals.
type arrivals struct{ w *workerApp }

// OnEvent implements sim.Handler.
func (a arrivals) OnEvent(now sim.Time, _ uint64) {
	if !a.w.run.stopped {
		a.w.do(a.w.m.Tick(now))
	}
}

// do performs what the worker asked for: its pulls, then its timer.
func (w *workerApp) do(out *incast.Out) {
	for _, s := range out.Sends {
		buf, err := w.h.Allocate(s.Size)
		if err != nil {
			w.run.Fail(err)
			return
		}
		s.Header.Put(buf.Bytes())
		k := s.Server*w.per + w.rr[s.Server]
		w.rr[s.Server] = (w.rr[s.Server] + 1) % w.per
		if err := w.socks[k].Send(buf, s.Size); err != nil {
			_ = w.h.Free(buf)
			w.run.Fail(err)
		}
	}
	if out.SetTimer {
		w.timer.Set(out.Timer)
	}
}

// OnEvent implements simhost.App.
func (w *workerApp) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	r := w.run
	switch ev.Kind {
	case byteexpress.EvConnected:
		r.connected++
		srv, ok := w.index[ev.Socket]
		if !ok {
			r.Fail(fmt.Errorf("%s: a socket it did not dial connected", h.Name()))
			return
		}
		// The worker starts on a server once all its sockets to it are
		// connected.
		if w.up[srv]++; w.up[srv] == w.per {
			w.do(w.m.Connected(srv, h.Now()))
		}
	case byteexpress.EvMessage:
		now := h.Now()
		hd, err := incast.ParseHeader(ev.Buf.Bytes()[:ev.Len])
		_ = h.Free(ev.Buf)
		if err != nil {
			r.Fail(fmt.Errorf("worker: %w", err))
			return
		}
		out := w.m.Response(now, w.index[ev.Socket], hd, ev.Len)
		if !r.stopped {
			w.do(out)
		}
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned,
		byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		r.Failed(h, ev)
	}
}

// serverApp drives a server (incast.Server): every pull is answered with
// the size the server draws, the pull's header echoed.
type serverApp struct {
	run *incastRun
	m   *incast.Server
}

func (s *serverApp) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	r := s.run
	switch ev.Kind {
	case byteexpress.EvMessage:
		if ev.Len < incast.HeaderSize {
			_ = h.Free(ev.Buf)
			r.Fail(fmt.Errorf("server: a pull of %d bytes", ev.Len))
			return
		}
		n := s.m.Reply()
		buf, err := h.Allocate(n)
		if err != nil {
			_ = h.Free(ev.Buf)
			r.Fail(err)
			return
		}
		copy(buf.Bytes()[:incast.HeaderSize], ev.Buf.Bytes()[:incast.HeaderSize])
		_ = h.Free(ev.Buf)
		if err := ev.Socket.Send(buf, n); err != nil {
			_ = h.Free(buf)
			r.Fail(err)
		}
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned,
		byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		r.Failed(h, ev)
	}
}
