package fragsizesim

import (
	"fmt"
	"github.com/besim/besim/units"
	"github.com/besim/besim/workloads/internal/simrun"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/fragsize"
)

func init() {
	experiment.Register(string(scenarios.Fragsize), func(s *scenarios.Scenario) (experiment.Runner, error) {
		b := s.Benchmark
		return experiment.NewBenchmark(s, b.Rates, len(b.Rates)*len(b.Fragments), run)
	})
}

// FromScenario translates a benchmark scenario of kind fragsize for one of
// its rates (the NIC model's DCQCN, if any, starts at that rate).
func FromScenario(s *scenarios.Scenario, rate scenarios.Rate) (Config, error) {
	nic, err := experiment.NICConfig(s, units.Rate(rate))
	if err != nil {
		return Config{}, err
	}
	nic.SizesOnly = false // the core moves its bytes
	return Config{Config: fragsize.FromScenario(s, rate), Testbed: simrun.Testbed{LinkDelay: s.Benchmark.Delay.Time(), NIC: nic}}, nil
}

// run measures every (rate, fragment size), rates outer, and reduces them.
func run(s *scenarios.Scenario, r *report.Result) {
	tbl := fragsize.Table(s)
	for _, rate := range s.Benchmark.Rates {
		cfg, err := FromScenario(s, rate)
		var pts []Point
		if err == nil {
			pts, err = Run(cfg)
		}
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", fragsize.RateKey(int64(rate)), err))
		}
		fragsize.Add(s, rate, pts, &tbl, r)
	}
	r.Tables = append(r.Tables, tbl)
	r.Notes = append(r.Notes, fragsize.Note)
}
