package controller

import (
	"fmt"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sweep"
)

// Search runs besim's search (sweep.RunSearch: the bisection of one
// integer key for the largest value whose predicate is still false, e.g.
// the Table 4 search `--search workload.servers=LO..HI --until
// 'pfc/frames_tx>0'`) with every probe a run on real hosts: point runs
// the scenario with the probed value (the base scenario with the key set,
// as besim's search simulates it) and returns the run's result file, and
// the predicate is evaluated on its report (Report: the NIC counters'
// pfc/frames_tx, cnp/ and nak/ totals, and the workload's metrics). The
// result is besim's search result, table "search" and its notes, with the
// tool berun; a run that did not finish ok is a failed probe (its row
// says why), as a failed simulation is in besim.
func Search(base *sweep.Base, s sweep.Search, point func(sc *scenarios.Scenario) (*ResultFile, error)) (*report.Result, error) {
	runs := 0
	r, _, err := sweep.RunSearch(base, s, nil, sweep.Options{Jobs: 1, Simulate: func(sc *scenarios.Scenario) (*report.Result, report.Timing, error) {
		runs++
		rf, err := point(sc)
		if err != nil {
			return nil, report.Timing{}, err
		}
		rep := Report(rf)
		if rf.Status != "ok" {
			return rep, report.Timing{}, fmt.Errorf("run %s: status %s (details in its result file)", rf.RunID, rf.Status)
		}
		return rep, report.Timing{}, nil
	}})
	if r != nil {
		r.Tool = "berun"
		r.Notes = append(r.Notes, fmt.Sprintf("berun: every probe was a run on the hosts (%d runs); the column named simulations counts them", runs))
	}
	return r, err
}
