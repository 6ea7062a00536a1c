package fabric

import (
	"math/rand/v2"

	"github.com/besim/besim/pfc"
	"github.com/besim/besim/sim"
)

// Switch is an output-queued, store-and-forward switch with one shared
// buffer. On arrival of a data frame it routes (ECMP over equal-cost ports),
// admits (lossless: PFC ingress accounting with headroom; lossy: egress
// dynamic threshold), marks ECN (RED on the egress queue) and enqueues. The
// frame's buffer is released when it starts transmission.
type Switch struct {
	net   *Network
	pool  *Pool
	ID    NodeID
	Name  string
	Ports []*Port

	buf pfc.Buffer
	// Routes by destination host: route[dst] indexes sets, the switch's
	// distinct equal-cost egress port lists (sets[0] is empty: no route).
	// An index per host instead of a slice header per host keeps a k=16
	// fat-tree's 320 switches × 1,024 hosts at 1.3 MB instead of 7.9 MB.
	route    []uint32
	sets     [][]int32
	salt     uint64
	rng      *rand.Rand
	lossless uint8
	alpha    float64
	wdAction pfc.WatchdogAction
	// Per-priority settings every port shares (kept here, not per port, to
	// keep ports small): ECN marking and the DWRR quantum in bytes.
	ecn     [NumPrio]ECN
	quantum [NumPrio]int64

	// NoRoute counts data frames with no route to their destination.
	NoRoute      int64
	NoRouteBytes int64
}

// Buffer is the switch's shared buffer state.
func (sw *Switch) Buffer() *pfc.Buffer { return &sw.buf }

// Routes is the list of egress port indices toward host dst (nil if none).
func (sw *Switch) Routes(dst NodeID) []int32 {
	if dst < 0 || int(dst) >= len(sw.route) {
		return nil
	}
	return sw.sets[sw.route[dst]]
}

// forward handles a data frame arriving at port in.
func (sw *Switch) forward(now sim.Time, in *Port, pkt *Packet) {
	dst := pkt.Dst
	if dst < 0 || int(dst) >= len(sw.route) || sw.route[dst] == 0 {
		sw.NoRoute++
		sw.NoRouteBytes += int64(pkt.Size)
		sw.pool.Put(pkt)
		return
	}
	r := sw.sets[sw.route[dst]]
	oi := r[0]
	if len(r) > 1 {
		n := uint64(len(r))
		oi = r[(ECMPHash(pkt.Src, pkt.Dst, pkt.Flow, sw.salt)%n+uint64(pkt.Path))%n]
	}
	o := sw.Ports[oi]
	prio := int(pkt.Prio & (NumPrio - 1))
	pkt.Prio = uint8(prio)
	n := int64(pkt.Size)
	if o.wdDrop&(1<<prio) != 0 {
		st := o.dropped(prio)
		st.WatchdogDrops++
		st.WatchdogDropBytes += n
		sw.net.live.WatchdogDrops++
		sw.net.liveChanged()
		sw.pool.Put(pkt)
		return
	}
	g, oc := &in.class(prio).in, o.class(prio)
	if sw.lossless&(1<<prio) != 0 {
		switch g.Admit(now, n) {
		case pfc.Drop:
			ist := in.dropped(prio)
			ist.HeadroomDrops++
			ist.HeadroomDropBytes += n
			sw.net.live.Drops++
			sw.net.liveChanged()
			sw.pool.Put(pkt)
			return
		case pfc.Pause:
			in.assertPause(now, prio)
		}
	} else {
		if float64(oc.q.Bytes+n) > sw.alpha*float64(sw.buf.Free()) || g.Admit(now, n) == pfc.Drop {
			st := o.dropped(prio)
			st.Drops++
			st.DropBytes += n
			sw.net.live.Drops++
			sw.net.liveChanged()
			sw.pool.Put(pkt)
			return
		}
	}
	if e := &sw.ecn[prio]; e.Enabled && pkt.IsECT() && sw.mark(e, oc.q.Bytes) {
		pkt.ECN = CE
		oc.st.ECNMarks++
		sw.net.live.ECNMarks++
		sw.net.liveChanged()
	}
	pkt.inPort = int32(in.Index)
	o.enqueue(now, prio, oc, pkt)
}

// mark draws the RED decision for queue length q.
func (sw *Switch) mark(e *ECN, q int64) bool {
	pr := e.Probability(q)
	switch {
	case pr <= 0:
		return false
	case pr >= 1:
		return true
	}
	return sw.rng.Float64() < pr
}

// release returns a departing frame's bytes to its ingress priority group and
// sends XON upstream when the group drains below XON.
func (sw *Switch) release(now sim.Time, pkt *Packet) {
	in := sw.Ports[pkt.inPort]
	prio := int(pkt.Prio)
	if in.cls[prio].in.Release(now, int64(pkt.Size)) == pfc.Resume {
		in.releasePause(now, prio)
	}
}

// ECMPHash is the deterministic flow hash switches use to pick among
// equal-cost ports: a SplitMix64 finalizer over (src, dst, flow) salted per
// switch, so all frames of a flow take one path and different switches do
// not pick correlated ports (no hash polarization). A frame's Path then
// moves the choice that many ports on (Packet.Path): the model of a host
// that pins a connection's paths to distinct ports by the source-port
// entropy it picks, as it can where the fabric's hash is known and linear
// in that entropy (CRC and XOR-fold hashes are); the real hash and how a
// host learns it are not modelled.
func ECMPHash(src, dst NodeID, flow uint32, salt uint64) uint64 {
	x := uint64(uint32(src))<<32 | uint64(uint32(dst))
	x ^= (uint64(flow) + 1) * 0x9e3779b97f4a7c15
	x ^= salt
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
