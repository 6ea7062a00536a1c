package fragsize

import (
	"errors"
	"fmt"
	"github.com/besim/besim/units"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// ResponseSize is the receiver's answer to every message: 32 bytes
// (the paper's §5.5 throughput setup).
const ResponseSize = 32

// Config is the paper's Figure 10 workload: one QP (one engine, one
// socket) sending MsgSize-byte messages, Window outstanding, each answered
// with a ResponseSize-byte response, while the fragment size varies over
// FragSizes at each of Rates. The link delay, NIC, CPU and core
// configuration are the runner's (package fragsizesim for besim). Zero
// fields take the defaults named.
type Config struct {
	Rates     []int64 // link rates, bits/s; default 25 and 100 Gb/s
	FragSizes []int   // default 512 B, 1, 2, 4, 8, 16, 32, 64 KiB
	MsgSize   int     // default 1 MiB
	Window    int     // messages outstanding; default 8
	MTU       int     // fabric MTU; default 1024 (the RoCE path MTU follows)
	// Warmup is run before measuring (pool growth, first metadata round
	// trips); default 20 message times at line rate. Measure is the
	// measurement window; default 40 message times at line rate.
	Warmup, Measure sim.Time
}

// Prepare applies the defaults and checks c.
func (c *Config) Prepare() error {
	if len(c.Rates) == 0 {
		c.Rates = []int64{25 * units.Gbps, 100 * units.Gbps}
	}
	if len(c.FragSizes) == 0 {
		for s := 512; s <= 64<<10; s *= 2 {
			c.FragSizes = append(c.FragSizes, s)
		}
	}
	if c.MsgSize == 0 {
		c.MsgSize = 1 << 20
	}
	if c.Window == 0 {
		c.Window = 8
	}
	if c.MTU == 0 {
		c.MTU = 1024
	}
	if c.MsgSize < 64 || c.Window < 1 {
		return errors.New("fragsize: needs MsgSize >= 64 and Window >= 1")
	}
	return nil
}

// Interval is the warm-up and measurement window at rate: the configured
// ones, or 20 and 40 message times at line rate.
func (c *Config) Interval(rate int64) (warm, meas sim.Time) {
	msgTime := sim.TxTime(int64(c.MsgSize), units.Rate(rate))
	warm, meas = c.Warmup, c.Measure
	if warm == 0 {
		warm = 20 * msgTime
	}
	if meas == 0 {
		meas = 40 * msgTime
	}
	return warm, meas
}

// FromScenario translates a benchmark scenario of kind fragsize for one of
// its rates (no defaults applied).
func FromScenario(s *scenarios.Scenario, rate scenarios.Rate) Config {
	b := s.Benchmark
	cfg := Config{Rates: []int64{int64(rate)}, MsgSize: int(b.Message), Window: b.Depth,
		Warmup: b.Warmup.Time(), Measure: s.Duration.Time()}
	for _, f := range b.Fragments {
		cfg.FragSizes = append(cfg.FragSizes, int(f))
	}
	return cfg
}

// Point is one measurement.
type Point struct {
	Rate       int64   // link rate, bits/s
	FragSize   int     // fragment size S
	Gbps       float64 // goodput: payload the receiving NIC accepted per second (fragments + <0.1% metadata)
	LineGbps   float64 // the most goodput the link carries
	Efficiency float64 // Gbps / LineGbps
	SenderCPU  float64 // I/O-thread CPU utilisation of the sender over the window
	RecvCPU    float64 // and of the receiver
	Messages   int     // messages delivered in the window
}

// Sender is the sending host: it keeps Window messages outstanding on each
// of its flows and sends one more whenever a response arrives. The runner
// sends MsgSize bytes per message asked for. Not safe for concurrent use.
type Sender struct {
	window  int
	stopped bool
	Sent    uint64 // messages asked for
	Resps   uint64 // responses received
}

// NewSender returns a sender keeping window messages outstanding per flow.
func NewSender(window int) *Sender { return &Sender{window: window} }

// Start is a flow coming up: the messages to send on it.
func (s *Sender) Start() int { return s.ask(s.window) }

// Response is a response arriving on a flow: the messages to send on it.
func (s *Sender) Response() int {
	s.Resps++
	return s.ask(1)
}

// Stop ends the load: no message is asked for after it.
func (s *Sender) Stop() { s.stopped = true }

func (s *Sender) ask(n int) int {
	if s.stopped {
		return 0
	}
	s.Sent += uint64(n)
	return n
}

// Receiver is the receiving host: it answers every message of at least
// Min bytes with a ResponseSize-byte response and counts those arriving in
// the measured interval [From, To). Not safe for concurrent use.
type Receiver struct {
	Min      int
	From, To sim.Time
	Bytes    int64 // bulk bytes that arrived in the interval
	Msgs     int   // bulk messages that arrived in the interval
}

// NewReceiver returns a receiver of messages of at least min bytes,
// measuring [from, to).
func NewReceiver(min int, from, to sim.Time) *Receiver {
	return &Receiver{Min: min, From: from, To: to}
}

// Bulk reports whether an n-byte message is the receiver's (smaller ones
// are other traffic the host also receives).
func (r *Receiver) Bulk(n int) bool { return n >= r.Min }

// Message is an n-byte bulk message arriving at now: it is counted if in
// the interval, and the runner answers it with the returned size.
func (r *Receiver) Message(now sim.Time, n int) (resp int) {
	if now >= r.From && now < r.To {
		r.Bytes += int64(n)
		r.Msgs++
	}
	return ResponseSize
}

// RateKey is "25G" for whole Gb/s, else the rate's own spelling.
func RateKey(r int64) string {
	if r%units.Gbps == 0 {
		return fmt.Sprintf("%dG", r/units.Gbps)
	}
	return scenarios.Rate(r).String()
}

// Table is the fragsize result table of scenario s, to be filled by Add.
func Table(s *scenarios.Scenario) report.Table {
	b := s.Benchmark
	return report.Table{Name: "fragsize", KeyName: "rate/fragment",
		Title: fmt.Sprintf("Goodput of one engine against the fragment size, %s messages, %d outstanding (paper Figure 10 shape)", b.Message, b.Depth),
		Columns: []report.Column{{Name: "goodput", Unit: "Gbps"}, {Name: "line", Unit: "Gbps"}, {Name: "of line", Unit: "%"},
			{Name: "sender CPU", Unit: "%"}, {Name: "receiver CPU", Unit: "%"}, {Name: "messages"}}}
}

// Add reduces the points measured at one rate of scenario s (in its
// fragment order; missing ones are -1) to rows of tbl and metrics of r:
// fragsize/<rate>/<fragment>B/gbps and .../efficiency.
func Add(s *scenarios.Scenario, rate scenarios.Rate, pts []Point, tbl *report.Table, r *report.Result) {
	for i, f := range s.Benchmark.Fragments {
		p := Point{Gbps: -1, Efficiency: -1, SenderCPU: -1, RecvCPU: -1, Messages: -1}
		if i < len(pts) {
			p = pts[i]
			p.Efficiency *= 100
			p.SenderCPU *= 100
			p.RecvCPU *= 100
		}
		key := fmt.Sprintf("%s/%dB", RateKey(int64(rate)), int64(f))
		tbl.AddRow(key, p.Gbps, p.LineGbps, p.Efficiency, p.SenderCPU, p.RecvCPU, float64(p.Messages))
		r.Add("fragsize/"+key+"/gbps", p.Gbps, "Gbps")
		r.Add("fragsize/"+key+"/efficiency", p.Efficiency, "%")
	}
}

// Note is the result note that explains the table.
const Note = "goodput is the payload the receiving NIC accepted (fragments and under 0.1% metadata); every fragment costs a WQE at the NIC and a WR of CPU, and the 32-deep ring with one signalled WR per batch keeps at most 32 fragments in flight, so small fragments cannot fill the link and a faster link needs larger ones; the paper's Figure 10 gives the curves, not a table"

// Sweep is the wall-clock schedule of a fragment-size sweep on real hosts,
// where each point needs its own engines (the fragment size is an engine
// setting): n points, one after the other, each Slot long from the run's
// start: Warmup, then Measure, then the rest of the slot (a tenth) to let
// the messages in flight drain before the next point's engines start.
type Sweep struct {
	Points                int
	Slot, Warmup, Measure sim.Time
}

// NewSweep divides a run of d into n slots with warm-up warm.
func NewSweep(d sim.Time, n int, warm sim.Time) (Sweep, error) {
	if n < 1 {
		return Sweep{}, errors.New("fragsize: a sweep needs at least one fragment size")
	}
	sw := Sweep{Points: n, Slot: d / sim.Time(n), Warmup: warm}
	sw.Measure = sw.Slot*9/10 - warm
	if warm < 0 || sw.Measure <= 0 {
		return Sweep{}, fmt.Errorf("fragsize: %v for %d points leaves no measured interval after the warm-up %v (9/10 of each slot minus the warm-up)", d, n, warm)
	}
	return sw, nil
}

// SweepDuration is the run length whose sweep measures meas per point
// after warm: NewSweep(SweepDuration(n, warm, meas), n, warm) has Measure
// of at least meas. Slots are whole nanoseconds, so the length survives a
// time.Duration.
func SweepDuration(n int, warm, meas sim.Time) sim.Time {
	const ns = sim.Nanosecond
	slot := ((warm+meas)*10 + 8) / 9
	slot = (slot + ns - 1) / ns * ns
	return sim.Time(n) * slot
}

// Point is the point whose slot holds t (time since the run's start),
// clamped to the sweep.
func (sw Sweep) Point(t sim.Time) int { return max(0, min(int(t/sw.Slot), sw.Points-1)) }

// Window is point i's measured interval.
func (sw Sweep) Window(i int) (from, to sim.Time) {
	from = sim.Time(i)*sw.Slot + sw.Warmup
	return from, from + sw.Measure
}
