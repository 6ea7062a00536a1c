package simhost

import (
	"errors"
	"fmt"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/bemalloc"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// App receives a host's ByteExpress events, in the order the I/O threads
// produce them, at the virtual instant the producing thread finished its
// step (Host.Now during the call). It is one long-lived value per host: no
// closure per message. What EvMessage, EvSendFailed and EvBufferReturned
// carry in Buf belongs to the application, which frees it (Host.Free) when
// done. OnEvent may call the Endpoint and Socket API (the I/O thread runs
// again afterwards, never inside the call) and may charge application work
// to the delivering thread's CPU (Host.CurrentCPU).
type App interface {
	OnEvent(h *Host, ev byteexpress.Event)
}

// FreeApp is the default App: it frees every buffer it is given.
type FreeApp struct{}

// OnEvent implements App.
func (FreeApp) OnEvent(h *Host, ev byteexpress.Event) {
	switch ev.Kind {
	case byteexpress.EvMessage, byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		_ = h.Free(ev.Buf)
	}
}

// Host is one simulated machine: an RNIC attached to a fabric node, a
// bemalloc pool over the NIC's protection domain, and a ByteExpress
// endpoint whose I/O threads are simulated components (Thread).
type Host struct {
	c     *Cluster
	k     *sim.Kernel
	idx   int
	name  string
	addr  byteexpress.Addr
	node  fabric.NodeID
	nic   *rnic.NIC
	port  port
	ctx   *rnic.Context
	vctx  ctxWrap
	pd    *pdWrap
	pool  *bemalloc.Pool
	ep    *byteexpress.Endpoint
	cost  CPUCost
	trace func(byteexpress.TraceEvent)
	app   App

	threads []*Thread
	cur     *Thread // the thread running its step (or delivering its events)

	qps     []*qpWrap
	liveQPs int

	crashed   bool
	crashedAt sim.Time
	listening bool
	closed    bool
	dropped   uint64 // frames dropped by the crashed NIC
}

func newHost(c *Cluster, i int) (*Host, error) {
	cfg := &c.cfg
	node := fabric.NodeID(i)
	name := c.net.NodeName(node)
	h := &Host{c: c, k: c.k, idx: i, name: name, addr: byteexpress.Addr(name), node: node,
		cost: cfg.CPU, app: FreeApp{}}
	nic, err := rnic.New(c.k, name, cfg.NIC)
	if err != nil {
		return nil, fmt.Errorf("simhost: host %s: %w", name, err)
	}
	h.nic = nic
	h.port = port{h: h, nic: nic}
	if err := c.net.Attach(node, &h.port); err != nil {
		return nil, err
	}
	if h.ctx, err = nic.Open(); err != nil {
		return nil, err
	}
	h.vctx = ctxWrap{Context: h.ctx}
	pd, err := h.ctx.AllocPD()
	if err != nil {
		return nil, err
	}
	h.pd = &pdWrap{PD: pd, h: h}
	if h.pool, err = bemalloc.New(h.pd, cfg.Pool); err != nil {
		return nil, fmt.Errorf("simhost: host %s: %w", name, err)
	}
	be := cfg.BE
	h.trace = be.Trace
	be.Trace = h.onTrace
	h.ep, err = byteexpress.NewEndpoint(byteexpress.Params{Context: &h.vctx, PD: h.pd, Allocator: h.pool,
		Connector: c, Local: h.addr}, be)
	if err != nil {
		return nil, fmt.Errorf("simhost: host %s: %w", name, err)
	}
	ios := h.ep.Threads()
	if len(h.vctx.cqs) != len(ios) {
		return nil, fmt.Errorf("simhost: host %s: %d CQs for %d I/O threads", name, len(h.vctx.cqs), len(ios))
	}
	for j, io := range ios {
		t := &Thread{h: h, idx: j, io: io, cq: h.vctx.cqs[j],
			cpu: rnic.NewCPU(c.k, fmt.Sprintf("%s/io%d", name, j))}
		t.timer.Init(c.k, t, tagPoll)
		t.due.Init(c.k, t, tagDue)
		t.cq.SetNotify(t, tagCQ)
		io.SetWakeup(t.wakeup)
		h.threads = append(h.threads, t)
	}
	return h, nil
}

// Name is the host's fabric name ("h0", ...); Addr the same as a
// byteexpress address.
func (h *Host) Name() string { return h.name }

// Addr is the host's ByteExpress address (its fabric node name).
func (h *Host) Addr() byteexpress.Addr { return h.addr }

// Index is the host's position in Cluster.Hosts (= its fabric node id).
func (h *Host) Index() int { return h.idx }

// Node is the fabric node.
func (h *Host) Node() fabric.NodeID { return h.node }

// Cluster is the cluster the host belongs to.
func (h *Host) Cluster() *Cluster { return h.c }

// NIC is the host's RNIC.
func (h *Host) NIC() *rnic.NIC { return h.nic }

// Context is the verbs context the endpoint runs on.
func (h *Host) Context() *rnic.Context { return h.ctx }

// Pool is the host's bemalloc pool.
func (h *Host) Pool() *bemalloc.Pool { return h.pool }

// Endpoint is the host's ByteExpress endpoint.
func (h *Host) Endpoint() *byteexpress.Endpoint { return h.ep }

// Threads are the simulated I/O threads.
func (h *Host) Threads() []*Thread { return h.threads }

// SetApp installs the application (nil: FreeApp).
func (h *Host) SetApp(a App) {
	if a == nil {
		a = FreeApp{}
	}
	h.app = a
}

// Listen makes the endpoint accept engines and sockets.
func (h *Host) Listen() {
	h.listening = true
	h.ep.Listen()
}

// Dial opens a socket to host r (byteexpress.Endpoint.Dial).
func (h *Host) Dial(r *Host) (*byteexpress.Socket, error) { return h.ep.Dial(r.addr) }

// Allocate returns a registered buffer from the host's pool.
func (h *Host) Allocate(n int) (byteexpress.Buffer, error) { return h.pool.Allocate(n) }

// Free returns a buffer to the host's pool.
func (h *Host) Free(b byteexpress.Buffer) error { return h.ep.Free(b) }

// Now is the host's current time: while one of its I/O threads runs (or
// delivers events) that thread's CPU clock, otherwise the kernel's.
func (h *Host) Now() sim.Time {
	if h.cur != nil {
		return h.cur.cpu.Now()
	}
	return h.k.Now()
}

// CurrentCPU is the CPU of the thread delivering events now (nil outside
// OnEvent): application work done in OnEvent can be charged to it.
func (h *Host) CurrentCPU() *rnic.CPU {
	if h.cur != nil {
		return h.cur.cpu
	}
	return nil
}

// Crash makes the host fail at instant at (a kernel panic or power loss,
// paper §7.2): its NIC stops responding (every arriving frame is dropped, no
// ACKs, nothing is transmitted), its I/O threads stop polling, and its side
// channel stops answering. Nothing is reclaimed; peers find out through
// keepalive (or transport retries).
func (h *Host) Crash(at sim.Time) {
	at = max(at, h.k.Now())
	h.k.Post(at, h.c.hid, tagCrash|uint64(h.idx))
}

func (h *Host) crash(now sim.Time) {
	if h.crashed {
		return
	}
	h.crashed, h.crashedAt = true, now
	for _, t := range h.threads {
		t.timer.Stop()
		t.due.Stop()
		t.cq.SetNotify(nil, 0)
	}
}

// Restart brings the host back at instant at, if it has crashed by then,
// as a freshly booted machine: a new RNIC, bemalloc pool and ByteExpress
// endpoint at the same address, with the same App and, if it listened
// before, listening again. Nothing survives (QPs, engines, buffers): peers
// find their old engines dead by keepalive or transport retries and dial
// again. The crashed Host value stays crashed; Cluster.Host(i) returns the
// new one from then on.
func (h *Host) Restart(at sim.Time) {
	at = max(at, h.k.Now())
	h.k.Post(at, h.c.hid, tagRestart|uint64(h.idx))
}

// FailQPs moves every live QP of the host to the error state, as a fatal
// RNIC or QP error does (paper §7.1: the engine sees flushed completions
// and reports an engine error). It returns how many QPs it failed.
func (h *Host) FailQPs() int {
	h = h.c.hosts[h.idx] // after a restart, the machine now at this index
	n := 0
	for _, q := range h.qps {
		if q.destroyed || q.State() == verbs.StateErr || q.State() == verbs.StateReset {
			continue
		}
		if q.Modify(&verbs.QPAttr{State: verbs.StateErr}, verbs.AttrState) == nil {
			n++
		}
	}
	return n
}

// Crashed reports whether the host has crashed, and when.
func (h *Host) Crashed() (bool, sim.Time) { return h.crashed, h.crashedAt }

// onTrace is the endpoint's Config.Trace: it charges the modelled cost of
// the work done so far in the step before each doorbell, so a post reaches
// the NIC only after the WRs it carries were prepared (see Thread.step).
func (h *Host) onTrace(ev byteexpress.TraceEvent) {
	if t := h.cur; t != nil {
		switch ev.Kind {
		case byteexpress.TraceSmall:
			t.copied += int64(ev.Bytes)
		case byteexpress.TracePost:
			t.precharge(ev.WRs)
		}
	}
	if h.trace != nil {
		h.trace(ev)
	}
}

// HostStats are a host's counters.
type HostStats struct {
	Polls     uint64   // I/O-thread steps
	Busy      sim.Time // modelled CPU time of the I/O threads (core work + verbs calls)
	Util      float64  // Busy / (elapsed virtual time x threads)
	AppBusy   sim.Time // CPU time charged outside I/O-thread steps (e.g. app-side registration)
	LiveQPs   int      // QPs created and not destroyed
	QPs       int      // QPs ever created
	RNRNAKs   uint64   // RNR NAKs received by this host's QPs with dedicated RQs
	Dropped   uint64   // frames dropped by a crashed NIC
	Endpoint  byteexpress.Stats
	NIC       rnic.Stats
	PoolInUse int64 // buffers allocated from the pool now
}

// Stats gathers the host's counters (call between events).
func (h *Host) Stats() HostStats {
	s := HostStats{LiveQPs: h.liveQPs, QPs: len(h.qps), Dropped: h.dropped, NIC: h.nic.Stats(),
		PoolInUse: h.pool.InUse(), AppBusy: h.ctx.CPU().Stats().Busy}
	for _, t := range h.threads {
		s.Polls += t.polls
		s.Busy += t.cpu.Stats().Busy
	}
	if el := h.k.Now(); el > 0 {
		s.Util = float64(s.Busy) / float64(el) / float64(len(h.threads))
	}
	for _, q := range h.qps {
		if !q.srq {
			s.RNRNAKs += q.Stats().RNRNAKs
		}
	}
	if !h.closed {
		s.Endpoint = h.ep.Stats()
	}
	return s
}

// CPUBusy is the I/O threads' total modelled CPU time so far.
func (h *Host) CPUBusy() sim.Time {
	var b sim.Time
	for _, t := range h.threads {
		b += t.cpu.Stats().Busy
	}
	return b
}

// QPInfo describes one QP the endpoint created.
type QPInfo struct {
	QPN       uint32
	SRQ       bool
	Destroyed bool
	// SharedDoorbell: the QP rings a doorbell register shared (under a
	// lock) with other QPs (rnic QP.SharesDoorbell).
	SharedDoorbell bool
	Stats          rnic.QPStats
}

// QPs lists the QPs the endpoint created, in creation order.
func (h *Host) QPs() []QPInfo {
	out := make([]QPInfo, len(h.qps))
	for i, q := range h.qps {
		out[i] = QPInfo{QPN: q.QPN(), SRQ: q.srq, Destroyed: q.destroyed, SharedDoorbell: q.SharesDoorbell(), Stats: q.Stats()}
	}
	return out
}

func (h *Host) close() error {
	if h.closed {
		return nil
	}
	h.closed = true
	var errs []error
	if err := h.ep.Close(); err != nil {
		errs = append(errs, fmt.Errorf("simhost: %s: close endpoint: %w", h.name, err))
	}
	for _, t := range h.threads {
		t.timer.Stop()
		t.due.Stop()
	}
	if n := h.pool.InUse(); n != 0 {
		errs = append(errs, fmt.Errorf("simhost: %s: %d buffers still allocated at shutdown", h.name, n))
	}
	if err := h.pool.Close(); err != nil {
		errs = append(errs, fmt.Errorf("simhost: %s: %w", h.name, err))
	}
	if h.liveQPs != 0 {
		errs = append(errs, fmt.Errorf("simhost: %s: %d QPs not destroyed at shutdown", h.name, h.liveQPs))
	}
	return errors.Join(errs...)
}

// ---- the NIC's fabric attachment, with the crash switch ----

// port sits between the fabric host port and the RNIC: a crashed host's NIC
// neither receives nor transmits.
type port struct {
	h   *Host
	nic *rnic.NIC
	up  fabric.Uplink
}

func (p *port) Attach(up fabric.Uplink) {
	p.up = up
	p.nic.Attach(up)
}

func (p *port) Receive(now sim.Time, pkt *fabric.Packet) {
	if p.h.crashed {
		p.h.dropped++
		p.up.Pool().Put(pkt)
		return
	}
	p.nic.Receive(now, pkt)
}

func (p *port) Next(now sim.Time, paused uint8) *fabric.Packet {
	if p.h.crashed {
		return nil
	}
	return p.nic.Next(now, paused)
}

var _ fabric.Host = (*port)(nil)

// ---- thin verbs wrappers: find each thread's CQ, track QPs ----

// ctxWrap records the CQs the endpoint creates: NewEndpoint creates one per
// I/O thread, in thread order.
type ctxWrap struct {
	*rnic.Context
	cqs []*rnic.CQ
}

func (c *ctxWrap) CreateCQ(depth int, td verbs.TD) (verbs.CQ, error) {
	cq, err := c.Context.CreateCQ(depth, td)
	if err != nil {
		return nil, err
	}
	rc := cq.(*rnic.CQ)
	c.cqs = append(c.cqs, rc)
	return rc, nil
}

// pdWrap tracks the QPs created in the endpoint's PD.
type pdWrap struct {
	verbs.PD
	h *Host
}

func (p *pdWrap) CreateQP(attr verbs.QPInitAttr) (verbs.QP, error) {
	q, err := p.PD.CreateQP(attr)
	if err != nil {
		return nil, err
	}
	w := &qpWrap{QP: q.(*rnic.QP), h: p.h, srq: attr.SRQ != nil}
	p.h.qps = append(p.h.qps, w)
	p.h.liveQPs++
	return w, nil
}

type qpWrap struct {
	*rnic.QP
	h         *Host
	srq       bool
	destroyed bool
}

func (q *qpWrap) Destroy() error {
	err := q.QP.Destroy()
	if err == nil && !q.destroyed {
		q.destroyed = true
		q.h.liveQPs--
	}
	return err
}

var (
	_ verbs.Context = (*ctxWrap)(nil)
	_ verbs.PD      = (*pdWrap)(nil)
	_ verbs.QP      = (*qpWrap)(nil)
)
