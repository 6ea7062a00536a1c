// Package flows is the flow scenarios (a scenario with a flows section and
// no workload or benchmark; the paper's §3 and §5 microbenchmarks of PFC,
// ECN and DCQCN): raw flows on the fabric (hosts.nic: raw), or rc and ud
// flows between simulated RNICs driven by the small verbs application in
// apps.go (hosts.nic: rnic). It registers the experiment kind "flows" and
// reduces a run to flow, port and NIC tables.
package flows

import (
	"errors"
	"fmt"
	"io"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/faults"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// Sim is an assembled, not yet run, flow scenario.
type Sim struct {
	Scenario *scenarios.Scenario
	Kernel   *sim.Kernel
	Net      *fabric.Network
	flows    []flowRef // scenario flow instance of each fabric flow id

	hosts  []*rdmaHost // hosts.nic: rnic, by host index
	rflows []*rdmaFlow // rc and ud flows, in ExpandFlows order
	// sampled are the rc/ud flows with time series (flowSeries), in
	// ExpandFlows order.
	sampled []*rdmaFlow
	inj     *faults.Injector
}

func init() {
	experiment.Register(experiment.Flows, func(s *scenarios.Scenario) (experiment.Runner, error) { return Build(s) })
}

type flowRef struct {
	name string
	inst scenarios.FlowInstance
}

// Build assembles the simulation of a flow scenario.
func Build(s *scenarios.Scenario) (*Sim, error) {
	cfg, err := experiment.FabricConfig(s)
	if err != nil {
		return nil, err
	}
	k := sim.NewKernel()
	net, err := fabric.New(k, cfg)
	if qe := (*fabric.QueuePatternError)(nil); errors.As(err, &qe) {
		return nil, s.Errorf(fmt.Sprintf("outputs.queues[%d]", qe.Index), "%q matches no switch queue (they are named SWITCH->PEER/PRIO, e.g. %q)", qe.Pattern, qe.Example)
	}
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
			Prio: uint8(fi.Prio), Rate: units.Rate(fi.Rate), Size: units.Size(fi.Size), Start: fi.Start.Time()})
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
	inj, err := faults.Schedule(x.Kernel, x.Net, nil, x.Scenario.Seed, experiment.FaultSpecs(x.Scenario))
	if err != nil {
		return x.Scenario.Errorf("faults", "%v", err)
	}
	x.inj = inj
	return nil
}

// Run simulates the scenario's duration and reports.
func (x *Sim) Run() (*report.Result, error) {
	x.Net.Run(x.Scenario.Duration.Time())
	return x.report()
}

// RunWatched implements experiment.Watched: Run, stopped after the event
// that decides w's condition (a search probe). A stopped run reports only
// Watch.Report's fabric counters, when it stopped, and its events; one
// that is never stopped is Run, event for event (the watch schedules
// nothing).
func (x *Sim) RunWatched(w *experiment.Watch) (*report.Result, error) {
	if w.Start(x.Kernel, x.Net); !w.Stopped() {
		x.Net.Run(x.Scenario.Duration.Time())
	}
	if !w.Stopped() {
		return x.report()
	}
	r := experiment.NewResult(x.Scenario)
	w.Report(r)
	experiment.Events(r, x.Kernel.Events())
	return r, nil
}

// report is the result of a run that reached the scenario's duration.
func (x *Sim) report() (*report.Result, error) {
	r := x.Result()
	if x.inj != nil {
		experiment.FaultsResult(r, x.inj.Log, x.Net.Report().Totals)
	}
	experiment.Events(r, x.Kernel.Events())
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
			d := experiment.DCQCNConfig(s, units.Rate(s.Fabric.Links.HostRate))
			cc = fmt.Sprintf("DCQCN (g %.5g, K %s, T %s, B %d B, F %d, R_AI %s, R_HAI %s, min %s, CNP interval %s)",
				d.G, d.AlphaTimer, d.RateTimer, d.ByteCounter, d.FastRecoveryStages,
				scenarios.Rate(d.AdditiveIncrease), scenarios.Rate(d.HyperIncrease), scenarios.Rate(d.MinRate), c.CNPInterval)
		}
		fmt.Fprintf(w, "hosts: simulated RNICs (RoCE MTU %d, %s), CNPs on priority %d\n", c.PortMTU, cc, c.CNPPrio)
	}
	return x.Net.WriteExplain(w)
}
