// Package pssim drives the parameter-server workload (package ps, paper
// §2.1, Figure 1; Tables 5-7) over the simulated cluster: ByteExpress on
// simhost's RNICs, or the kernel TCP model of tcpsim on the same fabric
// (the paper's §8 baseline). It registers scenario kind ps-cluster and
// reduces a run to the result format. With Config.RPC (scenario key
// workload.rpc) every fetch and push goes through the RPC layer,
// byteexpress/rpc, as the paper's applications reach ByteExpress through
// Archon, and each shard group may have Config.Replicas servers for the
// layer's replica selection (§7.2; rpc.go says how it is wired).
//
// Applications are one long-lived value per host (simhost.App) and timers
// are sim.Timer values: no closure or goroutine per message. Every random
// choice comes from a sim.Stream named after its component, so a run is
// deterministic for a seed.
package pssim

import (
	"errors"
	"fmt"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/bemalloc"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/faults"
	"github.com/besim/besim/metrics"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/tcpsim"
	"github.com/besim/besim/workloads/internal/simrun"
	"github.com/besim/besim/workloads/ps"
)

// Config is a parameter-server cluster simulation: the workload (ps.Config)
// on a simulated cluster.
type Config struct {
	ps.Config
	// Cluster is the fabric, NIC model and engine settings under
	// ByteExpress. Its topology is built here: a leaf-spine of
	// HostsPerLeaf-host leaves and Spines spines, rankers then trainers
	// from host 0, the servers from the next leaf on.
	Cluster simhost.Config
	// TCP is the kernel TCP model of transport TCP (tcpsim on the same
	// fabric; Cluster.NIC, BE, Pool and CPU are then unused).
	TCP tcpsim.Config
	// Faults are injected from the start of the measured interval (their
	// At is relative to it). They are the network's (loss, a link down, a
	// PFC storm): a black-holed server is a loss of every frame at its
	// host port. Host faults (crash, QP error) need host models with the
	// recovery layer: see workloads/failover.
	Faults []faults.Spec
	// RPC, when not nil, sends every fetch and push of the clients through
	// the RPC layer (byteexpress/rpc) with this policy (rpc.go says how);
	// nil sends them on the sockets directly. Transport rdma only.
	RPC *rpc.Config
	// Series, when > 0, records time series at this interval (scenario
	// outputs.series: all, at outputs.sample_interval): the latency of the
	// user requests and fetch sub-requests started in each window of the
	// measured interval (mean and P99, the paper's Figure 16), and over
	// RDMA the registered memory of client 0 and server 0 (bytes, blocks,
	// MRs) and of all hosts, sampled from the start of the run (Figure 5).
	Series sim.Time
}

// MemSample is the registered memory at one instant of a run (Config.Series):
// bemalloc's footprint of client host 0 and server 0, and its sum over
// every simulated host (the leaves' idle hosts included: they register
// what their engine setup does, a shared receive queue's buffers, say).
type MemSample struct {
	At                      sim.Time
	Client, Server          bemalloc.Stats
	TotalBytes, TotalBlocks int64
}

// Result is what one PS-cluster run measured.
type Result struct {
	// Every histogram holds what started in the interval; what is still
	// open at its end is in at its age then (a lower bound), so a stall
	// shows in the percentiles instead of dropping out of them.
	UserLatency *metrics.Histogram // ranker user requests, ns
	SubLatency  *metrics.Histogram // fetch sub-requests (rankers and trainers), ns
	PushLatency *metrics.Histogram // trainer pushes, until acknowledged, ns
	IterTime    *metrics.Histogram // trainer iterations (fetch, compute, push), ns
	// FetchPhase and PushPhase are a trainer's whole Fetch and Push (ns):
	// from the first sub-request sent to the last answer, so one slow
	// server makes the phase slow.
	FetchPhase, PushPhase *metrics.Histogram
	UserRequests          int64 // completed in the interval
	UserDropped           int64 // open-loop arrivals in the interval that found every slot busy
	// FetchIncomplete and PushIncomplete count the sub-requests sent in the
	// interval and still unanswered at its end (a TCP flow waiting for its
	// retransmission timeout, say). They are in SubLatency and PushLatency
	// at their age at the end, so those percentiles are lower bounds when
	// these are non-zero, rather than survivors only.
	FetchIncomplete, PushIncomplete int64
	Iterations                      int64   // trainer iterations completed in the interval
	ClientGbps                      float64 // payload received by rankers and trainers
	ServerGbps                      float64 // payload received by servers (pushes)
	Report                          *fabric.Report
	// CPU is the modelled CPU per host in percent of one core, for the
	// clients [0] and the servers [1], over the measured interval.
	CPU    [2]CPU
	TCP    *tcpsim.Stats // summed over hosts; nil over RDMA
	Faults []faults.Event
	NAKs   uint64 // RDMA: sequence-error NAKs sent by responders (lost frames)
	// RPC is what the RPC layer did (nil without it); FailedRequests and
	// UsersFailed are the requests it gave up on (whole run) and the user
	// requests completed in the interval with one of those (not in
	// UserRequests).
	RPC                         *RPCStats
	FailedRequests, UsersFailed int64
	// RCTimeouts and Retransmits are the RDMA requesters' retransmission
	// timer expiries and data packets sent again (go-back-N or timeout),
	// summed over every NIC for the whole run: a loss with no later packet
	// of its QP to reveal it ends in a timeout, not a NAK.
	RCTimeouts, Retransmits uint64
	// PFCFramesInterval and HostPausedInterval are the PFC frames sent and
	// the host pause time within the measured interval (Report has the
	// whole run's, connection setup and warmup included).
	PFCFramesInterval  int64
	HostPausedInterval sim.Time
	Events             uint64
	Errors             []error
	// Window and UserWin/FetchWin are the latency windows (Config.Series;
	// ps.Stats.SetWindows): window i starts at From + i*Window. Memory is
	// the registered-memory samples (RDMA). All empty without Series.
	From              sim.Time
	Window            sim.Time
	UserWin, FetchWin []*metrics.Histogram
	Memory            []MemSample
}

// Run builds and runs one parameter-server cluster simulation.
func Run(cfg Config) (*Result, error) {
	if err := cfg.Prepare(); err != nil {
		return nil, err
	}
	hpl := cfg.HostsPerLeaf
	clients := cfg.Rankers + cfg.Trainers
	cl := (clients + hpl - 1) / hpl
	leaves := cl + (cfg.Servers+hpl-1)/hpl
	sc := cfg.Cluster
	if sc.Fabric.MTU == 0 {
		sc.Fabric = fabric.DefaultConfig()
	}
	sc.Fabric.Seed = cfg.Seed
	sc.Fabric.Topology = fabric.Topology{Kind: fabric.LeafSpine, Leaves: max(leaves, 2), HostsPerLeaf: hpl, Spines: cfg.Spines}
	if cfg.Series > 0 {
		// At most ps.MaxWindows latency windows (SetWindows widens the
		// same way); the memory samples use the same interval.
		cfg.Series = max(cfg.Series, (cfg.Measure+ps.MaxWindows-1)/ps.MaxWindows)
	}
	r := &psRun{cfg: &cfg, st: ps.NewStats()}
	r.shardServer = ps.ShardServers(cfg.Shards, cfg.Servers)
	// Release the RDMA hosts' registered memory (bemalloc pools are
	// mmap'ed outside the Go heap) on every return: a sweep runs many
	// simulations, failed ones too, in one process.
	defer func() {
		if r.be != nil && !r.closed {
			_ = r.be.Close()
		}
	}()
	var err error
	if cfg.RPC != nil && cfg.Transport == ps.TCP {
		return nil, errors.New("workloads: ps: the RPC layer (byteexpress/rpc) runs over ByteExpress: it needs transport rdma, not tcp")
	}
	if cfg.Replicas > 1 && cfg.RPC == nil {
		return nil, fmt.Errorf("workloads: ps: %d replicas need the RPC layer (Config.RPC): its replica selection is what chooses a replica per call", cfg.Replicas)
	}
	if cfg.RPC != nil {
		// A client and a server are on different leaves, joined by one
		// path per spine (each path index pins its connection to another
		// uplink, see fabric.Packet.Path): with one spine the ladder
		// skips the path change (rpc.go).
		rc := *cfg.RPC
		rc.Paths = min(rc.Paths, cfg.Spines)
		cfg.RPC = &rc
	}
	if cfg.Transport == ps.TCP {
		err = r.buildTCP(sc.Fabric, cl*hpl)
	} else {
		err = r.buildRDMA(sc, cl*hpl)
	}
	if err != nil {
		return nil, err
	}
	for _, pc := range r.clients {
		pc.start()
	}
	k := r.k
	r.from, r.to = k.Now()+cfg.Warmup, k.Now()+cfg.Warmup+cfg.Measure
	r.st.SetInterval(r.from, r.to)
	if cfg.Series > 0 {
		if _, err := r.st.SetWindows(cfg.Series); err != nil {
			return nil, err
		}
	}
	var inj *faults.Injector
	if len(cfg.Faults) > 0 {
		specs := append([]faults.Spec(nil), cfg.Faults...)
		for i := range specs {
			specs[i].At += r.from
		}
		var err error
		if inj, err = faults.Schedule(k, r.net, nil, cfg.Seed, specs); err != nil {
			return nil, err
		}
	}
	k.RunUntil(r.from)
	crx0, srx0 := r.rx()
	cpu0 := r.cpu()
	t0 := r.net.Report().Totals
	k.RunUntil(r.to)
	crx1, srx1 := r.rx()
	cpu1 := r.cpu()
	for _, pc := range r.clients {
		pc.m.Censor(r.to)
	}
	sec := cfg.Measure.Seconds()
	st := r.st
	res := &Result{FetchIncomplete: st.FetchOpen, PushIncomplete: st.PushOpen, UserLatency: st.User, SubLatency: st.Fetch, PushLatency: st.Push, IterTime: st.Iteration, FetchPhase: st.FetchPhase, PushPhase: st.PushPhase, UserRequests: st.Users, UserDropped: st.Dropped, Iterations: st.Iterations,
		ClientGbps: float64(crx1-crx0) * 8 / sec / 1e9, ServerGbps: float64(srx1-srx0) * 8 / sec / 1e9}
	for i := range res.CPU {
		res.CPU[i] = cpu1[i].minus(cpu0[i]).per(cfg.Measure, i, len(r.clients), cfg.Servers)
	}
	res.Report = r.net.Report()
	t1 := res.Report.Totals
	res.PFCFramesInterval = t1.PFCFramesTx - t0.PFCFramesTx
	res.HostPausedInterval = t1.HostPausedTime - t0.HostPausedTime
	if inj != nil {
		res.Faults = inj.Log
		for i := range res.Faults {
			res.Faults[i].At -= r.from // the faults' clock starts with the interval
		}
	}
	r.stopped = true
	res.From, res.Window, res.UserWin, res.FetchWin, res.Memory = r.from, st.Window, st.UserWin, st.FetchWin, r.memory
	res.Events = k.Events()
	res.Errors = r.Errs
	if r.tcp != nil {
		res.TCP = r.tcpStats()
	} else {
		for _, h := range r.be.Hosts() {
			st := h.NIC().Stats()
			res.NAKs += st.SeqNAKsSent
			res.RCTimeouts += st.Timeouts
			res.Retransmits += st.Retransmits
		}
		if cfg.RPC != nil {
			res.RPC = r.rpcResult()
			res.FailedRequests, res.UsersFailed = st.Failed, st.UsersFailed
		}
		_ = r.be.Close()
		r.closed = true
	}
	return res, nil
}

// buildRDMA puts the servers and clients on ByteExpress hosts and waits for
// every socket to connect.
func (r *psRun) buildRDMA(sc simhost.Config, firstServer int) error {
	cfg := r.cfg
	clients := cfg.Rankers + cfg.Trainers
	if sc.BE.CQDepth == 0 {
		d := sc.BE.Defaults()
		sc.BE.CQDepth = max(d.CQDepth, (cfg.Servers+clients+8)*(d.SQDepth+d.RQDepth))
	}
	if cfg.RPC != nil && sc.BE.ConnectTimeout == 0 {
		// Archon's connection timeout Tc bounds a new engine's exchange,
		// as in workloads/failover.
		sc.BE.ConnectTimeout = cfg.RPC.ConnTimeout
	}
	r.firstServer = firstServer
	c, err := simhost.New(sc)
	if err != nil {
		return err
	}
	r.be, r.k, r.net = c, c.Kernel(), c.Network()
	hs := c.Hosts()
	if cfg.Series > 0 {
		r.sampleMemory(r.k.Now())
	}
	for i := range cfg.Servers {
		h := hs[firstServer+i]
		h.SetApp(&psServer{run: r, m: ps.NewServer(&cfg.Config, i)})
		h.Listen()
		r.servers = append(r.servers, h)
	}
	for i := range clients {
		h := hs[i]
		pc := r.newClient(i)
		pc.h = h
		h.SetApp(pc)
		for _, s := range r.servers {
			var sk *byteexpress.Socket
			var err error
			if cfg.RPC != nil {
				// The RPC layer's path 0 (rpc.go, psDialer).
				sk, err = h.Endpoint().DialPath(s.Addr(), 0)
			} else {
				sk, err = h.Dial(s)
			}
			if err != nil {
				return err
			}
			pc.socks = append(pc.socks, sk)
		}
		if cfg.RPC != nil {
			if err := r.newRPC(pc, i); err != nil {
				return err
			}
		}
	}
	want := clients * cfg.Servers
	for r.connected < want && c.Now() < simrun.SetupLimit {
		c.RunFor(20 * sim.Microsecond)
	}
	if r.connected < want {
		return fmt.Errorf("workloads: ps: only %d of %d sockets connected after %v", r.connected, want, simrun.SetupLimit)
	}
	return nil
}

// buildTCP puts the same roles on the same fabric hosts over tcpsim, with
// one established connection per (client, server).
func (r *psRun) buildTCP(fc fabric.Config, firstServer int) error {
	cfg := r.cfg
	tc := cfg.TCP
	if tc.Prio == 0 && fc.Switch.PFC.Lossless[0] {
		return errors.New("workloads: ps over tcp: priority 0 is lossless; TCP needs a lossy class (set tcp prio)")
	}
	c, err := tcpsim.New(fc, tc)
	if err != nil {
		return err
	}
	r.tcp, r.k, r.net = c, c.Kernel(), c.Network()
	hs := c.Hosts()
	for i := range cfg.Servers {
		h := hs[firstServer+i]
		h.SetApp(&psServer{run: r, m: ps.NewServer(&cfg.Config, i)})
		r.tservers = append(r.tservers, h)
	}
	for i := range cfg.Rankers + cfg.Trainers {
		h := hs[i]
		pc := r.newClient(i)
		pc.th = h
		h.SetApp(pc)
		for _, s := range r.tservers {
			cn, err := h.Dial(s)
			if err != nil {
				return err
			}
			pc.conns = append(pc.conns, cn)
		}
	}
	return nil
}

func (r *psRun) newClient(i int) *psClient {
	pc := &psClient{run: r, m: ps.NewClient(&r.cfg.Config, i, r.shardServer, r.st)}
	pc.timer.Init(r.k, psTick{pc}, 0)
	r.clients = append(r.clients, pc)
	return pc
}

type psRun struct {
	cfg         *Config
	be          *simhost.Cluster
	tcp         *tcpsim.Cluster
	k           *sim.Kernel
	net         *fabric.Network
	from, to    sim.Time
	st          *ps.Stats
	shardServer []int
	servers     []*simhost.Host
	tservers    []*tcpsim.Host
	clients     []*psClient
	connected   int
	stopped     bool
	firstServer int  // host index of server 0 (RDMA)
	closed      bool // the RDMA cluster's memory released
	memory      []MemSample
	simrun.Failures
}

func (r *psRun) rx() (clients, servers uint64) {
	if r.tcp != nil {
		for _, pc := range r.clients {
			clients += pc.th.Stats().RxPayload
		}
		for _, h := range r.tservers {
			servers += h.Stats().RxPayload
		}
		return
	}
	for _, pc := range r.clients {
		clients += pc.h.NIC().Stats().RxPayload
	}
	for _, h := range r.servers {
		servers += h.NIC().Stats().RxPayload
	}
	return
}

// CPU is modelled host CPU time by class (the rows of the paper's Table
// 5), summed over a group of hosts, or per host as a share of one core.
type CPU struct {
	User, Sys, Softirq float64
}

// Total is the sum of the classes.
func (c CPU) Total() float64 { return c.User + c.Sys + c.Softirq }

type cpuTimes struct{ user, sys, softirq sim.Time }

func (a cpuTimes) minus(b cpuTimes) cpuTimes {
	return cpuTimes{a.user - b.user, a.sys - b.sys, a.softirq - b.softirq}
}

// per turns busy time over d into percent of one core per host of group i
// (0 clients, 1 servers).
func (a cpuTimes) per(d sim.Time, i, clients, servers int) CPU {
	n := float64(clients)
	if i == 1 {
		n = float64(servers)
	}
	f := 100 / float64(d) / max(n, 1)
	return CPU{User: float64(a.user) * f, Sys: float64(a.sys) * f, Softirq: float64(a.softirq) * f}
}

// cpu sums CPU time of the clients [0] and servers [1]. ByteExpress runs in
// user space (its I/O threads poll, so the core's work and the verbs calls
// are user time, and the data path makes no system calls); the kernel TCP
// stack's time is split as tcpsim accounts it.
func (r *psRun) cpu() (out [2]cpuTimes) {
	if r.tcp != nil {
		add := func(t *cpuTimes, s tcpsim.Stats) {
			t.user += s.User
			t.sys += s.Sys
			t.softirq += s.Softirq
		}
		for _, pc := range r.clients {
			add(&out[0], pc.th.Stats())
		}
		for _, h := range r.tservers {
			add(&out[1], h.Stats())
		}
		return
	}
	for _, pc := range r.clients {
		st := pc.h.Stats()
		out[0].user += st.Busy + st.AppBusy
	}
	for _, h := range r.servers {
		st := h.Stats()
		out[1].user += st.Busy + st.AppBusy
	}
	return
}

func (r *psRun) tcpStats() *tcpsim.Stats {
	var t tcpsim.Stats
	for _, h := range r.tcp.Hosts() {
		s := h.Stats()
		t.TxSegments += s.TxSegments
		t.Retransmits += s.Retransmits
		t.FastRetransmits += s.FastRetransmits
		t.Timeouts += s.Timeouts
		t.AcksTx += s.AcksTx
		t.CEReceived += s.CEReceived
		t.OutOfOrder += s.OutOfOrder
	}
	return &t
}

// psClient drives a ranker or trainer (ps.Client) over ByteExpress
// sockets (h, socks) or tcpsim connections (th, conns).
type psClient struct {
	run   *psRun
	m     *ps.Client
	h     *simhost.Host
	socks []*byteexpress.Socket
	th    *tcpsim.Host
	conns []*tcpsim.Conn
	timer sim.Timer
	// The RPC layer (Config.RPC; rpc.go): the layer, its timer, the
	// books of its calls (the machine's message of each), and failures
	// waiting to reach the machine at failAt.
	rpc    *rpc.Client
	rtimer sim.Timer
	calls  *ps.RPCCalls
	failq  []ps.Header
	failAt sim.Time
}

// psTick is a client's timer handler: open-loop arrivals (rankers) or the
// end of a compute phase (trainers).
type psTick struct{ c *psClient }

func (t psTick) OnEvent(now sim.Time, _ uint64) {
	if !t.c.run.stopped {
		t.c.do(t.c.m.Tick(now))
	}
}

// now is the client's clock: the delivering I/O thread's under ByteExpress.
func (pc *psClient) now() sim.Time {
	if pc.h != nil {
		return pc.h.Now()
	}
	return pc.run.k.Now()
}

func (pc *psClient) start() { pc.do(pc.m.Start(pc.now())) }

// do performs what the client asked for: its sends, then its timer.
func (pc *psClient) do(out *ps.Out) {
	for _, s := range out.Sends {
		pc.send(s)
	}
	if out.SetTimer {
		pc.timer.Set(out.Timer)
	}
}

func (pc *psClient) send(s ps.Send) {
	if pc.rpc != nil {
		pc.call(s)
		return
	}
	if pc.th != nil {
		if err := pc.conns[s.Server].Send(s.Size, tcpsim.Meta(s.Header.Words())); err != nil {
			pc.run.Fail(err)
		}
		return
	}
	buf, err := pc.h.Allocate(s.Size)
	if err != nil {
		pc.run.Fail(err)
		return
	}
	s.Header.Put(buf.Bytes())
	if err := pc.socks[s.Server].Send(buf, s.Size); err != nil {
		_ = pc.h.Free(buf)
		pc.run.Fail(err)
	}
}

func (pc *psClient) response(now sim.Time, h ps.Header, n int, err error) {
	var out *ps.Out
	if err == nil {
		out, err = pc.m.Response(now, h, n)
	}
	if err != nil {
		pc.run.Fail(fmt.Errorf("client response: %w", err))
		return
	}
	if !pc.run.stopped {
		pc.do(out)
	}
}

// OnEvent implements simhost.App.
func (pc *psClient) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	r := pc.run
	if pc.rpc != nil {
		pc.rpcEvent(h, ev)
		return
	}
	switch ev.Kind {
	case byteexpress.EvConnected:
		r.connected++
	case byteexpress.EvMessage:
		hd, err := ps.ParseHeader(ev.Buf.Bytes()[:ev.Len])
		_ = h.Free(ev.Buf)
		pc.response(h.Now(), hd, ev.Len, err)
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned,
		byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		r.Failed(h, ev)
	}
}

// OnMessage implements tcpsim.App.
func (pc *psClient) OnMessage(h *tcpsim.Host, _ *tcpsim.Conn, m tcpsim.Message) {
	pc.response(h.Now(), ps.FromWords([4]uint64(m.Meta)), m.Size, nil)
}

// psServer drives a parameter server (ps.Server): it answers each request
// with the size the server draws, the request's header echoed.
type psServer struct {
	run *psRun
	m   *ps.Server
}

func (s *psServer) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	r := s.run
	switch ev.Kind {
	case byteexpress.EvMessage:
		if r.cfg.RPC != nil {
			s.rpcAnswer(h, ev)
			return
		}
		p := ev.Buf.Bytes()[:ev.Len]
		hd, err := ps.ParseHeader(p)
		n := 0
		if err == nil {
			n, err = s.m.Reply(hd, ev.Len)
		}
		var buf byteexpress.Buffer
		if err == nil {
			buf, err = h.Allocate(n)
		}
		if err != nil {
			_ = h.Free(ev.Buf)
			r.Fail(fmt.Errorf("server: %w", err))
			return
		}
		copy(buf.Bytes()[:ps.HeaderSize], p[:ps.HeaderSize])
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

// OnMessage implements tcpsim.App.
func (s *psServer) OnMessage(_ *tcpsim.Host, c *tcpsim.Conn, m tcpsim.Message) {
	n, err := s.m.Reply(ps.FromWords([4]uint64(m.Meta)), m.Size)
	if err == nil {
		err = c.Send(n, m.Meta)
	}
	if err != nil {
		s.run.Fail(err)
	}
}

// sampleMemory records the registered memory now and again every
// Config.Series, as long as the run goes on (the kernel stops at the
// interval's end).
func (r *psRun) sampleMemory(now sim.Time) {
	hs := r.be.Hosts()
	m := MemSample{At: now, Client: hs[0].Pool().Stats(), Server: hs[r.firstServer].Pool().Stats()}
	for _, h := range hs {
		st := h.Pool().Stats()
		m.TotalBytes += st.Footprint
		m.TotalBlocks += st.BlocksLive
	}
	r.memory = append(r.memory, m)
	r.k.After(r.cfg.Series, memTick{r}, 0)
}

type memTick struct{ r *psRun }

func (t memTick) OnEvent(now sim.Time, _ uint64) { t.r.sampleMemory(now) }
