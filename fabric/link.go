package fabric

import (
	"math/rand/v2"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// receiver is the far end of a link: a switch Port or a HostPort.
type receiver interface {
	arrive(now sim.Time, p *Packet)
}

// Link is one direction of a cable: rate and propagation delay. The sending
// port serializes a frame (Packet.WireBytes at Rate) and hands it over when
// it starts; the link delivers it when its last bit arrives, Delay after the
// end of serialization (store and forward).
//
// As in htsim's pipe, in-flight frames wait in an intrusive FIFO and only the
// head's arrival is scheduled, so a link has at most one pending event
// however many frames are on the wire.
type Link struct {
	k     *sim.Kernel
	hid   sim.HandlerID
	Rate  units.Rate
	Delay sim.Time
	From  NodeID
	To    NodeID

	to       receiver
	inflight Queue

	// Delivered counts frames (data and PFC) that reached the far end;
	// DeliveredPFC the PFC frames among them.
	Delivered      int64
	DeliveredBytes int64
	DeliveredPFC   int64

	// Faults (set by package faults, paper §7): a down link loses every
	// frame that reaches its far end, as a cut cable or a port that lost
	// its signal; routes do not change (static routing, so traffic is
	// black-holed until the link is back, as before a routing protocol
	// reconverges). While up, each frame is lost with probability drop, or
	// arrives corrupted with probability corrupt and is discarded by the
	// receiver's FCS check. Down, every frame is lost, PFC frames
	// included; the rates hit the frames LossMatch selects.
	down          bool
	drop, corrupt float64
	lossMatch     LossMatch // frames the drop/corrupt rates apply to
	rng           *rand.Rand
	pool          *Pool
	Faults        LinkFaults
}

// LinkFaults counts frames lost to faults on one link. Lost and Corrupted
// count host frames (data, ACKs and NAKs, CNPs: everything but PFC), so
// they enter the fabric's conservation of host bytes.
type LinkFaults struct {
	Lost, LostBytes           int64 // host frames lost while down or to the drop rate
	Corrupted, CorruptedBytes int64 // host frames discarded for a bad FCS
	PFCLost                   int64 // PFC frames lost or corrupted
}

// SetDown takes the link down (true) or brings it back up.
func (l *Link) SetDown(down bool) { l.down = down }

// Down reports whether the link is down.
func (l *Link) Down() bool { return l.down }

// LossMatch selects the frames a link's drop and corruption rates hit.
// The zero value hits every frame: data, ACK/NAK, CNP and PFC.
type LossMatch struct {
	// Prios is a mask of priorities (0: every priority, PFC frames
	// included). A nonzero mask hits every frame of those priorities
	// (data, ACKs and NAKs, CNPs) except PFC frames, which belong to no
	// priority's traffic. A mask of the RoCE priority with drop 1
	// black-holes RDMA on the link and leaves TCP alone, as a
	// misconfigured lossless class on a switch port does.
	Prios uint8
	// DataOnly narrows the hit to data frames (KindData: RDMA requests
	// and READ responses, raw flow frames, TCP segments): ACKs, NAKs,
	// CNPs and PFC frames pass.
	DataOnly bool
}

// Hits reports whether p is a frame the rates apply to.
func (m LossMatch) Hits(p *Packet) bool {
	if m.DataOnly && p.Kind != KindData {
		return false
	}
	return m.Prios == 0 || (p.Kind != KindPause && m.Prios&(1<<p.Prio) != 0)
}

// SetLoss sets the per-frame drop and corruption probabilities (0 turns
// them off) for the frames m selects; rng draws them (one stream per link
// keeps runs reproducible), one draw per selected frame.
func (l *Link) SetLoss(drop, corrupt float64, m LossMatch, rng *rand.Rand) {
	l.drop, l.corrupt, l.lossMatch, l.rng = drop, corrupt, m, rng
}

// send puts p on the wire; its serialization ends at txEnd.
func (l *Link) send(p *Packet, txEnd sim.Time) {
	p.due = txEnd + l.Delay
	wasEmpty := l.inflight.Len == 0
	l.inflight.Push(p)
	if wasEmpty {
		l.k.Post(p.due, l.hid, 0)
	}
}

// OnEvent delivers the head frame.
func (l *Link) OnEvent(now sim.Time, _ uint64) {
	p := l.inflight.Pop()
	// Schedule the next head before delivering: the delivery may make the
	// sender transmit on this very link.
	if h := l.inflight.Peek(); h != nil {
		l.k.Post(h.due, l.hid, 0)
	}
	if l.down || l.drop > 0 || l.corrupt > 0 {
		if l.fault(p) {
			return
		}
	}
	l.Delivered++
	l.DeliveredBytes += int64(p.Size)
	if p.Kind == KindPause {
		l.DeliveredPFC++
	}
	l.to.arrive(now, p)
}

// fault applies the link's faults to p; true means p is gone.
func (l *Link) fault(p *Packet) bool {
	lost, bad := l.down, false
	if !lost && l.rng != nil && l.lossMatch.Hits(p) {
		u := l.rng.Float64()
		lost, bad = u < l.drop, u >= l.drop && u < l.drop+l.corrupt
	}
	if !lost && !bad {
		return false
	}
	f := &l.Faults
	switch {
	case p.Kind == KindPause:
		f.PFCLost++
	case lost:
		f.Lost++
		f.LostBytes += int64(p.Size)
	default:
		f.Corrupted++
		f.CorruptedBytes += int64(p.Size)
	}
	l.pool.Put(p)
	return true
}

// InFlight is the number of frames on the wire and their frame bytes, and
// how many of them are data (non-PFC) frames.
func (l *Link) InFlight() (frames int, bytes int64, dataFrames int, dataBytes int64) {
	for p := l.inflight.head; p != nil; p = p.next {
		if p.Kind != KindPause {
			dataFrames++
			dataBytes += int64(p.Size)
		}
	}
	return l.inflight.Len, l.inflight.Bytes, dataFrames, dataBytes
}
