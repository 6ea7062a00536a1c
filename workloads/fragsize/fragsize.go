package fragsize

import (
	"errors"
	"fmt"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/verbs"
)

// Config is the paper's Figure 10 experiment: one QP (one engine, one
// socket) sending large messages between two hosts through one switch,
// with a 32-byte response per message and Window messages outstanding,
// while the fragment size varies. Zero fields take the defaults named.
type Config struct {
	Rates     []int64  // link rates, bits/s; default 25 and 100 Gb/s
	FragSizes []int    // default 512 B, 1, 2, 4, 8, 16, 32, 64 KiB
	MsgSize   int      // default 1 MiB
	Window    int      // messages outstanding; default 8
	MTU       int      // fabric MTU; default 1024 (the RoCE path MTU follows)
	LinkDelay sim.Time // one-way per link; default simhost.DefaultTestbedLinkDelay
	// Warmup is run before measuring (pool growth, first metadata round
	// trips); default 20 message times at line rate. Measure is the
	// measurement window; default 40 message times at line rate.
	Warmup, Measure sim.Time
	NIC             rnic.Config        // default rnic.DefaultConfig()
	CPU             simhost.CPUCost    // default simhost.DefaultCPUCost()
	BE              byteexpress.Config // core config (FragSize is overridden per point)
}

// Point is one measurement.
type Point struct {
	Rate       int64   // link rate, bits/s
	FragSize   int     // fragment size S
	Gbps       float64 // goodput: payload the receiving NIC accepted per second (fragments + <0.1% metadata)
	LineGbps   float64 // the most goodput the link carries (rnic.LinePayloadGbps)
	Efficiency float64 // Gbps / LineGbps
	SenderCPU  float64 // I/O-thread CPU utilisation of the sender over the window
	RecvCPU    float64 // and of the receiver
	Messages   int     // messages delivered in the window
}

func (c *Config) defaults() {
	if len(c.Rates) == 0 {
		c.Rates = []int64{25 * fabric.Gbps, 100 * fabric.Gbps}
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
		c.MTU = fabric.DefaultMTU
	}
	if c.LinkDelay == 0 {
		c.LinkDelay = simhost.DefaultTestbedLinkDelay
	}
	if c.NIC.PortMTU == 0 {
		c.NIC = rnic.DefaultConfig()
	}
}

// Run runs the experiment for every (rate, fragment size), rates outer,
// and returns the points in that order. It is deterministic.
func Run(cfg Config) ([]Point, error) {
	cfg.defaults()
	if cfg.MsgSize < 64 || cfg.Window < 1 {
		return nil, errors.New("fragsize: needs MsgSize >= 64 and Window >= 1")
	}
	var out []Point
	for _, rate := range cfg.Rates {
		for _, fs := range cfg.FragSizes {
			p, err := point(&cfg, rate, fs)
			if err != nil {
				return out, fmt.Errorf("fragsize: at %d Gb/s, %d B fragments: %w", rate/fabric.Gbps, fs, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

func point(cfg *Config, rate int64, frag int) (Point, error) {
	sc := simhost.DefaultConfig(2)
	sc.Fabric.HostLink = fabric.LinkConfig{Rate: rate, Delay: cfg.LinkDelay}
	sc.Fabric.MTU = cfg.MTU
	sc.NIC = cfg.NIC
	sc.CPU = cfg.CPU
	sc.BE = cfg.BE
	sc.BE.FragSize = frag
	c, err := simhost.New(sc)
	if err != nil {
		return Point{}, err
	}
	a, b := c.Host(0), c.Host(1)
	line := rnic.LinePayloadGbps(verbs.RC, rate, verbs.MTU(min(cfg.MTU, 4096)))
	msgTime := sim.TxTime(int64(cfg.MsgSize), rate)
	warm, meas := cfg.Warmup, cfg.Measure
	if warm == 0 {
		warm = 20 * msgTime
	}
	if meas == 0 {
		meas = 40 * msgTime
	}
	rx := simhost.NewBulkReceiver(cfg.MsgSize, 32, warm, warm+meas, nil)
	b.SetApp(rx)
	b.Listen()
	s, err := a.Dial(b)
	if err != nil {
		return Point{}, err
	}
	tx := simhost.NewBulkSender(cfg.MsgSize, cfg.Window, s)
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
	p := Point{Rate: rate, FragSize: frag, LineGbps: line, Messages: rx.Msgs(),
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
