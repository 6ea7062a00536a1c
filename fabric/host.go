package fabric

import (
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Host is the attachment point for an endpoint model: the simple paced
// sender/sink here, the simulated RNIC (package rnic) later.
//
// The uplink pulls frames from the host rather than the host pushing into an
// unbounded queue: like a real NIC's transmit scheduler, the host decides at
// each transmit opportunity which frame goes next among the priorities that
// PFC has not paused. This keeps host-side queues in the host model, where
// per-QP rate limiting (DCQCN) lives.
type Host interface {
	// Attach hands the host its uplink once, when the topology is built.
	Attach(up Uplink)
	// Receive delivers an arriving frame (never a PFC frame: the uplink
	// consumes those). The host owns p and must eventually Put it back into
	// up.Pool(), or hand it on.
	Receive(now sim.Time, p *Packet)
	// Next is called when the uplink is idle and may start a frame. paused has
	// bit i set while priority i is paused by the switch. Returning nil means
	// nothing is eligible; the host then calls up.Wake when that changes.
	Next(now sim.Time, paused uint8) *Packet
}

// Uplink is the host's view of its NIC port (implemented by *HostPort; an
// interface so endpoint models can be unit-tested on a fake wire).
type Uplink interface {
	// Wake tells an idle uplink that Next may now return a frame.
	Wake()
	// Pool is the simulation's packet pool.
	Pool() *Pool
	// Rate is the link rate.
	Rate() units.Rate
	// Node is the host's address in the topology.
	Node() NodeID
}
