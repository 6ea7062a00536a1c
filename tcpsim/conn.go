package tcpsim

import (
	"errors"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
)

// Conn is one end of an established TCP connection: the sender of the
// bytes this end writes and the receiver of the bytes its peer writes.
type Conn struct {
	h       *Host
	peer    *Conn
	id      uint32 // index in h.conns (the DstQP of frames to this end)
	flow    uint32 // Packet.Flow of frames this end sends (ECMP key)
	thread  int
	inReady bool

	// Sender. Sequence numbers are 64-bit stream offsets.
	msgs                 ring[msgRec] // written, not yet delivered at the peer
	writeEnd             uint64       // bytes handed to the stack
	una, nxt, high       uint64       // oldest unacked, next to send, highest sent
	cwnd, ssthresh       float64      // bytes
	dup                  int
	inRec                bool
	recover              uint64
	rtxPending           bool
	rtxSeq               uint64
	srtt, rttvar, rto    sim.Time
	hasRTT               bool
	rtoT                 sim.Timer
	alpha                float64
	ackedB, markedB      uint64
	winEnd, cwrEnd       uint64
	reductions, timeouts uint64

	// Receiver.
	rnxt  uint64
	ooo   []span
	pend  int // in-order segments not yet acknowledged
	ce    bool
	tsecr sim.Time
	delT  sim.Timer
}

type msgRec struct {
	end uint64
	m   Message
}

type span struct{ s, e uint64 }

// Timer tags.
const (
	tagRTO = iota
	tagDelAck
)

// ErrDown is returned by Send on a crashed host or a closed connection.
var ErrDown = errors.New("tcpsim: connection is down")

// Host is the end's host; Peer the other end.
func (c *Conn) Host() *Host { return c.h }

// Peer is the other end of the connection.
func (c *Conn) Peer() *Conn { return c.peer }

// Cwnd is the congestion window in bytes.
func (c *Conn) Cwnd() float64 { return c.cwnd }

// Alpha is DCTCP's estimate of the fraction of marked bytes.
func (c *Conn) Alpha() float64 { return c.alpha }

// RTO is the current retransmission timeout.
func (c *Conn) RTO() sim.Time { return c.rto }

// Received is the bytes of the peer's stream received in order.
func (c *Conn) Received() uint64 { return c.rnxt }

// Unacked is the bytes written and not yet acknowledged.
func (c *Conn) Unacked() uint64 { return c.writeEnd - c.una }

// Send writes one message of size bytes. The system call's CPU time (and
// the copy into the socket buffer) runs on the connection's application
// core first; the bytes join the stream when it is done.
func (c *Conn) Send(size int, meta Meta) error {
	h := c.h
	if h.down {
		return ErrDown
	}
	if size < 1 {
		return errors.New("tcpsim: message size must be >= 1")
	}
	cpu := &h.cfg.CPU
	sys := cpu.SendCall + cpu.copyTime(size)
	h.st.Sys += sys
	h.st.User += cpu.User
	h.st.MsgsTx++
	h.appQ[c.thread].run(h.Now(), sys+cpu.User, work{kind: wWrite, c: c, m: Message{Size: size, Meta: meta}})
	return nil
}

func (c *Conn) write(m Message) {
	c.writeEnd += uint64(m.Size)
	c.msgs.push(msgRec{end: c.writeEnd, m: m})
	c.h.st.TxPayload += uint64(m.Size)
	c.h.schedule(c)
}

func (c *Conn) mss() uint64 { return uint64(c.h.cfg.MSS) }

func (c *Conn) canSend() bool {
	if c.rtxPending {
		return true
	}
	if c.nxt >= c.writeEnd {
		return false
	}
	n := min(c.mss(), c.writeEnd-c.nxt)
	return c.nxt == c.una || float64(c.nxt-c.una+n) <= c.cwnd
}

// segment builds the next data frame: a pending retransmission, or new
// (or, after a timeout, resent) bytes at nxt.
func (c *Conn) segment(now sim.Time) *fabric.Packet {
	h := c.h
	var seq, n uint64
	if c.rtxPending {
		c.rtxPending = false
		seq = c.rtxSeq
		n = min(c.mss(), c.high-seq)
		h.st.Retransmits++
	} else {
		seq = c.nxt
		n = min(c.mss(), c.writeEnd-c.nxt)
		c.nxt += n
		if c.nxt > c.high {
			c.high = c.nxt
		} else {
			h.st.Retransmits++
		}
	}
	p := h.pool.Get()
	p.Kind = fabric.KindData
	p.Prio = h.cfg.Prio
	if h.cfg.CC == DCTCP {
		p.ECN = fabric.ECT
	}
	p.Src, p.Dst = h.node, c.peer.h.node
	p.Flow = c.flow
	p.SrcQP, p.DstQP = c.id, c.peer.id
	p.Addr = seq
	p.Payload = int32(n)
	p.Size = int32(n) + SegmentOverhead
	p.SentAt = now
	h.st.TxSegments++
	h.st.Sys += h.cfg.CPU.TxSegment
	h.appQ[c.thread].cpu.Charge(h.cfg.CPU.TxSegment)
	if !c.rtoT.Armed() {
		c.rtoT.Set(now + c.rto)
	}
	return p
}

func (c *Conn) ackFrame(now sim.Time, a ackReq) *fabric.Packet {
	h := c.h
	p := h.pool.Get()
	p.Kind = fabric.KindAck
	p.Prio = h.cfg.Prio
	p.Src, p.Dst = h.node, c.peer.h.node
	p.Flow = c.flow
	p.SrcQP, p.DstQP = c.id, c.peer.id
	p.Addr = a.ack
	if a.ece {
		p.Flags = 1
	}
	p.Aux = uint64(a.tsecr)
	p.Size = AckFrame
	p.SentAt = now
	return p
}

// onAck is the sender's ACK processing (RFC 5681 / 6582 / 8257).
func (c *Conn) onAck(now sim.Time, p *fabric.Packet) {
	ack, ece, tsecr := p.Addr, p.Flags&1 != 0, sim.Time(p.Aux)
	cfg := c.h.cfg
	mss := float64(cfg.MSS)
	switch {
	case ack > c.high:
		return // acknowledges data never sent: a stale frame from before a reset
	case ack > c.una:
		acked := ack - c.una
		c.una = ack
		if c.nxt < c.una {
			c.nxt = c.una // a go-back-N resend overtaken by a cumulative ACK
		}
		if c.rtxPending && c.rtxSeq < c.una {
			c.rtxPending = false
		}
		if tsecr > 0 {
			c.sample(now - tsecr)
		}
		if cfg.CC == DCTCP {
			c.ackedB += acked
			if ece {
				c.markedB += acked
			}
			if c.una >= c.winEnd {
				f := float64(c.markedB) / float64(max(c.ackedB, 1))
				c.alpha = (1-cfg.G)*c.alpha + cfg.G*f
				c.ackedB, c.markedB = 0, 0
				c.winEnd = c.high
			}
		}
		switch {
		case c.inRec && ack >= c.recover:
			c.inRec = false
			c.cwnd = c.ssthresh
		case c.inRec:
			// NewReno partial ACK: the next hole is lost too.
			c.rtxPending, c.rtxSeq = true, c.una
			c.cwnd = max(c.cwnd-float64(acked)+mss, mss)
		case cfg.CC == DCTCP && ece && c.una > c.cwrEnd:
			c.ssthresh = max(c.cwnd*(1-c.alpha/2), 2*mss)
			c.cwnd = c.ssthresh
			c.cwrEnd = c.high
			c.reductions++
		case c.cwnd < c.ssthresh:
			c.cwnd += float64(acked)
		default:
			c.cwnd += mss * float64(acked) / c.cwnd
		}
		c.dup = 0
		if c.una >= c.high {
			c.rtoT.Stop()
		} else {
			c.rtoT.Set(now + c.rto)
		}
	case ack == c.una && c.high > c.una:
		c.dup++
		switch {
		case c.dup == 3 && !c.inRec:
			flight := float64(c.high - c.una)
			c.ssthresh = max(flight/2, 2*mss)
			c.cwnd = c.ssthresh + 3*mss
			c.inRec, c.recover = true, c.high
			c.rtxPending, c.rtxSeq = true, c.una
			c.h.st.FastRetransmits++
		case c.inRec && c.dup > 3:
			c.cwnd += mss
		}
	}
	c.h.schedule(c)
}

// sample updates the RTT estimate (RFC 6298) and the RTO as Linux computes
// it: srtt + max(4 rttvar, MinRTO), which keeps a timeout at least MinRTO
// above the smoothed RTT.
func (c *Conn) sample(r sim.Time) {
	if !c.hasRTT {
		c.srtt, c.rttvar, c.hasRTT = r, r/2, true
	} else {
		d := c.srtt - r
		if d < 0 {
			d = -d
		}
		c.rttvar = (3*c.rttvar + d) / 4
		c.srtt = (7*c.srtt + r) / 8
	}
	cfg := c.h.cfg
	c.rto = min(c.srtt+max(4*c.rttvar, cfg.MinRTO), cfg.MaxRTO)
}

// onData is the receiver: in-order bytes advance rnxt and deliver whole
// messages; out-of-order and duplicate frames are acknowledged at once.
func (c *Conn) onData(now sim.Time, p *fabric.Packet) {
	h := c.h
	s, e := p.Addr, p.Addr+uint64(p.Payload)
	ce := p.ECN == fabric.CE
	if ce {
		h.st.CEReceived++
	}
	if h.cfg.CC == DCTCP && ce != c.ce {
		// DCTCP's exact echo: acknowledge what came before the flip with
		// the old state.
		if c.pend > 0 {
			c.sendAck()
		}
		c.ce = ce
	}
	switch {
	case e <= c.rnxt:
		h.st.Duplicates++
		c.sendAck()
		return
	case s > c.rnxt:
		h.st.OutOfOrder++
		c.insert(s, e)
		c.sendAck()
		return
	}
	if c.pend == 0 {
		c.tsecr = p.SentAt
	}
	c.rnxt = e
	filled := false
	for len(c.ooo) > 0 && c.ooo[0].s <= c.rnxt {
		c.rnxt = max(c.rnxt, c.ooo[0].e)
		c.ooo = c.ooo[:copy(c.ooo, c.ooo[1:])]
		filled = true
	}
	c.deliver(now)
	c.pend++
	if filled || c.pend >= h.cfg.AckEvery || len(c.ooo) > 0 {
		c.sendAck()
	} else if !c.delT.Armed() {
		c.delT.Set(now + h.cfg.DelAck)
	}
}

// insert adds [s, e) to the out-of-order list, merging neighbours.
func (c *Conn) insert(s, e uint64) {
	i := 0
	for i < len(c.ooo) && c.ooo[i].e < s {
		i++
	}
	j := i
	for j < len(c.ooo) && c.ooo[j].s <= e {
		s, e = min(s, c.ooo[j].s), max(e, c.ooo[j].e)
		j++
	}
	if i == j {
		c.ooo = append(c.ooo, span{})
		copy(c.ooo[i+1:], c.ooo[i:])
		c.ooo[i] = span{s, e}
		return
	}
	c.ooo[i] = span{s, e}
	c.ooo = append(c.ooo[:i+1], c.ooo[j:]...)
}

// deliver hands every message whose last byte has arrived to the
// application, after the recv() system call and copy on its core.
func (c *Conn) deliver(now sim.Time) {
	h := c.h
	cpu := &h.cfg.CPU
	for c.peer.msgs.n > 0 && c.peer.msgs.front().end <= c.rnxt {
		r := c.peer.msgs.pop()
		sys := cpu.RecvCall + cpu.copyTime(r.m.Size)
		h.st.Sys += sys
		h.st.User += cpu.User
		h.appQ[c.thread].run(now, sys+cpu.User, work{kind: wDeliver, c: c, m: r.m})
	}
}

func (c *Conn) sendAck() {
	c.pend = 0
	c.delT.Stop()
	c.h.queueAck(ackReq{c: c, ack: c.rnxt, ece: c.ce && c.h.cfg.CC == DCTCP, tsecr: c.tsecr})
}

// OnEvent implements sim.Handler for the RTO and delayed-ACK timers.
func (c *Conn) OnEvent(now sim.Time, tag uint64) {
	h := c.h
	if h.down {
		return
	}
	h.st.Softirq += h.cfg.CPU.Timer
	switch tag {
	case tagDelAck:
		if c.pend > 0 {
			c.sendAck()
		}
	case tagRTO:
		if c.una >= c.high {
			return
		}
		h.st.Timeouts++
		c.timeouts++
		mss := float64(h.cfg.MSS)
		c.ssthresh = max(float64(c.high-c.una)/2, 2*mss)
		c.cwnd = mss
		c.nxt = c.una
		c.inRec, c.dup, c.rtxPending = false, 0, false
		c.cwrEnd, c.winEnd = c.high, c.high
		c.rto = min(2*c.rto, h.cfg.MaxRTO)
		c.rtoT.Set(now + c.rto)
		h.schedule(c)
	}
}
