package holsim

import (
	"errors"
	"fmt"
	"github.com/besim/besim/units"
	"github.com/besim/besim/workloads/internal/simrun"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/fragsize/fragsizesim"
	"github.com/besim/besim/workloads/hol"
)

// Config is the Figure 13 workload (hol.Config) on two simulated hosts
// under one switch. Zero fields take the defaults named.
type Config struct {
	hol.Config
	simrun.Testbed
}

// Point is the small flow's one-way latency for one setting.
type Point = hol.Point

func (c *Config) defaults() error {
	c.Testbed.Defaults()
	return c.Prepare()
}

// Run runs every (large-flow count, with/without fragmentation) setting,
// flow counts outer, fragmented first, and returns the points in that order.
func Run(cfg Config) ([]Point, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
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
	sc.Fabric.HostLink = fabric.LinkConfig{Rate: units.Rate(cfg.Rate), Delay: cfg.LinkDelay}
	sc.Fabric.MTU = units.Size(cfg.MTU)
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
	lat := &LatencyApp{M: &hol.LatencyReceiver{Size: cfg.SmallSize, From: cfg.Warmup, To: end}}
	rx := fragsizesim.NewReceiverApp(fragsize.NewReceiver(cfg.LargeSize, cfg.Warmup, end), lat)
	b.SetApp(rx)
	b.Listen()
	small, err := a.Dial(b)
	if err != nil {
		return Point{}, err
	}
	tx := fragsizesim.NewSenderApp(fragsize.NewSender(cfg.LargeWindow), cfg.LargeSize)
	for range n {
		s, err := a.Dial(b)
		if err != nil {
			return Point{}, err
		}
		tx.AddSocket(s)
	}
	a.SetApp(tx)
	tx.Start(a)
	gen := NewSmallApp(c.Kernel(), a, small, cfg.SmallSize, &hol.SmallSender{Every: cfg.Interval, Until: end})
	gen.Start(c.Kernel().Now())
	c.Run(end)
	// Let messages sent inside the window arrive, so slow ones count.
	c.Run(end + cfg.Measure)
	p := Point{LargeFlows: n, Fragmented: frag, FragSize: fs, Samples: len(lat.M.Samples),
		LargeGbps: float64(rx.M.Bytes) * 8 / cfg.Measure.Seconds() / 1e9}
	p.MeanUs, p.P50Us, p.P99Us = hol.LatencyStats(lat.M.Samples)
	err = errors.Join(tx.Err(), rx.Err(), gen.Err(), lat.Err(), c.Err())
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return p, err
}
