package experiment

import (
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/faults"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// FaultSpecs translates the scenario's faults section (times relative to
// the measured interval's start).
func FaultSpecs(s *scenarios.Scenario) []faults.Spec {
	var out []faults.Spec
	for _, f := range s.Faults {
		sp := faults.Spec{Kind: faults.Kind(f.Kind), At: f.At.Time(), Switch: -1, Duration: f.Duration.Time(),
			Period: f.Period.Time(), Count: f.Count, Drop: f.Drop.Float64(), Corrupt: f.Corrupt.Float64()}
		if f.Host != nil {
			sp.Host = *f.Host
		}
		if f.Switch != nil && f.Port != nil {
			sp.Switch, sp.Port = *f.Switch, *f.Port
		}
		sp.DataOnly = f.Frames == scenarios.FramesData
		switch f.Direction {
		case scenarios.DirOut:
			sp.Dir = faults.Out
		case scenarios.DirIn:
			sp.Dir = faults.In
		}
		if f.Prio != nil {
			sp.Prio = *f.Prio
			if f.Kind == scenarios.FaultLoss {
				sp.Prios = 1 << *f.Prio
			}
		}
		out = append(out, sp)
	}
	return out
}

// FaultsResult adds what the injector did and what the faulty links lost.
func FaultsResult(r *report.Result, log []faults.Event, t fabric.Totals) {
	if len(log) == 0 {
		return
	}
	tbl := report.Table{Name: "faults", Title: "Injected faults (paper §7), in time order", KeyName: "fault",
		Columns: []report.Column{{Name: "at", Unit: "ms"}}}
	for _, e := range log {
		tbl.AddRow(e.What, e.At.Seconds()*1e3)
	}
	r.Tables = append(r.Tables, tbl)
	r.Add("faults/steps", float64(len(log)), "")
	r.Add("faults/link_drops", float64(t.FaultDrops), "frames")
	r.Add("faults/pfc_lost", float64(t.FaultPFCLost), "frames")
	r.Add("faults/storm_trips", float64(t.StormTrips), "")
}
