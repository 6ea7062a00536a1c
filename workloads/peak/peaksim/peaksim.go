// Package peaksim runs the peak-throughput workload (package peak, the
// paper's Figure 9, §5.5) in simulation: at each link-rate/MTU point,
// ByteExpress over the core on two simhost hosts under one switch
// (package fragsizesim at one fragment size) and the RC and UD perftest
// baselines on two NICs back to back (package perftestsim), on the same
// NIC model (scenario kind peak and the embedded scenario fig9, through
// the experiment registry).
package peaksim

import (
	"fmt"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/fragsize/fragsizesim"
	"github.com/besim/besim/workloads/internal/simrun"
	"github.com/besim/besim/workloads/peak"
	"github.com/besim/besim/workloads/perftest"
	"github.com/besim/besim/workloads/perftest/perftestsim"
)

func init() {
	experiment.Register(string(scenarios.Peak), func(s *scenarios.Scenario) (experiment.Runner, error) {
		var rates []scenarios.Rate
		pts := peak.Points(s.Benchmark)
		for _, p := range pts {
			rates = append(rates, scenarios.Rate(p.Rate))
		}
		return experiment.NewBenchmark(s, rates, len(pts)*(1+len(s.Benchmark.Transports)), run)
	})
}

// BE measures ByteExpress's throughput at point p of scenario s: one
// engine, b.Message-byte messages, b.Depth outstanding, b.Fragment
// fragments, through fragsizesim.
func BE(s *scenarios.Scenario, p peak.Point) (fragsize.Point, error) {
	b := s.Benchmark
	nic, err := experiment.NICConfig(s, units.Rate(p.Rate))
	if err != nil {
		return fragsize.Point{}, err
	}
	nic.SizesOnly = false // the core moves its bytes
	cfg := fragsizesim.Config{
		Config: fragsize.Config{Rates: []int64{p.Rate}, FragSizes: []int{int(b.Fragment)}, MsgSize: int(b.Message),
			Window: b.Depth, MTU: p.MTU, Warmup: b.Warmup.Time(), Measure: s.Duration.Time()},
		Testbed: simrun.Testbed{LinkDelay: b.Delay.Time(), NIC: nic}}
	pts, err := fragsizesim.Run(cfg)
	if err != nil || len(pts) != 1 {
		return fragsize.Point{}, fmt.Errorf("ByteExpress: %w", err)
	}
	return pts[0], nil
}

// Perftest measures ib_send_bw of transport t at point p of scenario s
// with perftest's default message for t (64 KiB for rc, the MTU for ud).
func Perftest(s *scenarios.Scenario, p peak.Point, t scenarios.Transport) (float64, error) {
	nic, err := experiment.NICConfig(s, units.Rate(p.Rate))
	if err != nil {
		return -1, err
	}
	res, err := perftestsim.Run(perftestsim.Config{Config: perftest.ScenarioConfig(s, perftest.Transport(t), verbs.MTU(p.MTU), 0),
		Rate: p.Rate, Delay: s.Benchmark.Delay.Time(), NIC: &nic})
	if err != nil {
		return -1, fmt.Errorf("%s perftest: %w", t, err)
	}
	return res.Gbps, nil
}

func paper(p peak.Point) peak.Paper {
	for _, t := range perftestsim.PaperTable2 {
		if t.Rate == p.Rate && int(t.MTU) == p.MTU {
			return peak.Paper{RC: t.PaperRC, UD: t.PaperUD}
		}
	}
	return peak.Paper{RC: -1, UD: -1}
}

func run(s *scenarios.Scenario, r *report.Result) {
	tbl := peak.Table(s)
	for _, p := range peak.Points(s.Benchmark) {
		m := peak.Measured{BE: -1, RC: -1, UD: -1, BEMessages: -1}
		if be, err := BE(s, p); err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", peak.Key(p), err))
		} else {
			m.BE, m.BEMessages = be.Gbps, be.Messages
		}
		for _, t := range s.Benchmark.Transports {
			g, err := Perftest(s, p, t)
			if err != nil {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", peak.Key(p), err))
			}
			if t == scenarios.UD {
				m.UD = g
			} else {
				m.RC = g
			}
		}
		peak.Add(p, m, paper(p), &tbl, r)
	}
	r.Tables = append(r.Tables, tbl)
	r.Notes = append(r.Notes, peak.Note)
}
