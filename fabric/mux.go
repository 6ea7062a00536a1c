package fabric

import "github.com/besim/besim/sim"

// Mux lets two endpoint models share one host's NIC port, as the RDMA
// engine and the kernel TCP stack share a real host's NIC: arriving frames
// go to A if their priority is in AMask, to B otherwise; transmit
// opportunities alternate between A and B, and either takes the turn the
// other does not need. Both children are attached to the port's own
// uplink, so a Wake from either reaches the port, which then asks the Mux.
type Mux struct {
	A, B  Host
	AMask uint8
	turnB bool
}

// Attach implements Host.
func (m *Mux) Attach(up Uplink) {
	m.A.Attach(up)
	m.B.Attach(up)
}

// Receive implements Host.
func (m *Mux) Receive(now sim.Time, p *Packet) {
	if m.AMask&(1<<p.Prio) != 0 {
		m.A.Receive(now, p)
		return
	}
	m.B.Receive(now, p)
}

// Next implements Host.
func (m *Mux) Next(now sim.Time, paused uint8) *Packet {
	first, second := m.A, m.B
	if m.turnB {
		first, second = m.B, m.A
	}
	if p := first.Next(now, paused); p != nil {
		m.turnB = !m.turnB
		return p
	}
	return second.Next(now, paused)
}
