package fabric

import (
	"fmt"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Flow is a raw paced flow between two hosts, sent by a RawHost: frames of
// MTU payload (the last one shorter) with RoCEv2 headers, ECT-marked, at a
// constant rate, with no transport, congestion control or retransmission. It
// is what the fabric tests and PFC-only scenarios ("a run with PFC only and
// no congestion control") use before the RNIC exists.
type Flow struct {
	Src, Dst NodeID
	Prio     uint8
	// Rate of wire bytes (gaps included); 0 means the source's line rate.
	Rate units.Rate
	// Size of payload; 0 means unlimited (then Duration, or forever).
	Size units.Size
	// Duration after Start at which the source stops; 0 means no limit.
	Duration sim.Time
	Start    sim.Time
	// NotECT sends Not-ECT frames (switches then never mark them).
	NotECT bool
	// MTU overrides the fabric's payload MTU for this flow (0: fabric MTU).
	MTU units.Size
}

// FlowStats are the counters of one raw flow. Bytes are payload bytes.
type FlowStats struct {
	ID   uint32
	Flow Flow

	SentPackets, SentBytes           int64
	DeliveredPackets, DeliveredBytes int64
	ECNMarked                        int64 // delivered frames carrying CE
	FirstSent, LastSent              sim.Time
	FirstDelivered, LastDelivered    sim.Time
	SumLatency, MaxLatency           sim.Time // one-way, creation to delivery
	Done                             bool     // the source has sent everything
}

// Goodput is the delivered payload rate in bits/s between the first and the
// last delivery (0 with fewer than two deliveries).
func (f *FlowStats) Goodput() float64 {
	if f.DeliveredPackets < 2 || f.LastDelivered <= f.FirstDelivered {
		return 0
	}
	// The first frame's bytes arrived at FirstDelivered: count what came after.
	per := float64(f.DeliveredBytes) / float64(f.DeliveredPackets)
	return (float64(f.DeliveredBytes) - per) * 8 / (f.LastDelivered - f.FirstDelivered).Seconds()
}

type rawFlow struct {
	st      *FlowStats
	prio    uint8
	mtu     int32
	rate    units.Rate
	next    sim.Time // earliest start of the next frame
	end     sim.Time
	left    int64 // payload left; <0 unlimited
	ecn     uint8
	started bool
	psn     uint32
}

// RawHost is the simple endpoint: a source of paced raw flows and a sink
// that counts delivered bytes per flow. New attaches one to every host;
// Network.Attach replaces it with a custom model.
type RawHost struct {
	net   *Network
	k     *sim.Kernel
	up    Uplink
	flows []*rawFlow
	rr    int
	timer sim.Timer
}

var _ Host = (*RawHost)(nil)

// NewRawHost returns a raw host for n; attach it with n.Attach.
func NewRawHost(n *Network) *RawHost {
	h := &RawHost{net: n, k: n.K}
	h.timer.Init(n.K, h, 0)
	return h
}

// Attach implements Host.
func (h *RawHost) Attach(up Uplink) { h.up = up }

// OnEvent is the pacing/start timer: there may be a frame eligible now.
func (h *RawHost) OnEvent(now sim.Time, _ uint64) { h.up.Wake() }

// addFlow registers a flow sourced here.
func (h *RawHost) addFlow(st *FlowStats) {
	f := st.Flow
	rf := &rawFlow{st: st, prio: f.Prio, mtu: int32(f.MTU), rate: f.Rate, next: f.Start, end: sim.Never, left: f.Size.Bytes(), ecn: ECT}
	if rf.mtu == 0 {
		rf.mtu = int32(h.net.cfg.MTU)
	}
	if rf.rate == 0 {
		rf.rate = h.up.Rate()
	}
	if f.Size == 0 {
		rf.left = -1
	}
	if f.Duration > 0 {
		rf.end = f.Start + f.Duration
	}
	if f.NotECT {
		rf.ecn = NotECT
	}
	h.flows = append(h.flows, rf)
	now := h.k.Now()
	if rf.next > now {
		h.timer.Set(min(rf.next, h.nextWake()))
	} else {
		h.up.Wake()
	}
}

func (h *RawHost) nextWake() sim.Time {
	if h.timer.Armed() {
		return h.timer.When()
	}
	return sim.Never
}

// Next implements Host: round robin over flows that are started, not paced
// out and not paused.
func (h *RawHost) Next(now sim.Time, paused uint8) *Packet {
	wake := sim.Never
	n := len(h.flows)
	for j := 0; j < n; j++ {
		i := h.rr + j
		if i >= n {
			i -= n
		}
		f := h.flows[i]
		if f.st.Done {
			continue
		}
		if now >= f.end {
			f.st.Done = true
			continue
		}
		if paused&(1<<f.prio) != 0 {
			continue
		}
		if f.next > now {
			wake = min(wake, f.next)
			continue
		}
		h.rr = i + 1
		if h.rr == n {
			h.rr = 0
		}
		return h.emit(now, f)
	}
	h.compact()
	if wake != sim.Never {
		h.timer.Set(wake)
	}
	return nil
}

func (h *RawHost) emit(now sim.Time, f *rawFlow) *Packet {
	payload := int64(f.mtu)
	if f.left >= 0 && f.left < payload {
		payload = f.left
	}
	p := h.up.Pool().Get()
	p.Kind = KindData
	p.Prio = f.prio
	p.ECN = f.ecn
	p.Src = f.st.Flow.Src
	p.Dst = f.st.Flow.Dst
	p.Flow = f.st.ID
	p.PSN = f.psn
	p.Payload = int32(payload)
	p.Size = int32(payload) + RoCEv2Extra
	p.SentAt = now
	f.psn++
	st := f.st
	if st.SentPackets == 0 {
		st.FirstSent = now
	}
	st.SentPackets++
	st.SentBytes += payload
	st.LastSent = now
	if f.left >= 0 {
		f.left -= payload
		if f.left == 0 {
			st.Done = true
		}
	}
	base := max(f.next, now)
	f.next = base + sim.TxTime(p.WireBytes(), f.rate)
	return p
}

// compact drops finished flows from the active list.
func (h *RawHost) compact() {
	k := 0
	for _, f := range h.flows {
		if !f.st.Done {
			h.flows[k] = f
			k++
		}
	}
	if k == len(h.flows) {
		return
	}
	clear(h.flows[k:])
	h.flows = h.flows[:k]
	h.rr = 0
}

// Receive implements Host: count the frame against its flow and free it.
func (h *RawHost) Receive(now sim.Time, p *Packet) {
	if p.Kind == KindData && int(p.Flow) < len(h.net.flows) {
		st := h.net.flows[p.Flow]
		if st.Flow.Dst == h.up.Node() {
			if st.DeliveredPackets == 0 {
				st.FirstDelivered = now
			}
			st.DeliveredPackets++
			st.DeliveredBytes += int64(p.Payload)
			st.LastDelivered = now
			if p.ECN == CE {
				st.ECNMarked++
			}
			lat := now - p.SentAt
			st.SumLatency += lat
			st.MaxLatency = max(st.MaxLatency, lat)
		}
	}
	h.up.Pool().Put(p)
}

func (f *Flow) validate(n *Network) error {
	nh := NodeID(len(n.Hosts))
	switch {
	case f.Src < 0 || f.Src >= nh:
		return fmt.Errorf("fabric: flow source %d is not a host (0..%d)", f.Src, nh-1)
	case f.Dst < 0 || f.Dst >= nh:
		return fmt.Errorf("fabric: flow destination %d is not a host (0..%d)", f.Dst, nh-1)
	case f.Src == f.Dst:
		return fmt.Errorf("fabric: flow from host %d to itself", f.Src)
	case f.Prio >= NumPrio:
		return fmt.Errorf("fabric: flow priority %d not in 0..7", f.Prio)
	case f.Rate < 0:
		return fmt.Errorf("fabric: flow rate %d is negative", f.Rate)
	case f.Size < 0:
		return fmt.Errorf("fabric: flow size %d is negative", f.Size)
	case f.Duration < 0:
		return fmt.Errorf("fabric: flow duration %v is negative", f.Duration)
	case f.Start < n.K.Now():
		return fmt.Errorf("fabric: flow start %v is before now %v", f.Start, n.K.Now())
	case f.MTU < 0 || f.MTU > 9000:
		return fmt.Errorf("fabric: flow mtu %d not in [0, 9000]", f.MTU)
	}
	return nil
}
