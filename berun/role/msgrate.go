package role

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/besim/besim/berun/internal/tcpx"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/msgrate"
)

// The msgrate roles replay a besim msgrate benchmark (package
// workloads/msgrate, the paper's Figure 11: the message rate of I/O
// threads posting RDMA WRITEs on many RC QPs, with and without thread
// domains) on the hosts' RDMA devices (always verbs: it measures the
// device's doorbells). msgrate-sender runs the scenario's I/O threads,
// each an OS thread driving msgrate.Poster (the machine besim's msgratesim
// drives): its QPs in the creation order msgrate.Owners gives, one CQ per
// thread, one thread domain per thread when the point has them, one WR
// per step to the next QP with room, one signalled in SignalEvery, and
// the jittered application work (a busy wait) after each post.
// msgrate-target owns the memory the WRITEs land in and the other end of
// every QP. The points (QP counts outer, the thread-domain settings
// inner, the scenario's order) run one after the other in wall-clock
// slots (fragsize.Sweep); in each the QPs are created, exchanged over one
// TCP connection, run, and destroyed. The rate is the WRs posted in the
// point's measured interval; besim's shared-doorbell count and lock time
// are the provider's internals, not measured here (-1).
func init() {
	params := []Param{
		{Name: "device", Doc: "the RDMA device (default: the first one)"},
		{Name: "gid_index", Default: "auto", Doc: "GID table index (auto: the RoCE v2 GID of the data IP, from sysfs)"},
		{Name: "prio", Doc: "802.1p priority of the QPs (service level); default: the scenario's lossless priority"},
		{Name: "dscp", Doc: "DSCP of the QPs (traffic class DSCP << 2); default 8 x prio + 2"}}
	Register(Info{Name: "msgrate-sender", New: newMsgrate, Params: params,
		Summary: "I/O threads of a besim msgrate benchmark (Figure 11) over verbs: RDMA WRITEs on many RC QPs, with and without thread domains"})
	Register(Info{Name: "msgrate-target", New: newMsgrate, Params: params,
		Summary: "target of a besim msgrate benchmark (Figure 11) over verbs: the memory and the other end of every QP"})
}

type msgrateRole struct {
	sender bool
	scen   *scenarios.Scenario
	device string
	qos    verbsQoS
	vctx   verbs.Context
	pd     verbs.PD
	mem    []byte
	mr     verbs.MR
	ln     net.Listener
}

// msgratePoint is point i of s: its QP count and thread-domain setting.
func msgratePoint(s *scenarios.Scenario, i int) (qps int, td bool) {
	b := s.Benchmark
	return b.QPs[i/len(b.ThreadDomains)], b.ThreadDomains[i%len(b.ThreadDomains)]
}

// MsgrateKey is a point's key in the roles' metrics and besim's names:
// td/QPS or no_td/QPS.
func MsgrateKey(qps int, td bool) string {
	if td {
		return "td/" + strconv.Itoa(qps)
	}
	return "no_td/" + strconv.Itoa(qps)
}

func newMsgrate(spec Spec) (Role, error) {
	info, _ := Lookup(spec.Role)
	p := ReadParams(info, spec)
	r := &msgrateRole{sender: spec.Role == "msgrate-sender"}
	vp := readVerbsParams(p, spec)
	r.device = vp.device
	if err := p.Err(); err != nil {
		return nil, err
	}
	s, err := roleScenario(spec)
	if err != nil {
		return nil, err
	}
	if s.Benchmark == nil || s.Benchmark.Kind != scenarios.MsgRate || len(s.Benchmark.QPs) == 0 || len(s.Benchmark.ThreadDomains) == 0 {
		return nil, errors.New("the scenario has no msgrate benchmark")
	}
	if s.Benchmark.Through == scenarios.ThroughCore {
		return nil, errors.New("benchmark.through: core: the msgrate roles post on the verbs directly (through: nic); the msgrate-core-sender and msgrate-core-target roles run it through the core")
	}
	r.scen = s
	r.qos = vp.qos(s)
	switch {
	case r.sender && len(spec.Peers) != 1:
		return nil, fmt.Errorf("a sender needs one peer, the msgrate-target (has %d)", len(spec.Peers))
	case !r.sender && len(spec.Peers) != 0:
		return nil, fmt.Errorf("a target connects to nobody; remove its peers %v", spec.Peers)
	}
	return r, nil
}

func (r *msgrateRole) points() int {
	return len(r.scen.Benchmark.QPs) * len(r.scen.Benchmark.ThreadDomains)
}

func (r *msgrateRole) sweep(spec Spec) (fragsize.Sweep, error) {
	return fragsize.NewSweep(sim.Time(spec.Duration.Nanoseconds())*sim.Nanosecond, r.points(), r.scen.Benchmark.Warmup.Time())
}

// config is point i's msgrate configuration (defaults applied).
func (r *msgrateRole) config(i int) msgrate.Config {
	q, td := msgratePoint(r.scen, i)
	return msgrate.FromScenario(r.scen, q, td).WithDefaults()
}

func (r *msgrateRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	if _, err := r.sweep(spec); err != nil {
		return "", err
	}
	device := r.device
	if device == "" {
		d, err := DefaultDevice()
		if err != nil {
			return "", fmt.Errorf("verbs: %w", err)
		}
		device = d
	}
	if r.qos.gid < 0 {
		host, _, _ := net.SplitHostPort(spec.Bind)
		g, how, err := autoGID(device, 1, net.ParseIP(host))
		if err != nil {
			return "", fmt.Errorf("verbs: %w", err)
		}
		r.qos.gid = g
		if spec.Logf != nil {
			spec.Logf("%s: %s", spec.ID, how)
		}
	}
	var err error
	if r.vctx, err = OpenVerbs(device, r.qos.gid); err != nil {
		return "", fmt.Errorf("verbs: %w", err)
	}
	if r.pd, err = r.vctx.AllocPD(); err != nil {
		return "", fmt.Errorf("verbs: alloc PD: %w", err)
	}
	size := r.config(0).MsgSize
	if r.mem, err = mapMem(size); err != nil {
		return "", fmt.Errorf("msgrate: %d bytes of registered memory: %w", size, err)
	}
	if r.mr, err = r.pd.RegMR(uintptrOf(r.mem), size, verbs.AccessLocalWrite|verbs.AccessRemoteWrite); err != nil {
		return "", fmt.Errorf("msgrate: register %d bytes: %w", size, err)
	}
	if r.sender {
		return "", nil
	}
	if r.ln, err = listen(ctx, spec.Bind); err != nil {
		return "", err
	}
	return r.ln.Addr().String(), nil
}

func (r *msgrateRole) Close() error {
	var errs []error
	if r.ln != nil {
		errs = append(errs, r.ln.Close())
	}
	if r.vctx != nil {
		errs = append(errs, r.vctx.Close())
	}
	if r.mem != nil {
		unmapMem(r.mem)
		r.mem = nil
	}
	return errors.Join(errs...)
}

func (r *msgrateRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	sw, err := r.sweep(spec)
	if err != nil {
		return Result{}, err
	}
	nc, done, err := pairConn(ctx, spec, peers, r.ln, r.sender)
	if err != nil {
		return Result{}, err
	}
	defer done()
	c, err := tcpx.New(nc, tcpx.Options{MaxMessage: 16 + maxQPs*verbs.QPInfoSize})
	if err != nil {
		return Result{}, err
	}
	res := Result{Metrics: map[string]float64{"measure_s": sw.Measure.Seconds(), "threads": float64(r.config(0).Threads),
		"message_bytes": float64(r.config(0).MsgSize)}}
	if r.sender {
		err = r.send(ctx, spec, c, sw, &res)
	} else {
		err = r.serve(c)
	}
	return res, err
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

// maxQPs bounds one point's QP count (the exchange's frame size).
const maxQPs = 4096

// rcConnect brings qp to RTS towards peer, as perftest's RC endpoints.
func (r *msgrateRole) rcConnect(qp verbs.QP, peer verbs.QPInfo) error {
	return rcConnectQP(r.vctx, r.qos, qp, peer)
}

// rcConnectQP brings qp of device vctx to RTS towards peer with the QoS
// qos (GID index, traffic class, service level).
func rcConnectQP(vctx verbs.Context, qos verbsQoS, qp verbs.QP, peer verbs.QPInfo) error {
	ah := verbs.AHAttr{DGID: peer.GID, SGIDIndex: uint8(qos.gid), TrafficClass: qos.dscp << 2, ServiceLevel: qos.prio}
	return verbs.ModifyAll(qp, []verbs.QPAttr{
		{State: verbs.StateInit, Port: 1, AccessFlags: verbs.AccessLocalWrite | verbs.AccessRemoteWrite},
		{State: verbs.StateRTR, AH: ah, PathMTU: min(peer.MTU, vctx.Attr().PortMTU), DestQPN: peer.QPN, RQPSN: peer.PSN, MaxDestRdAtomic: 16, MinRNRTimer: 12},
		{State: verbs.StateRTS, Timeout: 14, RetryCnt: 7, RNRRetry: 7, SQPSN: 0, MaxRdAtomic: 16},
	}, []verbs.AttrMask{
		verbs.AttrState | verbs.AttrPKeyIndex | verbs.AttrPort | verbs.AttrAccessFlags,
		verbs.AttrState | verbs.AttrAV | verbs.AttrPathMTU | verbs.AttrDestQPN | verbs.AttrRQPSN |
			verbs.AttrMaxDestRdAtomic | verbs.AttrMinRNRTimer,
		verbs.AttrState | verbs.AttrTimeout | verbs.AttrRetryCnt | verbs.AttrRNRRetry |
			verbs.AttrSQPSN | verbs.AttrMaxQPRdAtomic,
	})
}

func (r *msgrateRole) info(qp verbs.QP) verbs.QPInfo {
	a := r.vctx.Attr()
	return verbs.QPInfo{QPN: qp.QPN(), GID: a.GID, MTU: a.PortMTU, RKey: r.mr.RKey(), Addr: uint64(uintptrOf(r.mem))}
}

func putInfos(tag byte, point int, infos []verbs.QPInfo) []byte {
	out := make([]byte, 0, 9+len(infos)*verbs.QPInfoSize)
	out = append(out, tag)
	out = binary.BigEndian.AppendUint32(out, uint32(point))
	out = binary.BigEndian.AppendUint32(out, uint32(len(infos)))
	for _, q := range infos {
		out = append(out, q.Marshal()...)
	}
	return out
}

func getInfos(m []byte, tag byte) (point int, infos []verbs.QPInfo, err error) {
	if len(m) < 9 || m[0] != tag {
		return 0, nil, fmt.Errorf("msgrate exchange: a message %q..., want %q", m[:min(len(m), 1)], tag)
	}
	point, n := int(binary.BigEndian.Uint32(m[1:])), int(binary.BigEndian.Uint32(m[5:]))
	if n > maxQPs || len(m) != 9+n*verbs.QPInfoSize {
		return 0, nil, fmt.Errorf("msgrate exchange: %d QPs in %d bytes", n, len(m))
	}
	for i := range n {
		q, err := verbs.UnmarshalQPInfo(m[9+i*verbs.QPInfoSize : 9+(i+1)*verbs.QPInfoSize])
		if err != nil {
			return 0, nil, err
		}
		infos = append(infos, q)
	}
	return point, infos, nil
}

// serve is the target: for each point the sender announces, one QP per
// sender QP, connected to it; destroyed when the sender is done.
func (r *msgrateRole) serve(c *tcpx.Conn) error {
	for {
		m, err := c.ReadMsg(nil)
		if err != nil {
			return fmt.Errorf("waiting for the msgrate-sender: %w", err)
		}
		if len(m) == 1 && m[0] == 'E' {
			return nil
		}
		point, infos, err := getInfos(m, 'P')
		if err != nil {
			return err
		}
		cq, err := r.vctx.CreateCQ(16, nil)
		if err != nil {
			return fmt.Errorf("point %d: create CQ: %w", point, err)
		}
		var qps []verbs.QP
		var mine []verbs.QPInfo
		for _, in := range infos {
			qp, err := r.pd.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: cq, RecvCQ: cq, MaxSendWR: 1, MaxRecvWR: 1, MaxSGE: 1})
			if err == nil {
				err = r.rcConnect(qp, in)
			}
			if err != nil {
				return fmt.Errorf("point %d: QP %d of %d: %w", point, len(qps), len(infos), err)
			}
			qps = append(qps, qp)
			mine = append(mine, r.info(qp))
		}
		if err := c.WriteMsg(putInfos('R', point, mine)); err != nil {
			return err
		}
		m, err = c.ReadMsg(nil)
		if err != nil || len(m) != 1 || m[0] != 'D' {
			return fmt.Errorf("point %d: waiting for the sender's end of the point: %q, %v", point, m, err)
		}
		var errs []error
		for _, qp := range qps {
			errs = append(errs, qp.Destroy())
		}
		errs = append(errs, cq.Destroy())
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("point %d: %w", point, err)
		}
		if err := c.WriteMsg([]byte{'d'}); err != nil {
			return err
		}
	}
}

// send runs the points in turn.
func (r *msgrateRole) send(ctx context.Context, spec Spec, c *tcpx.Conn, sw fragsize.Sweep, res *Result) error {
	var errs []error
	for i := range sw.Points {
		at := spec.Start.Add(time.Duration(sim.Time(i) * sw.Slot / sim.Nanosecond))
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			return errors.Join(append(errs, fmt.Errorf("stopped (%v)", context.Cause(ctx)))...)
		}
		cfg := r.config(i)
		k := MsgrateKey(cfg.QPs, cfg.ThreadDomains)
		posted, err := r.point(ctx, spec, c, i, cfg, sw)
		res.Metrics["posted/"+k] = float64(posted)
		res.Metrics["mmps/"+k] = float64(posted) / sw.Measure.Seconds() / 1e6
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
			return errors.Join(errs...) // the exchange is out of step
		}
	}
	return errors.Join(append(errs, c.WriteMsg([]byte{'E'}))...)
}

// mrThread is one I/O thread's resources.
type mrThread struct {
	td  verbs.TD
	cq  verbs.CQ
	qps []verbs.QP
	m   *msgrate.Poster
}

// point runs point i: the threads' QPs, the exchange, the posting loops
// until the end of the measured interval, a short drain, and teardown.
func (r *msgrateRole) point(ctx context.Context, spec Spec, c *tcpx.Conn, i int, cfg msgrate.Config, sw fragsize.Sweep) (posted uint64, err error) {
	if cfg.QPs > maxQPs {
		return 0, fmt.Errorf("%d QPs: at most %d", cfg.QPs, maxQPs)
	}
	th := make([]*mrThread, cfg.Threads)
	defer func() {
		var errs []error
		for _, t := range th {
			if t == nil {
				continue
			}
			for _, qp := range t.qps {
				errs = append(errs, qp.Destroy())
			}
			if t.cq != nil {
				errs = append(errs, t.cq.Destroy())
			}
			if t.td != nil {
				errs = append(errs, t.td.Dealloc())
			}
		}
		if e := errors.Join(errs...); e != nil && err == nil {
			err = e
		}
	}()
	for j := range th {
		t := &mrThread{m: msgrate.NewPoster(&cfg, j)}
		th[j] = t
		if cfg.ThreadDomains {
			if t.td, err = r.vctx.AllocTD(); err != nil {
				return 0, fmt.Errorf("thread %d: alloc thread domain: %w", j, err)
			}
		}
		if t.cq, err = r.vctx.CreateCQ(cfg.QPs*cfg.Depth/cfg.Threads+cfg.Depth+16, t.td); err != nil {
			return 0, fmt.Errorf("thread %d: create CQ: %w", j, err)
		}
	}
	// QPs in the creation order besim draws (msgrate.Owners).
	var infos []verbs.QPInfo
	type ref struct{ t, q int }
	var order []ref
	for _, o := range msgrate.Owners(&cfg) {
		t := th[o]
		qp, err := r.pd.CreateQP(verbs.QPInitAttr{Type: verbs.RC, SendCQ: t.cq, RecvCQ: t.cq, TD: t.td,
			MaxSendWR: cfg.Depth, MaxRecvWR: 1, MaxSGE: 1})
		if err != nil {
			return 0, fmt.Errorf("QP %d of %d: %w", len(infos), cfg.QPs, err)
		}
		t.qps = append(t.qps, qp)
		order = append(order, ref{o, t.m.AddQP()})
		infos = append(infos, r.info(qp))
	}
	if err := c.WriteMsg(putInfos('P', i, infos)); err != nil {
		return 0, err
	}
	m, err := c.ReadMsg(nil)
	if err != nil {
		return 0, fmt.Errorf("waiting for the target's QPs: %w", err)
	}
	_, peers, err := getInfos(m, 'R')
	if err != nil {
		return 0, err
	}
	if len(peers) != len(order) {
		return 0, fmt.Errorf("the target answered %d QPs for %d", len(peers), len(order))
	}
	for j, o := range order {
		if err := r.rcConnect(th[o.t].qps[o.q], peers[j]); err != nil {
			return 0, fmt.Errorf("QP %d: %w", j, err)
		}
	}
	remote := make([][]verbs.QPInfo, len(th))
	for j, o := range order {
		for len(remote[o.t]) <= o.q {
			remote[o.t] = append(remote[o.t], verbs.QPInfo{})
		}
		remote[o.t][o.q] = peers[j]
	}
	from, to := sw.Window(i)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for j, t := range th {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := r.post(ctx, spec, t, remote[j], &cfg, from, to)
			mu.Lock()
			posted += n
			if err != nil {
				errs = append(errs, fmt.Errorf("thread %d: %w", j, err))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if err := c.WriteMsg([]byte{'D'}); err != nil {
		return posted, err
	}
	if m, err := c.ReadMsg(nil); err != nil || len(m) != 1 || m[0] != 'd' {
		errs = append(errs, fmt.Errorf("waiting for the target's end of the point: %q, %v", m, err))
	}
	return posted, errors.Join(errs...)
}

// post is one I/O thread: msgrate.Poster's loop on its own OS thread until
// to (time since the run's start), then a drain of its signalled WRs.
// It returns the WRs posted in [from, to).
func (r *msgrateRole) post(ctx context.Context, spec Spec, t *mrThread, remote []verbs.QPInfo, cfg *msgrate.Config, from, to sim.Time) (uint64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	sge := []verbs.SGE{{Addr: uintptrOf(r.mem), Length: uint32(cfg.MsgSize), LKey: r.mr.LKey()}}
	wcs := make([]verbs.WC, 32)
	var wr verbs.SendWR
	var posted uint64
	outstanding := 0 // signalled WRs not completed
	poll := func() error {
		n := t.cq.Poll(wcs)
		for _, wc := range wcs[:n] {
			if wc.Status != verbs.WCSuccess {
				return fmt.Errorf("WRITE on QP %d: %v", wc.WRID>>32, wc.Status)
			}
			t.m.Completed(int(wc.WRID >> 32))
			outstanding--
		}
		return nil
	}
	for ctx.Err() == nil {
		now := since(spec.Start)
		if now >= to {
			break
		}
		if err := poll(); err != nil {
			return posted, err
		}
		q, id, sig, ok := t.m.Next()
		if !ok {
			continue
		}
		wr = verbs.SendWR{ID: uint64(q)<<32 | id&0xffffffff, Opcode: verbs.OpWrite, SGL: sge,
			RemoteAddr: remote[q].Addr, RKey: remote[q].RKey}
		if sig {
			wr.Flags = verbs.FlagSignaled
		}
		if _, err := t.qps[q].PostSend(&wr); err != nil {
			return posted, fmt.Errorf("post on QP %d: %w", q, err)
		}
		if sig {
			outstanding++
		}
		work := t.m.Posted(q)
		if now >= from {
			posted++
		}
		for end := time.Now().Add(time.Duration(work / sim.Nanosecond)); time.Now().Before(end); {
		}
	}
	// Drain the signalled WRs (bounded: a second).
	for deadline := time.Now().Add(time.Second); outstanding > 0 && time.Now().Before(deadline); {
		if err := poll(); err != nil {
			return posted, err
		}
	}
	if outstanding > 0 {
		return posted, fmt.Errorf("%d signalled WRITEs not completed a second after the point's end", outstanding)
	}
	return posted, nil
}
