package experiment

import (
	"fmt"
	"io"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/units"
)

// benchmark is the Runner of a benchmark scenario (section benchmark): a
// measurement per point, each on its own kernel (two NICs back to back on
// one wire), reduced by the benchmark's package under workloads/.
type benchmark struct {
	s    *scenarios.Scenario
	runs int
	run  func(s *scenarios.Scenario, r *report.Result)
}

// NewBenchmark is the Runner of a benchmark scenario of runs points that
// run adds to the result. It checks the NIC model once per distinct link
// rate, so that a bad combination is an error before the run.
func NewBenchmark(s *scenarios.Scenario, rates []scenarios.Rate, runs int, run func(s *scenarios.Scenario, r *report.Result)) (Runner, error) {
	seen := map[scenarios.Rate]bool{}
	for _, r := range rates {
		if seen[r] {
			continue
		}
		seen[r] = true
		if _, err := NICConfig(s, units.Rate(r)); err != nil {
			return nil, err
		}
	}
	return &benchmark{s: s, runs: runs, run: run}, nil
}

func (b *benchmark) Explain(w io.Writer) error {
	s := b.s
	_, err := fmt.Fprintf(w, "%s: valid (benchmark %s, %d runs, %s measured after %s warmup each)\n",
		s.Name, s.Benchmark.Kind, b.runs, s.Duration, s.Benchmark.Warmup)
	return err
}

func (b *benchmark) Run() (*report.Result, error) {
	r := NewResult(b.s)
	b.run(b.s, r)
	Events(r, 0)
	return r, nil
}
