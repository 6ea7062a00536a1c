package flows

import (
	"fmt"
	"path"
	"slices"
	"unsafe"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/pfc"
	"github.com/besim/besim/rnic"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
)

// The verbs application behind rc and ud flows (hosts.nic: rnic).
//
// Every host has one simulated RNIC, one verbs context and one CPU: its I/O
// thread. Every flow instance is one QP pair with a CQ at each end. The
// sender streams messages perftest-style: it keeps Depth messages
// outstanding, builds all the WRs it may post in one step and posts them as
// a chain with one doorbell (doorbell batching), signals one WR in
// max(1, Depth/2) and the last one of a sized flow (selective signalling),
// and sleeps until the NIC's CQ notify hook (rnic.CQ.SetNotify) says a
// completion landed. The receiver of SENDs (rc op send, and ud) keeps
// receives posted and reposts them from its notify hook. Provider calls are
// charged to the host's CPU (rnic.Context.SetCPU), so flows sharing a host
// share its I/O thread.
//
// rate: line does not pace the application (the NIC and DCQCN decide); an
// explicit rate paces message posting at that payload rate, with no burst
// credit after a stall. The runner sets the AH service level to the flow's
// prio (8 for prio 0: the simulated NIC maps SL to priority as SL mod 8 and
// reads SL 0 as "its default priority").

const (
	tagStart = iota
	tagSendCQ
	tagRecvCQ
	tagPace
)

// rdmaHost is one host's NIC, verbs context, I/O thread CPU and PD.
type rdmaHost struct {
	nic *rnic.NIC
	ctx *rnic.Context
	cpu *rnic.CPU
	pd  verbs.PD
}

// rdmaFlow is one rc or ud flow instance: its QP pair and the application
// on both ends.
type rdmaFlow struct {
	name     string
	inst     scenarios.FlowInstance
	k        *sim.Kernel
	id       sim.HandlerID
	src, dst *rdmaHost
	sqp, rqp *rnic.QP
	scq, rcq *rnic.CQ

	ud     bool
	recv   bool // the destination consumes receives (SEND, UD)
	msg    int64
	depth  int
	sig    uint64
	total  int64 // bytes to send; < 0: until the end
	left   int64
	rate   units.Rate // application pacing of payload; 0: none
	nextAt sim.Time
	pace   sim.Timer

	wrs    []verbs.SendWR
	sges   []verbs.SGE
	rwrs   []verbs.RecvWR
	rdepth int
	wc     [32]verbs.WC
	bufs   [][]byte // payload: bytes (kept alive: the NIC addresses them)

	posted, done uint64 // messages; done = highest completed WR id
	rxMsgs       uint64
	finished     bool
	finishAt     sim.Time
	errors       uint64
	fail         error

	// Measurement window: receiver bytes at its start.
	rx0    uint64
	series *flowSeries
}

type flowSeries struct {
	rate *pfc.Series // the sender's DCQCN rate, nil without DCQCN
	rx   *pfc.Series // the receiver's in-order payload bytes
}

// sl is the service level that selects priority prio on the simulated NIC.
func sl(prio int) uint8 {
	if prio == 0 {
		return 8
	}
	return uint8(prio)
}

// payloadBase is where sizes-only flows pretend their buffers are; each
// flow gets its own 4 GiB window so registrations never overlap.
const payloadBase = 0x100_0000_0000

// newRDMAFlow creates fi's QP pair between src and dst and schedules its
// start.
func (x *Sim) newRDMAFlow(fi scenarios.FlowInstance, n int, src, dst *rdmaHost, bytes bool) (*rdmaFlow, error) {
	s := x.Scenario
	q := s.RNIC.QP
	f := &rdmaFlow{name: fi.Name, inst: fi, k: x.Kernel, src: src, dst: dst,
		ud: fi.Transport == scenarios.UD, msg: int64(fi.Message), depth: fi.Depth}
	f.recv = f.ud || fi.Op == scenarios.OpSend
	f.sig = uint64(max(1, f.depth/2))
	f.total = -1
	if fi.Size > 0 {
		f.total = int64(fi.Size)
	}
	f.left = f.total
	if !fi.Line {
		f.rate = units.Rate(fi.Rate)
	}
	f.rdepth = 1
	if f.recv {
		f.rdepth = min(max(2*f.depth, 512), 32768)
	}
	grh := int64(0)
	if f.ud {
		grh = 40
	}

	// Buffers and registrations.
	region := func(h *rdmaHost, length int64) (verbs.MR, uintptr, error) {
		addr := uintptr(payloadBase + uint64(n)<<32)
		if bytes {
			b := make([]byte, length)
			f.bufs = append(f.bufs, b)
			addr = uintptr(unsafe.Pointer(&b[0]))
		}
		mr, err := h.pd.RegMR(addr, int(length), verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead)
		return mr, addr, err
	}
	smr, saddr, err := region(src, f.msg)
	if err != nil {
		return nil, err
	}
	dmr, daddr, err := region(dst, f.msg+grh)
	if err != nil {
		return nil, err
	}

	typ := verbs.RC
	if f.ud {
		typ = verbs.UD
	}
	mk := func(h *rdmaHost, cqDepth, sendWR, recvWR int) (*rnic.QP, *rnic.CQ, error) {
		cq, err := h.ctx.CreateCQ(cqDepth, nil)
		if err != nil {
			return nil, nil, err
		}
		qp, err := h.pd.CreateQP(verbs.QPInitAttr{Type: typ, SendCQ: cq, RecvCQ: cq,
			MaxSendWR: sendWR, MaxRecvWR: recvWR, MaxSGE: 1})
		if err != nil {
			return nil, nil, err
		}
		return qp.(*rnic.QP), cq.(*rnic.CQ), nil
	}
	if f.sqp, f.scq, err = mk(src, f.depth+16, f.depth, 1); err != nil {
		return nil, err
	}
	if f.rqp, f.rcq, err = mk(dst, f.rdepth+16, 1, f.rdepth); err != nil {
		return nil, err
	}
	mtu := verbs.MTU(min(int(src.ctx.Attr().PortMTU), int(dst.ctx.Attr().PortMTU), int(s.Hosts.MTU)))
	const qkey = 0x11111111
	if f.ud {
		for _, qp := range []*rnic.QP{f.sqp, f.rqp} {
			if err := modify(qp, []qpStep{
				{verbs.QPAttr{State: verbs.StateInit, Port: 1, QKey: qkey}, verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrQKey},
				{verbs.QPAttr{State: verbs.StateRTR}, verbs.AttrState},
				{verbs.QPAttr{State: verbs.StateRTS}, verbs.AttrState | verbs.AttrSQPSN},
			}); err != nil {
				return nil, err
			}
		}
	} else {
		for _, e := range []struct {
			qp, peer *rnic.QP
			remote   *rdmaHost
		}{{f.sqp, f.rqp, dst}, {f.rqp, f.sqp, src}} {
			if err := modify(e.qp, []qpStep{
				{verbs.QPAttr{State: verbs.StateInit, Port: 1, AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead},
					verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags},
				{verbs.QPAttr{State: verbs.StateRTR, AH: verbs.AHAttr{DGID: e.remote.ctx.Attr().GID, ServiceLevel: sl(fi.Prio)},
					PathMTU: mtu, DestQPN: e.peer.QPN(), MaxDestRdAtomic: 16, MinRNRTimer: uint8(intOr(q.MinRNRTimer, 12))},
					verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN | verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer},
				{verbs.QPAttr{State: verbs.StateRTS, Timeout: uint8(intOr(q.Timeout, 14)), RetryCnt: uint8(intOr(q.RetryCnt, 7)),
					RNRRetry: uint8(intOr(q.RNRRetry, 7)), MaxRdAtomic: 16},
					verbs.AttrState | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry | verbs.AttrSQPSN | verbs.AttrMaxQPRdAtomic},
			}); err != nil {
				return nil, err
			}
		}
	}

	// Work requests.
	op := verbs.OpWrite
	if f.recv {
		op = verbs.OpSend
	}
	var ah verbs.AH
	if f.ud {
		if ah, err = src.pd.CreateAH(verbs.AHAttr{DGID: dst.ctx.Attr().GID, ServiceLevel: sl(fi.Prio)}); err != nil {
			return nil, err
		}
	}
	f.wrs = make([]verbs.SendWR, f.depth)
	f.sges = make([]verbs.SGE, f.depth)
	for i := range f.wrs {
		f.sges[i] = verbs.SGE{Addr: saddr, Length: uint32(f.msg), LKey: smr.LKey()}
		f.wrs[i] = verbs.SendWR{Opcode: op, SGL: f.sges[i : i+1 : i+1]}
		if f.ud {
			f.wrs[i].AH, f.wrs[i].RemoteQPN, f.wrs[i].RemoteQKey = ah, f.rqp.QPN(), qkey
		} else if op == verbs.OpWrite {
			f.wrs[i].RemoteAddr, f.wrs[i].RKey = uint64(daddr), dmr.RKey()
		}
	}
	start := fi.Start.Time()
	if f.recv {
		rsge := []verbs.SGE{{Addr: daddr, Length: uint32(f.msg + grh), LKey: dmr.LKey()}}
		f.rwrs = make([]verbs.RecvWR, f.rdepth)
		for i := range f.rwrs {
			f.rwrs[i] = verbs.RecvWR{ID: uint64(i), SGL: rsge}
		}
		// The initial receives are posted by a set-up thread of their own,
		// and the sender starts no earlier than they are in place (as
		// perftest posts them before exchanging QP numbers).
		setup := rnic.NewCPU(f.k, f.name+"/setup")
		dst.ctx.SetCPU(setup)
		err := f.postRecvs(f.rdepth)
		dst.ctx.SetCPU(nil)
		if err != nil {
			return nil, err
		}
		start = max(start, setup.Now())
		f.rcq.SetNotify(f, tagRecvCQ)
	}
	f.scq.SetNotify(f, tagSendCQ)
	f.pace.Init(f.k, f, tagPace)
	f.id = f.k.Register(f)
	f.k.Post(start, f.id, tagStart)
	return f, nil
}

// qpStep is one ibv_modify_qp call.
type qpStep struct {
	attr verbs.QPAttr
	mask verbs.AttrMask
}

func modify(qp *rnic.QP, steps []qpStep) error {
	for i := range steps {
		if err := qp.Modify(&steps[i].attr, steps[i].mask); err != nil {
			return err
		}
	}
	return nil
}

// OnEvent implements sim.Handler: the start, the two CQ notify hooks and
// the pacing timer.
func (f *rdmaFlow) OnEvent(now sim.Time, tag uint64) {
	switch tag {
	case tagStart:
		f.nextAt = now
		f.send(now)
	case tagSendCQ, tagPace:
		f.send(now)
	case tagRecvCQ:
		f.receive()
	}
}

// send drains the send CQ and posts what the window and the pacing allow,
// as one chain (one doorbell).
func (f *rdmaFlow) send(now sim.Time) {
	ctx := f.src.ctx
	ctx.SetCPU(f.src.cpu)
	defer ctx.SetCPU(nil)
	for {
		k := f.scq.Poll(f.wc[:])
		for _, wc := range f.wc[:k] {
			if wc.Status != verbs.WCSuccess {
				f.failed(wc)
				continue
			}
			f.done = max(f.done, wc.WRID)
		}
		if k < len(f.wc) {
			break
		}
	}
	if f.total >= 0 && f.left == 0 && f.done == f.posted && !f.finished {
		f.finished, f.finishAt = true, f.src.cpu.Now()
	}
	if f.fail != nil {
		return
	}
	out := int(f.posted - f.done)
	n := 0
	for out+n < f.depth && f.left != 0 {
		if f.rate > 0 && f.nextAt > now {
			f.pace.Set(f.nextAt)
			break
		}
		l := f.msg
		if f.total >= 0 {
			l = min(l, f.left)
			f.left -= l
		}
		f.posted++
		w := &f.wrs[n]
		w.ID = f.posted
		w.SGL[0].Length = uint32(l)
		w.Flags = 0
		if f.posted%f.sig == 0 || f.left == 0 {
			w.Flags = verbs.FlagSignaled
		}
		w.Next = nil
		if n > 0 {
			f.wrs[n-1].Next = w
		}
		if f.rate > 0 {
			f.nextAt = max(f.nextAt, now) + sim.TxTime(l, f.rate)
		}
		n++
	}
	if n == 0 {
		return
	}
	if _, err := f.sqp.PostSend(&f.wrs[0]); err != nil && f.fail == nil {
		f.fail = fmt.Errorf("post send: %v", err)
	}
}

// receive drains the receive CQ and reposts the receives it consumed.
func (f *rdmaFlow) receive() {
	ctx := f.dst.ctx
	ctx.SetCPU(f.dst.cpu)
	defer ctx.SetCPU(nil)
	for {
		k := f.rcq.Poll(f.wc[:])
		for _, wc := range f.wc[:k] {
			if wc.Status != verbs.WCSuccess {
				f.failed(wc)
				continue
			}
			f.rxMsgs++
		}
		if k > 0 && f.fail == nil {
			if err := f.postRecvs(k); err != nil {
				f.fail = fmt.Errorf("post recv: %v", err)
			}
		}
		if k < len(f.wc) {
			break
		}
	}
}

func (f *rdmaFlow) postRecvs(n int) error {
	for i := 0; i < n; i++ {
		f.rwrs[i].Next = nil
		if i+1 < n {
			f.rwrs[i].Next = &f.rwrs[i+1]
		}
	}
	_, err := f.rqp.PostRecv(&f.rwrs[0])
	return err
}

func (f *rdmaFlow) failed(wc verbs.WC) {
	f.errors++
	if f.fail == nil {
		f.fail = fmt.Errorf("completion %v on QP %d at %s", wc.Status, wc.QPN, f.k.Now())
	}
}

// postedBytes is the payload the application has posted.
func (f *rdmaFlow) postedBytes() int64 {
	if f.total >= 0 {
		return f.total - f.left
	}
	return int64(f.posted) * f.msg
}

// delivered is the payload the destination QP accepted in order.
func (f *rdmaFlow) delivered() uint64 { return f.rqp.RxPayload() }

// buildRNIC attaches a simulated RNIC to every host and creates the rc/ud
// flows.
func (x *Sim) buildRNIC() error {
	s := x.Scenario
	cfg, err := experiment.NICConfig(s, units.Rate(s.Fabric.Links.HostRate))
	if err != nil {
		return err
	}
	bytes := !cfg.SizesOnly
	for i := 0; i < x.Net.NumHosts(); i++ {
		id := fabric.NodeID(i)
		name := x.Net.NodeName(id)
		n, err := rnic.New(x.Kernel, name, cfg)
		if err != nil {
			return s.Errorf("rnic", "%v", err)
		}
		if err := x.Net.Attach(id, n); err != nil {
			return s.Errorf("hosts.nic", "%v", err)
		}
		ctx, err := n.Open()
		if err != nil {
			return s.Errorf("hosts.nic", "%v", err)
		}
		pd, err := ctx.AllocPD()
		if err != nil {
			return s.Errorf("hosts.nic", "%v", err)
		}
		x.hosts = append(x.hosts, &rdmaHost{nic: n, ctx: ctx, cpu: rnic.NewCPU(x.Kernel, name+"/io"), pd: pd})
	}
	for i, fi := range s.ExpandFlows() {
		f, err := x.newRDMAFlow(fi, i, x.hosts[fi.Src], x.hosts[fi.Dst], bytes)
		if err != nil {
			return s.Errorf(fmt.Sprintf("flows[%d]", fi.Group), "%s: %v", fi.Name, err)
		}
		x.rflows = append(x.rflows, f)
	}
	if w := s.Outputs.Warmup.Time(); w > 0 {
		x.Kernel.At(w, measureStart{x}, 0)
	}
	if iv := s.Outputs.SampleInterval.Time(); iv > 0 && s.Outputs.Series != scenarios.SeriesNone {
		for i, f := range x.rflows {
			if !x.seriesOf(i, f) {
				continue
			}
			f.series = &flowSeries{rx: pfc.NewSeries(fabric.DefaultSampleCap)}
			if cfg.CC == rnic.CCDCQCN { // the rate series is a DCQCN figure only
				f.series.rate = pfc.NewSeries(fabric.DefaultSampleCap)
			}
			x.sampled = append(x.sampled, f)
		}
		fs := &flowSampler{x: x, every: iv}
		fs.id = x.Kernel.Register(fs)
		x.Kernel.Post(0, fs.id, 0)
	}
	return nil
}

// maxFlowSeries bounds the per-flow time series a result carries unless
// outputs.flows marks the flows.
const maxFlowSeries = 16

// seriesOf reports whether flow i, f, gets time series: one outputs.flows
// marks, or without marks one of the first maxFlowSeries.
func (x *Sim) seriesOf(i int, f *rdmaFlow) bool {
	marks := x.Scenario.Outputs.Flows
	if len(marks) == 0 {
		return i < maxFlowSeries
	}
	return slices.ContainsFunc(marks, func(p string) bool { ok, _ := path.Match(p, f.name); return ok })
}

// measureStart snapshots every flow's receiver bytes at outputs.warmup.
type measureStart struct{ x *Sim }

func (m measureStart) OnEvent(sim.Time, uint64) {
	for _, f := range m.x.rflows {
		f.rx0 = f.delivered()
	}
}

// flowSampler records each flow's DCQCN rate and delivered bytes every
// sample interval (bounded series, like the fabric's queue depths).
type flowSampler struct {
	x     *Sim
	id    sim.HandlerID
	every sim.Time
}

func (s *flowSampler) OnEvent(now sim.Time, _ uint64) {
	for _, f := range s.x.sampled {
		if f.series.rate != nil {
			f.series.rate.Sample(now, f.sqp.Rate().BitsPerSecond())
		}
		f.series.rx.Sample(now, int64(f.delivered()))
	}
	if next := now + s.every; next <= s.x.Scenario.Duration.Time() {
		s.x.Kernel.Post(next, s.id, 0)
	}
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}
