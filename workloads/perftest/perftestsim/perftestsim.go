package perftestsim

import (
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/perftest"
)

// Config is the benchmark (perftest.Config) on two simulated NICs back to
// back: the link rate, the cable and the NIC model.
type Config struct {
	perftest.Config
	Rate  int64    // link rate, bits/s (default 100 Gb/s)
	Delay sim.Time // cable one-way delay, default 1 us
	// NIC is the NIC model (nil: DefaultConfig). The test always runs in
	// sizes-only mode.
	NIC *rnic.Config
}

// Result is what the receiver measured over the interval.
type Result struct {
	Config     Config  // with defaults filled in
	Gbps       float64 // payload received in order, Gb/s (what ib_send_bw reports)
	MsgRate    float64 // messages received per second
	PacketRate float64 // data packets received per second
	// LineGbps is the payload rate the link allows for this transport and
	// MTU (headers and inter-frame gaps removed).
	LineGbps         float64
	Sender, Receiver rnic.Stats
}

func (c Config) withDefaults() Config {
	c.Config = c.Config.WithDefaults()
	if c.Rate == 0 {
		c.Rate = 100 * units.Gbps
	}
	if c.Delay == 0 {
		c.Delay = rnic.DefaultWireDelay
	}
	return c
}

// app runs one perftest.Endpoint on a simulated host CPU: the NIC's CQ
// notifications step it, with the calls charged to its CPU.
type app struct {
	ep  *perftest.Endpoint
	ctx *rnic.Context
	cpu *rnic.CPU
}

func (a *app) OnEvent(now sim.Time, _ uint64) {
	a.ctx.SetCPU(a.cpu)
	defer a.ctx.SetCPU(nil)
	_ = a.ep.Step(now) // the error stays in the endpoint (Err)
}

// charged runs f with the context's calls charged to the app's CPU.
func (a *app) charged(f func() error) error {
	a.ctx.SetCPU(a.cpu)
	defer a.ctx.SetCPU(nil)
	return f()
}

// simBase is the (sizes-only) address both endpoints register.
const simBase = 0x10_0000_0000

// Run runs the ib_send_bw-like measurement of cfg and reports the
// receiver's goodput. Throughput is whatever the NIC model yields: for RC a
// 64 KiB message is one WQE segmented by the NIC, for UD every MTU-sized
// datagram is its own send WQE, receive WQE and CQE. The goodput is the
// receiving NIC's in-order payload counter over the interval (the
// endpoint's own count quantizes to whole messages).
func Run(cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	ncfg := rnic.DefaultConfig()
	if cfg.NIC != nil {
		ncfg = *cfg.NIC
	}
	ncfg.SizesOnly = true
	if cfg.MTU > ncfg.PortMTU {
		ncfg.PortMTU = cfg.MTU
	}
	if cfg.Transport == verbs.UD {
		// UD sends use the port MTU (the wire does not clamp it).
		ncfg.PortMTU = cfg.MTU
	}
	k := sim.NewKernel()
	na, err := rnic.New(k, "perf-client", ncfg)
	if err != nil {
		return Result{}, err
	}
	nb, err := rnic.New(k, "perf-server", ncfg)
	if err != nil {
		return Result{}, err
	}
	w := rnic.NewWire(k, nil, units.Rate(cfg.Rate), cfg.Delay)
	w.Connect(na, 1, nb, 2)
	ca, _ := na.Open()
	cb, _ := nb.Open()
	snd := &app{ep: perftest.NewSender(cfg.Config), ctx: ca, cpu: rnic.NewCPU(k, "client")}
	rcv := &app{ep: perftest.NewReceiver(cfg.Config), ctx: cb, cpu: rnic.NewCPU(k, "server")}
	for _, a := range []*app{snd, rcv} {
		if err := a.charged(func() error { return a.ep.Open(a.ctx, simBase) }); err != nil {
			return Result{}, err
		}
		a.ep.CQ().(*rnic.CQ).SetNotify(a, 0)
	}
	if err := snd.ep.Connect(rcv.ep.Info()); err != nil {
		return Result{}, err
	}
	if err := rcv.ep.Connect(snd.ep.Info()); err != nil {
		return Result{}, err
	}
	if err := rcv.charged(rcv.ep.PostReceives); err != nil {
		return Result{}, err
	}
	k.At(0, snd, 0)
	k.RunUntil(cfg.Warmup)
	startBytes := nb.Stats().RxPayload
	k.RunUntil(cfg.Warmup + cfg.Duration)
	if err := snd.ep.Err(); err != nil {
		return Result{}, err
	}
	if err := rcv.ep.Err(); err != nil {
		return Result{}, err
	}
	secs := cfg.Duration.Seconds()
	res := Result{Config: cfg,
		Gbps:     float64(nb.Stats().RxPayload-startBytes) * 8 / secs / 1e9,
		MsgRate:  float64(rcv.ep.Stats().Msgs) / secs,
		LineGbps: rnic.LinePayloadGbps(cfg.Transport, units.Rate(cfg.Rate), cfg.MTU),
		Sender:   na.Stats(), Receiver: nb.Stats()}
	res.PacketRate = res.MsgRate * float64(cfg.Packets())
	return res, nil
}

// Table2Point is one row of the paper's Table 2 with the measured values.
type Table2Point struct {
	Rate         int64
	MTU          verbs.MTU
	PaperRC      float64 // Gb/s, ib_send_bw
	PaperUD      float64
	ModelRC      float64
	ModelUD      float64
	LineRC       float64
	LineUD       float64
	RCErr, UDErr error
}

// PaperTable2 lists the paper's Table 2 (RC and UD ib_send_bw, Gb/s).
var PaperTable2 = []Table2Point{
	{Rate: 25 * units.Gbps, MTU: 1024, PaperRC: 23.15, PaperUD: 22.97},
	{Rate: 100 * units.Gbps, MTU: 1024, PaperRC: 92.26, PaperUD: 48.29},
	{Rate: 100 * units.Gbps, MTU: 4096, PaperRC: 97.03, PaperUD: 95.74},
	{Rate: 200 * units.Gbps, MTU: 4096, PaperRC: 191.36, PaperUD: 114.70},
}

// Table2 runs Run for every row of PaperTable2 with NIC model nic (nil:
// DefaultConfig) and returns the rows with the model's numbers filled in.
func Table2(nic *rnic.Config) []Table2Point {
	out := make([]Table2Point, len(PaperTable2))
	for i, r := range PaperTable2 {
		rc, err := Run(Config{Config: perftest.Config{Transport: verbs.RC, MTU: r.MTU}, Rate: r.Rate, NIC: nic})
		r.ModelRC, r.RCErr, r.LineRC = rc.Gbps, err, rnic.LinePayloadGbps(verbs.RC, units.Rate(r.Rate), r.MTU)
		ud, err := Run(Config{Config: perftest.Config{Transport: verbs.UD, MTU: r.MTU}, Rate: r.Rate, NIC: nic})
		r.ModelUD, r.UDErr, r.LineUD = ud.Gbps, err, rnic.LinePayloadGbps(verbs.UD, units.Rate(r.Rate), r.MTU)
		out[i] = r
	}
	return out
}
