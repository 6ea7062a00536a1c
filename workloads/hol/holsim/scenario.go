package holsim

import (
	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/units"
	"github.com/besim/besim/workloads/hol"
	"github.com/besim/besim/workloads/internal/simrun"
)

func init() {
	experiment.Register(string(scenarios.HOL), func(s *scenarios.Scenario) (experiment.Runner, error) {
		b := s.Benchmark
		return experiment.NewBenchmark(s, []scenarios.Rate{b.Rate}, 2*len(b.LargeFlows), run)
	})
}

// FromScenario translates a benchmark scenario of kind hol.
func FromScenario(s *scenarios.Scenario) (Config, error) {
	b := s.Benchmark
	nic, err := experiment.NICConfig(s, units.Rate(b.Rate))
	if err != nil {
		return Config{}, err
	}
	nic.SizesOnly = false // the core moves its bytes
	return Config{Config: hol.FromScenario(s), Testbed: simrun.Testbed{LinkDelay: b.Delay.Time(), NIC: nic}}, nil
}

// run measures every (large-flow count, fragmented or not) and reduces
// them.
func run(s *scenarios.Scenario, r *report.Result) {
	cfg, err := FromScenario(s)
	var pts []Point
	if err == nil {
		pts, err = Run(cfg)
	}
	if err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	hol.Reduce(s, pts, r)
}
