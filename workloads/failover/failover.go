package failover

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/faults"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/tcpsim"
	"github.com/besim/besim/workloads/app"
)

// Config is the recovery experiment of §7.2: Shards shard groups,
// each replicated on two servers in different mini-pods (leaves 1 and 2 of
// a one-spine leaf-spine); Clients on leaf 0 keep Outstanding idempotent
// fetches in flight through rpc.Client, to random shards. Faults are
// injected at their instants (relative to the end of setup); without any,
// the first server of replica set A crashes at CrashAt. Clients find out
// by keepalive (an engine error) or by the request timeout Tr, and the RPC
// layer walks the ladder (path change, then the replica in the other
// mini-pod).
//
// Host layout (the indices faults name): clients are hosts 0..Clients-1;
// with L = HostsPerLeaf (default max(Shards, Clients)) hosts per leaf,
// shard s's replica A is host L+s and replica B host 2L+s.
type Config struct {
	Cluster     simhost.Config
	Shards      int // default 4
	Clients     int // default 2
	Outstanding int // per client, default 4
	Response    int // fetch response bytes, default 16 KiB
	Request     int // fetch request bytes, default 64
	// HostsPerLeaf is L, at least max(Shards, Clients) (the default).
	HostsPerLeaf int
	// Spines is the spine switches (one uplink from every leaf to each);
	// default app.DefaultSpines.
	Spines int
	// Warmup runs after setup, before the faults' clock starts. Default 0.
	Warmup  sim.Time
	RPC     rpc.Config
	CrashAt sim.Time // default 5 ms after setup (when Faults is empty)
	Faults  []faults.Spec
	// TCPFallback gives every host a kernel TCP stack (tcpsim, config TCP)
	// beside its RNIC, sharing the NIC port (fabric.Mux), and the clients'
	// RPC layer a TCP transport to fall back to when RDMA stays
	// unavailable (paper §7.2).
	TCPFallback bool
	TCP         tcpsim.Config
	Run         sim.Time // simulated after setup, default 150 ms
	Bin         sim.Time // completion-rate bin; default 1 ms
	Seed        uint64
}

// Result is what the crash experiment measured (virtual time).
type Result struct {
	Started, Completed, Failed int
	Retries, Resent            int
	// DetectedAfter is from the first fault to the first failure the
	// clients saw (an engine error, or a request timeout that retried).
	DetectedAfter sim.Time
	// RecoveredAfter is from the first fault to the first fetch answered
	// after it had to be sent again (by a server other than a crashed one).
	RecoveredAfter sim.Time
	// Stranded are calls still outstanding at the end.
	Stranded int
	// FaultAt is when the first fault struck (after setup); Faults is what
	// the injector applied.
	FaultAt sim.Time
	Faults  []faults.Event
	// Rate is completed fetches per Bin from the start of the run;
	// BaseRate is its mean before the first fault. RateRecoveredAfter is
	// from the first fault to the end of the first bin after it whose rate
	// is back to 90% of BaseRate, having dropped below it (0: it never
	// dropped; -1: it never recovered).
	Rate               []int
	Bin                sim.Time
	BaseRate           float64
	RateRecoveredAfter sim.Time
	Report             *fabric.Report
	Events             uint64
	TCPSends           int // attempts the RPC layer sent over the TCP fallback
	// Quarantine, summed over the clients (each keeps its own exclusion
	// list): the connection and request failures it recorded, times a node
	// entered and left it, and (client, node) pairs still excluded at the
	// end.
	ConnFailures, ReqFailures                             int
	QuarantineTrips, QuarantineReleases, QuarantinedAtEnd int
	// Served counts the fetches each host answered; LastServed is when it
	// last did (relative to the faults' clock; -1: never).
	Served     []int
	LastServed []sim.Time
	Errors     []error
}

// Run runs the crash experiment.
func Run(cfg Config) (*Result, error) {
	if cfg.Shards == 0 {
		cfg.Shards = 4
	}
	if cfg.Clients == 0 {
		cfg.Clients = 2
	}
	if cfg.Outstanding == 0 {
		cfg.Outstanding = 4
	}
	if cfg.Response == 0 {
		cfg.Response = 16 << 10
	}
	if cfg.RPC.RequestTimeout == 0 {
		cfg.RPC = rpc.DefaultConfig()
	}
	if cfg.CrashAt == 0 {
		cfg.CrashAt = 5 * sim.Millisecond
	}
	if cfg.Bin == 0 {
		cfg.Bin = sim.Millisecond
	}
	if cfg.Run == 0 {
		cfg.Run = 150 * sim.Millisecond
	}
	if cfg.Shards < 1 || cfg.Clients < 1 || cfg.Outstanding < 1 || cfg.Response < rpc.HeaderSize {
		return nil, errors.New("workloads: failover needs shards, clients, outstanding >= 1 and a response of at least the RPC header")
	}
	if cfg.Request == 0 {
		cfg.Request = 64
	}
	hpl := max(cfg.Shards, cfg.Clients, cfg.HostsPerLeaf)
	if cfg.HostsPerLeaf != 0 && cfg.HostsPerLeaf < max(cfg.Shards, cfg.Clients) {
		return nil, fmt.Errorf("workloads: failover: %d hosts per leaf cannot hold %d shards or %d clients", cfg.HostsPerLeaf, cfg.Shards, cfg.Clients)
	}
	if cfg.Request < rpc.HeaderSize {
		return nil, fmt.Errorf("workloads: failover: request %d B is below the %d-byte RPC header", cfg.Request, rpc.HeaderSize)
	}
	sc := cfg.Cluster
	if sc.BE.ConnectTimeout == 0 {
		// Archon's connection timeout Tc bounds a new engine's exchange:
		// the core reports the connect that misses it as an engine error,
		// which the RPC layer takes as a connection failure (§7.2).
		sc.BE.ConnectTimeout = cfg.RPC.ConnTimeout
	}
	if sc.Fabric.MTU == 0 {
		sc.Fabric = fabric.DefaultConfig()
	}
	sc.Fabric.Seed = cfg.Seed
	sc.Fabric.Topology = fabric.Topology{Kind: fabric.LeafSpine, Leaves: 3, HostsPerLeaf: hpl, Spines: cmp.Or(cfg.Spines, app.DefaultSpines)}
	c, err := simhost.New(sc)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	hs := c.Hosts()
	x := &failover{cfg: &cfg, c: c, res: &Result{Served: make([]int, len(hs)), LastServed: make([]sim.Time, len(hs))}, crashed: -1}
	if cfg.TCPFallback {
		if err := x.addTCP(); err != nil {
			return nil, err
		}
	}
	svc := rpc.Service{Shards: make([][]rpc.Replica, cfg.Shards)}
	for s := range cfg.Shards {
		a, b := hpl+s, 2*hpl+s // leaf 1 and leaf 2: mini-pods 1 and 2
		svc.Shards[s] = []rpc.Replica{{Node: rpc.NodeID(a), MiniPod: 1}, {Node: rpc.NodeID(b), MiniPod: 2}}
		for _, i := range []int{a, b} {
			hs[i].SetApp(&failoverServer{x: x})
			hs[i].Listen()
		}
	}
	for i := range cfg.Clients {
		h := hs[i]
		p, err := rpc.NewPolicy(cfg.RPC, svc, 0, sim.Stream(cfg.Seed, fmt.Sprintf("failover/retry%d", i)))
		if err != nil {
			return nil, err
		}
		fc := &failoverClient{x: x, h: h, rng: sim.Stream(cfg.Seed, fmt.Sprintf("failover/client%d", i))}
		d := &rpc.SocketDialer{EP: h.Endpoint(), Addr: func(n rpc.NodeID) byteexpress.Addr { return hs[n].Addr() },
			Alloc: h.Allocate, Free: h.Free}
		var td rpc.Dialer
		if x.tcp != nil {
			th := x.tcp.Hosts()[i]
			td = &tcpDialer{h: th, peers: x.tcp.Hosts(), conns: map[rpc.NodeID]*tcpsim.Conn{}}
			th.SetApp(fc)
		}
		fc.rpc = rpc.NewClient(p, d, td)
		fc.timer.Init(c.Kernel(), fc, 0)
		h.SetApp(clientApp{fc})
		x.clients = append(x.clients, fc)
	}
	for _, fc := range x.clients {
		for range cfg.Outstanding {
			fc.call()
		}
		fc.arm()
	}
	c.Run(c.Now() + cfg.Warmup)
	t0 := c.Now()
	specs := append([]faults.Spec(nil), cfg.Faults...) // At moves to the kernel clock: do not touch the caller's
	if len(specs) == 0 {
		// The first server of replica set A (shard 0).
		specs = []faults.Spec{{Kind: faults.HostCrash, At: cfg.CrashAt, Host: hpl, Switch: -1}}
	}
	x.crashAt = sim.Never
	firstCrash := sim.Never
	for i := range specs {
		specs[i].At += t0
		x.crashAt = min(x.crashAt, specs[i].At)
		if specs[i].Kind == faults.HostCrash && specs[i].At < firstCrash {
			// RecoveredAfter looks for answers from another host than the
			// first one to crash.
			x.crashed, firstCrash = specs[i].Host, specs[i].At
		}
	}
	fh := make([]faults.Host, len(hs))
	for i, h := range hs {
		fh[i] = h
		if x.tcp != nil {
			fh[i] = bothHost{h, x.tcp.Hosts()[i]}
		}
	}
	inj, err := faults.Schedule(c.Kernel(), c.Network(), fh, cfg.Seed, specs)
	if err != nil {
		return nil, err
	}
	x.t0, x.bins = t0, make([]int, int((cfg.Run+cfg.Bin-1)/cfg.Bin))
	c.Run(t0 + cfg.Run)
	x.stop = true
	r := x.res
	r.FaultAt, r.Faults, r.Rate, r.Bin = x.crashAt-t0, inj.Log, x.bins, cfg.Bin
	for i := range r.Faults {
		r.Faults[i].At -= t0 // the faults' clock
	}
	r.BaseRate, r.RateRecoveredAfter = rateRecovery(x.bins, cfg.Bin, r.FaultAt)
	r.Report, r.Events = c.Network().Report(), c.Kernel().Events()
	for _, fc := range x.clients {
		r.Retries += fc.rpc.Policy.Tracker.Stats.Retries
		r.Resent += fc.rpc.Resent
		r.Stranded += fc.rpc.Outstanding()
		r.TCPSends += fc.rpc.TCPSends
		q := fc.rpc.Policy.Quarantine
		q.Tick(simhost.CoreTime(c.Now())) // releases due by the end count
		r.ConnFailures += q.Stats.ConnFailures
		r.ReqFailures += q.Stats.ReqFailures
		r.QuarantineTrips += q.Stats.Trips
		r.QuarantineReleases += q.Stats.Releases
		r.QuarantinedAtEnd += len(q.ExcludedNodes(simhost.CoreTime(c.Now())))
	}
	for i := range r.LastServed {
		if r.Served[i] == 0 {
			r.LastServed[i] = -1
		} else {
			r.LastServed[i] -= t0
		}
	}
	return r, nil
}

// rateRecovery is the mean completion rate per bin before faultAt and how
// long after faultAt it took to be back at 90% of it (see Result). With no
// full bin before the fault, or a fault at or after the last bin (which
// validation refuses: such a fault never fires), there is no rate to
// recover: 0, 0.
func rateRecovery(bins []int, bin, faultAt sim.Time) (float64, sim.Time) {
	if bin <= 0 || faultAt < 0 {
		return 0, 0
	}
	pre := faultAt / bin
	if pre < 1 || pre > sim.Time(len(bins)) {
		return 0, 0
	}
	var sum int
	for _, b := range bins[:pre] {
		sum += b
	}
	base := float64(sum) / float64(pre)
	dropped := false
	for i := int(pre); i < len(bins); i++ {
		ok := float64(bins[i]) >= 0.9*base
		if !ok {
			dropped = true
		}
		if ok && dropped {
			return base, sim.Time(i+1)*bin - faultAt
		}
	}
	if dropped {
		return base, -1
	}
	return base, 0
}

type failover struct {
	tcp     *tcpsim.Cluster
	t0      sim.Time
	bins    []int
	cfg     *Config
	c       *simhost.Cluster
	res     *Result
	clients []*failoverClient
	crashAt sim.Time
	crashed int
	stop    bool
}

func (x *failover) detected(now sim.Time) {
	if now >= x.crashAt && x.res.DetectedAfter == 0 {
		x.res.DetectedAfter = max(1, now-x.crashAt)
	}
}

type failoverClient struct {
	x     *failover
	h     *simhost.Host
	rng   *rand.Rand
	rpc   *rpc.Client
	timer sim.Timer
}

func (fc *failoverClient) now() time.Duration { return simhost.CoreTime(fc.h.Now()) }

func (fc *failoverClient) call() {
	if fc.x.stop {
		return
	}
	shard := fc.rng.IntN(fc.x.cfg.Shards)
	if _, err := fc.rpc.Call(rpc.Request{Shard: shard, Idempotent: true}, 0, fc.x.cfg.Request, fc.now()); err != nil {
		fc.x.res.Failed++
		fc.x.fail(err)
		return
	}
	fc.x.res.Started++
}

func (fc *failoverClient) arm() {
	if d := fc.rpc.NextDeadline(); d != byteexpress.Never {
		fc.timer.Set(max(simhost.SimTime(d), fc.h.Now()+1))
	}
}

func (fc *failoverClient) finished(done []rpc.Completion, now sim.Time) {
	for _, comp := range done {
		if comp.Err != nil {
			fc.x.res.Failed++
			fc.x.fail(comp.Err)
		}
		fc.call()
	}
}

// OnEvent is the client's RPC timer.
func (fc *failoverClient) OnEvent(now sim.Time, _ uint64) {
	before := fc.rpc.Policy.Tracker.Stats.Retries
	done := fc.rpc.Tick(simhost.CoreTime(now))
	if fc.rpc.Policy.Tracker.Stats.Retries > before {
		fc.x.detected(now)
	}
	fc.finished(done, now)
	fc.arm()
}

// fail records the first errors (failover embeds no failures value: the
// result carries them).
func (x *failover) fail(err error) {
	if len(x.res.Errors) < 8 {
		x.res.Errors = append(x.res.Errors, err)
	}
}

func (fc *failoverClient) onHostEvent(h *simhost.Host, ev byteexpress.Event) {
	x := fc.x
	now := h.Now()
	switch ev.Kind {
	case byteexpress.EvMessage:
		hdr, err := rpc.ParseHeader(ev.Buf.Bytes()[:ev.Len])
		_ = h.Free(ev.Buf)
		if err != nil {
			x.fail(err)
			return
		}
		from := -1
		if n := x.c.Lookup(ev.Remote); n != nil {
			from = n.Index()
		}
		fc.response(hdr, from, now)
	case byteexpress.EvEngineError:
		// One per engine; the EvSocketFailed of each socket it carried
		// would walk the ladder once per socket for the same failure.
		if n := x.c.Lookup(ev.Remote); n != nil {
			x.detected(now)
			fc.finished(fc.rpc.OnEngineError(rpc.NodeID(n.Index()), simhost.CoreTime(now)), now)
		}
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		_ = h.Free(ev.Buf)
	}
	fc.arm()
}

// response accounts one answered fetch from host from and starts the next.
func (fc *failoverClient) response(hdr rpc.Header, from int, now sim.Time) {
	x := fc.x
	comp, ok := fc.rpc.OnResponse(hdr, simhost.CoreTime(now))
	if !ok {
		return
	}
	x.res.Completed++
	if from >= 0 {
		x.res.Served[from]++
		x.res.LastServed[from] = now
	}
	if b := int((now - x.t0) / x.cfg.Bin); b >= 0 && b < len(x.bins) {
		x.bins[b]++
	}
	if x.res.RecoveredAfter == 0 && now > x.crashAt && from != x.crashed && comp.Sends > 1 {
		x.res.RecoveredAfter = now - x.crashAt
	}
	fc.call()
}

// OnMessage implements tcpsim.App: a response over the TCP fallback.
func (fc *failoverClient) OnMessage(h *tcpsim.Host, c *tcpsim.Conn, m tcpsim.Message) {
	hdr := rpc.Header{Call: rpc.CallID(m.Meta[0]), Attempt: uint32(m.Meta[1]), Shard: uint32(m.Meta[2]), Op: byte(m.Meta[3])}
	fc.response(hdr, c.Peer().Host().Index(), h.Now())
	fc.arm()
}

// addTCP puts a kernel TCP stack beside every host's RNIC, on one port.
func (x *failover) addTCP() error {
	net := x.c.Network()
	tc, err := tcpsim.NewOn(x.c.Kernel(), net, x.cfg.TCP)
	if err != nil {
		return err
	}
	prio := tc.Config().Prio
	for i, hp := range net.Hosts {
		th := tc.Hosts()[i]
		th.SetApp(tcpServer{x})
		if err := net.Attach(hp.Node(), &fabric.Mux{A: hp.Host(), B: th, AMask: ^uint8(1 << prio)}); err != nil {
			return err
		}
	}
	x.tcp = tc
	return nil
}

// bothHost is a host with an RNIC and a kernel TCP stack: a crash stops
// both; a restart brings back the RDMA side (tcpsim has no restart, so the
// restarted host has no TCP).
type bothHost struct {
	h *simhost.Host
	t *tcpsim.Host
}

func (b bothHost) Crash(at sim.Time) {
	b.h.Crash(at)
	b.t.Crash(at)
}

func (b bothHost) Restart(at sim.Time) { b.h.Restart(at) }

func (b bothHost) FailQPs() int { return b.h.FailQPs() }

// tcpDialer is the RPC layer's TCP transport over tcpsim: one connection
// per server, opened on first use (the kernel's connect is not modelled).
type tcpDialer struct {
	h     *tcpsim.Host
	peers []*tcpsim.Host
	conns map[rpc.NodeID]*tcpsim.Conn
}

func (d *tcpDialer) Dial(n rpc.NodeID, _ int) (rpc.Conn, error) {
	if int(n) < 0 || int(n) >= len(d.peers) {
		return nil, fmt.Errorf("workloads: tcp dial to unknown node %d", n)
	}
	c := d.conns[n]
	if c == nil {
		var err error
		if c, err = d.h.Dial(d.peers[n]); err != nil {
			return nil, err
		}
		d.conns[n] = c
	}
	return tcpConn{c}, nil
}

type tcpConn struct{ c *tcpsim.Conn }

func (t tcpConn) Send(hdr []byte, n int) error {
	h, err := rpc.ParseHeader(hdr)
	if err != nil {
		return err
	}
	return t.c.Send(n, tcpsim.Meta{uint64(h.Call), uint64(h.Attempt), uint64(h.Shard), uint64(h.Op)})
}

func (t tcpConn) Close() {}

// tcpServer answers fetches that come over TCP.
type tcpServer struct{ x *failover }

func (s tcpServer) OnMessage(_ *tcpsim.Host, c *tcpsim.Conn, m tcpsim.Message) {
	if err := c.Send(s.x.cfg.Response, m.Meta); err != nil {
		s.x.fail(err)
	}
}

type failoverServer struct{ x *failover }

func (s *failoverServer) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	switch ev.Kind {
	case byteexpress.EvMessage:
		n := s.x.cfg.Response
		buf, err := h.Allocate(n)
		if err != nil {
			_ = h.Free(ev.Buf)
			s.x.fail(err)
			return
		}
		copy(buf.Bytes()[:rpc.HeaderSize], ev.Buf.Bytes()[:rpc.HeaderSize])
		_ = h.Free(ev.Buf)
		if err := ev.Socket.Send(buf, n); err != nil {
			_ = h.Free(buf)
		}
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		_ = h.Free(ev.Buf)
	}
}

// clientApp lets failoverClient be both the sim.Handler of its timer and
// the simhost.App of its host.
type clientApp struct{ fc *failoverClient }

func (a clientApp) OnEvent(h *simhost.Host, ev byteexpress.Event) { a.fc.onHostEvent(h, ev) }
