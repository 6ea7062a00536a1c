package tcpsim

import (
	"fmt"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
)

// Meta is an application header carried with a message (simulated messages
// carry sizes, not bytes).
type Meta [4]uint64

// Message is one message delivered to an application.
type Message struct {
	Size int
	Meta Meta
}

// App receives a host's messages. c is the receiving end of the
// connection; replying is c.Send.
type App interface {
	OnMessage(h *Host, c *Conn, m Message)
}

// Stats counts one host's stack activity. CPU times are the modelled busy
// time per class (Table 5's rows).
type Stats struct {
	MsgsTx, MsgsRx         uint64
	TxPayload, RxPayload   uint64 // RxPayload: delivered in order to the application
	TxSegments             uint64 // data frames sent, retransmissions included
	Retransmits            uint64 // data frames resent (fast retransmit, NewReno partial ACKs, go-back-N after RTO)
	FastRetransmits        uint64 // recoveries entered on three duplicate ACKs
	Timeouts               uint64 // retransmission timeouts fired
	AcksTx, AcksRx         uint64
	CEReceived             uint64 // data frames that arrived CE-marked
	OutOfOrder, Duplicates uint64 // data frames above the next expected byte, or wholly below it
	Sys, Softirq, User     sim.Time
}

// Host is one host's kernel TCP stack: a fabric.Host on its NIC port.
type Host struct {
	c     *Cluster
	idx   int
	node  fabric.NodeID
	up    fabric.Uplink
	pool  *fabric.Pool
	cfg   *Config
	app   App
	conns []*Conn
	appQ  []*cpuQueue // per application thread
	rxQ   []*cpuQueue // per softirq (receive queue) core
	irq   []*rxRing   // per receive queue: frames waiting for the moderated interrupt
	acks  ring[ackReq]
	ready ring[*Conn]
	down  bool
	st    Stats
}

type ackReq struct {
	c     *Conn
	ack   uint64
	ece   bool
	tsecr sim.Time
}

func newHost(c *Cluster, i int, hp *fabric.HostPort) *Host {
	h := &Host{c: c, idx: i, node: hp.Node(), cfg: &c.cfg}
	for j := range c.cfg.Threads {
		h.appQ = append(h.appQ, newCPUQueue(h, fmt.Sprintf("%s/app%d", hp.Name(), j)))
		h.rxQ = append(h.rxQ, newCPUQueue(h, fmt.Sprintf("%s/softirq%d", hp.Name(), j)))
		r := &rxRing{h: h, q: j}
		r.timer.Init(c.k, r, 0)
		h.irq = append(h.irq, r)
	}
	return h
}

// rxRing is one receive queue's frames waiting for their interrupt
// (moderation: RxFrames pending, or RxUsecs after the first).
type rxRing struct {
	h       *Host
	q       int
	pending ring[*fabric.Packet]
	timer   sim.Timer
}

func (r *rxRing) add(now sim.Time, p *fabric.Packet) {
	r.pending.push(p)
	cfg := r.h.cfg
	if r.pending.n >= cfg.RxFrames || cfg.RxUsecs == 0 {
		r.flush(now)
		return
	}
	if r.pending.n == 1 {
		r.timer.Set(now + cfg.RxUsecs)
	}
}

// OnEvent is the moderation timer: the interrupt fires.
func (r *rxRing) OnEvent(now sim.Time, _ uint64) { r.flush(now) }

// flush hands every pending frame to softirq processing, in order.
func (r *rxRing) flush(now sim.Time) {
	r.timer.Stop()
	h := r.h
	for r.pending.n > 0 {
		p := r.pending.pop()
		if h.down || int(p.DstQP) >= len(h.conns) {
			h.pool.Put(p)
			continue
		}
		c := h.conns[p.DstQP]
		cost := h.cfg.CPU.RxSegment
		if p.Kind == fabric.KindAck {
			cost = h.cfg.CPU.RxAck
		}
		h.st.Softirq += cost
		h.rxQ[r.q].run(now, cost, work{kind: wRx, c: c, p: p})
	}
}

// Index is the host's index in the cluster (the fabric host index).
func (h *Host) Index() int { return h.idx }

// Node is the host's fabric address.
func (h *Host) Node() fabric.NodeID { return h.node }

// Now is the simulation time.
func (h *Host) Now() sim.Time { return h.c.k.Now() }

// SetApp installs the application that receives messages.
func (h *Host) SetApp(a App) { h.app = a }

// Stats returns the host's counters.
func (h *Host) Stats() Stats { return h.st }

// Conns is every connection end on the host.
func (h *Host) Conns() []*Conn { return h.conns }

// Crash stops the host at instant at: it drops every frame, sends
// nothing, and its timers do nothing (a kernel panic). There is no restart:
// a rebooted host's connections would be gone, and reconnection is not
// modelled.
func (h *Host) Crash(at sim.Time) { h.c.k.At(max(at, h.c.k.Now()), crashEvent{h}, 0) }

type crashEvent struct{ h *Host }

func (e crashEvent) OnEvent(sim.Time, uint64) {
	h := e.h
	h.down = true
	for h.acks.n > 0 {
		h.acks.pop()
	}
}

// Down reports whether the host has crashed.
func (h *Host) Down() bool { return h.down }

// Attach implements fabric.Host.
func (h *Host) Attach(up fabric.Uplink) { h.up, h.pool = up, up.Pool() }

// Receive implements fabric.Host: the frame waits in its connection's
// receive queue for the (moderated) interrupt, then for softirq
// processing on that queue's core.
func (h *Host) Receive(now sim.Time, p *fabric.Packet) {
	if h.down || int(p.DstQP) >= len(h.conns) {
		h.pool.Put(p)
		return
	}
	h.irq[h.conns[p.DstQP].thread].add(now, p)
}

// Next implements fabric.Host: ACKs first, then one segment from the next
// connection in round-robin order that its window lets send.
func (h *Host) Next(now sim.Time, paused uint8) *fabric.Packet {
	if paused&(1<<h.cfg.Prio) != 0 || h.down {
		return nil
	}
	if h.acks.n > 0 {
		a := h.acks.pop()
		return a.c.ackFrame(now, a)
	}
	for h.ready.n > 0 {
		c := h.ready.pop()
		c.inReady = false
		if !c.canSend() {
			continue
		}
		p := c.segment(now)
		h.schedule(c)
		return p
	}
	return nil
}

// schedule puts c in the transmit round-robin if it can send.
func (h *Host) schedule(c *Conn) {
	if c.inReady || !c.canSend() {
		return
	}
	c.inReady = true
	h.ready.push(c)
	h.up.Wake()
}

func (h *Host) queueAck(a ackReq) {
	h.st.AcksTx++
	h.st.Softirq += h.cfg.CPU.TxAck
	h.acks.push(a)
	h.up.Wake()
}

// work is a unit of host CPU work whose effect waits for its CPU time.
type work struct {
	kind uint8
	c    *Conn
	p    *fabric.Packet
	m    Message
}

const (
	wRx      = iota // process a received frame
	wWrite          // a send() finished copying: the bytes join the stream
	wDeliver        // a recv() finished: the message reaches the application
)

// cpuQueue is one core: work charged to it completes in order, each item
// when the core has done everything before it.
type cpuQueue struct {
	h     *Host
	cpu   *rnic.CPU
	q     ring[work]
	at    ring[sim.Time]
	timer sim.Timer
}

func newCPUQueue(h *Host, name string) *cpuQueue {
	q := &cpuQueue{h: h, cpu: rnic.NewCPU(h.c.k, name)}
	q.timer.Init(h.c.k, q, 0)
	return q
}

// run charges cost and performs w when the core gets to it: at once when
// the core is idle and the cost is zero, otherwise from the queue's timer.
func (q *cpuQueue) run(now, cost sim.Time, w work) {
	done := q.cpu.Charge(cost)
	if done <= now && q.q.n == 0 {
		q.h.do(now, w)
		return
	}
	q.q.push(w)
	q.at.push(done)
	if !q.timer.Armed() {
		q.timer.Set(done)
	}
}

// OnEvent implements sim.Handler for the queue's timer.
func (q *cpuQueue) OnEvent(now sim.Time, _ uint64) {
	for q.q.n > 0 && *q.at.front() <= now {
		q.at.pop()
		q.h.do(now, q.q.pop())
	}
	if q.at.n > 0 {
		q.timer.Set(*q.at.front())
	}
}

func (h *Host) do(now sim.Time, w work) {
	switch w.kind {
	case wRx:
		if !h.down {
			if w.p.Kind == fabric.KindAck {
				h.st.AcksRx++
				w.c.onAck(now, w.p)
			} else {
				w.c.onData(now, w.p)
			}
		}
		h.pool.Put(w.p)
	case wWrite:
		if !h.down {
			w.c.write(w.m)
		}
	case wDeliver:
		h.st.MsgsRx++
		h.st.RxPayload += uint64(w.m.Size)
		if h.app != nil && !h.down {
			h.app.OnMessage(h, w.c, w.m)
		}
	}
}

// ring is a growable FIFO that allocates only when it grows.
type ring[T any] struct {
	buf     []T
	head, n int
}

func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		nb := make([]T, max(8, 2*len(r.buf)))
		for i := range r.n {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.n)%len(r.buf)] = v
	r.n++
}

func (r *ring[T]) front() *T { return &r.buf[r.head] }

func (r *ring[T]) pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero
	r.head = (r.head + 1) % len(r.buf)
	r.n--
	return v
}

func (r *ring[T]) clear() {
	for r.n > 0 {
		r.pop()
	}
}
