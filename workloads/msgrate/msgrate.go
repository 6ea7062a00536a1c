package msgrate

import (
	"fmt"
	"math/rand/v2"

	"github.com/besim/besim/rnic"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// Config is the message-rate benchmark of paper §6.2.1 (Figure 11):
// Threads I/O threads (simulated CPUs) in one process share one NIC and post
// MsgSize-byte RDMA WRITEs on QPs RC QPs, assigned to threads round-robin;
// each thread busy-polls its own CQ and posts one WR per step to the next
// of its QPs that has room. Without thread domains the QPs beyond the
// provider's dedicated doorbell registers share locked ones across threads;
// with ThreadDomains each thread's QPs ring its own register without a lock.
type Config struct {
	Threads       int      // default 8
	QPs           int      // default 64
	ThreadDomains bool     // one thread domain per thread
	MsgSize       int      // default 512
	Rate          int64    // link rate, default 200 Gb/s
	Depth         int      // WRs outstanding per QP, default 16
	SignalEvery   int      // one signalled WR in this many, default 8
	AppWork       sim.Time // mean per-message CPU work outside verbs, default 150 ns
	// Jitter spreads AppWork uniformly over ±Jitter×AppWork (default 0.5),
	// drawn from a per-thread stream seeded with Seed, so threads do not
	// run in lockstep.
	Jitter   float64
	Seed     uint64
	Warmup   sim.Time     // default 500 us
	Duration sim.Time     // default 1 ms
	NIC      *rnic.Config // nil: DefaultConfig (run in sizes-only mode)
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

func (c Config) withDefaults() Config {
	if c.Threads == 0 {
		c.Threads = 8
	}
	if c.QPs == 0 {
		c.QPs = 64
	}
	if c.MsgSize == 0 {
		c.MsgSize = 512
	}
	if c.Rate == 0 {
		c.Rate = 200 * rnic.Gbps
	}
	if c.Depth == 0 {
		c.Depth = 16
	}
	if c.SignalEvery == 0 {
		c.SignalEvery = 8
	}
	c.SignalEvery = min(c.SignalEvery, c.Depth)
	if c.AppWork == 0 {
		c.AppWork = 150 * sim.Nanosecond
	}
	if c.Jitter == 0 {
		c.Jitter = 0.5
	}
	if c.Warmup == 0 {
		c.Warmup = 500 * sim.Microsecond
	}
	if c.Duration == 0 {
		c.Duration = 1000 * sim.Microsecond
	}
	return c
}

type mrQP struct {
	qp     *rnic.QP
	out    int
	posted uint64
}

type ioThread struct {
	k       *sim.Kernel
	id      sim.HandlerID
	ctx     *rnic.Context
	cpu     *rnic.CPU
	cq      *rnic.CQ
	qps     []*mrQP
	byQPN   map[uint32]*mrQP
	rr      int
	wr      verbs.SendWR
	wc      [32]verbs.WC
	pending bool
	cfg     *Config
	rng     *rand.Rand
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
		q := t.byQPN[wc.QPN]
		q.out -= t.cfg.SignalEvery
	}
	for i := 0; i < len(t.qps); i++ {
		q := t.qps[t.rr]
		t.rr = (t.rr + 1) % len(t.qps)
		if q.out >= t.cfg.Depth {
			continue
		}
		q.posted++
		t.wr.Flags = 0
		if q.posted%uint64(t.cfg.SignalEvery) == 0 {
			t.wr.Flags = verbs.FlagSignaled
		}
		t.wr.ID = q.posted
		if _, err := q.qp.PostSend(&t.wr); err != nil {
			if t.fail == nil {
				t.fail = err
			}
			return
		}
		q.out++
		j := 1 + t.cfg.Jitter*(2*t.rng.Float64()-1)
		t.cpu.Charge(sim.Time(float64(t.cfg.AppWork) * j))
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
	cfg = cfg.withDefaults()
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
	w := rnic.NewWire(k, nil, cfg.Rate, sim.Microsecond)
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
		t := &ioThread{k: k, ctx: ca, cpu: rnic.NewCPU(k, fmt.Sprintf("io%d", i)), byQPN: map[uint32]*mrQP{},
			rng: sim.Stream(cfg.Seed, fmt.Sprintf("msgrate-io%d", i)), cfg: &cfg}
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
	// Every thread creates QPs/Threads QPs (engines are spread round-robin,
	// paper §6.2.1), all at start-up and concurrently, so the order in which
	// the provider hands out doorbell registers interleaves the threads at
	// random.
	owner := make([]int, cfg.QPs)
	for i := range owner {
		owner[i] = i % cfg.Threads
	}
	mix := sim.Stream(cfg.Seed, "msgrate-create")
	mix.Shuffle(len(owner), func(i, j int) { owner[i], owner[j] = owner[j], owner[i] })
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
		m := &mrQP{qp: q}
		t.qps = append(t.qps, m)
		t.byQPN[q.QPN()] = m
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
