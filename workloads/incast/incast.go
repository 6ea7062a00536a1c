package incast

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/metrics"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/app"
	"github.com/besim/besim/workloads/internal/simrun"
)

// Config is the synthetic incast of the paper's Figure 14 (§6.3).
//
// Topology (built here; Cluster.Fabric.Topology is overwritten): a
// leaf-spine of HostsPerLeaf-host leaves and one spine (Layout). Leaf 0
// holds the workers (hosts 0..Workers-1) and the victim's receiver (host
// Workers); from the first host of leaf 1 on come the victim's sender,
// the parameter servers and the bandwidth-flow senders, filling as many
// leaves as they need, so the victim shares leaf 1's uplink with servers.
// Each worker pulls from every server over one ByteExpress socket
// (one engine per host pair): a Request-byte fetch RPC answered by a
// response whose size is drawn from Response. All responses converge on
// the workers' 25 Gb/s ports, so the queue builds at leaf 0's egress to the
// workers, which PFC accounts to leaf 0's ingress from the spine; when that
// crosses XOFF, leaf 0 pauses the spine, the spine's egress to leaf 0 backs
// up into its ingress from the servers' leaves, and the spine pauses them
// (PFC propagation). The victim's traffic takes the same leaf 1 -> spine ->
// leaf 0 path to an idle receiver, so it is stalled by pauses caused by a
// port it never uses.
//
// The per-engine send window is Cluster.BE.Cwnd (0: none) and the fragment
// size Cluster.BE.FragSize; they apply to every engine, so a server can
// have at most Cwnd response bytes posted and unacknowledged per worker.
type Config struct {
	Cluster simhost.Config
	// HostsPerLeaf is the hosts of every leaf switch; default
	// app.DefaultHostsPerLeaf.
	HostsPerLeaf int
	Workers      int
	Servers      int // 0 is allowed: the victim (and bandwidth flows) alone, a baseline
	// Request is the fetch request size (>= 16: it carries the request's
	// send time and sequence number). Default 64 B.
	Request  int
	Response app.SizeDist
	// Outstanding is the closed-loop concurrency: requests each worker keeps
	// outstanding to each server. Ignored when Rate > 0.
	Outstanding int
	// Rate > 0 selects open-loop Poisson arrivals: requests per second from
	// each worker to each server.
	Rate float64
	// Victim adds the victim flow (Figure 14): a bandwidth test (perftest
	// ib_write_bw-like RC WRITE stream, see stream) from a host on the
	// servers' leaf to an idle host on the workers' leaf: VictimMessage-byte
	// WRITEs, VictimWindow outstanding. It is not a ByteExpress engine, so
	// the software window does not limit it; only the fabric does.
	Victim        bool
	VictimMessage int // default 64 KiB (perftest's default size)
	VictimWindow  int // WRITEs outstanding; default 16
	// BandwidthFlows are more such bandwidth-test streams, from hosts on
	// the servers' leaf into the workers (round-robin), adding to the incast.
	BandwidthFlows int
	// Warmup is excluded from the statistics; Measure is the measured
	// interval. PFC counters cover the whole run (a pause at any time
	// counts for "servers before PFC").
	Warmup, Measure sim.Time
	Seed            uint64
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
	Report       *fabric.Report     // fabric counters at the end
	Setup        sim.Time           // virtual time until every socket was connected
	PoolWarm     sim.Time           // and until every request slot had completed once
	Events       uint64
	Errors       []error
}

func (c *Config) defaults() {
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
	cfg.defaults()
	switch {
	case cfg.Workers < 1 || cfg.Servers < 0 || cfg.BandwidthFlows < 0:
		return nil, errors.New("workloads: incast needs workers >= 1, servers >= 0, bandwidth flows >= 0")
	case cfg.Request < 16:
		return nil, errors.New("workloads: incast request must be >= 16 bytes")
	case cfg.Outstanding < 1 || cfg.Rate < 0:
		return nil, errors.New("workloads: incast needs outstanding >= 1 and rate >= 0")
	case cfg.VictimMessage < 64 || cfg.VictimWindow < 1:
		return nil, errors.New("workloads: victim message >= 64 B and window >= 1")
	case cfg.Warmup < 0 || cfg.Measure <= 0:
		return nil, errors.New("workloads: warmup >= 0 and measure > 0")
	}
	if cfg.Response.Kind == "" {
		cfg.Response = app.SizeDist{Kind: app.Fixed, Size: 16 << 10}
	}
	if err := cfg.Response.Prepare(); err != nil {
		return nil, fmt.Errorf("workloads: response size: %w", err)
	}
	if cfg.Response.MaxSize == 0 || cfg.Response.MaxSize > 64<<20 {
		cfg.Response.MaxSize = 64 << 20
	}
	if cfg.HostsPerLeaf == 0 {
		cfg.HostsPerLeaf = app.DefaultHostsPerLeaf
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
	sc.Fabric.Topology = fabric.Topology{Kind: fabric.LeafSpine, Leaves: leaves, HostsPerLeaf: hpl, Spines: 1}
	sc.Hosts = leaves * hpl
	if sc.BE.CQDepth == 0 {
		// A worker's one I/O thread holds an engine per server: size its CQ
		// for all of them (the byteexpress default, 16384, fits 256).
		d := sc.BE.Defaults()
		sc.BE.CQDepth = max(d.CQDepth, (cfg.Servers+cfg.Workers+8)*(d.SQDepth+d.RQDepth))
	}
	c, err := simhost.New(sc)
	if err != nil {
		return nil, err
	}
	run := &incastRun{cfg: &cfg, c: c, from: cfg.Warmup, to: cfg.Warmup + cfg.Measure,
		lat: metrics.New(3)}
	if err := run.setup(hpl); err != nil {
		return nil, err
	}
	// Connection setup (engine creation, QP and memory registration) takes
	// virtual time that grows with the engine count; the warmup starts once
	// every socket is connected.
	want := cfg.Workers * cfg.Servers
	for run.connected < want && c.Now() < simrun.SetupLimit {
		c.RunFor(20 * sim.Microsecond)
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
		for limit := c.Now() + poolWarmLimit; run.done < target && c.Now() < limit; {
			c.RunFor(20 * sim.Microsecond)
		}
	}
	run.warmDone = c.Now()
	run.from, run.to = c.Now()+cfg.Warmup, c.Now()+cfg.Warmup+cfg.Measure
	c.Run(run.from)
	snap := run.snapshot()
	c.Run(run.to)
	res := run.result(snap)
	// Keep the traffic going until every pull sent in the window has
	// finished, so slow ones count in the latency histogram (no
	// survivorship bias); bounded by drainLimit.
	for limit := run.to + drainLimit; run.lat.Count() < run.sentIn && c.Now() < limit; {
		c.RunFor(20 * sim.Microsecond)
	}
	res.Unfinished = run.sentIn - run.lat.Count()
	res.Report = c.Network().Report()
	run.stopped = true
	res.Events = c.Kernel().Events()
	// Release the hosts' registered memory (pools are mmap'ed outside the Go
	// heap): a sweep runs many simulations in one process. Buffers still in
	// flight at the cut-off are not an error of the workload.
	_ = c.Close()
	res.Errors = run.Errs
	res.Setup = run.setupDone
	res.PoolWarm = run.warmDone
	return res, nil
}

type incastRun struct {
	cfg       *Config
	c         *simhost.Cluster
	from, to  sim.Time
	lat       *metrics.Histogram
	pulls     int64
	stopped   bool
	connected int
	done      int64 // responses received, whole run
	sentIn    int64 // requests sent inside the measured interval
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
		a := &serverApp{run: r, rng: sim.Stream(cfg.Seed, fmt.Sprintf("incast/server%d", i))}
		h.SetApp(a)
		h.Listen()
	}
	for i, h := range r.workers {
		w := &workerApp{run: r, h: h}
		if cfg.Rate > 0 {
			w.rng = sim.Stream(cfg.Seed, fmt.Sprintf("incast/worker%d", i))
			w.timer.Init(r.c.Kernel(), arrivals{w}, 0)
		}
		h.SetApp(w)
		h.Listen() // bandwidth flows come in
		for _, s := range r.servers {
			sk, err := h.Dial(s)
			if err != nil {
				return err
			}
			w.socks = append(w.socks, sk)
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
}

func (r *incastRun) snapshot() snap {
	var s snap
	for _, h := range r.workers {
		s.workerRx += h.NIC().Stats().RxPayload
		s.workerCPU += h.CPUBusy()
	}
	for _, h := range r.servers {
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
	res := &Result{Hosts: len(r.c.Hosts()), Latency: r.lat, Pulls: r.pulls,
		WorkerGbps:   float64(s1.workerRx-s0.workerRx) * 8 / sec / 1e9,
		VictimGbps:   float64(s1.victimRx-s0.victimRx) * 8 / sec / 1e9,
		ResponseMean: r.cfg.Response.MeanSize(),
		Report:       r.c.Network().Report()}
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

// workerApp pulls from every server: closed loop (Outstanding per socket,
// a new request when a response arrives) or open-loop Poisson arrivals.
// It also sinks bandwidth flows (answering each message with 32 bytes).
type workerApp struct {
	run   *incastRun
	h     *simhost.Host
	socks []*byteexpress.Socket
	seq   uint64
	rng   *rand.Rand
	timer sim.Timer
	next  int // open loop: round-robin over servers
	up    int // sockets connected
}

func (w *workerApp) gap() sim.Time {
	rate := w.run.cfg.Rate * float64(len(w.socks))
	return max(1, sim.Time(w.rng.ExpFloat64()/rate*float64(sim.Second)))
}

// arrivals is a worker's open-loop arrival process (a sim.Handler).
type arrivals struct{ w *workerApp }

// OnEvent implements sim.Handler: the next Poisson arrival.
func (a arrivals) OnEvent(now sim.Time, _ uint64) {
	w := a.w
	if w.run.stopped {
		return
	}
	w.timer.Set(now + w.gap())
	sk := w.socks[w.next%len(w.socks)]
	w.next++
	w.pull(sk, now)
}

func (w *workerApp) pull(sk *byteexpress.Socket, now sim.Time) {
	n := w.run.cfg.Request
	buf, err := w.h.Allocate(n)
	if err != nil {
		w.run.Fail(err)
		return
	}
	p := buf.Bytes()
	binary.LittleEndian.PutUint64(p[0:], w.seq)
	binary.LittleEndian.PutUint64(p[8:], uint64(now))
	w.seq++
	if now >= w.run.from && now < w.run.to {
		w.run.sentIn++
	}
	if err := sk.Send(buf, n); err != nil {
		_ = w.h.Free(buf)
		w.run.Fail(err)
	}
}

// OnEvent implements simhost.App.
func (w *workerApp) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	r := w.run
	switch ev.Kind {
	case byteexpress.EvConnected:
		r.connected++
		w.up++
		switch {
		case r.cfg.Rate == 0:
			for range r.cfg.Outstanding {
				w.pull(ev.Socket, h.Now())
			}
		case w.up == len(w.socks):
			w.timer.Set(h.Now() + w.gap())
		}
	case byteexpress.EvMessage:
		now := h.Now()
		sent := sim.Time(binary.LittleEndian.Uint64(ev.Buf.Bytes()[8:]))
		_ = h.Free(ev.Buf)
		if sent >= r.from && sent < r.to {
			r.lat.Record(int64((now - sent) / sim.Nanosecond))
		}
		r.done++
		if now >= r.from && now < r.to {
			r.pulls++
		}
		if r.cfg.Rate == 0 && !r.stopped {
			w.pull(ev.Socket, now)
		}
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned,
		byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		r.Failed(h, ev)
	}
}

// serverApp answers every fetch with a response drawn from the size
// distribution, echoing the request's sequence number and send time.
type serverApp struct {
	run *incastRun
	rng *rand.Rand
}

func (s *serverApp) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	r := s.run
	switch ev.Kind {
	case byteexpress.EvMessage:
		n := max(r.cfg.Response.Sample(s.rng), 16)
		buf, err := h.Allocate(n)
		if err != nil {
			_ = h.Free(ev.Buf)
			r.Fail(err)
			return
		}
		copy(buf.Bytes()[:16], ev.Buf.Bytes()[:16])
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
