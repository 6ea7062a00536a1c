// Package experiment sits between the scenario schema (package scenarios)
// and the experiment packages under workloads/, below cmd/besim and sweep:
// it is the registry of scenario kinds and the assembly every kind shares
// (all of the paper's simulated experiments go through it).
//
// Registry: each package under workloads/ registers a Builder for its kind
// in its init (Register); Build picks the builder by Kind (a workload kind,
// a benchmark kind, or Flows) and returns a Runner, whose Run adds the wall
// time to the result and returns an error as well as the result's note when
// the simulation could not be built or completed. Link workloads/all to
// have every kind.
//
// Shared assembly: FabricConfig (the fabric section), NICConfig and
// DCQCNConfig (the rnic and dcqcn sections), ClusterConfig (simhost for a
// workload), FaultSpecs and FaultsResult (the faults section and what the
// injector did), FabricMetrics (the PFC and fabric totals the workloads
// report), the Workload and benchmark runners (NewBenchmark), NewResult,
// Failed, Events, and Write (result.json and CSVs).
package experiment

import (
	"fmt"
	"strings"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/units"
)

// FabricConfig translates the scenario's fabric section.
func FabricConfig(s *scenarios.Scenario) (fabric.Config, error) {
	c := fabric.DefaultConfig()
	c.Seed = s.Seed
	f := &s.Fabric
	switch f.Topology.Kind {
	case scenarios.Star:
		c.Topology = fabric.Topology{Kind: fabric.Star, Hosts: f.Topology.Hosts}
	case scenarios.LeafSpine:
		c.Topology = fabric.Topology{Kind: fabric.LeafSpine, Leaves: f.Topology.Leaves,
			HostsPerLeaf: f.Topology.HostsPerLeaf, Spines: f.Topology.Spines}
	case scenarios.FatTree:
		c.Topology = fabric.Topology{Kind: fabric.FatTree, K: f.Topology.K}
	default:
		return c, s.Errorf("fabric.topology.kind", "unknown topology %q", f.Topology.Kind)
	}
	hostRate, upRate := f.Links.Rate, f.Links.Rate
	if f.Links.HostRate > 0 {
		hostRate = f.Links.HostRate
	}
	if f.Links.UplinkRate > 0 {
		upRate = f.Links.UplinkRate
	}
	c.HostLink = fabric.LinkConfig{Rate: units.Rate(hostRate), Delay: f.Links.Delay.Time()}
	c.FabricLink = fabric.LinkConfig{Rate: units.Rate(upRate), Delay: f.Links.Delay.Time()}
	c.MTU = units.Size(s.Hosts.MTU)

	sw := &c.Switch
	sw.Buffer = units.Size(f.Switch.Buffer)
	sw.Alpha = f.Switch.Alpha.Float64()
	switch f.Switch.Scheduler {
	case scenarios.Strict:
		sw.Scheduler = fabric.StrictPriority
	case scenarios.DWRR:
		sw.Scheduler = fabric.DWRR
	}
	for i := range sw.Weights {
		sw.Weights[i] = 1
		if i < len(f.Switch.DWRRWeights) {
			sw.Weights[i] = f.Switch.DWRRWeights[i]
		}
	}
	// Classes the scenario does not list are lossy and unmarked.
	sw.ECN = [fabric.NumPrio]fabric.ECN{}
	sw.PFC.Lossless = [fabric.NumPrio]bool{}
	var pfcFrom *scenarios.PriorityPFC
	pfcPrio := -1
	for i, p := range f.Priorities {
		if p.ECN != nil {
			sw.ECN[p.Prio] = fabric.ECN{Enabled: true, Kmin: units.Size(p.ECN.Kmin), Kmax: units.Size(p.ECN.Kmax), Pmax: float64(p.ECN.Pmax)}
		}
		if !p.Lossless || !f.PFC.On() {
			continue
		}
		sw.PFC.Lossless[p.Prio] = true
		if pfcFrom == nil {
			pfcFrom, pfcPrio = p.PFC, p.Prio
		} else if *pfcFrom != *p.PFC {
			// The switch model keeps one set of PFC thresholds for all
			// lossless classes, as most switch configurations do.
			return c, s.Errorf(fmt.Sprintf("fabric.priorities[%d].pfc", i),
				"priority %d differs from the PFC settings of priority %d; one set of PFC thresholds applies to every lossless class", p.Prio, pfcPrio)
		}
	}
	if pfcFrom != nil {
		pc := &sw.PFC
		if pfcFrom.XOFF.Dynamic {
			pc.Alpha = pfcFrom.Alpha.Float64()
			pc.XOFF, pc.XON = 0, 0
			pc.XONOffset = units.Size(pfcFrom.XONOffset)
		} else {
			pc.Alpha = 0
			pc.XOFF = units.Size(pfcFrom.XOFF.Size)
			if pfcFrom.XON > 0 {
				pc.XON = units.Size(pfcFrom.XON)
			} else {
				pc.XON = pc.XOFF - units.Size(pfcFrom.XONOffset)
			}
		}
		pc.Headroom = 0
		if !pfcFrom.Headroom.Auto {
			pc.Headroom = units.Size(pfcFrom.Headroom.Size)
		}
	}
	sw.PFC.Quanta = uint16(f.PFC.Quanta)
	sw.PFC.Refresh = 0
	if !f.PFC.Refresh.Auto {
		sw.PFC.Refresh = f.PFC.Refresh.Duration.Time()
	}
	sw.PFC.Watchdog.Enabled = f.PFC.Watchdog != nil
	if w := f.PFC.Watchdog; w != nil {
		sw.PFC.Watchdog.Detection = w.Detect.Time()
		sw.PFC.Watchdog.Restore = w.Restore.Time()
	}
	if s.Outputs.Series != scenarios.SeriesNone {
		c.Sampling.Interval = s.Outputs.SampleInterval.Time()
		c.Sampling.Queues = s.Outputs.Queues
	}
	if err := c.Validate(); err != nil {
		// The field path already says fabric: do not repeat it.
		return c, s.Errorf("fabric", "%s", strings.TrimPrefix(err.Error(), "fabric: "))
	}
	return c, nil
}
