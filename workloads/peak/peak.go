// Package peak is the paper's Figure 9 workload (§5.5), written free of
// the simulator: ByteExpress's peak throughput at each link-rate/MTU
// point (one engine sending Message-byte messages, Depth outstanding,
// each answered with 32 bytes: package fragsize's Sender and Receiver at
// one fragment size) beside the RC and UD perftest baselines of Table 2
// (package perftest). It holds the points, the reduction to the peak table
// and metrics and the result's notes, and the wall-clock schedule of a run
// on real hosts (Schedule: the series take turns on the link); besim runs
// it in package peaksim, berun's peak roles in berun/role.
// eRPC, the paper's other series in Figure 9, is not modelled.
package peak

import (
	"fmt"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/perftest"
)

// Point is one link-rate/MTU point.
type Point struct {
	Rate int64
	MTU  int
}

// Points lists a peak scenario's points: its points, or the cross product
// of rates and mtus (rates outer).
func Points(b *scenarios.Benchmark) []Point {
	var out []Point
	for _, p := range b.Points {
		out = append(out, Point{int64(p.Rate), int(p.MTU)})
	}
	if len(b.Points) == 0 {
		for _, r := range b.Rates {
			for _, m := range b.MTUs {
				out = append(out, Point{int64(r), int(m)})
			}
		}
	}
	return out
}

// Key is "100G/4096B".
func Key(p Point) string { return fmt.Sprintf("%s/%dB", perftest.RateKey(p.Rate), p.MTU) }

// Measured is one point's throughputs, Gb/s; -1 where not measured (a
// transport not in the scenario, or a failed run).
type Measured struct {
	BE, RC, UD float64
	// BEMessages is the ByteExpress messages delivered in the interval.
	BEMessages int
}

// Paper is the paper's Table 2 perftest values at one point (-1: none).
type Paper struct{ RC, UD float64 }

// Table is the peak result table, to be filled by Add.
func Table(s *scenarios.Scenario) report.Table {
	b := s.Benchmark
	return report.Table{Name: "peak", KeyName: "rate/MTU",
		Title: fmt.Sprintf("Peak throughput by link rate/MTU: ByteExpress (one engine, %s messages, %d outstanding, %s fragments, 32 B answers) vs RC/UD perftest (paper Figure 9 shape; eRPC not modelled)", b.Message, b.Depth, b.Fragment),
		Columns: []report.Column{{Name: "ByteExpress", Unit: "Gbps"}, {Name: "RC perftest", Unit: "Gbps"}, {Name: "UD perftest", Unit: "Gbps"},
			{Name: "RC line", Unit: "Gbps"}, {Name: "ByteExpress of RC line", Unit: "%"}, {Name: "ByteExpress / RC perftest", Unit: "%"},
			{Name: "RC paper", Unit: "Gbps"}, {Name: "UD paper", Unit: "Gbps"}, {Name: "ByteExpress messages"}}}
}

// Add adds point p's row to tbl and its metrics to r:
// peak/<rate>/<MTU>B/{be,rc,ud}/gbps.
func Add(p Point, m Measured, paper Paper, tbl *report.Table, r *report.Result) {
	key := Key(p)
	line := perftest.LinePayloadGbps(verbs.RC, p.Rate, verbs.MTU(min(p.MTU, 4096)))
	ofLine, ofRC := -1.0, -1.0
	if m.BE >= 0 {
		ofLine = 100 * m.BE / line
		if m.RC > 0 {
			ofRC = 100 * m.BE / m.RC
		}
	}
	tbl.AddRow(key, m.BE, m.RC, m.UD, line, ofLine, ofRC, paper.RC, paper.UD, float64(m.BEMessages))
	r.Add("peak/"+key+"/be/gbps", m.BE, "Gbps")
	r.Add("peak/"+key+"/rc/gbps", m.RC, "Gbps")
	r.Add("peak/"+key+"/ud/gbps", m.UD, "Gbps")
}

// Note explains the table.
const Note = "ByteExpress is the payload its receiving NIC accepted over the interval (fragments plus under 0.1% metadata) with one engine and one socket, as in the paper's throughput setup (1 MB messages, a 32-byte answer each, enough outstanding to fill the path); the fragment size is a scenario parameter (Figure 10: the model needs large fragments at 100 Gb/s and above). RC and UD perftest are ib_send_bw on the same NIC model (the Table 2 runs; '-' where the scenario leaves a transport out), and the paper columns are its Table 2 perftest values. eRPC, the paper's third series, is not modelled (no eRPC model exists in besim); the paper gives Figure 9 as bars without numbers for ByteExpress"

// Schedule is the wall-clock schedule of a peak run on real hosts, where
// the series take turns on the one link: ByteExpress first, in a slot of
// its own (a fragsize.Sweep of one point: warm-up, measured interval and a
// tenth to drain), then each perftest transport of the scenario in turn
// (Each long: the warm-up, then the measured interval), from Perftest on.
type Schedule struct {
	BE         fragsize.Sweep
	BESlot     sim.Time
	Perftest   sim.Time // the perftest transports' start, BESlot
	Each       sim.Time // each transport's share: warm-up and measured interval
	Transports int
}

// ScheduleDuration is the run length whose schedule measures at least
// meas per series after warm, with n perftest transports. It is whole
// nanoseconds, so it survives a time.Duration.
func ScheduleDuration(n int, warm, meas sim.Time) sim.Time {
	const ns = sim.Nanosecond
	each := (warm + meas + ns - 1) / ns * ns
	return fragsize.SweepDuration(1, warm, meas) + sim.Time(n)*each
}

// NewSchedule divides a run of d between ByteExpress and n perftest
// transports, each with warm-up warm, so that every series measures
// about as long (ScheduleDuration inverts it).
func NewSchedule(d sim.Time, n int, warm sim.Time) (Schedule, error) {
	const ns = sim.Nanosecond
	if n < 0 || warm < 0 {
		return Schedule{}, fmt.Errorf("peak: %d transports with warm-up %v", n, warm)
	}
	// d = 10/9 x + n x, x the warm-up and measured interval of a series.
	each := d * 9 / sim.Time(10+9*n) / ns * ns
	sc := Schedule{BESlot: d - sim.Time(n)*each, Each: each, Transports: n}
	sc.Perftest = sc.BESlot
	be, err := fragsize.NewSweep(sc.BESlot, 1, warm)
	if err != nil || each <= warm {
		return Schedule{}, fmt.Errorf("peak: %v for ByteExpress and %d perftest transports leaves no measured interval after the warm-up %v of each", d, n, warm)
	}
	sc.BE = be
	return sc, nil
}
