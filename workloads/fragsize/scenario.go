package fragsize

import (
	"fmt"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
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
	b := s.Benchmark
	nic, err := experiment.NICConfig(s, int64(rate))
	if err != nil {
		return Config{}, err
	}
	nic.SizesOnly = false // the core moves its bytes
	cfg := Config{Rates: []int64{int64(rate)}, MsgSize: int(b.Message), Window: b.Depth,
		LinkDelay: b.Delay.Time(), Warmup: b.Warmup.Time(), Measure: s.Duration.Time(), NIC: nic}
	for _, f := range b.Fragments {
		cfg.FragSizes = append(cfg.FragSizes, int(f))
	}
	return cfg, nil
}

// rateKey is "25G" for whole Gb/s, else the rate's own spelling.
func rateKey(r int64) string {
	if r%int64(scenarios.Gbps) == 0 {
		return fmt.Sprintf("%dG", r/int64(scenarios.Gbps))
	}
	return scenarios.Rate(r).String()
}

// run measures every (rate, fragment size), rates outer, and reduces them.
func run(s *scenarios.Scenario, r *report.Result) {
	b := s.Benchmark
	tbl := report.Table{Name: "fragsize", KeyName: "rate/fragment",
		Title: fmt.Sprintf("Goodput of one engine against the fragment size, %s messages, %d outstanding (paper Figure 10 shape)", b.Message, b.Depth),
		Columns: []report.Column{{Name: "goodput", Unit: "Gbps"}, {Name: "line", Unit: "Gbps"}, {Name: "of line", Unit: "%"},
			{Name: "sender CPU", Unit: "%"}, {Name: "receiver CPU", Unit: "%"}, {Name: "messages"}}}
	for _, rate := range b.Rates {
		cfg, err := FromScenario(s, rate)
		var pts []Point
		if err == nil {
			pts, err = Run(cfg)
		}
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", rateKey(int64(rate)), err))
		}
		for i, f := range b.Fragments {
			p := Point{Gbps: -1, Efficiency: -1, SenderCPU: -1, RecvCPU: -1, Messages: -1}
			if i < len(pts) {
				p = pts[i]
				p.Efficiency *= 100
				p.SenderCPU *= 100
				p.RecvCPU *= 100
			}
			key := fmt.Sprintf("%s/%dB", rateKey(int64(rate)), int64(f))
			tbl.AddRow(key, p.Gbps, p.LineGbps, p.Efficiency, p.SenderCPU, p.RecvCPU, float64(p.Messages))
			r.Add("fragsize/"+key+"/gbps", p.Gbps, "Gbps")
			r.Add("fragsize/"+key+"/efficiency", p.Efficiency, "%")
		}
	}
	r.Tables = append(r.Tables, tbl)
	r.Notes = append(r.Notes, "goodput is the payload the receiving NIC accepted (fragments and under 0.1% metadata); every fragment costs a WQE at the NIC and a WR of CPU, and the 32-deep ring with one signalled WR per batch keeps at most 32 fragments in flight, so small fragments cannot fill the link and a faster link needs larger ones; the paper's Figure 10 gives the curves, not a table")
}
