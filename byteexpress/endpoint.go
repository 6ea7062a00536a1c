package byteexpress

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/besim/besim/verbs"
)

// Params are the resources an Endpoint runs on.
type Params struct {
	// Context is the opened device.
	Context verbs.Context
	// PD is the protection domain shared by all threads (Table 3: one PD
	// globally); Allocator must register its memory in it.
	PD verbs.PD
	// Allocator supplies registered buffers (bemalloc).
	Allocator Allocator
	// Connector carries the out-of-band setup exchange.
	Connector Connector
	// Local is this endpoint's own address, passed to Connector.Connect so
	// the peer can key its connection table.
	Local Addr
}

// Endpoint is one process's ByteExpress instance on one device: its I/O
// threads and the connection table that maps remote addresses to engines
// (§6.1). Its methods may be called from any goroutine once the threads have
// mailboxes (realtime.Attach), otherwise from the polling goroutine (see
// IOThread); Close must not run concurrently with any thread's Poll.
type Endpoint struct {
	p       Params
	cfg     Config
	threads []*IOThread

	mu        sync.Mutex
	table     map[engKey]*engine
	rr        int
	nextEng   uint64
	closed    bool
	listening atomic.Bool
	sockUID   atomic.Uint64
}

// NewEndpoint creates the endpoint and its I/O threads (each with a thread
// domain, a CQ and, with UseSRQ, an SRQ). cfg is defaulted and validated.
func NewEndpoint(p Params, cfg Config) (*Endpoint, error) {
	if p.Context == nil || p.PD == nil || p.Allocator == nil || p.Connector == nil {
		return nil, errors.New("byteexpress: Params need a Context, PD, Allocator and Connector")
	}
	cfg = cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	attr := p.Context.Attr()
	if attr.MaxQPWR > 0 && (cfg.SQDepth > attr.MaxQPWR || cfg.RQDepth > attr.MaxQPWR) {
		return nil, fmt.Errorf("byteexpress: queue depths %d/%d exceed the device's %d", cfg.SQDepth, cfg.RQDepth, attr.MaxQPWR)
	}
	if attr.MaxCQE > 0 && cfg.CQDepth > attr.MaxCQE {
		return nil, fmt.Errorf("byteexpress: CQDepth %d exceeds the device's %d", cfg.CQDepth, attr.MaxCQE)
	}
	ep := &Endpoint{p: p, cfg: cfg, table: make(map[engKey]*engine)}
	for i := range cfg.Threads {
		t, err := newThread(ep, i)
		if err != nil {
			for _, t := range ep.threads {
				t.shutdown()
			}
			return nil, err
		}
		ep.threads = append(ep.threads, t)
	}
	return ep, nil
}

// Threads are the endpoint's I/O threads; each must be driven by Poll.
func (ep *Endpoint) Threads() []*IOThread { return ep.threads }

// Config is the effective (defaulted) configuration.
func (ep *Endpoint) Config() Config { return ep.cfg }

// Local is the endpoint's address.
func (ep *Endpoint) Local() Addr { return ep.p.Local }

// Listen makes the endpoint accept incoming engines (HandleConnect) and
// sockets (EvAccepted). Without it both are refused.
func (ep *Endpoint) Listen() { ep.listening.Store(true) }

// Allocate is Allocator.Allocate of the endpoint's allocator, for payloads.
func (ep *Endpoint) Allocate(n int) (Buffer, error) { return ep.p.Allocator.Allocate(n) }

// Free returns a buffer (for example one received in EvMessage) to the
// allocator. Safe from any goroutine.
func (ep *Endpoint) Free(b Buffer) error {
	if b.IsZero() {
		return nil
	}
	return ep.p.Allocator.Deallocate(b)
}

// Dial opens a socket to remote. If the connection table has an engine for
// remote the socket attaches to it; otherwise (and always with
// Config.EnginePerSocket) a new engine is created on the next I/O thread in
// round-robin order. Success is reported asynchronously
// by an EvConnected event (after the out-of-band exchange for a new engine),
// failure by EvSocketFailed. Messages may be sent at once; they wait for the
// engine.
func (ep *Endpoint) Dial(remote Addr) (*Socket, error) { return ep.dial(remote, 0) }

// engKey keys the connection table: the remote address and the flow label
// of the engine's path (0: not pinned).
type engKey struct {
	addr  Addr
	label uint32
}

// maxFlowLabel is the largest IPv6/GRH flow label (20 bits).
const maxFlowLabel = 1<<20 - 1

// PathLabel is the flow label of path index path (Endpoint.DialPath):
// 1<<8 | path. A simulated RNIC reads the low 8 bits as the path its frames
// are pinned to and the rest as the flow's entropy (rnic, fabric.Packet.Path);
// on hardware the NIC derives the RoCEv2 UDP source port, the fabric's ECMP
// entropy, from the label.
func PathLabel(path int) uint32 { return 1<<8 | uint32(path) }

// DialPath is Dial over path index path (0..255; the paper's port affinity,
// §7.2): the socket attaches to (or creates) this endpoint's engine to
// remote on that path, a QP of its own whose address vector carries the
// flow label PathLabel(path), which the peer's engine adopts. Different
// paths are different engines, so a path change is a new connection that
// the fabric routes elsewhere; Dial's engine (no label) is a third kind.
func (ep *Endpoint) DialPath(remote Addr, path int) (*Socket, error) {
	if path < 0 || path > 255 {
		return nil, fmt.Errorf("byteexpress: path %d: must be in 0..255", path)
	}
	return ep.dial(remote, PathLabel(path))
}

func (ep *Endpoint) dial(remote Addr, label uint32) (*Socket, error) {
	ep.mu.Lock()
	if ep.closed {
		ep.mu.Unlock()
		return nil, ErrClosed
	}
	k := engKey{remote, label}
	var e *engine
	if !ep.cfg.EnginePerSocket {
		e = ep.table[k]
	}
	create := e == nil
	if create {
		e = ep.newEngine(remote, true)
		e.label = label
		if ep.table[k] == nil {
			ep.table[k] = e
		}
	}
	s := &Socket{id: e.nextSID.Add(1), local: true, eng: e, uid: ep.sockUID.Add(1)}
	if create && !e.th.push(cmd{kind: cmdCreate, e: e}) {
		ep.mu.Unlock()
		return nil, ErrClosed
	}
	ep.mu.Unlock()
	if !e.th.push(cmd{kind: cmdAttach, e: e, s: s}) {
		return nil, ErrClosed
	}
	return s, nil
}

// HandleConnect is the passive side of the out-of-band exchange, called by
// the Connector when the endpoint at from wants an engine here. The new
// engine is set up by an I/O thread at its next Poll, which then calls reply
// with this side's ConnInfo (or an error, e.g. ErrRefused when not
// listening). Safe from any goroutine with mailboxes (see Endpoint); reply
// may be called from Poll.
func (ep *Endpoint) HandleConnect(from Addr, peer ConnInfo, reply func(ConnInfo, error)) {
	ep.mu.Lock()
	if ep.closed || !ep.listening.Load() {
		ep.mu.Unlock()
		reply(ConnInfo{}, ErrRefused)
		return
	}
	e := ep.newEngine(from, false)
	e.label = peer.FlowLabel
	if k := (engKey{from, e.label}); ep.table[k] == nil {
		ep.table[k] = e
	}
	ok := e.th.push(cmd{kind: cmdCreatePassive, e: e, conn: &connArgs{info: peer, reply: reply}})
	ep.mu.Unlock()
	if !ok {
		reply(ConnInfo{}, ErrClosed)
	}
}

// newEngine allocates an engine and assigns it to a thread (round-robin,
// §6.2.1). Caller holds ep.mu.
func (ep *Endpoint) newEngine(remote Addr, active bool) *engine {
	ep.nextEng++
	t := ep.threads[ep.rr]
	ep.rr = (ep.rr + 1) % len(ep.threads)
	return &engine{ep: ep, th: t, id: ep.nextEng, remote: remote, active: active,
		heapIdx: -1, listIdx: -1, timerAt: Never}
}

// forget removes a failed engine from the connection table.
func (ep *Endpoint) forget(e *engine) {
	ep.mu.Lock()
	if k := (engKey{e.remote, e.label}); ep.table[k] == e {
		delete(ep.table, k)
	}
	ep.mu.Unlock()
}

// Close destroys every engine and thread resource and returns every buffer
// the core holds to the allocator (unsent messages, exposed buffers,
// receive and staging buffers). Buffers already delivered to the
// application stay the application's. It must not run concurrently with
// Poll; afterwards Poll does nothing and API calls fail with ErrClosed.
func (ep *Endpoint) Close() error {
	ep.mu.Lock()
	if ep.closed {
		ep.mu.Unlock()
		return ErrClosed
	}
	ep.closed = true
	ep.mu.Unlock()
	for _, t := range ep.threads {
		t.shutdown()
	}
	return nil
}

// Stats sums the threads' counters (call between Polls).
func (ep *Endpoint) Stats() Stats {
	var s Stats
	s.MinCredits = maxInt
	for _, t := range ep.threads {
		ts := t.Stats()
		s.Ops.add(&ts.Ops)
		s.Engines += ts.Engines
		s.EngineErrors += ts.EngineErrors
		s.MessagesSent += ts.MessagesSent
		s.SmallSent += ts.SmallSent
		s.LargeSent += ts.LargeSent
		s.PrebuiltSent += ts.PrebuiltSent
		s.MetaRequests += ts.MetaRequests
		s.MetaResponses += ts.MetaResponses
		s.CreditUpdates += ts.CreditUpdates
		s.CreditsReturned += ts.CreditsReturned
		s.CreditStalls += ts.CreditStalls
		s.WindowStalls += ts.WindowStalls
		s.RingStalls += ts.RingStalls
		s.KeepalivesSent += ts.KeepalivesSent
		s.KeepalivesRecv += ts.KeepalivesRecv
		s.Dropped += ts.Dropped
		s.FreeErrors += ts.FreeErrors
		s.StrayCQEs += ts.StrayCQEs
		s.MinCredits = min(s.MinCredits, ts.MinCredits)
		s.MaxRingOccupancy = max(s.MaxRingOccupancy, ts.MaxRingOccupancy)
		s.MaxInflightBytes = max(s.MaxInflightBytes, ts.MaxInflightBytes)
	}
	return s
}

// CheckInvariants runs every thread's invariant check (call between Polls).
func (ep *Endpoint) CheckInvariants() error {
	for _, t := range ep.threads {
		if err := t.CheckInvariants(); err != nil {
			return fmt.Errorf("%s thread %d: %w", ep.p.Local, t.idx, err)
		}
	}
	return nil
}
