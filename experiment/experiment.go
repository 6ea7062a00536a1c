// Package experiment assembles a simulation from a validated scenario and
// reduces what it measured to a report.Result. It is the glue between the
// scenario schema (package scenarios) and the models (fabric, the simulated
// RNIC and DCQCN, and later the ByteExpress core and the workloads), so
// that cmd/besim stays a thin command line.
//
// Three kinds of run: raw flows on the fabric (hosts.nic: raw); rc and ud
// flows between simulated RNICs on the fabric (hosts.nic: rnic), driven by
// the small verbs application in apps.go; and benchmarks (perftest,
// msgrate) that run rnic.PerfTest or rnic.MsgRateTest per point and print
// the model next to the paper's numbers.
package experiment

import (
	"fmt"
	"io"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/faults"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// Sim is an assembled, not yet run, simulation.
type Sim struct {
	Scenario *scenarios.Scenario
	Kernel   *sim.Kernel     // nil for a benchmark (each point has its own)
	Net      *fabric.Network // nil for a benchmark
	flows    []flowRef       // scenario flow instance of each fabric flow id

	hosts  []*rdmaHost // hosts.nic: rnic, by host index
	rflows []*rdmaFlow // rc and ud flows, in ExpandFlows order
	inj    *faults.Injector
}

func init() { Register(Flows, func(s *scenarios.Scenario) (Runner, error) { return buildFlows(s) }) }

type flowRef struct {
	name string
	inst scenarios.FlowInstance
}

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
	c.HostLink = fabric.LinkConfig{Rate: int64(hostRate), Delay: f.Links.Delay.Time()}
	c.FabricLink = fabric.LinkConfig{Rate: int64(upRate), Delay: f.Links.Delay.Time()}
	c.MTU = int(s.Hosts.MTU)

	sw := &c.Switch
	sw.Buffer = int64(f.Switch.Buffer)
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
			sw.ECN[p.Prio] = fabric.ECN{Enabled: true, Kmin: int64(p.ECN.Kmin), Kmax: int64(p.ECN.Kmax), Pmax: float64(p.ECN.Pmax)}
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
			pc.XONOffset = int64(pfcFrom.XONOffset)
		} else {
			pc.Alpha = 0
			pc.XOFF = int64(pfcFrom.XOFF.Size)
			if pfcFrom.XON > 0 {
				pc.XON = int64(pfcFrom.XON)
			} else {
				pc.XON = pc.XOFF - int64(pfcFrom.XONOffset)
			}
		}
		pc.Headroom = 0
		if !pfcFrom.Headroom.Auto {
			pc.Headroom = int64(pfcFrom.Headroom.Size)
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
	c.Sampling.Interval = s.Outputs.SampleInterval.Time()
	if err := c.Validate(); err != nil {
		return c, s.Errorf("fabric", "%v", err)
	}
	return c, nil
}

// buildFlows assembles the simulation of a flow scenario.
func buildFlows(s *scenarios.Scenario) (*Sim, error) {
	cfg, err := FabricConfig(s)
	if err != nil {
		return nil, err
	}
	k := sim.NewKernel()
	net, err := fabric.New(k, cfg)
	if err != nil {
		return nil, s.Errorf("fabric", "%v", err)
	}
	x := &Sim{Scenario: s, Kernel: k, Net: net}
	if s.Hosts.NIC == scenarios.RNICModel {
		if err := x.buildRNIC(); err != nil {
			return nil, err
		}
		if err := x.scheduleFaults(); err != nil {
			return nil, err
		}
		return x, nil
	}
	for _, fi := range s.ExpandFlows() {
		name := fi.Name
		id, err := net.AddFlow(fabric.Flow{Src: fabric.NodeID(fi.Src), Dst: fabric.NodeID(fi.Dst),
			Prio: uint8(fi.Prio), Rate: int64(fi.Rate), Size: int64(fi.Size), Start: fi.Start.Time()})
		if err != nil {
			return nil, s.Errorf("flows", "%s: %v", name, err)
		}
		for int(id) >= len(x.flows) {
			x.flows = append(x.flows, flowRef{})
		}
		x.flows[id] = flowRef{name: name, inst: fi}
	}
	if err := x.scheduleFaults(); err != nil {
		return nil, err
	}
	return x, nil
}

// scheduleFaults injects the scenario's faults into a flow scenario.
func (x *Sim) scheduleFaults() error {
	if len(x.Scenario.Faults) == 0 {
		return nil
	}
	inj, err := faults.Schedule(x.Kernel, x.Net, nil, x.Scenario.Seed, FaultSpecs(x.Scenario))
	if err != nil {
		return x.Scenario.Errorf("faults", "%v", err)
	}
	x.inj = inj
	return nil
}

// Run simulates the scenario's duration and reports.
func (x *Sim) Run() (*report.Result, error) {
	x.Net.Run(x.Scenario.Duration.Time())
	r := x.Result()
	if x.inj != nil {
		FaultsResult(r, x.inj.Log, x.Net.Report().Totals)
	}
	Events(r, x.Kernel.Events())
	return r, nil
}

// Explain writes what `besim validate` prints for a valid scenario: a
// one-line summary and, for a fabric, the derived thresholds, headroom and
// BDP (fabric.Network.WriteExplain).
func (x *Sim) Explain(w io.Writer) error {
	s := x.Scenario
	fmt.Fprintf(w, "%s: valid (%d hosts, %d flows, %s)\n", s.Name, x.Net.NumHosts(), len(s.ExpandFlows()), s.Duration)
	if s.Hosts.NIC == scenarios.RNICModel {
		c := x.hosts[0].nic.Config()
		cc := "no congestion control"
		if c.CC == "dcqcn" {
			d := DCQCNConfig(s, int64(s.Fabric.Links.HostRate))
			cc = fmt.Sprintf("DCQCN (g %.5g, K %s, T %s, B %d B, F %d, R_AI %s, R_HAI %s, min %s, CNP interval %s)",
				d.G, sim.Time(d.AlphaTimer), sim.Time(d.RateTimer), d.ByteCounter, d.FastRecoveryStages,
				scenarios.Rate(d.AdditiveIncrease), scenarios.Rate(d.HyperIncrease), scenarios.Rate(d.MinRate), c.CNPInterval)
		}
		fmt.Fprintf(w, "hosts: simulated RNICs (RoCE MTU %d, %s), CNPs on priority %d\n", c.PortMTU, cc, c.CNPPrio)
	}
	return x.Net.WriteExplain(w)
}
