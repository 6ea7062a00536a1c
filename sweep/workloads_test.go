package sweep

import (
	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	// The scenarios these tests run need every workload kind registered.
	_ "github.com/besim/besim/workloads/all"
)

// These tests run besim's simulator, as package sweep/simulate makes the
// default (which they cannot import: it imports this package).
func init() {
	DefaultSimulator = experiment.Simulate
	DefaultWatchedSimulator = func(s *scenarios.Scenario, until Predicate) (*report.Result, report.Timing, error) {
		return experiment.SimulateWatched(s, until.Metric, until.Decided)
	}
}
