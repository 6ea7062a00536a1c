package msgratesim

import (
	"errors"
	"fmt"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/units"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/msgrate"
)

// CoreConfig is the Figure 11 workload run through the ByteExpress core
// (benchmark through: core): one client host with Threads I/O threads
// opens QPs engines, one per remote address, to one server host (which
// answers every MsgSize-byte message with fragsize.ResponseSize bytes);
// each socket keeps Depth messages outstanding and the client does
// AppWork (jittered) of application work per answer. ThreadDomains is the
// core's per-thread TDs (byteexpress Config.NoThreadDomains is its
// inverse) on both hosts. Zero fields of the NIC and link delay take
// rnic.DefaultConfig and simhost.DefaultTestbedLinkDelay.
type CoreConfig struct {
	msgrate.Config
	NIC       rnic.Config
	LinkDelay sim.Time
}

// CoreResult is one measurement through the core.
type CoreResult struct {
	Mmps      float64  // MsgSize-byte messages the server received per second, millions
	Setup     sim.Time // until every socket was connected (the warm-up follows)
	SharedQPs int      // client QPs ringing a shared (locked) doorbell register
	LockShare float64  // fraction of the client threads' CPU time in doorbell-lock acquisition
	Doorbells uint64   // client doorbells (post_send calls) in the measured interval
	Client    rnic.CPUStats
}

// coreClient drives msgrate.CoreClient on the simulated host: Depth
// messages outstanding on each socket, one more per answer, after its
// application work charged to the delivering thread.
type coreClient struct {
	cfg   *msgrate.Config
	m     *msgrate.CoreClient
	socks map[*byteexpress.Socket]bool
	conn  int // sockets connected
	err   error
}

func (a *coreClient) send(h *simhost.Host, sk *byteexpress.Socket) {
	buf, err := h.Allocate(a.cfg.MsgSize)
	if err == nil {
		if err = sk.Send(buf, a.cfg.MsgSize); err != nil {
			_ = h.Free(buf)
		}
	}
	if err != nil && a.err == nil {
		a.err = err
	}
}

func (a *coreClient) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	switch ev.Kind {
	case byteexpress.EvConnected:
		a.conn++
	case byteexpress.EvMessage:
		_ = h.Free(ev.Buf)
		if !a.socks[ev.Socket] {
			return
		}
		// The thread delivering the answer does the application's work
		// for it (msgrate.CoreClient: the socket's stream draws it).
		work, n := a.m.Stream(ev.Socket.ID()).Answer()
		if cpu := h.CurrentCPU(); cpu != nil {
			cpu.Charge(work)
		}
		for range n {
			a.send(h, ev.Socket)
		}
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		_ = h.Free(ev.Buf)
		if a.err == nil {
			a.err = ev.Err
		}
	case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		if a.err == nil {
			a.err = ev.Err
		}
	}
}

// RunCore runs the message-rate benchmark through the core.
func RunCore(cfg CoreConfig) (CoreResult, error) {
	cfg.Config = cfg.Config.WithDefaults()
	if cfg.NIC.PortMTU == 0 {
		cfg.NIC = rnic.DefaultConfig()
	}
	if cfg.LinkDelay == 0 {
		cfg.LinkDelay = simhost.DefaultTestbedLinkDelay
	}
	if cfg.MsgSize <= fragsize.ResponseSize || cfg.QPs < 1 || cfg.Threads < 1 || cfg.Depth < 1 {
		return CoreResult{}, fmt.Errorf("msgrate through core: needs message > %d B, qps, threads and depth >= 1", fragsize.ResponseSize)
	}
	sc := simhost.DefaultConfig(2)
	sc.Fabric.HostLink = fabric.LinkConfig{Rate: units.Rate(cfg.Rate), Delay: cfg.LinkDelay}
	sc.Fabric.MTU = units.Size(min(int(cfg.NIC.PortMTU), 4096))
	sc.NIC = cfg.NIC
	sc.NIC.SizesOnly = false // the core reads its peer's records
	sc.BE.Threads = cfg.Threads
	sc.BE.NoThreadDomains = !cfg.ThreadDomains
	// Every thread's CQ must hold the completions of its engines.
	d := sc.BE.Defaults()
	sc.BE.CQDepth = max(d.CQDepth, ((cfg.QPs+cfg.Threads-1)/cfg.Threads+1)*(d.SQDepth+d.RQDepth))
	c, err := simhost.New(sc)
	if err != nil {
		return CoreResult{}, err
	}
	a, b := c.Host(0), c.Host(1)
	rx := fragsize.NewReceiver(cfg.MsgSize, 0, 0)
	srv := fragsizeReceiver{m: rx}
	b.SetApp(&srv)
	b.Listen()
	cl := &coreClient{cfg: &cfg.Config, m: msgrate.NewCoreClient(&cfg.Config), socks: map[*byteexpress.Socket]bool{}}
	a.SetApp(cl)
	var socks []*byteexpress.Socket
	for i := range cfg.QPs {
		alias := byteexpress.Addr(fmt.Sprintf("%s#%d", b.Addr(), i))
		if err := c.Alias(b, alias); err != nil {
			return CoreResult{}, err
		}
		sk, err := a.Endpoint().Dial(alias)
		if err != nil {
			return CoreResult{}, err
		}
		cl.socks[sk] = true
		socks = append(socks, sk)
	}
	for _, sk := range socks {
		for range cl.m.Stream(sk.ID()).Start() {
			cl.send(a, sk)
		}
	}
	// Engine set-up (QP creation, the connection exchange, staging and
	// receive buffers) takes the threads milliseconds at hundreds of QPs;
	// the warm-up starts once every socket is connected.
	const setupLimit = 100 * sim.Millisecond
	for cl.conn < cfg.QPs && cl.err == nil && c.Now() < setupLimit {
		c.RunFor(10 * sim.Microsecond)
	}
	if cl.conn < cfg.QPs {
		err := fmt.Errorf("msgrate through core: %d of %d sockets connected after %v: %w", cl.conn, cfg.QPs, c.Now(), cl.err)
		return CoreResult{}, errors.Join(err, c.Close())
	}
	start := c.Now()
	warm, meas := start+cfg.Warmup, cfg.Duration
	rx.From, rx.To = warm, warm+meas
	shared := 0
	c.Run(warm)
	for _, q := range a.QPs() {
		if q.SharedDoorbell {
			shared++
		}
	}
	s0 := clientCPU(a)
	c.Run(warm + meas)
	s1 := clientCPU(a)
	res := CoreResult{SharedQPs: shared, Client: s1, Setup: start,
		Mmps:      float64(rx.Msgs) / meas.Seconds() / 1e6,
		Doorbells: s1.Posts - s0.Posts}
	if busy := s1.Busy - s0.Busy; busy > 0 {
		res.LockShare = float64(s1.Lock-s0.Lock) / float64(busy)
	}
	err = errors.Join(cl.err, srv.err, c.Err())
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return res, err
}

// clientCPU sums the verbs CPU counters of h's I/O threads.
func clientCPU(h *simhost.Host) rnic.CPUStats {
	var s rnic.CPUStats
	for _, t := range h.Threads() {
		x := t.CPU().Stats()
		s.Busy += x.Busy
		s.Spin += x.Spin
		s.Lock += x.Lock
		s.Posts += x.Posts
		s.WQEs += x.WQEs
		s.LockWaits += x.LockWaits
		s.LockMoves += x.LockMoves
	}
	return s
}

// fragsizeReceiver answers every message of the benchmark's size with a
// fragsize.ResponseSize-byte response and counts them (fragsize.Receiver).
type fragsizeReceiver struct {
	m   *fragsize.Receiver
	err error
}

func (r *fragsizeReceiver) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	if ev.Kind != byteexpress.EvMessage || !r.m.Bulk(ev.Len) {
		simhost.FreeApp{}.OnEvent(h, ev)
		return
	}
	n := r.m.Message(h.Now(), ev.Len)
	_ = h.Free(ev.Buf)
	buf, err := h.Allocate(n)
	if err == nil {
		if err = ev.Socket.Send(buf, n); err != nil {
			_ = h.Free(buf)
		}
	}
	if err != nil && r.err == nil {
		r.err = err
	}
}
