package simrun

import (
	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
)

// Testbed is the two simulated hosts under one switch that the core
// benchmarks (Figures 10 and 13) run on. Zero fields take the defaults
// named.
type Testbed struct {
	LinkDelay sim.Time           // one-way per link; default simhost.DefaultTestbedLinkDelay (two hosts on one ToR)
	NIC       rnic.Config        // default rnic.DefaultConfig()
	CPU       simhost.CPUCost    // default simhost.DefaultCPUCost()
	BE        byteexpress.Config // core config (FragSize is set per point)
}

// Defaults fills the zero link delay and NIC.
func (t *Testbed) Defaults() {
	if t.LinkDelay == 0 {
		t.LinkDelay = simhost.DefaultTestbedLinkDelay
	}
	if t.NIC.PortMTU == 0 {
		t.NIC = rnic.DefaultConfig()
	}
}
