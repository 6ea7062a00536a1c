package fabric

import (
	"math/bits"

	"github.com/besim/besim/pfc"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Event tags of ports (switch ports and host ports alike).
const (
	tagTxDone  uint64 = iota
	tagRx             // pause expiry / watchdog deadline
	tagRefresh        // pause refresh
)

// PrioCounters are one switch port's counters for one priority: its egress
// queue, and its priority group as an ingress port.
type PrioCounters struct {
	// Egress queue.
	TxPackets, TxBytes int64 // data frames sent
	Drops, DropBytes   int64 // lossy: over the egress dynamic threshold or shared buffer full
	WatchdogDrops      int64 // dropped because the storm watchdog tripped this queue
	WatchdogDropBytes  int64
	ECNMarks           int64 // frames marked CE on enqueue
	MaxQueue           int64 // high-water mark, bytes
	// Ingress priority group (lossless only): lossless frames arriving here
	// that overflowed headroom. Nonzero means headroom is misconfigured.
	HeadroomDrops     int64
	HeadroomDropBytes int64
}

// Port is a switch port: 8 egress queues (each allocated with its
// priority's other state on first use) with a strict-priority or DWRR
// scheduler, the PFC state of its ingress priority groups (pauses it sends),
// and the pause state its peer imposes (pauses it receives, with the storm
// watchdog). PFC frames jump the queues and are consumed here, never routed.
type Port struct {
	sw       *Switch
	k        *sim.Kernel
	hid      sim.HandlerID
	pool     *Pool
	Index    int
	Peer     NodeID
	PeerPort int // index of the peer's port (0 for a host)
	out      *Link
	rate     units.Rate
	headroom units.Size

	qmask    uint8 // non-empty queues
	busy     bool
	lastSize int32    // size of the last frame sent, and
	lastTx   sim.Time // its serialization time

	tx           pfc.Tx
	rx           pfc.Rx
	rxTimer      sim.Timer
	refreshTimer sim.Timer
	wdDrop       uint8 // queues the watchdog is draining

	dwrr    bool
	rr      int
	granted bool

	// The state of each priority that has carried a frame through the port
	// (its egress queue, its ingress priority group, its counters and depth
	// series), allocated on first use: a scenario uses 1-3 of the 8
	// priorities, and a priority never used reads as zero (class nil).
	cls [NumPrio]*class
	// The drop counters of each priority, allocated on the port's first
	// drop (most ports never drop).
	drops *[NumPrio]dropCounters
	// Queue-depth sampling (smp nil when off): the depth series of queue i
	// holds every sampler tick up to cls[i].seen; later ticks saw the depth
	// the queue has now, and are written when it next changes (or at
	// Report). A queue not yet tracked (never held a frame) has seen ==
	// untracked.
	smp *sampler
	// The priorities the sampler follows here (Sampling.Queues); smp is
	// nil when none.
	track uint8
}

// class is one priority's state at a port.
type class struct {
	q       Queue       // egress queue
	in      pfc.Ingress // ingress priority group
	st      txCounters
	deficit int64 // DWRR
	depth   *pfc.Recorder
	seen    int64 // sampler ticks written to depth
}

// class is priority prio's state, allocated on first use.
func (p *Port) class(prio int) *class {
	if c := p.cls[prio]; c != nil {
		return c
	}
	return p.newClass(prio)
}

// newClass allocates priority prio's state from the network's slab, its
// ingress group bound to the switch buffer with the priority's thresholds.
func (p *Port) newClass(prio int) *class {
	n := p.sw.net
	if len(n.classSlab) == 0 {
		n.classSlab = make([]class, 64)
	}
	c := &n.classSlab[0]
	n.classSlab = n.classSlab[1:]
	c.in.Init(n.thresholds(prio, p.headroom), &p.sw.buf)
	if p.smp != nil {
		c.seen = untracked
	}
	p.cls[prio] = c
	return c
}

// txCounters are the PrioCounters every frame moves.
type txCounters struct {
	TxPackets, TxBytes int64
	ECNMarks           int64
	MaxQueue           int64
}

// dropCounters are the PrioCounters that count drops.
type dropCounters struct {
	Drops, DropBytes                 int64
	WatchdogDrops, WatchdogDropBytes int64
	HeadroomDrops, HeadroomDropBytes int64
}

// dropped is priority prio's drop counters, allocated on first use.
func (p *Port) dropped(prio int) *dropCounters {
	if p.drops == nil {
		p.drops = new([NumPrio]dropCounters)
	}
	return &p.drops[prio]
}

// untracked marks a queue the depth sampler does not follow yet.
const untracked = int64(^uint64(0) >> 1)

// syncDepth brings queue prio's depth series up to the sampler's last tick;
// callers run it before changing the queue's bytes. O(1) unless ticks
// passed since the last change, then O(points kept).
// A priority without state is untracked.
func (p *Port) syncDepth(prio int) {
	if c := p.cls[prio]; c != nil {
		p.syncClass(c)
	}
}

// syncClass is syncDepth for a priority's state c.
func (p *Port) syncClass(c *class) {
	if s := p.smp; s != nil && c.seen < s.ticks {
		p.fillDepth(c)
	}
}

func (p *Port) fillDepth(c *class) {
	s := p.smp
	seen := c.seen
	if c.depth == nil {
		c.depth = pfc.NewRecorder(s.cap, s.first+sim.Time(seen)*s.interval, s.interval)
	}
	c.depth.AddN(s.ticks-seen, c.q.Bytes)
	c.seen = s.ticks
}

var _ sim.Handler = (*Port)(nil)

// Switch is the switch owning the port.
func (p *Port) Switch() *Switch { return p.sw }

// Rate is the port's line rate.
func (p *Port) Rate() units.Rate { return p.rate }

// Headroom is the per-priority-group headroom reserved at this port.
func (p *Port) Headroom() units.Size { return p.headroom }

// QueueBytes is the bytes queued for egress at priority prio.
func (p *Port) QueueBytes(prio int) int64 {
	if c := p.cls[prio]; c != nil {
		return c.q.Bytes
	}
	return 0
}

// Ingress is the PFC accounting of this port's priority group prio.
func (p *Port) Ingress(prio int) *pfc.Ingress { return &p.class(prio).in }

// Counters is the port's per-priority counters.
func (p *Port) Counters(prio int) PrioCounters {
	var c PrioCounters
	if cl := p.cls[prio]; cl != nil {
		t := &cl.st
		c = PrioCounters{TxPackets: t.TxPackets, TxBytes: t.TxBytes, ECNMarks: t.ECNMarks, MaxQueue: t.MaxQueue}
	}
	if p.drops != nil {
		d := &p.drops[prio]
		c.Drops, c.DropBytes = d.Drops, d.DropBytes
		c.WatchdogDrops, c.WatchdogDropBytes = d.WatchdogDrops, d.WatchdogDropBytes
		c.HeadroomDrops, c.HeadroomDropBytes = d.HeadroomDrops, d.HeadroomDropBytes
	}
	return c
}

// PauseRx is the receive-side pause state (what the peer imposes on us).
func (p *Port) PauseRx() *pfc.Rx { return &p.rx }

// PauseTx is the transmit-side pause state (what we impose on the peer).
func (p *Port) PauseTx() *pfc.Tx { return &p.tx }

// OnEvent implements sim.Handler.
func (p *Port) OnEvent(now sim.Time, tag uint64) {
	switch tag {
	case tagTxDone:
		p.busy = false
		p.kick(now)
	case tagRx:
		tripped, restored := p.rx.Advance(now)
		if tripped != 0 && p.sw.wdAction == pfc.ActionDrop {
			p.wdDrop |= tripped
			for i := 0; i < NumPrio; i++ {
				if tripped&(1<<i) != 0 {
					p.flush(now, i)
				}
			}
		}
		p.wdDrop &^= restored
		p.armRx(now)
		p.kick(now)
	case tagRefresh:
		if p.tx.Refresh(now) {
			p.kick(now)
		}
	}
}

func (p *Port) armRx(now sim.Time) { armPauseTimer(&p.rxTimer, &p.rx, now) }

// armPauseTimer keeps t set to the next instant the received-pause state rx
// changes by itself (a pause expiring, the watchdog), for switch and host
// ports alike.
func armPauseTimer(t *sim.Timer, rx *pfc.Rx, now sim.Time) {
	if d := rx.NextDeadline(); d != sim.Never {
		t.Set(max(d, now))
	} else {
		t.Stop()
	}
}

// arrive is a frame reaching this port from the peer.
func (p *Port) arrive(now sim.Time, pkt *Packet) {
	if pkt.Kind == KindPause {
		p.rx.OnFrame(now, pkt.PauseMask, &pkt.Quanta)
		p.pool.Put(pkt)
		p.armRx(now)
		p.kick(now)
		return
	}
	p.sw.forward(now, p, pkt)
}

// assertPause / releasePause drive the pause this port sends to its peer.
func (p *Port) assertPause(now sim.Time, prio int) {
	if p.tx.Assert(now, prio) {
		p.kick(now)
	}
}

func (p *Port) releasePause(now sim.Time, prio int) {
	if p.tx.Deassert(now, prio) {
		p.kick(now)
	}
}

// enqueue appends an admitted frame to egress queue prio.
// c is the priority's state (p.class(prio)).
func (p *Port) enqueue(now sim.Time, prio int, c *class, pkt *Packet) {
	q := &c.q
	if p.smp != nil {
		if c.st.MaxQueue == 0 { // the first frame: a marked queue is sampled from the next tick on
			if p.track>>prio&1 != 0 {
				c.seen = p.smp.ticks
			}
		} else { // a queue not sampled stays untracked: syncClass does nothing
			p.syncClass(c)
		}
	}
	q.Push(pkt)
	p.qmask |= 1 << prio
	if q.Bytes > c.st.MaxQueue {
		c.st.MaxQueue = q.Bytes
	}
	if !p.busy {
		p.kick(now)
	}
}

// kick starts the next frame if the port is idle: an owed PFC frame first,
// then the scheduler's choice among non-empty, non-paused queues.
func (p *Port) kick(now sim.Time) {
	if p.busy {
		return
	}
	// Busy before dequeuing: releasing the frame's buffer may send XON on
	// another port, and nothing reached from there may start a second frame
	// here.
	p.busy = true
	var pkt *Packet
	if p.tx.Pending() {
		pkt = p.pauseFrame(now)
	} else if p.qmask != 0 {
		pkt = p.dequeue(now)
	}
	if pkt == nil {
		p.busy = false
		return
	}
	if pkt.Size != p.lastSize { // frames mostly share a size: skip the divisions
		p.lastSize, p.lastTx = pkt.Size, sim.TxTime(pkt.WireBytes(), p.rate)
	}
	end := now + p.lastTx
	p.out.send(pkt, end)
	p.k.Post(end, p.hid, tagTxDone)
}

func (p *Port) pauseFrame(now sim.Time) *Packet {
	mask, quanta := p.tx.Build(now)
	pkt := p.pool.Get()
	pkt.Kind = KindPause
	pkt.Size = PauseFrame
	pkt.Src = p.sw.ID
	pkt.Dst = p.Peer
	pkt.PauseMask = mask
	pkt.Quanta = quanta
	pkt.SentAt = now
	if r := p.tx.NextRefresh(); r != sim.Never {
		p.refreshTimer.Set(r)
	}
	return pkt
}

func (p *Port) dequeue(now sim.Time) *Packet {
	elig := p.qmask &^ p.rx.Paused(now)
	if elig == 0 {
		return nil
	}
	var i int
	if p.dwrr {
		i = p.drr(elig)
	} else {
		i = 7 - bits.LeadingZeros8(elig)
	}
	c := p.cls[i] // non-empty, so allocated
	q := &c.q
	p.syncClass(c)
	pkt := q.Pop()
	if q.Len == 0 {
		p.qmask &^= 1 << i
		c.deficit = 0
	}
	st := &c.st
	st.TxPackets++
	st.TxBytes += int64(pkt.Size)
	p.sw.release(now, pkt)
	return pkt
}

// drr picks the queue to serve among elig (non-empty, not paused) with
// deficit round robin: visiting queues in turn, a queue earns its quantum on
// each visit and sends while its head fits its deficit; a queue that empties
// forfeits its deficit. Queues that are not eligible are skipped with bit
// arithmetic, and a lone eligible queue is served directly (DRR would serve
// it anyway), which keeps the common one-class case cheap. It terminates
// because every quantum is positive.
func (p *Port) drr(elig uint8) int {
	if elig&(elig-1) == 0 {
		return bits.TrailingZeros8(elig)
	}
	for {
		if off := bits.TrailingZeros8(bits.RotateLeft8(elig, -p.rr)); off != 0 {
			p.rr = (p.rr + off) & (NumPrio - 1)
			p.granted = false
		}
		i := p.rr
		c := p.cls[i] // eligible queues are non-empty, so allocated
		if !p.granted {
			c.deficit += p.sw.quantum[i]
			p.granted = true
		}
		if size := int64(c.q.Peek().Size); size <= c.deficit {
			c.deficit -= size
			if c.q.Len == 1 { // about to empty: move on
				p.rr = (p.rr + 1) & (NumPrio - 1)
				p.granted = false
			}
			return i
		}
		p.rr = (p.rr + 1) & (NumPrio - 1)
		p.granted = false
	}
}

// flush drops everything queued at prio (watchdog drop action).
func (p *Port) flush(now sim.Time, prio int) {
	st := p.dropped(prio)
	c := p.cls[prio]
	if c == nil { // never held a frame
		return
	}
	q := &c.q
	p.syncClass(c)
	for pkt := q.Pop(); pkt != nil; pkt = q.Pop() {
		st.WatchdogDrops++
		st.WatchdogDropBytes += int64(pkt.Size)
		p.sw.net.live.WatchdogDrops++
		p.sw.net.liveChanged()
		p.sw.release(now, pkt)
		p.pool.Put(pkt)
	}
	p.qmask &^= 1 << prio
	c.deficit = 0
}
