// Package failoversim drives the failover workload (package failover,
// paper §7.2) in virtual time over simulated hosts: ByteExpress on
// simulated RNICs (simhost), optionally kernel TCP beside it (tcpsim) for
// the RPC layer's fallback, and faults (package faults) at their instants.
package failoversim

import (
	"cmp"
	"fmt"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/faults"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/tcpsim"
	"github.com/besim/besim/workloads/app"
	"github.com/besim/besim/workloads/failover"
)

// Config is the recovery experiment of §7.2 in simulation: the workload
// (failover.Config, whose layout the faults' host indices follow) on a
// leaf-spine of three leaves (clients on leaf 0, replica sets
// A and B on leaves 1 and 2: two mini-pods). Faults are injected at their
// instants (relative to the end of setup and Warmup); without any, the
// first server of replica set A crashes at CrashAt.
type Config struct {
	failover.Config
	Cluster simhost.Config
	Faults  []faults.Spec
	// TCP is the kernel TCP stack every host gets beside its RNIC, sharing
	// the NIC port (fabric.Mux), when TCPFallback is set.
	TCP tcpsim.Config
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
	// PathChanges and PathSkips are the ladder's first step, summed over
	// the clients: path changes made, and skipped for want of a second
	// path (one spine).
	PathChanges, PathSkips int
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
	if err := cfg.Prepare(); err != nil {
		return nil, err
	}
	hpl := cfg.Hosts()
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
	spines := cmp.Or(cfg.Spines, app.DefaultSpines)
	sc.Fabric.Topology = fabric.Topology{Kind: fabric.LeafSpine, Leaves: 3, HostsPerLeaf: hpl, Spines: spines}
	// A client reaches a server on another leaf over one path per spine
	// (each path index pins its connection to the next spine, see
	// fabric.Packet.Path): with one spine the ladder skips the path change.
	cfg.RPC.Paths = min(cfg.RPC.Paths, spines)
	c, err := simhost.New(sc)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	hs := c.Hosts()
	x := &driver{cfg: &cfg, c: c, st: failover.NewStats(len(hs))}
	if cfg.TCPFallback {
		if err := x.addTCP(); err != nil {
			return nil, err
		}
	}
	for s := range cfg.Shards {
		for _, i := range []int{cfg.ReplicaA(s), cfg.ReplicaB(s)} {
			hs[i].SetApp(&server{x: x})
			hs[i].Listen()
		}
	}
	for i := range cfg.Clients {
		h := hs[i]
		p, err := failover.NewPolicy(&cfg.Config, i)
		if err != nil {
			return nil, err
		}
		fc := &client{x: x, h: h}
		d := &rpc.SocketDialer{EP: h.Endpoint(), Addr: func(n rpc.NodeID) byteexpress.Addr { return hs[n].Addr() },
			Alloc: h.Allocate, Free: h.Free}
		var td rpc.Dialer
		if x.tcp != nil {
			th := x.tcp.Hosts()[i]
			td = &tcpDialer{h: th, peers: x.tcp.Hosts(), conns: map[rpc.NodeID]*tcpsim.Conn{}}
			th.SetApp(fc)
		}
		fc.m = failover.NewClient(&cfg.Config, i, rpc.NewClient(p, d, td), x.st)
		fc.timer.Init(c.Kernel(), fc, 0)
		h.SetApp(clientApp{fc})
		x.clients = append(x.clients, fc)
	}
	for _, fc := range x.clients {
		fc.m.Start(c.Now())
		fc.arm()
	}
	c.Run(c.Now() + cfg.Warmup)
	t0 := c.Now()
	specs := append([]faults.Spec(nil), cfg.Faults...) // At moves to the kernel clock: do not touch the caller's
	if len(specs) == 0 {
		// The first server of replica set A (shard 0).
		specs = []faults.Spec{{Kind: faults.HostCrash, At: cfg.CrashAt, Host: hpl, Switch: -1}}
	}
	faultAt, crashed := sim.Never, -1
	firstCrash := sim.Never
	for i := range specs {
		specs[i].At += t0
		faultAt = min(faultAt, specs[i].At)
		if specs[i].Kind == faults.HostCrash && specs[i].At < firstCrash {
			// RecoveredAfter looks for answers from another host than the
			// first one to crash.
			crashed, firstCrash = specs[i].Host, specs[i].At
		}
	}
	x.st.SetFault(faultAt, crashed)
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
	x.st.SetBins(t0, cfg.Bin, int((cfg.Run+cfg.Bin-1)/cfg.Bin))
	c.Run(t0 + cfg.Run)
	for _, fc := range x.clients {
		fc.m.Stop()
	}
	st := x.st
	r := &Result{Started: st.Started, Completed: st.Completed, Failed: st.Failed, DetectedAfter: st.DetectedAfter,
		RecoveredAfter: st.RecoveredAfter, Served: st.Served, LastServed: st.LastServed, Errors: st.Errors}
	r.FaultAt, r.Faults, r.Rate, r.Bin = faultAt-t0, inj.Log, st.Bins, cfg.Bin
	for i := range r.Faults {
		r.Faults[i].At -= t0 // the faults' clock
	}
	r.BaseRate, r.RateRecoveredAfter = failover.RateRecovery(st.Bins, cfg.Bin, r.FaultAt)
	r.Report, r.Events = c.Network().Report(), c.Kernel().Events()
	var sum failover.Summary
	for _, fc := range x.clients {
		sum.AddRPC(fc.m.RPC(), simhost.CoreTime(c.Now()))
	}
	r.Retries, r.Resent, r.Stranded, r.TCPSends = sum.Retries, sum.Resent, sum.Stranded, sum.TCPSends
	r.PathChanges, r.PathSkips = sum.PathChanges, sum.PathSkips
	r.ConnFailures, r.ReqFailures = sum.ConnFailures, sum.ReqFailures
	r.QuarantineTrips, r.QuarantineReleases, r.QuarantinedAtEnd = sum.QuarantineTrips, sum.QuarantineReleases, sum.QuarantinedAtEnd
	for i := range r.LastServed {
		if r.Served[i] == 0 {
			r.LastServed[i] = -1
		} else {
			r.LastServed[i] -= t0
		}
	}
	return r, nil
}

// driver is one run: the cluster, the clients and their shared Stats.
type driver struct {
	tcp     *tcpsim.Cluster
	cfg     *Config
	c       *simhost.Cluster
	st      *failover.Stats
	clients []*client
}

// client drives one failover.Client over a simulated host: its engine
// events, its TCP fallback's responses and its RPC timer.
type client struct {
	x     *driver
	h     *simhost.Host
	m     *failover.Client
	timer sim.Timer
}

func (fc *client) arm() {
	if at, ok := fc.m.Deadline(fc.h.Now()); ok {
		fc.timer.Set(at)
	}
}

// OnEvent is the client's RPC timer.
func (fc *client) OnEvent(now sim.Time, _ uint64) {
	fc.m.Tick(now)
	fc.arm()
}

func (fc *client) onHostEvent(h *simhost.Host, ev byteexpress.Event) {
	x := fc.x
	now := h.Now()
	switch ev.Kind {
	case byteexpress.EvMessage:
		hdr, err := rpc.ParseHeader(ev.Buf.Bytes()[:ev.Len])
		_ = h.Free(ev.Buf)
		if err != nil {
			x.st.Fail(err)
			return
		}
		from := -1
		if n := x.c.Lookup(ev.Remote); n != nil {
			from = n.Index()
		}
		fc.m.Response(hdr, from, now)
	case byteexpress.EvEngineError:
		// One per engine; the EvSocketFailed of each socket it carried
		// would walk the ladder once per socket for the same failure.
		if n := x.c.Lookup(ev.Remote); n != nil {
			fc.m.EngineError(n.Index(), now)
		}
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		_ = h.Free(ev.Buf)
	}
	fc.arm()
}

// OnMessage implements tcpsim.App: a response over the TCP fallback.
func (fc *client) OnMessage(h *tcpsim.Host, c *tcpsim.Conn, m tcpsim.Message) {
	hdr := rpc.Header{Call: rpc.CallID(m.Meta[0]), Attempt: uint32(m.Meta[1]), Shard: uint32(m.Meta[2]), Op: byte(m.Meta[3])}
	fc.m.Response(hdr, c.Peer().Host().Index(), h.Now())
	fc.arm()
}

// addTCP puts a kernel TCP stack beside every host's RNIC, on one port.
func (x *driver) addTCP() error {
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

// tcpServer answers fetches that come over TCP (the header travels as the
// message's metadata).
type tcpServer struct{ x *driver }

func (s tcpServer) OnMessage(_ *tcpsim.Host, c *tcpsim.Conn, m tcpsim.Message) {
	if err := c.Send(s.x.cfg.ReplySize(), m.Meta); err != nil {
		s.x.st.Fail(err)
	}
}

// server answers fetches over ByteExpress by failover's reply rule.
type server struct{ x *driver }

func (s *server) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	switch ev.Kind {
	case byteexpress.EvMessage:
		n := s.x.cfg.ReplySize()
		buf, err := h.Allocate(n)
		if err != nil {
			_ = h.Free(ev.Buf)
			s.x.st.Fail(err)
			return
		}
		err = failover.EchoHeader(buf.Bytes(), ev.Buf.Bytes())
		_ = h.Free(ev.Buf)
		if err != nil {
			_ = h.Free(buf)
			s.x.st.Fail(err)
			return
		}
		if err := ev.Socket.Send(buf, n); err != nil {
			_ = h.Free(buf)
		}
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		_ = h.Free(ev.Buf)
	}
}

// clientApp lets client be both the sim.Handler of its timer and the
// simhost.App of its host.
type clientApp struct{ fc *client }

func (a clientApp) OnEvent(h *simhost.Host, ev byteexpress.Event) { a.fc.onHostEvent(h, ev) }
