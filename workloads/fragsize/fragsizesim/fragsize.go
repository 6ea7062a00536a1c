package fragsizesim

import (
	"errors"
	"fmt"
	"github.com/besim/besim/units"
	"github.com/besim/besim/workloads/internal/simrun"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/fragsize"
)

// Config is the Figure 10 workload (fragsize.Config) on two simulated
// hosts under one switch. Zero fields take the defaults named.
type Config struct {
	fragsize.Config
	simrun.Testbed
}

// Point is one measurement.
type Point = fragsize.Point

func (c *Config) defaults() error {
	c.Testbed.Defaults()
	return c.Prepare()
}

// Run runs the experiment for every (rate, fragment size), rates outer,
// and returns the points in that order. It is deterministic.
func Run(cfg Config) ([]Point, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	var out []Point
	for _, rate := range cfg.Rates {
		for _, fs := range cfg.FragSizes {
			p, err := point(&cfg, rate, fs)
			if err != nil {
				return out, fmt.Errorf("fragsize: at %d Gb/s, %d B fragments: %w", rate/units.Gbps, fs, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

func point(cfg *Config, rate int64, frag int) (Point, error) {
	sc := simhost.DefaultConfig(2)
	sc.Fabric.HostLink = fabric.LinkConfig{Rate: units.Rate(rate), Delay: cfg.LinkDelay}
	sc.Fabric.MTU = units.Size(cfg.MTU)
	sc.NIC = cfg.NIC
	sc.CPU = cfg.CPU
	sc.BE = cfg.BE
	sc.BE.FragSize = frag
	c, err := simhost.New(sc)
	if err != nil {
		return Point{}, err
	}
	a, b := c.Host(0), c.Host(1)
	line := rnic.LinePayloadGbps(verbs.RC, units.Rate(rate), verbs.MTU(min(cfg.MTU, 4096)))
	warm, meas := cfg.Interval(rate)
	rx := NewReceiverApp(fragsize.NewReceiver(cfg.MsgSize, warm, warm+meas), nil)
	b.SetApp(rx)
	b.Listen()
	s, err := a.Dial(b)
	if err != nil {
		return Point{}, err
	}
	tx := NewSenderApp(fragsize.NewSender(cfg.Window), cfg.MsgSize, s)
	a.SetApp(tx)
	tx.Start(a)
	c.Run(warm)
	a0, b0 := a.CPUBusy(), b.CPUBusy()
	r0 := b.NIC().Stats().RxPayload
	c.Run(warm + meas)
	// Payload accepted by the receiving NIC: the WRITE fragments plus the
	// few bytes of metadata requests (well under 0.1%); finer-grained than
	// counting whole 1 MiB messages.
	rx1 := b.NIC().Stats().RxPayload
	p := Point{Rate: rate, FragSize: frag, LineGbps: line, Messages: rx.M.Msgs,
		Gbps:      float64(rx1-r0) * 8 / meas.Seconds() / 1e9,
		SenderCPU: float64(a.CPUBusy()-a0) / float64(meas),
		RecvCPU:   float64(b.CPUBusy()-b0) / float64(meas)}
	p.Efficiency = p.Gbps / line
	err = errors.Join(tx.Err(), rx.Err(), c.Err())
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return p, err
}
