package msgratesim

import (
	"fmt"

	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/msgrate"
)

// Config is the Figure 11 workload (msgrate.Config) on two simulated
// NICs joined by one wire.
type Config struct {
	msgrate.Config
	NIC *rnic.Config // nil: DefaultConfig (run in sizes-only mode)
}

// Result reports the aggregate message rate.
type Result struct {
	Config      Config
	Mmps        float64 // million messages completed per second, all threads
	SharedQPs   int     // QPs ringing a shared (locked) doorbell register
	SpinShare   float64 // fraction of thread CPU time spent spinning on doorbell locks
	LockShare   float64 // fraction spent acquiring them (spinning and cache-line transfers)
	LockMoves   uint64  // doorbell lock acquisitions that moved the lock's cache line
	ThreadStats []rnic.CPUStats
	// Client and Server are the two NICs' counters at the end.
	Client, Server rnic.Stats
}

type ioThread struct {
	k       *sim.Kernel
	id      sim.HandlerID
	ctx     *rnic.Context
	cpu     *rnic.CPU
	cq      *rnic.CQ
	m       *msgrate.Poster
	qps     []*rnic.QP
	byQPN   map[uint32]int
	wr      verbs.SendWR
	wc      [32]verbs.WC
	pending bool
	fail    error
}

const (
	tagStep = iota
	tagNotify
)

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
			if t.fail == nil {
				t.fail = fmt.Errorf("msgrate: %v on QP %d", wc.Status, wc.QPN)
			}
			continue
		}
		t.m.Completed(t.byQPN[wc.QPN])
	}
	if q, id, signaled, ok := t.m.Next(); ok {
		t.wr.Flags = 0
		if signaled {
			t.wr.Flags = verbs.FlagSignaled
		}
		t.wr.ID = id
		if _, err := t.qps[q].PostSend(&t.wr); err != nil {
			if t.fail == nil {
				t.fail = err
			}
			return
		}
		t.cpu.Charge(t.m.Posted(q))
		t.pending = true
		t.k.Post(t.cpu.Now(), t.id, tagStep)
		return
	}
	if k == len(t.wc) {
		t.pending = true
		t.k.Post(t.cpu.Now(), t.id, tagStep)
	}
	// Otherwise every QP is full: sleep until a completion lands.
}

// Test runs the benchmark and reports the message rate.
func Test(cfg Config) (Result, error) {
	cfg.Config = cfg.Config.WithDefaults()
	ncfg := rnic.DefaultConfig()
	if cfg.NIC != nil {
		ncfg = *cfg.NIC
	}
	ncfg.SizesOnly = true
	k := sim.NewKernel()
	na, err := rnic.New(k, "msgrate-client", ncfg)
	if err != nil {
		return Result{}, err
	}
	nb, err := rnic.New(k, "msgrate-server", ncfg)
	if err != nil {
		return Result{}, err
	}
	w := rnic.NewWire(k, nil, units.Rate(cfg.Rate), rnic.DefaultWireDelay)
	w.Connect(na, 1, nb, 2)
	ca, _ := na.Open()
	cb, _ := nb.Open()
	const base = 0x20_0000_0000
	pda, _ := ca.AllocPD()
	pdb, _ := cb.AllocPD()
	mra, err := pda.RegMR(base, cfg.MsgSize, verbs.AccessLocalWrite)
	if err != nil {
		return Result{}, err
	}
	mrb, err := pdb.RegMR(base, cfg.MsgSize, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	if err != nil {
		return Result{}, err
	}
	cqb, _ := cb.CreateCQ(16, nil)
	th := make([]*ioThread, cfg.Threads)
	tds := make([]verbs.TD, cfg.Threads)
	for i := range th {
		t := &ioThread{k: k, ctx: ca, cpu: rnic.NewCPU(k, fmt.Sprintf("io%d", i)), byQPN: map[uint32]int{},
			m: msgrate.NewPoster(&cfg.Config, i)}
		var td verbs.TD
		if cfg.ThreadDomains {
			if td, err = ca.AllocTD(); err != nil {
				return Result{}, err
			}
		}
		cq, err := ca.CreateCQ(cfg.QPs*cfg.Depth+64, td)
		if err != nil {
			return Result{}, err
		}
		t.id = k.Register(t)
		t.cq = cq.(*rnic.CQ)
		t.cq.SetNotify(t, tagNotify)
		t.wr = verbs.SendWR{Opcode: verbs.OpWrite, RemoteAddr: base, RKey: mrb.RKey(),
			SGL: []verbs.SGE{{Addr: base, Length: uint32(cfg.MsgSize), LKey: mra.LKey()}}}
		th[i] = t
		tds[i] = td
	}
	shared := 0
	owner := msgrate.Owners(&cfg.Config)
	for i := 0; i < cfg.QPs; i++ {
		t := th[owner[i]]
		td := tds[owner[i]]
		qa, err := pda.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: t.cq, RecvCQ: t.cq, TD: td,
			MaxSendWR: cfg.Depth, MaxRecvWR: 1, MaxSGE: 1})
		if err != nil {
			return Result{}, err
		}
		qb, err := pdb.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: cqb, RecvCQ: cqb,
			MaxSendWR: 1, MaxRecvWR: 1, MaxSGE: 1})
		if err != nil {
			return Result{}, err
		}
		if err := connectRC(qa, qb, ca, cb, verbs.MTU(min(int(ncfg.PortMTU), 4096))); err != nil {
			return Result{}, err
		}
		q := qa.(*rnic.QP)
		if q.SharesDoorbell() {
			shared++
		}
		t.qps = append(t.qps, q)
		t.byQPN[q.QPN()] = t.m.AddQP()
	}
	for _, t := range th {
		if len(t.qps) > 0 {
			t.pending = true
			k.Post(0, t.id, tagStep)
		}
	}
	k.RunUntil(cfg.Warmup)
	rx0 := nb.Stats().RxPayload
	k.RunUntil(cfg.Warmup + cfg.Duration)
	res := Result{Config: cfg, SharedQPs: shared, Client: na.Stats(), Server: nb.Stats()}
	done := (nb.Stats().RxPayload - rx0) / uint64(cfg.MsgSize)
	var busy, spin, lock sim.Time
	for _, t := range th {
		if t.fail != nil {
			return res, t.fail
		}
		s := t.cpu.Stats()
		busy += s.Busy
		spin += s.Spin
		lock += s.Lock
		res.LockMoves += s.LockMoves
		res.ThreadStats = append(res.ThreadStats, s)
	}
	res.Mmps = float64(done) / cfg.Duration.Seconds() / 1e6
	if busy > 0 {
		res.SpinShare = float64(spin) / float64(busy)
		res.LockShare = float64(lock) / float64(busy)
	}
	return res, nil
}

// connectRC brings two RC QPs to RTS, connected to each other.
func connectRC(a, b verbs.QP, ca, cb *rnic.Context, mtu verbs.MTU) error {
	for _, x := range []struct {
		q     verbs.QP
		peer  verbs.QP
		local *rnic.Context
		other *rnic.Context
	}{{a, b, ca, cb}, {b, a, cb, ca}} {
		err := verbs.ModifyAll(x.q, []verbs.QPAttr{
			{State: verbs.StateInit, Port: 1, AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead},
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
