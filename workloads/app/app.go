// Package app sits under the workload packages and holds what their
// application logic shares without the simulator (paper §2.1 and §6.3
// traffic): message-size distributions, the translation of a scenario's
// size and engine settings, and the default cluster layout. It imports no
// simulator model, so berun's real-host roles use it as besim does.
package app

import (
	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/scenarios"
)

// DefaultSpines is the spine switches of a workload's leaf-spine when its
// configuration leaves them unset: scenarios.DefaultSpines (sourced
// there).
const DefaultSpines = scenarios.DefaultSpines

// DefaultHostsPerLeaf is the server ports of a leaf (ToR) switch.
// Assumption: a 32-port 25 Gb/s ToR; real ToRs have 32-48 server ports.
const DefaultHostsPerLeaf = 32

// Sizes translates a scenario size distribution (not yet prepared).
func Sizes(d scenarios.SizeDist) SizeDist {
	out := SizeDist{Kind: DistKind(d.Dist), Size: int(d.Size), Min: int(d.Min),
		Max: int(d.Max), Mean: int(d.Mean), P99: int(d.P99)}
	for _, p := range d.CDF {
		out.CDF = append(out.CDF, CDFPoint{Size: int(p.Size), P: p.P.Float64()})
	}
	return out
}

// Engine is the ByteExpress engine configuration a workload scenario sets
// (window, fragment size, SRQ, thread domains, send-queue depth, receive
// buffers, ACK timeout, one engine per socket); the rest keeps the core's defaults.
func Engine(w *scenarios.Workload) byteexpress.Config {
	var c byteexpress.Config
	c.Cwnd = int(w.Window.Bytes())
	c.FragSize = int(w.Fragment)
	c.UseSRQ = w.SRQ
	c.NoThreadDomains = !w.ThreadDomainsOn()
	c.SQDepth, c.RecvBufSize = w.SQDepth, int(w.RecvBuffer)
	c.AckTimeout = uint8(w.AckTimeout) // validated 0..31
	c.EnginePerSocket = w.EnginePerSocket
	return c
}
