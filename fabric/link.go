package fabric

import "github.com/besim/besim/sim"

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
	Rate  int64
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
	l.Delivered++
	l.DeliveredBytes += int64(p.Size)
	if p.Kind == KindPause {
		l.DeliveredPFC++
	}
	l.to.arrive(now, p)
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
