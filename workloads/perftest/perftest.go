package perftest

import (
	"fmt"

	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// Config is an ib_send_bw-like bandwidth measurement between two NICs
// back to back (paper §5.1, Table 2): one QP, SENDs of MsgSize with TxDepth
// outstanding, every CQMod-th signalled, RxDepth receives kept posted.
type Config struct {
	Transport verbs.QPType // verbs.RC (default) or verbs.UD
	Rate      int64        // link rate, bits/s (default 100 Gb/s)
	MTU       verbs.MTU    // path MTU (default 4096)
	// MsgSize defaults to 65536 bytes for RC (perftest's default size) and
	// to the MTU for UD (a UD message cannot exceed it).
	MsgSize  int
	TxDepth  int      // default 128 (perftest -t)
	RxDepth  int      // default 512 (perftest -r)
	CQMod    int      // default 100 (perftest --cq-mod)
	Warmup   sim.Time // default 50 us
	Duration sim.Time // measured interval, default 500 us
	Delay    sim.Time // cable one-way delay, default 1 us
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
	if c.Transport == 0 {
		c.Transport = verbs.RC
	}
	if c.Rate == 0 {
		c.Rate = 100 * rnic.Gbps
	}
	if c.MTU == 0 {
		c.MTU = 4096
	}
	if c.MsgSize == 0 {
		c.MsgSize = 65536
		if c.Transport == verbs.UD {
			c.MsgSize = int(c.MTU)
		}
	}
	if c.TxDepth == 0 {
		c.TxDepth = 128
	}
	if c.RxDepth == 0 {
		c.RxDepth = 512
	}
	if c.CQMod == 0 {
		c.CQMod = 100
	}
	c.CQMod = min(c.CQMod, c.TxDepth)
	if c.Warmup == 0 {
		c.Warmup = 50 * sim.Microsecond
	}
	if c.Duration == 0 {
		c.Duration = 500 * sim.Microsecond
	}
	if c.Delay == 0 {
		c.Delay = sim.Microsecond
	}
	return c
}

// perfApp is the sender or receiver program of Run.
type perfApp struct {
	k      *sim.Kernel
	ctx    *rnic.Context
	cpu    *rnic.CPU
	qp     verbs.QP
	cq     *rnic.CQ
	send   bool
	wrs    []verbs.SendWR
	rwrs   []verbs.RecvWR
	wc     [64]verbs.WC
	posted uint64 // sends posted
	out    int    // sends outstanding
	cfg    Config
	// Receiver measurement.
	from, to   sim.Time
	msgs       uint64
	fail       error
	grh        int
	depth, mod int
}

func (a *perfApp) OnEvent(now sim.Time, _ uint64) {
	a.ctx.SetCPU(a.cpu)
	defer a.ctx.SetCPU(nil)
	for {
		k := a.cq.Poll(a.wc[:])
		for _, wc := range a.wc[:k] {
			if wc.Status != verbs.WCSuccess && a.fail == nil {
				a.fail = fmt.Errorf("perftest: completion %v on QP %d", wc.Status, wc.QPN)
			}
			if a.send {
				a.out -= a.mod
			} else if now >= a.from && now < a.to {
				a.msgs++
			}
		}
		if !a.send && k > 0 {
			a.postRecvs(k)
		}
		if k < len(a.wc) {
			break
		}
	}
	if a.send {
		a.fill()
	}
}

func (a *perfApp) fill() {
	n := a.depth - a.out
	if n <= 0 {
		return
	}
	for i := 0; i < n; i++ {
		w := &a.wrs[i]
		a.posted++
		w.Flags = 0
		if a.posted%uint64(a.mod) == 0 {
			w.Flags = verbs.FlagSignaled
		}
		w.Next = nil
		if i+1 < n {
			w.Next = &a.wrs[i+1]
		}
	}
	if _, err := a.qp.PostSend(&a.wrs[0]); err != nil && a.fail == nil {
		a.fail = err
	}
	a.out += n
}

func (a *perfApp) postRecvs(n int) {
	for i := 0; i < n; i++ {
		a.rwrs[i].Next = nil
		if i+1 < n {
			a.rwrs[i].Next = &a.rwrs[i+1]
		}
	}
	if _, err := a.qp.PostRecv(&a.rwrs[0]); err != nil && a.fail == nil {
		a.fail = err
	}
}

// Run runs the ib_send_bw-like measurement of cfg and reports the
// receiver's goodput. Throughput is whatever the NIC model yields: for RC a
// 64 KiB message is one WQE segmented by the NIC, for UD every MTU-sized
// datagram is its own send WQE, receive WQE and CQE.
func Run(cfg Config) (Result, error) {
	cfg = cfg.withDefaults()
	ncfg := rnic.DefaultConfig()
	if cfg.NIC != nil {
		ncfg = *cfg.NIC
	}
	ncfg.SizesOnly = true
	if cfg.Transport != verbs.RC && cfg.Transport != verbs.UD {
		return Result{}, fmt.Errorf("perftest: transport %v", cfg.Transport)
	}
	if cfg.Transport == verbs.UD && cfg.MsgSize > int(cfg.MTU) {
		return Result{}, fmt.Errorf("perftest: UD message %d exceeds the MTU %d", cfg.MsgSize, cfg.MTU)
	}
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
	w := rnic.NewWire(k, nil, cfg.Rate, cfg.Delay)
	w.Connect(na, 1, nb, 2)
	ca, _ := na.Open()
	cb, _ := nb.Open()
	snd := &perfApp{k: k, ctx: ca, cpu: rnic.NewCPU(k, "client"), send: true, cfg: cfg, depth: cfg.TxDepth, mod: cfg.CQMod}
	rcv := &perfApp{k: k, ctx: cb, cpu: rnic.NewCPU(k, "server"), cfg: cfg,
		from: cfg.Warmup, to: cfg.Warmup + cfg.Duration}
	if err := perfSetup(cfg, snd, rcv); err != nil {
		return Result{}, err
	}
	k.At(0, snd, 0)
	k.RunUntil(cfg.Warmup)
	startBytes := nb.Stats().RxPayload
	k.RunUntil(cfg.Warmup + cfg.Duration)
	if snd.fail != nil {
		return Result{}, snd.fail
	}
	if rcv.fail != nil {
		return Result{}, rcv.fail
	}
	secs := cfg.Duration.Seconds()
	res := Result{Config: cfg,
		Gbps:     float64(nb.Stats().RxPayload-startBytes) * 8 / secs / 1e9,
		MsgRate:  float64(rcv.msgs) / secs,
		LineGbps: rnic.LinePayloadGbps(cfg.Transport, cfg.Rate, cfg.MTU),
		Sender:   na.Stats(), Receiver: nb.Stats()}
	pk := int64(1)
	if cfg.Transport == verbs.RC {
		pk = (int64(cfg.MsgSize) + int64(cfg.MTU) - 1) / int64(cfg.MTU)
	}
	res.PacketRate = res.MsgRate * float64(pk)
	return res, nil
}

func perfSetup(cfg Config, snd, rcv *perfApp) error {
	const base = 0x10_0000_0000
	ud := cfg.Transport == verbs.UD
	if ud {
		rcv.grh = rnic.GRHBytes
	}
	rbuf := cfg.MsgSize + rcv.grh
	var qps [2]verbs.QP
	var pds [2]verbs.PD
	var mrs [2]verbs.MR
	for i, a := range []*perfApp{snd, rcv} {
		a.ctx.SetCPU(a.cpu)
		pd, err := a.ctx.AllocPD()
		if err != nil {
			return err
		}
		pds[i] = pd
		mr, err := pd.RegMR(uintptr(base), max(cfg.MsgSize, rbuf), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		if err != nil {
			return err
		}
		mrs[i] = mr
		cq, err := a.ctx.CreateCQ(cfg.TxDepth+cfg.RxDepth+16, nil)
		if err != nil {
			return err
		}
		a.cq = cq.(*rnic.CQ)
		a.cq.SetNotify(a, 0)
		qp, err := pd.CreateQP(verbs.QPInitAttr{Type: cfg.Transport, SendCQ: cq, RecvCQ: cq,
			MaxSendWR: cfg.TxDepth, MaxRecvWR: cfg.RxDepth, MaxSGE: 1})
		if err != nil {
			return err
		}
		a.qp, qps[i] = qp, qp
		a.ctx.SetCPU(nil)
	}
	for i, a := range []*perfApp{snd, rcv} {
		peer := []*perfApp{rcv, snd}[i]
		var err error
		if ud {
			err = verbs.ModifyAll(a.qp, []verbs.QPAttr{
				{State: verbs.StateInit, Port: 1, QKey: 0x1111},
				{State: verbs.StateRTR},
				{State: verbs.StateRTS, SQPSN: 0},
			}, []verbs.AttrMask{
				verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey,
				verbs.AttrState,
				verbs.AttrState | verbs.AttrSQPSN,
			})
		} else {
			err = verbs.ModifyAll(a.qp, []verbs.QPAttr{
				{State: verbs.StateInit, Port: 1, AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite},
				{State: verbs.StateRTR, AH: verbs.AHAttr{DGID: peer.ctx.Attr().GID}, PathMTU: cfg.MTU,
					DestQPN: peer.qp.QPN(), RQPSN: 0, MaxDestRdAtomic: 16, MinRNRTimer: 12},
				{State: verbs.StateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: 0, MaxRdAtomic: 16},
			}, []verbs.AttrMask{
				verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags,
				verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN |
					verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer,
				verbs.AttrState | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry |
					verbs.AttrSQPSN | verbs.AttrMaxQPRdAtomic,
			})
		}
		if err != nil {
			return err
		}
	}
	sge := []verbs.SGE{{Addr: base, Length: uint32(cfg.MsgSize), LKey: mrs[0].LKey()}}
	snd.wrs = make([]verbs.SendWR, cfg.TxDepth)
	var ah verbs.AH
	if ud {
		var err error
		if ah, err = pds[0].CreateAH(verbs.AHAttr{DGID: rcv.ctx.Attr().GID}); err != nil {
			return err
		}
	}
	for i := range snd.wrs {
		snd.wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, SGL: sge,
			AH: ah, RemoteQPN: qps[1].QPN(), RemoteQKey: 0x1111}
	}
	rsge := []verbs.SGE{{Addr: base, Length: uint32(rbuf), LKey: mrs[1].LKey()}}
	rcv.rwrs = make([]verbs.RecvWR, cfg.RxDepth)
	for i := range rcv.rwrs {
		rcv.rwrs[i] = verbs.RecvWR{ID: uint64(i), SGL: rsge}
	}
	rcv.ctx.SetCPU(rcv.cpu)
	rcv.postRecvs(cfg.RxDepth)
	rcv.ctx.SetCPU(nil)
	return rcv.fail
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
	{Rate: 25 * rnic.Gbps, MTU: 1024, PaperRC: 23.15, PaperUD: 22.97},
	{Rate: 100 * rnic.Gbps, MTU: 1024, PaperRC: 92.26, PaperUD: 48.29},
	{Rate: 100 * rnic.Gbps, MTU: 4096, PaperRC: 97.03, PaperUD: 95.74},
	{Rate: 200 * rnic.Gbps, MTU: 4096, PaperRC: 191.36, PaperUD: 114.70},
}

// Table2 runs Run for every row of PaperTable2 with NIC model nic (nil:
// DefaultConfig) and returns the rows with the model's numbers filled in.
func Table2(nic *rnic.Config) []Table2Point {
	out := make([]Table2Point, len(PaperTable2))
	for i, r := range PaperTable2 {
		rc, err := Run(Config{Transport: verbs.RC, Rate: r.Rate, MTU: r.MTU, NIC: nic})
		r.ModelRC, r.RCErr, r.LineRC = rc.Gbps, err, rnic.LinePayloadGbps(verbs.RC, r.Rate, r.MTU)
		ud, err := Run(Config{Transport: verbs.UD, Rate: r.Rate, MTU: r.MTU, NIC: nic})
		r.ModelUD, r.UDErr, r.LineUD = ud.Gbps, err, rnic.LinePayloadGbps(verbs.UD, r.Rate, r.MTU)
		out[i] = r
	}
	return out
}
