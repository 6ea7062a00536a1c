// Package pingpong is the paper's Figure 8 workload (§5.5), written free
// of the simulator: ByteExpress latency with one message outstanding. One
// socket between two hosts carries a message of each size in turn; the
// receiver answers every message with a Response-byte message and the
// sender sends the next one when the answer arrives. The package holds the
// configuration and its translation from a scenario, the sender's logic
// as a driven state machine (Pinger: what to send, when a latency sample
// is taken) and the reduction to the pingpong table and metrics. besim
// drives it over simhost (package pingpongsim). eRPC, the paper's other
// series in Figure 8, is not modelled.
package pingpong

import (
	"fmt"
	"github.com/besim/besim/units"
	"slices"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// Config is one (link rate, MTU) point of the Figure 8 workload: one
// socket, one message outstanding, each of Messages in turn. The link
// delay, NIC, CPU and core configuration are the runner's.
type Config struct {
	Rate     int64 // link rate, bits/s
	MTU      int   // fabric MTU (the RoCE path MTU follows, at most 4096)
	Messages []int // message sizes, one measurement each
	Response int   // the answer to every message
	// Warmup is run before measuring; Measure is the measured interval.
	Warmup, Measure sim.Time
}

// Point is a scenario's (rate, MTU) point.
type Point struct {
	Rate int64
	MTU  int
}

// Points lists the scenario's (rate, MTU) points: its points, or the
// cross product of rates and mtus (rates outer).
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

// FromScenario translates a benchmark scenario of kind pingpong for one
// of its points.
func FromScenario(s *scenarios.Scenario, p Point) Config {
	b := s.Benchmark
	c := Config{Rate: p.Rate, MTU: p.MTU, Response: int(b.Response), Warmup: b.Warmup.Time(), Measure: s.Duration.Time()}
	for _, m := range b.Messages {
		c.Messages = append(c.Messages, int(m))
	}
	return c
}

// Pinger is the sending side of one measurement: one message of Size
// outstanding at a time; samples are kept for messages sent in
// [From, To). Not safe for concurrent use.
type Pinger struct {
	Size     int
	From, To sim.Time
	sentAt   sim.Time
	inFlight bool
	stopped  bool
	// RTT: send to the answer's arrival; OneWay: send to the message's
	// arrival at the receiver. Samples of messages sent in the interval.
	RTT, OneWay []sim.Time
}

// Send is the runner sending the next message at now: it must send Size
// bytes. It reports false once the interval is over (nothing to send).
func (p *Pinger) Send(now sim.Time) bool {
	if p.inFlight || p.stopped || now >= p.To {
		p.stopped = p.stopped || now >= p.To
		return false
	}
	p.sentAt, p.inFlight = now, true
	return true
}

func (p *Pinger) counted() bool { return p.sentAt >= p.From && p.sentAt < p.To }

// Arrived is the message reaching the receiver at now.
func (p *Pinger) Arrived(now sim.Time) {
	if p.inFlight && p.counted() {
		p.OneWay = append(p.OneWay, now-p.sentAt)
	}
}

// Answered is the answer reaching the sender at now; the runner then
// calls Send for the next message.
func (p *Pinger) Answered(now sim.Time) {
	if !p.inFlight {
		return
	}
	if p.counted() {
		p.RTT = append(p.RTT, now-p.sentAt)
	}
	p.inFlight = false
}

// Stats are the latency statistics of one message size, microseconds.
type Stats struct {
	Message                    int
	RTTMean, RTTP50, RTTP99    float64
	OneWayMean, OneWayP99, Max float64 // Max: the largest RTT
	Samples                    int
}

// Summarize reduces a Pinger's samples (-1 where there are none).
func Summarize(p *Pinger) Stats {
	st := Stats{Message: p.Size, RTTMean: -1, RTTP50: -1, RTTP99: -1, OneWayMean: -1, OneWayP99: -1, Max: -1, Samples: len(p.RTT)}
	if len(p.RTT) > 0 {
		st.RTTMean, st.RTTP50, st.RTTP99, st.Max = summary(p.RTT)
	}
	if len(p.OneWay) > 0 {
		st.OneWayMean, _, st.OneWayP99, _ = summary(p.OneWay)
	}
	return st
}

// summary is the mean, nearest-rank P50 and P99 and the maximum, in us.
func summary(v []sim.Time) (mean, p50, p99, mx float64) {
	s := slices.Clone(v)
	slices.Sort(s)
	var sum sim.Time
	for _, x := range s {
		sum += x
	}
	rank := func(q float64) sim.Time {
		i := int(q*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	us := func(t sim.Time) float64 { return float64(t) / float64(sim.Microsecond) }
	return us(sum) / float64(len(s)), us(rank(0.50)), us(rank(0.99)), us(s[len(s)-1])
}

// RateKey is "25G" for whole Gb/s, else the rate's own spelling.
func RateKey(r int64) string {
	if r%int64(units.Gbps) == 0 {
		return fmt.Sprintf("%dG", r/int64(units.Gbps))
	}
	return scenarios.Rate(r).String()
}

// Table is the pingpong result table, to be filled by Add.
func Table(s *scenarios.Scenario) report.Table {
	return report.Table{Name: "pingpong", KeyName: "rate/MTU/message",
		Title: fmt.Sprintf("ByteExpress latency with one message outstanding, %s answer (paper Figure 8 shape; eRPC not modelled)", s.Benchmark.Response),
		Columns: []report.Column{{Name: "mean", Unit: "us"}, {Name: "P50", Unit: "us"}, {Name: "P99", Unit: "us"},
			{Name: "max", Unit: "us"}, {Name: "one-way mean", Unit: "us"}, {Name: "one-way P99", Unit: "us"}, {Name: "samples"}}}
}

// Add reduces the measurements of point p (in the scenario's message
// order; missing ones are -1) to rows of tbl and metrics of r:
// pingpong/<rate>/<MTU>B/<message>B/{mean,p99,oneway_mean}_us.
func Add(s *scenarios.Scenario, p Point, st []Stats, tbl *report.Table, r *report.Result) {
	for i, m := range s.Benchmark.Messages {
		x := Stats{RTTMean: -1, RTTP50: -1, RTTP99: -1, OneWayMean: -1, OneWayP99: -1, Max: -1, Samples: -1}
		if i < len(st) {
			x = st[i]
		}
		key := fmt.Sprintf("%s/%dB/%dB", RateKey(p.Rate), p.MTU, int64(m))
		tbl.AddRow(key, x.RTTMean, x.RTTP50, x.RTTP99, x.Max, x.OneWayMean, x.OneWayP99, float64(x.Samples))
		r.Add("pingpong/"+key+"/mean_us", x.RTTMean, "us")
		r.Add("pingpong/"+key+"/p99_us", x.RTTP99, "us")
		r.Add("pingpong/"+key+"/oneway_mean_us", x.OneWayMean, "us")
	}
}
