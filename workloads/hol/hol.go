package hol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/besim/besim/units"
	"slices"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// Config is the paper's Figure 13 workload: one engine between two hosts
// carries a small flow (a SmallSize-byte message every Interval) and
// 0..8 large flows (LargeSize messages back to back, LargeWindow
// outstanding per flow, each answered with a 32-byte response), with
// fragmentation (FragSize) or without (fragment size = LargeSize). The
// link delay, NIC, CPU and core configuration are the runner's (package
// holsim for besim). Zero fields take the defaults named.
type Config struct {
	Rate        int64    // link rate; default 25 Gb/s (the paper's production NICs)
	MTU         int      // default 1024
	LargeFlows  []int    // default 0, 1, 2, 4, 8
	SmallSize   int      // default 512 B
	Interval    sim.Time // small-flow period; default 20 us
	LargeSize   int      // default 1 MiB
	LargeWindow int      // default 2
	FragSize    int      // the fragmented setting; default 4 KiB
	// Warmup is excluded from the statistics (default 2 ms); Measure is the
	// measurement window (default 20 ms).
	Warmup, Measure sim.Time
}

// Prepare applies the defaults and checks c.
func (c *Config) Prepare() error {
	if c.Rate == 0 {
		c.Rate = 25 * units.Gbps
	}
	if c.MTU == 0 {
		c.MTU = 1024
	}
	if len(c.LargeFlows) == 0 {
		c.LargeFlows = []int{0, 1, 2, 4, 8}
	}
	if c.SmallSize == 0 {
		c.SmallSize = 512
	}
	if c.Interval == 0 {
		c.Interval = 20 * sim.Microsecond
	}
	if c.LargeSize == 0 {
		c.LargeSize = 1 << 20
	}
	if c.LargeWindow == 0 {
		c.LargeWindow = 2
	}
	if c.FragSize == 0 {
		c.FragSize = 4 << 10
	}
	if c.Warmup == 0 {
		c.Warmup = 2 * sim.Millisecond
	}
	if c.Measure == 0 {
		c.Measure = 20 * sim.Millisecond
	}
	switch {
	case c.SmallSize < HeaderSize:
		return fmt.Errorf("hol: needs SmallSize >= %d (the payload carries a sequence number and send time)", HeaderSize)
	case c.LargeSize <= c.SmallSize:
		return errors.New("hol: needs LargeSize > SmallSize")
	case c.Interval <= 0 || c.LargeWindow < 1:
		return errors.New("hol: needs a positive Interval and LargeWindow")
	}
	return nil
}

// Settings are the fragment sizes of the two settings of a point,
// fragmented first: FragSize, and LargeSize (whole messages).
func (c *Config) Settings() [2]int { return [2]int{c.FragSize, c.LargeSize} }

// FromScenario translates a benchmark scenario of kind hol (no defaults
// applied).
func FromScenario(s *scenarios.Scenario) Config {
	b := s.Benchmark
	return Config{Rate: int64(b.Rate), LargeFlows: append([]int(nil), b.LargeFlows...),
		SmallSize: int(b.Message), Interval: b.Interval.Time(), LargeSize: int(b.LargeMessage), LargeWindow: b.Depth,
		FragSize: int(b.Fragment), Warmup: b.Warmup.Time(), Measure: s.Duration.Time()}
}

// Point is the small flow's one-way latency (application Send to the
// receiver's message event) for one setting.
type Point struct {
	LargeFlows int
	Fragmented bool
	FragSize   int
	MeanUs     float64
	P50Us      float64
	P99Us      float64
	Samples    int
	LargeGbps  float64 // the large flows' goodput at the receiver, over the window
}

// HeaderSize is the small message's header: sequence number (8 bytes,
// little endian) | send time (8, the runner's clock).
const HeaderSize = 16

// Header is the small message's header.
type Header struct {
	Seq  uint64
	Sent sim.Time
}

// Put writes h into the first HeaderSize bytes of p.
func (h Header) Put(p []byte) {
	_ = p[HeaderSize-1]
	binary.LittleEndian.PutUint64(p[0:], h.Seq)
	binary.LittleEndian.PutUint64(p[8:], uint64(h.Sent))
}

// ParseHeader reads the header at the start of p.
func ParseHeader(p []byte) (Header, error) {
	if len(p) < HeaderSize {
		return Header{}, fmt.Errorf("message of %d bytes, a header needs %d", len(p), HeaderSize)
	}
	return Header{Seq: binary.LittleEndian.Uint64(p[0:]), Sent: sim.Time(binary.LittleEndian.Uint64(p[8:]))}, nil
}

// SmallSender is the small flow's sender: a message every Every until
// Until, each carrying its sequence number and send instant. Not safe for
// concurrent use.
type SmallSender struct {
	Every, Until sim.Time
	seq          uint64
}

// Tick is the sender's timer at now: send reports whether to send a
// message with header h, and rearm whether to set the timer again for
// next.
func (g *SmallSender) Tick(now sim.Time) (send bool, h Header, rearm bool, next sim.Time) {
	if now >= g.Until {
		return false, Header{}, false, 0
	}
	h = Header{Seq: g.seq, Sent: now}
	g.seq++
	return true, h, true, now + g.Every
}

// LatencyReceiver records the one-way latency of Size-byte small
// messages sent in [From, To) and checks that they arrive in order. Not
// safe for concurrent use.
type LatencyReceiver struct {
	Size     int
	From, To sim.Time
	next     uint64
	Samples  []sim.Time
	err      error
}

// Small reports whether an n-byte message is the small flow's.
func (r *LatencyReceiver) Small(n int) bool { return n == r.Size }

// Message is a small message with header h arriving at now.
func (r *LatencyReceiver) Message(now sim.Time, h Header) {
	if h.Seq != r.next && r.err == nil {
		r.err = fmt.Errorf("small flow: message %d arrived, expected %d", h.Seq, r.next)
	}
	r.next = h.Seq + 1
	if h.Sent >= r.From && h.Sent < r.To {
		r.Samples = append(r.Samples, now-h.Sent)
	}
}

// Err is the first order violation.
func (r *LatencyReceiver) Err() error { return r.err }

// LatencyStats returns the mean, median and P99 of s in microseconds.
func LatencyStats(s []sim.Time) (mean, p50, p99 float64) {
	if len(s) == 0 {
		return 0, 0, 0
	}
	v := slices.Clone(s)
	slices.Sort(v)
	var sum float64
	for _, x := range v {
		sum += float64(x)
	}
	us := float64(sim.Microsecond)
	q := func(f float64) float64 {
		i := int(f*float64(len(v))+0.5) - 1
		return float64(v[max(0, min(i, len(v)-1))]) / us
	}
	return sum / float64(len(v)) / us, q(0.5), q(0.99)
}

// Reduce reduces the points of scenario s (large-flow counts outer,
// fragmented first; missing ones are -1) to the hol table and the metrics
// hol/<flows>/<fragmented|whole>/mean and .../p99 of r, with its note.
func Reduce(s *scenarios.Scenario, pts []Point, r *report.Result) {
	b := s.Benchmark
	tbl := report.Table{Name: "hol", KeyName: "large flows/setting",
		Title: fmt.Sprintf("One-way latency of a %s message every %s on an engine shared with large flows of %s messages, with %s fragments and without (paper Figure 13 shape)",
			b.Message, b.Interval, b.LargeMessage, b.Fragment),
		Columns: []report.Column{{Name: "mean", Unit: "us"}, {Name: "P50", Unit: "us"}, {Name: "P99", Unit: "us"},
			{Name: "samples"}, {Name: "large flows", Unit: "Gbps"}}}
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
