// Package mrcachesim drives the memory-registration workload (package
// mrcache, paper §5.2) on two simulated NICs joined by one wire (Test; the
// scenario kind mrcache and the embedded scenario mr-cache through the
// experiment registry). One simulated CPU is the I/O thread: it polls its
// CQ, deregisters a completed message's region (registration message),
// registers the next buffer (message) and posts its WRITE. The NICs run in
// sizes-only mode with their MPT/MTT caches as the scenario's rnic.mr_cache
// sets them; the WRITE targets are one region registered once on the
// receiver, the same for every registration.
package mrcachesim

import (
	"fmt"

	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/mrcache"
)

// Config is one run of the workload on two simulated NICs.
type Config struct {
	mrcache.Config
	NIC *rnic.Config // nil: DefaultConfig (run in sizes-only mode)
}

// Result is what one run measured over its interval.
type Result struct {
	Point          mrcache.Point
	Sender, Recver rnic.Stats // the NICs' counters at the end
	Thread         rnic.CPUStats
}

const base = 0x40_0000_0000

type ioThread struct {
	k       *sim.Kernel
	id      sim.HandlerID
	cfg     *mrcache.Config
	pd      verbs.PD
	cpu     *rnic.CPU
	ctx     *rnic.Context
	cq      *rnic.CQ
	qp      verbs.QP
	p       *mrcache.Poster
	lkeys   []uint32   // per buffer (block, buffer registrations)
	mrs     []verbs.MR // per buffer in flight (message registration)
	wr      verbs.SendWR
	sge     [1]verbs.SGE
	wc      [32]verbs.WC
	rkey    uint32
	pending bool
	fail    error
}

const (
	tagStep = iota
	tagNotify
)

func (t *ioThread) addr(i int) uintptr { return uintptr(base + t.cfg.Addr(i)) }

func (t *ioThread) failed(err error) {
	if t.fail == nil {
		t.fail = err
	}
}

func (t *ioThread) OnEvent(now sim.Time, tag uint64) {
	if tag == tagNotify {
		if !t.pending {
			t.pending = true
			t.k.Post(now, t.id, tagStep)
		}
		return
	}
	t.pending = false
	t.ctx.SetCPU(t.cpu)
	defer t.ctx.SetCPU(nil)
	k := t.cq.Poll(t.wc[:])
	for _, wc := range t.wc[:k] {
		if wc.Status != verbs.WCSuccess {
			t.failed(fmt.Errorf("mrcache: %v on buffer %d", wc.Status, wc.WRID))
			continue
		}
		i := int(wc.WRID)
		if t.cfg.PerMessage() && t.mrs[i] != nil {
			if err := t.mrs[i].Dereg(); err != nil {
				t.failed(err)
			}
			t.mrs[i] = nil
		}
		t.p.Done(i)
	}
	if i, ok := t.p.Next(); ok {
		lkey := uint32(0)
		if t.cfg.PerMessage() {
			r := t.cfg.BufferRegion(i)
			mr, err := t.pd.RegMR(uintptr(base+r.Off), r.Len, verbs.AccessLocalWrite)
			if err != nil {
				t.failed(err)
				return
			}
			t.mrs[i] = mr
			lkey = mr.LKey()
		} else {
			lkey = t.lkeys[i]
		}
		t.sge[0] = verbs.SGE{Addr: t.addr(i), Length: uint32(t.cfg.Message), LKey: lkey}
		t.wr.ID = uint64(i)
		t.wr.RemoteAddr = uint64(base + t.p.RemoteSlot())
		if _, err := t.qp.PostSend(&t.wr); err != nil {
			t.failed(err)
			return
		}
		t.pending = true
		t.k.Post(t.cpu.Now(), t.id, tagStep)
		return
	}
	if k == len(t.wc) {
		t.pending = true
		t.k.Post(t.cpu.Now(), t.id, tagStep)
	}
	// Otherwise Depth WRITEs are in flight: sleep until a completion lands.
}

// Test runs one registration and reports its measurement.
func Test(cfg Config) (Result, error) {
	cfg.Config = cfg.Config.WithDefaults()
	if err := cfg.Check(); err != nil {
		return Result{}, err
	}
	ncfg := rnic.DefaultConfig()
	if cfg.NIC != nil {
		ncfg = *cfg.NIC
	}
	ncfg.SizesOnly = true
	k := sim.NewKernel()
	na, err := rnic.New(k, "mrcache-sender", ncfg)
	if err != nil {
		return Result{}, err
	}
	nb, err := rnic.New(k, "mrcache-receiver", ncfg)
	if err != nil {
		return Result{}, err
	}
	w := rnic.NewWire(k, nil, units.Rate(cfg.Rate), rnic.DefaultWireDelay)
	w.Connect(na, 1, nb, 2)
	ca, _ := na.Open()
	cb, _ := nb.Open()
	pda, _ := ca.AllocPD()
	pdb, _ := cb.AllocPD()
	dst, err := pdb.RegMR(base, cfg.TargetBytes(), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	if err != nil {
		return Result{}, err
	}
	cqa, err := ca.CreateCQ(2*cfg.Depth+64, nil)
	if err != nil {
		return Result{}, err
	}
	cqb, _ := cb.CreateCQ(16, nil)
	qa, err := pda.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: cqa, RecvCQ: cqa, MaxSendWR: cfg.Depth, MaxRecvWR: 1, MaxSGE: 1})
	if err != nil {
		return Result{}, err
	}
	qb, err := pdb.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: cqb, RecvCQ: cqb, MaxSendWR: 1, MaxRecvWR: 1, MaxSGE: 1})
	if err != nil {
		return Result{}, err
	}
	if err := connectRC(qa, qb, ca, cb, verbs.MTU(min(int(ncfg.PortMTU), 4096))); err != nil {
		return Result{}, err
	}
	t := &ioThread{k: k, cfg: &cfg.Config, pd: pda, ctx: ca, cpu: rnic.NewCPU(k, "io0"), cq: cqa.(*rnic.CQ), qp: qa,
		p: mrcache.NewPoster(&cfg.Config), rkey: dst.RKey()}
	t.wr = verbs.SendWR{Opcode: verbs.OpWrite, Flags: verbs.FlagSignaled, SGL: t.sge[:], RKey: dst.RKey()}
	// The regions registered once (mrcache.Config.Regions), or none and
	// one per WRITE (PerMessage).
	if cfg.PerMessage() {
		t.mrs = make([]verbs.MR, cfg.Buffers)
	} else {
		keys := make([]uint32, 0, len(cfg.Regions()))
		for _, r := range cfg.Regions() {
			mr, err := pda.RegMR(uintptr(base+r.Off), r.Len, verbs.AccessLocalWrite)
			if err != nil {
				return Result{}, err
			}
			keys = append(keys, mr.LKey())
		}
		t.lkeys = make([]uint32, cfg.Buffers)
		for i := range t.lkeys {
			t.lkeys[i] = keys[cfg.RegionOf(i)]
		}
	}
	t.id = k.Register(t)
	t.cq.SetNotify(t, tagNotify)
	t.pending = true
	k.Post(0, t.id, tagStep)

	k.RunUntil(cfg.Warmup)
	a0, b0, c0, regions := na.Stats(), nb.Stats(), t.cpu.Stats(), na.Stats().MRs
	k.RunUntil(cfg.Warmup + cfg.Duration)
	if t.fail != nil {
		return Result{}, t.fail
	}
	a1, b1, c1 := na.Stats(), nb.Stats(), t.cpu.Stats()
	sec := cfg.Duration.Seconds()
	rate := func(miss, hit uint64) float64 {
		if miss+hit == 0 {
			return 0
		}
		return float64(miss) / float64(miss+hit)
	}
	done := float64(b1.RxPayload-b0.RxPayload) / float64(cfg.Message)
	pages := (int64(cfg.Message) + 4095) / 4096
	regs := c1.RegMRs - c0.RegMRs
	p := mrcache.Point{Mmps: done / sec / 1e6, Gbps: float64(b1.RxPayload-b0.RxPayload) * 8 / sec / 1e9,
		MPTMisses: a1.MPTCacheMisses - a0.MPTCacheMisses, MTTMisses: a1.MTTCacheMisses - a0.MTTCacheMisses,
		MPTMissRate:     rate(a1.MPTCacheMisses-a0.MPTCacheMisses, a1.MPTCacheHits-a0.MPTCacheHits),
		MTTMissRate:     rate(a1.MTTCacheMisses-a0.MTTCacheMisses, a1.MTTCacheHits-a0.MTTCacheHits),
		RecvMTTMissRate: rate(b1.MTTCacheMisses-b0.MTTCacheMisses, b1.MTTCacheHits-b0.MTTCacheHits),
		Regions:         int(regions), RegistrationsPerMs: float64(regs) / (sec * 1e3)}
	if busy := c1.Busy - c0.Busy; busy > 0 {
		p.RegShare = float64(sim.Time(regs)*(ncfg.RegMRBase+sim.Time(pages)*ncfg.RegMRPerPage)) / float64(busy)
	}
	return Result{Point: p, Sender: a1, Recver: b1, Thread: c1}, nil
}

// connectRC brings two RC QPs to RTS, connected to each other.
func connectRC(a, b verbs.QP, ca, cb *rnic.Context, mtu verbs.MTU) error {
	for _, x := range []struct {
		q, peer verbs.QP
		other   *rnic.Context
	}{{a, b, cb}, {b, a, ca}} {
		err := verbs.ModifyAll(x.q, []verbs.QPAttr{
			{State: verbs.StateInit, Port: 1, AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite},
			{State: verbs.StateRTR, AH: verbs.AHAttr{DGID: x.other.Attr().GID}, PathMTU: mtu,
				DestQPN: x.peer.QPN(), RQPSN: 0, MaxDestRdAtomic: 16, MinRNRTimer: 12},
		}, []verbs.AttrMask{
			verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags,
			verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN |
				verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer,
		})
		if err != nil {
			return err
		}
	}
	for _, q := range []verbs.QP{a, b} {
		attr := verbs.QPAttr{State: verbs.StateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: 0, MaxRdAtomic: 16}
		if err := q.Modify(&attr, verbs.AttrState|verbs.AttrTimeout|verbs.AttrRetryCnt|verbs.AttrRNRRetry|
			verbs.AttrSQPSN|verbs.AttrMaxQPRdAtomic); err != nil {
			return err
		}
	}
	return nil
}
