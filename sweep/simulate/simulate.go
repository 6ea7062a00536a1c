// Package simulate makes besim's simulator (experiment.Simulate, every
// workload kind linked through workloads/all) the default simulator of
// package sweep: import it for its side effect, as cmd/besim does. Package
// sweep itself links no simulator, so that berun can run the same
// searches on real hosts.
package simulate

import (
	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sweep"
	_ "github.com/besim/besim/workloads/all"
)

func init() {
	sweep.DefaultSimulator = experiment.Simulate
	sweep.DefaultWatchedSimulator = func(s *scenarios.Scenario, until sweep.Predicate) (*report.Result, report.Timing, error) {
		return experiment.SimulateWatched(s, until.Metric, until.Decided)
	}
}
