package experiment

import (
	"fmt"
	"io"
	"strconv"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/units"
	"github.com/besim/besim/workloads/app"
)

// Workload is the Runner of a workload scenario (section workload): the
// ByteExpress core over simhost, driven by a package under workloads/.
type Workload struct {
	Scenario *scenarios.Scenario
	Fabric   fabric.Config // the fabric Explain describes
	// Summary writes Explain's one-line summary.
	Summary func(out io.Writer) error
	// Simulate runs the workload and adds its metrics, tables and notes to
	// r; it returns the simulated events.
	Simulate func(r *report.Result) (events uint64, err error)
	// SimulateWatched, when set, is Simulate under a Watch (it starts the
	// watch on its kernel and network, and returns at once once the
	// watch stopped, adding nothing to r); nil: the workload always runs
	// to its end.
	SimulateWatched func(r *report.Result, w *Watch) (events uint64, err error)
}

// Explain writes the summary and the derived thresholds, headroom and BDP
// of the fabric the workload runs on.
func (w *Workload) Explain(out io.Writer) error {
	if err := w.Summary(out); err != nil {
		return err
	}
	net, err := fabric.New(sim.NewKernel(), w.Fabric)
	if err != nil {
		return w.Scenario.Errorf("fabric", "%v", err)
	}
	return net.WriteExplain(out)
}

// Run simulates the workload; a failed one has a note, no metrics and an
// error.
func (w *Workload) Run() (*report.Result, error) {
	r := NewResult(w.Scenario)
	ev, err := w.Simulate(r)
	Events(r, ev)
	return r, Failed(r, err)
}

// RunWatched implements Watched: Run, stopped as soon as w's condition is
// decided when the workload supports it (a stopped run reports
// Watch.Report's metrics and no error).
func (w *Workload) RunWatched(x *Watch) (*report.Result, error) {
	if w.SimulateWatched == nil {
		return w.Run()
	}
	r := NewResult(w.Scenario)
	ev, err := w.SimulateWatched(r, x)
	Events(r, ev)
	if x.Stopped() && err == nil {
		x.Report(r)
	}
	return r, Failed(r, err)
}

// Topology is Explain's description of a workload's leaf-spine: its
// leaves, spines and each leaf's oversubscription (host links down
// against uplinks, one to every spine).
func Topology(s *scenarios.Scenario) string {
	t := s.Fabric.Topology
	l := s.Fabric.Links
	spines := "spines"
	if t.Spines == 1 {
		spines = "spine"
	}
	down := int64(t.HostsPerLeaf) * int64(l.HostRate)
	up := int64(t.Spines) * int64(l.UplinkRate)
	over := "oversubscription unknown"
	if up > 0 {
		over = fmt.Sprintf("%s:1 oversubscribed", strconv.FormatFloat(float64(down)/float64(up), 'g', 3, 64))
		if down <= up {
			over = "non-blocking"
		}
	}
	return fmt.Sprintf("leaf-spine of %d leaves x %d hosts, %d %s (per leaf %d x %v down, %d x %v up: %s)",
		t.Leaves, t.HostsPerLeaf, t.Spines, spines, t.HostsPerLeaf, l.HostRate, t.Spines, l.UplinkRate, over)
}

// ClusterConfig is the simhost configuration of a workload scenario: its
// fabric, NIC model and engine settings (app.Engine).
func ClusterConfig(s *scenarios.Scenario) (simhost.Config, error) {
	fc, err := FabricConfig(s)
	if err != nil {
		return simhost.Config{}, err
	}
	// A workload's result has no switch-queue series (only flow scenarios
	// write them): the fabric samples no queue depths.
	fc.Sampling.Interval = 0
	nic, err := NICConfig(s, units.Rate(s.Fabric.Links.HostRate))
	if err != nil {
		return simhost.Config{}, err
	}
	nic.SizesOnly = false
	nic.RDMAHead = simhost.AppHead
	nic.RecvView = true
	return simhost.Config{Fabric: fc, NIC: nic, CPU: simhost.DefaultCPUCost(), BE: app.Engine(s.Workload)}, nil
}

// FabricMetrics adds the whole run's PFC and fabric totals that both
// workloads report (SCHEMA.md lists them).
func FabricMetrics(r *report.Result, t *fabric.Totals) {
	r.Add("pfc/frames_tx", float64(t.PFCFramesTx), "frames")
	r.Add("pfc/xoff_events", float64(t.XOFFEvents), "")
	r.Add("pfc/host_paused", t.HostPausedTime.Seconds()*1e6, "us")
	r.Add("pfc/longest_pause_host", t.LongestHostPause.Seconds()*1e6, "us")
	r.Add("pfc/longest_pause_switch", t.LongestPortPause.Seconds()*1e6, "us")
	r.Add("fabric/drops", float64(t.Drops+t.HeadroomDrops), "packets")
	r.Add("fabric/watchdog_drops", float64(t.WatchdogDrops), "packets")
	r.Add("pfc/storm_trips", float64(t.StormTrips), "")
	r.Add("fabric/ecn_marks", float64(t.ECNMarks), "packets")
	r.Add("switch/max_shared_used", float64(t.SharedUsedMax), "bytes")
}
