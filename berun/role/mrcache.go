package role

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"time"

	"github.com/besim/besim/berun/internal/tcpx"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/mrcache"
)

// The mrcache roles replay a besim mrcache benchmark (package
// workloads/mrcache, the paper's §5.2 memory registration: bemalloc's
// 4 MiB blocks against a region per buffer or per message) on the hosts'
// RDMA devices (always verbs: it measures the device's registration).
// mrcache-sender is the I/O thread, on its own OS thread: for each of the
// scenario's registrations in turn it maps the working set
// (mrcache.Config.Span), registers the regions the workload names
// (Config.Regions: the blocks, or one per buffer) or none, and drives
// mrcache.Poster, the machine besim's mrcachesim drives, on one RC QP:
// Depth RDMA WRITEs of Message bytes outstanding, each from the next free
// buffer, registered with ibv_reg_mr just before its post and deregistered
// at its completion when the registration is per message
// (Config.PerMessage), each to the next of the target's Depth slots
// (Poster.RemoteSlot). mrcache-target owns the slots, one region
// registered once, and the other end of each point's QP.
//
// The registrations run one after the other in wall-clock slots
// (fragsize.Sweep) whose warm-up is the parameter setup (the one-time
// registrations and the QP exchange, which besim does at instant zero)
// plus the scenario's warmup. The rate (mrcache/REG/mmps and gbps) is the
// WRITEs that completed at the sender in the measured interval (besim
// counts the payload arriving at the receiver's NIC; on hardware the
// target's CPU sees none of it). The sender also measures what the NIC's
// driver costs the thread: the mean time of one ibv_reg_mr and
// ibv_dereg_mr on the data path and their share of the interval (the
// table's "CPU in reg_mr"), and the regions registered at the end of the
// warm-up. The NIC's MPT and MTT translation-cache misses
// (mrcache/REG/mpt_miss_rate and mtt_miss_rate, and the table's miss
// columns) have no counter berun can read on a real NIC: they are absent
// from berun's result, not zero.
func init() {
	params := []Param{
		{Name: "setup", Default: "1s", Doc: "time each registration gives its one-time registrations and QP exchange before the scenario's warmup; the plan sizes it by the buffer count"},
		{Name: "device", Doc: "the RDMA device (default: the first one)"},
		{Name: "gid_index", Default: "auto", Doc: "GID table index (auto: the RoCE v2 GID of the data IP, from sysfs)"},
		{Name: "prio", Doc: "802.1p priority of the QP (service level); default: the scenario's lossless priority"},
		{Name: "dscp", Doc: "DSCP of the QP (traffic class DSCP << 2); default 8 x prio + 2"}}
	Register(Info{Name: "mrcache-sender", New: newMRCache, Params: params,
		Summary: "I/O thread of a besim mrcache benchmark (§5.2) over verbs: RDMA WRITEs from buffers registered in blocks, per buffer or per message (ibv_reg_mr)"})
	Register(Info{Name: "mrcache-target", New: newMRCache, Params: params,
		Summary: "target of a besim mrcache benchmark (§5.2) over verbs: the slots the WRITEs land in and the other end of the QP"})
}

type mrcacheRole struct {
	sender bool
	scen   *scenarios.Scenario
	regs   []mrcache.Registration
	setup  time.Duration
	device string
	qos    verbsQoS
	vctx   verbs.Context
	pd     verbs.PD
	mem    []byte
	mr     verbs.MR // the target's slots
	ln     net.Listener
}

func newMRCache(spec Spec) (Role, error) {
	info, _ := Lookup(spec.Role)
	p := ReadParams(info, spec)
	r := &mrcacheRole{sender: spec.Role == "mrcache-sender"}
	vp := readVerbsParams(p, spec)
	r.device = vp.device
	r.setup = p.Duration("setup", 0, time.Hour)
	if err := p.Err(); err != nil {
		return nil, err
	}
	s, err := roleScenario(spec)
	if err != nil {
		return nil, err
	}
	if s.Benchmark == nil || s.Benchmark.Kind != scenarios.MRCacheBench || len(s.Benchmark.Registrations) == 0 {
		return nil, errors.New("the scenario has no mrcache benchmark")
	}
	r.scen = s
	for _, reg := range s.Benchmark.Registrations {
		r.regs = append(r.regs, mrcache.Registration(reg))
		c := r.config(len(r.regs) - 1)
		if err := c.Check(); err != nil {
			return nil, err
		}
	}
	r.qos = vp.qos(s)
	switch {
	case r.sender && len(spec.Peers) != 1:
		return nil, fmt.Errorf("a sender needs one peer, the mrcache-target (has %d)", len(spec.Peers))
	case !r.sender && len(spec.Peers) != 0:
		return nil, fmt.Errorf("a target connects to nobody; remove its peers %v", spec.Peers)
	}
	return r, nil
}

// config is registration i's configuration (defaults applied).
func (r *mrcacheRole) config(i int) mrcache.Config {
	return mrcache.FromScenario(r.scen, r.regs[i]).WithDefaults()
}

func (r *mrcacheRole) sweep(spec Spec) (fragsize.Sweep, error) {
	warm := sim.Time(r.setup.Nanoseconds())*sim.Nanosecond + r.scen.Benchmark.Warmup.Time()
	return fragsize.NewSweep(sim.Time(spec.Duration.Nanoseconds())*sim.Nanosecond, len(r.regs), warm)
}

// openVerbs opens the role's device with its GID (auto: the data IP's
// RoCE v2 one) and a PD.
func openVerbs(spec Spec, device string, qos *verbsQoS) (verbs.Context, verbs.PD, error) {
	if device == "" {
		d, err := DefaultDevice()
		if err != nil {
			return nil, nil, fmt.Errorf("verbs: %w", err)
		}
		device = d
	}
	if qos.gid < 0 {
		host, _, _ := net.SplitHostPort(spec.Bind)
		g, how, err := autoGID(device, 1, net.ParseIP(host))
		if err != nil {
			return nil, nil, fmt.Errorf("verbs: %w", err)
		}
		qos.gid = g
		if spec.Logf != nil {
			spec.Logf("%s: %s", spec.ID, how)
		}
	}
	vctx, err := OpenVerbs(device, qos.gid)
	if err != nil {
		return nil, nil, fmt.Errorf("verbs: %w", err)
	}
	pd, err := vctx.AllocPD()
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("verbs: alloc PD: %w", err), vctx.Close())
	}
	return vctx, pd, nil
}

func (r *mrcacheRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	if _, err := r.sweep(spec); err != nil {
		return "", err
	}
	var err error
	if r.vctx, r.pd, err = openVerbs(spec, r.device, &r.qos); err != nil {
		return "", err
	}
	c := r.config(0)
	size := c.TargetBytes()
	if r.sender {
		size = int(c.Span())
	}
	if r.mem, err = mapMem(size); err != nil {
		return "", fmt.Errorf("mrcache: %d bytes of memory: %w", size, err)
	}
	if r.sender {
		return "", nil // registered per point, as the registration says
	}
	if r.mr, err = r.pd.RegMR(uintptrOf(r.mem), size, verbs.AccessLocalWrite|verbs.AccessRemoteWrite); err != nil {
		return "", fmt.Errorf("mrcache: register the target's %d bytes: %w (is the memlock limit high enough?)", size, err)
	}
	if r.ln, err = listen(ctx, spec.Bind); err != nil {
		return "", err
	}
	return r.ln.Addr().String(), nil
}

func (r *mrcacheRole) Close() error {
	var errs []error
	if r.ln != nil {
		errs = append(errs, r.ln.Close())
	}
	if r.mr != nil {
		errs = append(errs, r.mr.Dereg())
		r.mr = nil
	}
	if r.vctx != nil {
		errs = append(errs, r.vctx.Close())
		r.vctx = nil
	}
	if r.mem != nil {
		unmapMem(r.mem)
		r.mem = nil
	}
	return errors.Join(errs...)
}

func (r *mrcacheRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	sw, err := r.sweep(spec)
	if err != nil {
		return Result{}, err
	}
	nc, done, err := pairConn(ctx, spec, peers, r.ln, r.sender)
	if err != nil {
		return Result{}, err
	}
	defer done()
	c, err := tcpx.New(nc, tcpx.Options{MaxMessage: 16 + 4*verbs.QPInfoSize})
	if err != nil {
		return Result{}, err
	}
	cfg := r.config(0)
	res := Result{Metrics: map[string]float64{"measure_s": sw.Measure.Seconds(), "message_bytes": float64(cfg.Message),
		"buffers": float64(cfg.Buffers), "block_bytes": float64(cfg.Block), "depth": float64(cfg.Depth)}}
	if r.sender {
		err = r.send(ctx, spec, c, sw, &res)
	} else {
		err = r.serve(c)
	}
	return res, err
}

func (r *mrcacheRole) info(qp verbs.QP) verbs.QPInfo {
	a := r.vctx.Attr()
	in := verbs.QPInfo{QPN: qp.QPN(), GID: a.GID, MTU: a.PortMTU, Addr: uint64(uintptrOf(r.mem))}
	if r.mr != nil {
		in.RKey = r.mr.RKey()
	}
	return in
}

// serve is the target: for each registration the sender announces, a QP
// connected to the sender's; destroyed when the sender is done.
func (r *mrcacheRole) serve(c *tcpx.Conn) error {
	for {
		m, err := c.ReadMsg(nil)
		if err != nil {
			return fmt.Errorf("waiting for the mrcache-sender: %w", err)
		}
		if len(m) == 1 && m[0] == 'E' {
			return nil
		}
		point, infos, err := getInfos(m, 'P')
		if err != nil {
			return err
		}
		if len(infos) != 1 {
			return fmt.Errorf("point %d: the sender announced %d QPs, want 1", point, len(infos))
		}
		cq, err := r.vctx.CreateCQ(16, nil)
		if err != nil {
			return fmt.Errorf("point %d: create CQ: %w", point, err)
		}
		qp, err := r.pd.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: cq, RecvCQ: cq, MaxSendWR: 1, MaxRecvWR: 1, MaxSGE: 1})
		if err == nil {
			err = rcConnectQP(r.vctx, r.qos, qp, infos[0])
		}
		if err != nil {
			return errors.Join(fmt.Errorf("point %d: %w", point, err), cq.Destroy())
		}
		if err := c.WriteMsg(putInfos('R', point, []verbs.QPInfo{r.info(qp)})); err != nil {
			return err
		}
		m, err = c.ReadMsg(nil)
		if err != nil || len(m) != 1 || m[0] != 'D' {
			return fmt.Errorf("point %d: waiting for the sender's end of the point: %q, %v", point, m, err)
		}
		if err := errors.Join(qp.Destroy(), cq.Destroy()); err != nil {
			return fmt.Errorf("point %d: %w", point, err)
		}
		if err := c.WriteMsg([]byte{'d'}); err != nil {
			return err
		}
	}
}

// send runs the registrations in turn.
func (r *mrcacheRole) send(ctx context.Context, spec Spec, c *tcpx.Conn, sw fragsize.Sweep, res *Result) error {
	var errs []error
	for i, reg := range r.regs {
		at := spec.Start.Add(time.Duration(sim.Time(i) * sw.Slot / sim.Nanosecond))
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			return errors.Join(append(errs, fmt.Errorf("stopped (%v)", context.Cause(ctx)))...)
		}
		cfg := r.config(i)
		pt, err := r.point(ctx, spec, c, i, &cfg, sw)
		k := "/" + string(reg)
		m := res.Metrics
		m["writes"+k], m["completions"+k] = float64(pt.posted), float64(pt.completed)
		m["completed"+k] = float64(pt.measured)
		m["mmps"+k] = float64(pt.measured) / sw.Measure.Seconds() / 1e6
		m["gbps"+k] = float64(pt.measured) * float64(cfg.Message) * 8 / sw.Measure.Seconds() / 1e9
		m["regions"+k] = float64(pt.regions)
		m["setup_reg_s"+k] = pt.setupReg.Seconds()
		m["reg_mrs"+k] = float64(pt.regs)
		if pt.regs > 0 {
			m["reg_mr_us"+k] = pt.regTime.Seconds() * 1e6 / float64(pt.regs)
		}
		if pt.deregs > 0 {
			m["dereg_mr_us"+k] = pt.deregTime.Seconds() * 1e6 / float64(pt.deregs)
		}
		m["reg_share"+k] = pt.regTime.Seconds() / sw.Measure.Seconds()
		if err != nil {
			errs = append(errs, fmt.Errorf("registration %s: %w", reg, err))
			return errors.Join(errs...) // the exchange is out of step
		}
	}
	return errors.Join(append(errs, c.WriteMsg([]byte{'E'}))...)
}

// mrPoint is what one registration measured at the sender.
type mrPoint struct {
	posted, completed uint64 // every WRITE of the point
	measured          uint64 // WRITEs that completed in the measured interval
	regions           int    // registered at the end of the warm-up
	setupReg          time.Duration
	// regs and deregs are the data path's ibv_reg_mr and ibv_dereg_mr in
	// the measured interval, regTime and deregTime their time.
	regs, deregs       int
	regTime, deregTime time.Duration
}

// point runs registration i: the one-time regions, the QP and its
// exchange, the poster until the end of the measured interval, the drain
// and the teardown.
func (r *mrcacheRole) point(ctx context.Context, spec Spec, c *tcpx.Conn, i int, cfg *mrcache.Config, sw fragsize.Sweep) (pt mrPoint, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base := uintptrOf(r.mem)
	var (
		once   []verbs.MR           // the one-time regions (Config.Regions)
		perMsg = map[int]verbs.MR{} // per-message regions in flight
		cq     verbs.CQ
		qp     verbs.QP
	)
	defer func() {
		var errs []error
		for _, mr := range perMsg {
			errs = append(errs, mr.Dereg())
		}
		for _, mr := range once {
			errs = append(errs, mr.Dereg())
		}
		if qp != nil {
			errs = append(errs, qp.Destroy())
		}
		if cq != nil {
			errs = append(errs, cq.Destroy())
		}
		if e := errors.Join(errs...); e != nil && err == nil {
			err = e
		}
	}()
	t0 := time.Now()
	for _, rg := range cfg.Regions() {
		mr, err := r.pd.RegMR(base+uintptr(rg.Off), rg.Len, verbs.AccessLocalWrite)
		if err != nil {
			return pt, fmt.Errorf("register region %d of %d (%d bytes): %w (is the memlock limit high enough?)", len(once), len(cfg.Regions()), rg.Len, err)
		}
		once = append(once, mr)
	}
	pt.setupReg = time.Since(t0)
	if cq, err = r.vctx.CreateCQ(2*cfg.Depth+64, nil); err != nil {
		return pt, fmt.Errorf("create CQ: %w", err)
	}
	if qp, err = r.pd.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: cq, RecvCQ: cq, MaxSendWR: cfg.Depth, MaxRecvWR: 1, MaxSGE: 1}); err != nil {
		return pt, fmt.Errorf("create QP: %w", err)
	}
	if err := c.WriteMsg(putInfos('P', i, []verbs.QPInfo{r.info(qp)})); err != nil {
		return pt, err
	}
	m, err := c.ReadMsg(nil)
	if err != nil {
		return pt, fmt.Errorf("waiting for the target's QP: %w", err)
	}
	_, peers, err := getInfos(m, 'R')
	if err != nil {
		return pt, err
	}
	if len(peers) != 1 {
		return pt, fmt.Errorf("the target answered %d QPs for 1", len(peers))
	}
	if err := rcConnectQP(r.vctx, r.qos, qp, peers[0]); err != nil {
		return pt, err
	}
	target := peers[0]
	from, to := sw.Window(i)
	if now := since(spec.Start); now > from-r.scen.Benchmark.Warmup.Time() {
		return pt, fmt.Errorf("the one-time registrations (%v) and the QP exchange ended %v after the set-up of %v (raise parameter setup)",
			pt.setupReg, time.Duration((now-(from-r.scen.Benchmark.Warmup.Time()))/sim.Nanosecond), r.setup)
	}
	lkeys := make([]uint32, cfg.Buffers)
	if !cfg.PerMessage() {
		for b := range lkeys {
			lkeys[b] = once[cfg.RegionOf(b)].LKey()
		}
	}
	p := mrcache.NewPoster(cfg)
	sge := []verbs.SGE{{Length: uint32(cfg.Message)}}
	wr := verbs.SendWR{Opcode: verbs.OpWrite, Flags: verbs.FlagSignaled, SGL: sge, RKey: target.RKey}
	wcs := make([]verbs.WC, 32)
	warm := true
	poll := func(now sim.Time) error {
		n := cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			b := int(wc.WRID)
			if wc.Status != verbs.WCSuccess {
				return fmt.Errorf("WRITE from buffer %d: %v", b, wc.Status)
			}
			if mr := perMsg[b]; mr != nil {
				t := time.Now()
				err := mr.Dereg()
				if now >= from && now < to {
					pt.deregTime += time.Since(t)
					pt.deregs++
				}
				delete(perMsg, b)
				if err != nil {
					return fmt.Errorf("deregister buffer %d: %w", b, err)
				}
			}
			p.Done(b)
			pt.completed++
			if now >= from && now < to {
				pt.measured++
			}
		}
		return nil
	}
	for ctx.Err() == nil {
		now := since(spec.Start)
		if now >= to {
			break
		}
		if warm && now >= from {
			warm = false
			pt.regions = len(once) + len(perMsg)
		}
		if err := poll(now); err != nil {
			return pt, err
		}
		b, ok := p.Next()
		if !ok {
			continue
		}
		sge[0].Addr = base + uintptr(cfg.Addr(b))
		sge[0].LKey = lkeys[b]
		if cfg.PerMessage() {
			rg := cfg.BufferRegion(b)
			t := time.Now()
			mr, err := r.pd.RegMR(base+uintptr(rg.Off), rg.Len, verbs.AccessLocalWrite)
			if now >= from {
				pt.regTime += time.Since(t)
				pt.regs++
			}
			if err != nil {
				return pt, fmt.Errorf("register buffer %d for its WRITE: %w", b, err)
			}
			perMsg[b] = mr
			sge[0].LKey = mr.LKey()
		}
		wr.ID = uint64(b)
		wr.RemoteAddr = target.Addr + uint64(p.RemoteSlot())
		if _, err := qp.PostSend(&wr); err != nil {
			return pt, fmt.Errorf("post the WRITE of buffer %d: %w", b, err)
		}
		pt.posted++
	}
	// Drain the WRITEs in flight (bounded: a second).
	for deadline := time.Now().Add(time.Second); p.Outstanding() > 0 && time.Now().Before(deadline); {
		if err := poll(since(spec.Start)); err != nil {
			return pt, err
		}
	}
	if k := p.Outstanding(); k > 0 {
		return pt, fmt.Errorf("%d WRITEs not completed a second after the measured interval", k)
	}
	if err := c.WriteMsg([]byte{'D'}); err != nil {
		return pt, err
	}
	if m, err := c.ReadMsg(nil); err != nil || len(m) != 1 || m[0] != 'd' {
		return pt, fmt.Errorf("waiting for the target's end of the point: %q, %v", m, err)
	}
	return pt, nil
}
