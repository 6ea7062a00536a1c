package hol

import (
	"fmt"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
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
	nic, err := experiment.NICConfig(s, int64(b.Rate))
	if err != nil {
		return Config{}, err
	}
	nic.SizesOnly = false // the core moves its bytes
	return Config{Rate: int64(b.Rate), LinkDelay: b.Delay.Time(), LargeFlows: append([]int(nil), b.LargeFlows...),
		SmallSize: int(b.Message), Interval: b.Interval.Time(), LargeSize: int(b.LargeMessage), LargeWindow: b.Depth,
		FragSize: int(b.Fragment), Warmup: b.Warmup.Time(), Measure: s.Duration.Time(), NIC: nic}, nil
}

// run measures every (large-flow count, fragmented or not) and reduces
// them.
func run(s *scenarios.Scenario, r *report.Result) {
	b := s.Benchmark
	tbl := report.Table{Name: "hol", KeyName: "large flows/setting",
		Title: fmt.Sprintf("One-way latency of a %s message every %s on an engine shared with large flows of %s messages, with %s fragments and without (paper Figure 13 shape)",
			b.Message, b.Interval, b.LargeMessage, b.Fragment),
		Columns: []report.Column{{Name: "mean", Unit: "us"}, {Name: "P50", Unit: "us"}, {Name: "P99", Unit: "us"},
			{Name: "samples"}, {Name: "large flows", Unit: "Gbps"}}}
	cfg, err := FromScenario(s)
	var pts []Point
	if err == nil {
		pts, err = Run(cfg)
	}
	if err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	i := 0
	for _, n := range b.LargeFlows {
		for _, frag := range []bool{true, false} {
			p := Point{MeanUs: -1, P50Us: -1, P99Us: -1, Samples: -1, LargeGbps: -1}
			if i < len(pts) {
				p = pts[i]
			}
			i++
			setting := "fragmented"
			if !frag {
				setting = "whole"
			}
			key := fmt.Sprintf("%d/%s", n, setting)
			tbl.AddRow(key, p.MeanUs, p.P50Us, p.P99Us, float64(p.Samples), p.LargeGbps)
			r.Add("hol/"+key+"/mean", p.MeanUs, "us")
			r.Add("hol/"+key+"/p99", p.P99Us, "us")
		}
	}
	r.Tables = append(r.Tables, tbl)
	r.Notes = append(r.Notes, fmt.Sprintf("whole: the fragment size is the large message (%s), so a small message waits behind whole large messages in the engine's send ring; fragmented: it waits behind at most a few %s fragments; latency is from the application's Send to the receiver's message event; the paper's Figure 13 gives the curves, not a table", b.LargeMessage, b.Fragment))
}
