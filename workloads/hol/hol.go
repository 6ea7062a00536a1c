package hol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
)

// Config is the paper's Figure 13 experiment (§6.1, scheduling
// head-of-line blocking): one engine between two hosts carries a small flow
// (a SmallSize-byte message every Interval) and 0..8 large flows (LargeSize
// messages back to back, LargeWindow outstanding per flow, each answered
// with a 32-byte response), with fragmentation (FragSize) or without
// (fragment size = LargeSize). Zero fields take the defaults named.
type Config struct {
	Rate        int64    // link rate; default 25 Gb/s (the paper's production NICs)
	LinkDelay   sim.Time // one-way per link; default 250 ns (two hosts on one ToR)
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
	NIC             rnic.Config        // default rnic.DefaultConfig()
	CPU             simhost.CPUCost    // default simhost.DefaultCPUCost()
	BE              byteexpress.Config // core config (FragSize is set per point)
}

// Point is the small flow's one-way latency (application Send to the
// receiver's EvMessage) for one setting.
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

func (c *Config) defaults() {
	if c.Rate == 0 {
		c.Rate = 25 * fabric.Gbps
	}
	if c.LinkDelay == 0 {
		c.LinkDelay = simhost.DefaultTestbedLinkDelay
	}
	if c.MTU == 0 {
		c.MTU = fabric.DefaultMTU
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
	if c.NIC.PortMTU == 0 {
		c.NIC = rnic.DefaultConfig()
	}
}

// Run runs every (large-flow count, with/without fragmentation) setting,
// flow counts outer, fragmented first, and returns the points in that order.
func Run(cfg Config) ([]Point, error) {
	cfg.defaults()
	switch {
	case cfg.SmallSize < 16:
		return nil, errors.New("hol: needs SmallSize >= 16 (the payload carries a sequence number and send time)")
	case cfg.LargeSize <= cfg.SmallSize:
		return nil, errors.New("hol: needs LargeSize > SmallSize")
	case cfg.Interval <= 0 || cfg.LargeWindow < 1:
		return nil, errors.New("hol: needs a positive Interval and LargeWindow")
	}
	var out []Point
	for _, n := range cfg.LargeFlows {
		for _, frag := range []bool{true, false} {
			p, err := point(&cfg, n, frag)
			if err != nil {
				return out, fmt.Errorf("hol: with %d large flows (fragmented %v): %w", n, frag, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

func point(cfg *Config, n int, frag bool) (Point, error) {
	sc := simhost.DefaultConfig(2)
	sc.Fabric.HostLink = fabric.LinkConfig{Rate: cfg.Rate, Delay: cfg.LinkDelay}
	sc.Fabric.MTU = cfg.MTU
	sc.NIC = cfg.NIC
	sc.CPU = cfg.CPU
	sc.BE = cfg.BE
	fs := cfg.FragSize
	if !frag {
		fs = cfg.LargeSize
	}
	sc.BE.FragSize = fs
	c, err := simhost.New(sc)
	if err != nil {
		return Point{}, err
	}
	a, b := c.Host(0), c.Host(1)
	end := cfg.Warmup + cfg.Measure
	lat := &latencyRecv{size: cfg.SmallSize, from: cfg.Warmup, to: end}
	rx := simhost.NewBulkReceiver(cfg.LargeSize, 32, cfg.Warmup, end, lat)
	b.SetApp(rx)
	b.Listen()
	small, err := a.Dial(b)
	if err != nil {
		return Point{}, err
	}
	tx := simhost.NewBulkSender(cfg.LargeSize, cfg.LargeWindow)
	for range n {
		s, err := a.Dial(b)
		if err != nil {
			return Point{}, err
		}
		tx.AddSocket(s)
	}
	a.SetApp(tx)
	tx.Start(a)
	gen := &periodicSender{h: a, sock: small, size: cfg.SmallSize, every: cfg.Interval, until: end}
	gen.timer.Init(c.Kernel(), gen, 0)
	gen.timer.Set(c.Kernel().Now())
	c.Run(end)
	// Let messages sent inside the window arrive, so slow ones count.
	c.Run(end + cfg.Measure)
	p := Point{LargeFlows: n, Fragmented: frag, FragSize: fs, Samples: len(lat.samples),
		LargeGbps: float64(rx.Bytes()) * 8 / cfg.Measure.Seconds() / 1e9}
	p.MeanUs, p.P50Us, p.P99Us = latencyStats(lat.samples)
	err = errors.Join(tx.Err(), rx.Err(), gen.err, lat.err, c.Err())
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return p, err
}

// periodicSender sends a size-byte message on sock every period, carrying
// its sequence number and send instant (sim.Time) in the first 16 bytes.
type periodicSender struct {
	h     *simhost.Host
	sock  *byteexpress.Socket
	size  int
	every sim.Time
	until sim.Time
	seq   uint64
	timer sim.Timer
	err   error
}

func (g *periodicSender) OnEvent(now sim.Time, _ uint64) {
	if now >= g.until {
		return
	}
	g.timer.Set(now + g.every)
	if crashed, _ := g.h.Crashed(); crashed {
		return
	}
	buf, err := g.h.Allocate(g.size)
	if err != nil {
		g.err = err
		return
	}
	p := buf.Bytes()
	binary.LittleEndian.PutUint64(p[0:], g.seq)
	binary.LittleEndian.PutUint64(p[8:], uint64(now))
	g.seq++
	if err := g.sock.Send(buf, g.size); err != nil {
		_ = g.h.Free(buf)
		g.err = err
	}
}

// latencyRecv records the one-way latency of size-byte messages sent by a
// periodicSender, for those sent inside [from, to), and checks their order.
type latencyRecv struct {
	size     int
	from, to sim.Time
	next     uint64
	samples  []sim.Time
	err      error
}

func (r *latencyRecv) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	if ev.Kind != byteexpress.EvMessage || ev.Len != r.size {
		simhost.FreeApp{}.OnEvent(h, ev)
		return
	}
	p := ev.Buf.Bytes()
	seq := binary.LittleEndian.Uint64(p[0:])
	sent := sim.Time(binary.LittleEndian.Uint64(p[8:]))
	_ = h.Free(ev.Buf)
	if seq != r.next && r.err == nil {
		r.err = fmt.Errorf("small flow: message %d arrived, expected %d", seq, r.next)
	}
	r.next = seq + 1
	if sent >= r.from && sent < r.to {
		r.samples = append(r.samples, h.Now()-sent)
	}
}

// latencyStats returns the mean, median and P99 in microseconds.
func latencyStats(s []sim.Time) (mean, p50, p99 float64) {
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
