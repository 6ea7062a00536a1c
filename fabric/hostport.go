package fabric

import (
	"github.com/besim/besim/pfc"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// HostCounters are a host uplink's counters, per priority for data frames.
type HostCounters struct {
	TxPackets, TxBytes [NumPrio]int64 // data frames sent (frame bytes)
	RxPackets, RxBytes [NumPrio]int64 // data frames delivered to the host
	// PauseViolations counts frames the host returned from Next for a paused
	// priority; the port holds such a frame until the priority resumes.
	PauseViolations int64
}

// HostPort is a host NIC's uplink port. It implements the pull contract of
// Host: whenever the port is idle it asks Host.Next for a frame, telling it
// which priorities the switch has paused; it consumes PFC frames from the
// switch (honouring quanta, refreshes and XON for PFC-enabled priorities)
// and delivers everything else to Host.Receive. PFC frames it owes the
// switch (SetPause, SendPause) go ahead of data, as on a real NIC.
//
// Ownership: frames returned by Next belong to the fabric from then on (the
// port stamps Src with the host's node id, masks Prio to 0..7 and pads Size
// to MinFrame); frames passed to Receive belong to the host, which must Put
// them back into Pool() (or forward them).
type HostPort struct {
	net      *Network
	k        *sim.Kernel
	hid      sim.HandlerID
	pool     *Pool
	id       NodeID
	host     Host
	out      *Link
	rate     units.Rate
	peer     NodeID
	peerPort int

	busy     bool
	inNext   bool
	held     *Packet
	lastSize int32
	lastTx   sim.Time

	tx           pfc.Tx
	rx           pfc.Rx
	rxTimer      sim.Timer
	refreshTimer sim.Timer

	st HostCounters
}

var (
	_ sim.Handler = (*HostPort)(nil)
	_ Uplink      = (*HostPort)(nil)
)

// Node is the host's node id (hosts are numbered 0..NumHosts-1).
func (h *HostPort) Node() NodeID { return h.id }

// Name is the host's node name.
func (h *HostPort) Name() string { return h.net.NodeName(h.id) }

// Pool is the simulation's packet pool: take frames for Next from it, put
// received frames back.
func (h *HostPort) Pool() *Pool { return h.pool }

// Rate is the uplink line rate.
func (h *HostPort) Rate() units.Rate { return h.rate }

// Kernel is the simulation's event kernel (for the host's own timers).
func (h *HostPort) Kernel() *sim.Kernel { return h.k }

// Network is the fabric the host is attached to.
func (h *HostPort) Network() *Network { return h.net }

// MTU is the fabric's payload MTU in bytes.
func (h *HostPort) MTU() int { return int(h.net.cfg.MTU) }

// Peer is the switch the uplink connects to, and the port index there.
func (h *HostPort) Peer() (NodeID, int) { return h.peer, h.peerPort }

// Host is the attached endpoint model.
func (h *HostPort) Host() Host { return h.host }

// Busy reports whether a frame is being serialized.
func (h *HostPort) Busy() bool { return h.busy }

// Paused is the mask of priorities the switch currently pauses.
func (h *HostPort) Paused() uint8 { return h.rx.Paused(h.k.Now()) }

// PauseRx is the receive-side pause state (pauses from the switch).
func (h *HostPort) PauseRx() *pfc.Rx { return &h.rx }

// PauseTx is the transmit-side pause state (pauses this NIC sends).
func (h *HostPort) PauseTx() *pfc.Tx { return &h.tx }

// Counters returns the uplink's counters.
func (h *HostPort) Counters() HostCounters { return h.st }

// Wake tells the port the host has a frame eligible now. It is cheap and
// idempotent: if the port is busy, it will ask again when it is free. Calls
// from inside Next are ignored.
func (h *HostPort) Wake() { h.kick(h.k.Now()) }

// SetPause makes the NIC assert (on) or release pause on prio toward the
// switch, refreshed before expiry while on: receive-side backpressure of an
// endpoint model, or a PFC storm (a NIC stuck pausing) for fault injection.
func (h *HostPort) SetPause(prio int, on bool) {
	if prio < 0 || prio >= NumPrio {
		return
	}
	now := h.k.Now()
	if on {
		h.tx.Assert(now, prio)
	} else {
		h.tx.Deassert(now, prio)
	}
	h.kick(now)
}

// SendPause sends one PFC frame with the given quanta for the priorities in
// mask (quanta 0 resumes), ahead of any data: fault injection of a
// misbehaving NIC.
func (h *HostPort) SendPause(mask uint8, quanta uint16) {
	h.tx.Inject(mask, quanta)
	h.kick(h.k.Now())
}

// OnEvent implements sim.Handler.
func (h *HostPort) OnEvent(now sim.Time, tag uint64) {
	switch tag {
	case tagTxDone:
		h.busy = false
		h.kick(now)
	case tagRx:
		h.rx.Advance(now)
		h.armRx(now)
		h.kick(now)
	case tagRefresh:
		if h.tx.Refresh(now) {
			h.kick(now)
		}
	}
}

func (h *HostPort) armRx(now sim.Time) { armPauseTimer(&h.rxTimer, &h.rx, now) }

func (h *HostPort) arrive(now sim.Time, p *Packet) {
	if p.Kind == KindPause {
		h.rx.OnFrame(now, p.PauseMask, &p.Quanta)
		h.pool.Put(p)
		h.armRx(now)
		h.kick(now)
		return
	}
	prio := p.Prio & (NumPrio - 1)
	h.st.RxPackets[prio]++
	h.st.RxBytes[prio] += int64(p.Size)
	if h.host == nil {
		h.pool.Put(p)
		return
	}
	h.host.Receive(now, p)
}

func (h *HostPort) kick(now sim.Time) {
	if h.busy || h.inNext {
		return
	}
	var p *Packet
	if h.tx.Pending() {
		mask, quanta := h.tx.Build(now)
		p = h.pool.Get()
		p.Kind = KindPause
		p.Size = PauseFrame
		p.Src, p.Dst = h.id, h.peer
		p.PauseMask, p.Quanta = mask, quanta
		p.SentAt = now
		if r := h.tx.NextRefresh(); r != sim.Never {
			h.refreshTimer.Set(r)
		}
	} else {
		paused := h.rx.Paused(now)
		if h.held != nil {
			if paused&(1<<h.held.Prio) != 0 {
				return
			}
			p, h.held = h.held, nil
		} else {
			if h.host == nil || paused == 0xFF {
				return // nothing may be sent; a resume kicks the port again
			}
			h.inNext = true
			p = h.host.Next(now, paused)
			h.inNext = false
			if p == nil {
				return
			}
			if p.Kind == KindPause {
				// Not the host's to send: PFC is the port's (use SendPause).
				h.pool.Put(p)
				return
			}
			p.Prio &= NumPrio - 1
			p.Src = h.id
			if p.Size < MinFrame {
				p.Size = MinFrame // Ethernet pads short frames
			}
			if paused&(1<<p.Prio) != 0 {
				h.st.PauseViolations++
				h.held = p
				return
			}
		}
		h.st.TxPackets[p.Prio]++
		h.st.TxBytes[p.Prio] += int64(p.Size)
	}
	h.busy = true
	if p.Size != h.lastSize {
		h.lastSize, h.lastTx = p.Size, sim.TxTime(p.WireBytes(), h.rate)
	}
	end := now + h.lastTx
	h.out.send(p, end)
	h.k.Post(end, h.hid, tagTxDone)
}
