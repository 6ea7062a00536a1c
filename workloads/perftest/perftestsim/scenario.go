// Package perftestsim runs the perftest benchmark (package
// workloads/perftest, paper §5.1, Table 2) in simulation: the two
// endpoints on simulated RNICs (package rnic) back to back on one wire,
// stepped by their CQ notifications in virtual time, each point of the
// scenario at its link rate and MTU, next to the paper's numbers.
package perftestsim

import (
	"fmt"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/perftest"
)

func init() {
	experiment.Register(string(scenarios.Perftest), func(s *scenarios.Scenario) (experiment.Runner, error) {
		var rates []scenarios.Rate
		for _, r := range s.Benchmark.PerfRuns() {
			rates = append(rates, r.Rate)
		}
		return experiment.NewBenchmark(s, rates, len(s.Benchmark.PerfRuns()), runPerftest)
	})
}

// paperTable2 returns the paper's Table 2 value for (rate, MTU, transport),
// or -1 where the paper has none.
func paperTable2(rate scenarios.Rate, mtu scenarios.Size, t scenarios.Transport) float64 {
	for _, p := range PaperTable2 {
		if p.Rate == int64(rate) && int64(p.MTU) == int64(mtu) {
			if t == scenarios.UD {
				return p.PaperUD
			}
			return p.PaperRC
		}
	}
	return -1
}

func runPerftest(s *scenarios.Scenario, r *report.Result) {
	b := s.Benchmark
	runs := b.PerfRuns()
	tbl := report.Table{Name: "perftest", Title: "perftest (ib_send_bw-like): two simulated NICs back to back, model vs paper Table 2",
		KeyName: "rate/MTU/transport", Columns: []report.Column{
			{Name: "model", Unit: "Gbps"}, {Name: "paper", Unit: "Gbps"}, {Name: "model/paper", Unit: "%"},
			{Name: "line", Unit: "Gbps"}, {Name: "model/line", Unit: "%"},
			{Name: "msg rate", Unit: "Mmsg/s"}, {Name: "pkt rate", Unit: "Mpkt/s"}, {Name: "message", Unit: "B"},
		}}
	type cell struct{ model, paper float64 }
	type pivotRow struct {
		key    string
		rc, ud *cell
	}
	var pivot []*pivotRow
	find := func(key string) *pivotRow {
		for _, p := range pivot {
			if p.key == key {
				return p
			}
		}
		p := &pivotRow{key: key}
		pivot = append(pivot, p)
		return p
	}
	paperRows := 0
	for _, run := range runs {
		key := perftest.Key(int64(run.Rate), verbs.MTU(run.MTU), perftest.Transport(run.Transport))
		nic, err := experiment.NICConfig(s, units.Rate(run.Rate))
		var res Result
		if err == nil {
			res, err = Run(Config{Config: perftest.ScenarioConfig(s, perftest.Transport(run.Transport), verbs.MTU(run.MTU), int(run.Message)),
				Rate: int64(run.Rate), Delay: b.Delay.Time(), NIC: &nic})
		}
		model, mps, pps := -1.0, -1.0, -1.0
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %v", key, err))
		} else {
			model, mps, pps = res.Gbps, res.MsgRate/1e6, res.PacketRate/1e6
			if n := res.Sender.RNRNAKsRcvd; n > 0 {
				r.Notes = append(r.Notes, fmt.Sprintf("%s: %d RNR NAKs: a SEND reached the server before its initial receives were posted (Run posts them on the server CPU at time 0; a fast NIC model can beat it), and the client waited min_rnr_timer (0.64 ms) before retrying, which the measured interval includes", key, n))
			}
		}
		line := rnic.LinePayloadGbps(perftest.Transport(run.Transport), units.Rate(run.Rate), verbs.MTU(run.MTU))
		paper := paperTable2(run.Rate, run.MTU, run.Transport)
		vsPaper := -1.0
		if paper > 0 && model >= 0 {
			vsPaper = 100 * model / paper
			paperRows++
		}
		vsLine := -1.0
		if model >= 0 {
			vsLine = 100 * model / line
		}
		tbl.AddRow(key, model, paper, vsPaper, line, vsLine, mps, pps, float64(run.Message))
		r.Add(perftest.Metric(key), model, "Gbps")
		p := find(fmt.Sprintf("%s/%dB", perftest.RateKey(int64(run.Rate)), run.MTU))
		c := &cell{model, paper}
		if run.Transport == scenarios.UD {
			p.ud = c
		} else {
			p.rc = c
		}
	}
	r.Tables = append(r.Tables, tbl)

	both := report.Table{Name: "rc_vs_ud", Title: "RC and UD throughput (Table 2 layout), model vs paper", KeyName: "rate/MTU",
		Columns: []report.Column{{Name: "RC model", Unit: "Gbps"}, {Name: "RC paper", Unit: "Gbps"},
			{Name: "UD model", Unit: "Gbps"}, {Name: "UD paper", Unit: "Gbps"}, {Name: "UD/RC model", Unit: "%"}}}
	for _, p := range pivot {
		if p.rc == nil || p.ud == nil {
			continue
		}
		ratio := -1.0
		if p.rc.model > 0 && p.ud.model >= 0 {
			ratio = 100 * p.ud.model / p.rc.model
		}
		both.AddRow(p.key, p.rc.model, p.rc.paper, p.ud.model, p.ud.paper, ratio)
	}
	if len(both.Rows) > 0 {
		r.Tables = append(r.Tables, both)
	}
	r.Notes = append(r.Notes,
		"throughput is the receiver's in-order payload over the measured interval, as ib_send_bw reports it; RC sends one WQE per message (the NIC segments it), UD one WQE, one receive and one CQE per MTU-sized datagram, so UD becomes packet-rate bound where the per-WQE cost exceeds a frame time (rnic package doc)")
	if paperRows > 0 {
		r.Notes = append(r.Notes, "paper: ByteExpress Table 2 (ib_send_bw at 25G/1024B, 100G/1024B, 100G/4096B, 200G/4096B); '-' where the paper has no number")
	}
}
