package rnic

import (
	"math/rand/v2"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Wire is a back-to-back cable between two hosts (two NICs, like perftest
// between two servers without a switch): each direction serializes frames at
// the link rate and delivers them after the propagation delay. It can drop a
// fraction of frames from a fixed-seed stream. It implements fabric.Uplink
// for both ends and never pauses (no PFC).
type Wire struct {
	k     *sim.Kernel
	pool  *fabric.Pool
	rate  units.Rate
	delay sim.Time
	ends  [2]wireEnd
	loss  float64
	rng   *rand.Rand
	// Drop, if set, is asked about every frame leaving end from (0 or 1)
	// before the random loss: true discards it (counted in Dropped). For
	// tests that lose chosen frames.
	Drop func(from int, p *fabric.Packet) bool
	// Dropped counts frames the wire discarded.
	Dropped uint64
}

// Wire end event tags.
const (
	tagPull = iota
	tagTxDone
	tagDeliver
)

type wireEnd struct {
	w       *Wire
	id      sim.HandlerID
	host    fabric.Host
	peer    *wireEnd
	node    fabric.NodeID
	busy    bool
	pulling bool
	// In flight towards the peer: FIFO with arrival times in a ring.
	fly    fabric.Queue
	arr    []sim.Time
	arrH   int
	txp    *fabric.Packet // frame being serialized
	frames uint64
	bytes  uint64
}

// DefaultWireDelay is the one-way delay of the cable between two NICs back
// to back (the perftest, msgrate and mrcache testbeds; benchmark.delay of
// perftest). Assumption: a short direct-attach cable plus PHY and MAC
// latency on both ends, about 1 us.
const DefaultWireDelay = sim.Microsecond

// NewWire returns a cable of rate and one-way delay; pool is the
// simulation's packet pool (a new one if nil).
func NewWire(k *sim.Kernel, pool *fabric.Pool, rate units.Rate, delay sim.Time) *Wire {
	if pool == nil {
		pool = &fabric.Pool{}
	}
	w := &Wire{k: k, pool: pool, rate: rate, delay: delay}
	for i := range w.ends {
		w.ends[i].w = w
		w.ends[i].peer = &w.ends[1-i]
		w.ends[i].id = k.Register(&w.ends[i])
	}
	return w
}

// Connect attaches a as node na and b as node nb.
func (w *Wire) Connect(a fabric.Host, na fabric.NodeID, b fabric.Host, nb fabric.NodeID) {
	w.ends[0].host, w.ends[0].node = a, na
	w.ends[1].host, w.ends[1].node = b, nb
	a.Attach(&w.ends[0])
	b.Attach(&w.ends[1])
}

// SetLoss makes the wire drop each frame with probability p, drawing from a
// stream seeded with seed.
func (w *Wire) SetLoss(p float64, seed uint64) {
	w.loss = p
	w.rng = sim.Stream(seed, "rnic-wire-loss")
}

// Pool is the wire's packet pool.
func (w *Wire) Pool() *fabric.Pool { return w.pool }

// Frames reports frames and bytes sent from end i (0 or 1).
func (w *Wire) Frames(i int) (uint64, uint64) { return w.ends[i].frames, w.ends[i].bytes }

func (e *wireEnd) Wake() {
	if e.busy || e.pulling {
		return
	}
	e.pulling = true
	e.w.k.Post(e.w.k.Now(), e.id, tagPull)
}

func (e *wireEnd) Pool() *fabric.Pool  { return e.w.pool }
func (e *wireEnd) Rate() units.Rate    { return e.w.rate }
func (e *wireEnd) Node() fabric.NodeID { return e.node }

func (e *wireEnd) OnEvent(now sim.Time, tag uint64) {
	switch tag {
	case tagPull:
		e.pulling = false
		e.pull(now)
	case tagTxDone:
		e.busy = false
		p := e.txp
		e.txp = nil
		e.send(now, p)
		e.pull(now)
	case tagDeliver:
		p := e.fly.Pop()
		e.arrH++
		if e.fly.Len > 0 {
			e.w.k.Post(e.arr[e.arrH], e.id, tagDeliver)
		} else {
			e.arr, e.arrH = e.arr[:0], 0
		}
		e.peer.host.Receive(now, p)
	}
}

func (e *wireEnd) pull(now sim.Time) {
	if e.busy {
		return
	}
	p := e.host.Next(now, 0)
	if p == nil {
		return
	}
	e.busy = true
	e.txp = p
	e.frames++
	e.bytes += uint64(p.Size)
	e.w.k.Post(now+sim.TxTime(p.WireBytes(), e.w.rate), e.id, tagTxDone)
}

// send puts a serialized frame on the cable (or drops it).
func (e *wireEnd) send(now sim.Time, p *fabric.Packet) {
	w := e.w
	if w.Drop != nil && w.Drop(e.index(), p) {
		w.Dropped++
		w.pool.Put(p)
		return
	}
	if w.loss > 0 && w.rng.Float64() < w.loss {
		w.Dropped++
		w.pool.Put(p)
		return
	}
	e.fly.Push(p)
	if e.arrH > 0 && e.arrH == len(e.arr) {
		e.arr, e.arrH = e.arr[:0], 0
	}
	if e.arrH > 1024 && e.arrH*2 > len(e.arr) {
		n := copy(e.arr, e.arr[e.arrH:])
		e.arr, e.arrH = e.arr[:n], 0
	}
	e.arr = append(e.arr, now+w.delay)
	if e.fly.Len == 1 {
		w.k.Post(now+w.delay, e.id, tagDeliver)
	}
}

// index is the end's number (0 or 1).
func (e *wireEnd) index() int {
	if e == &e.w.ends[0] {
		return 0
	}
	return 1
}
