package pingpongsim

import (
	"fmt"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/units"
	"github.com/besim/besim/workloads/internal/simrun"
	"github.com/besim/besim/workloads/pingpong"
)

func init() {
	experiment.Register(string(scenarios.PingPong), func(s *scenarios.Scenario) (experiment.Runner, error) {
		var rates []scenarios.Rate
		pts := pingpong.Points(s.Benchmark)
		for _, p := range pts {
			rates = append(rates, scenarios.Rate(p.Rate))
		}
		return experiment.NewBenchmark(s, rates, len(pts)*len(s.Benchmark.Messages), run)
	})
}

// FromScenario translates a benchmark scenario of kind pingpong for one of
// its points.
func FromScenario(s *scenarios.Scenario, p pingpong.Point) (Config, error) {
	nic, err := experiment.NICConfig(s, units.Rate(p.Rate))
	if err != nil {
		return Config{}, err
	}
	nic.SizesOnly = false // the core moves its bytes
	return Config{Config: pingpong.FromScenario(s, p), Testbed: simrun.Testbed{LinkDelay: s.Benchmark.Delay.Time(), NIC: nic}}, nil
}

// Note is the result note that explains the table.
const Note = "latency with one message outstanding on one socket between two hosts under one switch: mean, P50, P99 and max are the round trip from the sender's Send to the answer's delivery; one-way is Send to the message's delivery at the receiver. Messages up to 4 KiB are copied into a SEND; larger ones take the zero-copy path (metadata round trip, then WRITEs), hence the step past 4 KiB. The model has no OS noise, interrupts or cache misses: its spread comes only from modelled queueing (the core's step and batching phase), so its tail is narrower than a real host's. eRPC, the paper's other series in Figure 8, is not modelled (no eRPC model exists in besim), and the paper's figure gives curves, not numbers"

func run(s *scenarios.Scenario, r *report.Result) {
	tbl := pingpong.Table(s)
	for _, p := range pingpong.Points(s.Benchmark) {
		cfg, err := FromScenario(s, p)
		var st []pingpong.Stats
		if err == nil {
			st, err = Run(cfg)
		}
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s/%dB: %v", pingpong.RateKey(p.Rate), p.MTU, err))
		}
		pingpong.Add(s, p, st, &tbl, r)
	}
	r.Tables = append(r.Tables, tbl)
	r.Notes = append(r.Notes, Note)
}
