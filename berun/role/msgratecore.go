package role

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/msgrate"
)

// The msgrate-core roles replay a besim msgrate benchmark with through:
// core (scenario fig11-core: the paper's Figure 11 message rate through
// the ByteExpress core, with and without thread domains) over the core on
// the hosts' RDMA devices (always verbs). msgrate-core-sender is the
// client host: for each point (QP counts outer, the thread-domain
// settings inner, the scenario's order) a fresh endpoint with the
// scenario's I/O threads, one thread domain per thread or none
// (byteexpress Config.NoThreadDomains) as the point says, and one engine
// per QP counted (Config.EnginePerSocket: besim dials one address alias of
// the server per QP, berun dials the target that many times), each socket
// driven by msgrate.CoreClient, the machine besim's msgratesim drives:
// Depth messages outstanding, and per answer the jittered application
// work (a busy wait on the I/O thread that delivered it) and one more
// message. msgrate-core-target is the server host: one endpoint for the
// whole run with the scenario's I/O threads (thread domains on: besim
// switches both hosts' setting per point, berun only the client's)
// answering every message with fragsize.ResponseSize bytes and counting
// each point's messages in its measured interval with fragsize.Receiver,
// as besim's server does; that count is the rate (msgrate/TD/QPS/mmps).
//
// The points run one after the other in wall-clock slots (fragsize.Sweep)
// whose warm-up is the parameter setup (engine set-up: QP creation and the
// TCP exchange of every engine, which besim lets finish before its
// warm-up starts) plus the scenario's warmup; a point whose engines are
// not all connected when its set-up ends fails loudly. After the measured
// interval the sender stops sending, waits for every message's answer and
// closes its endpoint. besim's shared-doorbell QPs and CPU time in
// doorbell locks are the simulated provider's, not measured (-1 in the
// table).
func init() {
	params := []Param{
		{Name: "setup", Default: "1s", Doc: "time each point gives its engines to connect before the scenario's warmup (besim starts the warmup once they are); the plan sizes it by the largest QP count"},
		{Name: "device", Doc: "the RDMA device (default: the first one)"},
		{Name: "gid_index", Default: "auto", Doc: "GID table index (auto: the RoCE v2 GID of the data IP, from sysfs)"},
		{Name: "prio", Doc: "802.1p priority of the QPs (service level); default: the scenario's lossless priority"},
		{Name: "dscp", Doc: "DSCP of the QPs (traffic class DSCP << 2); default 8 x prio + 2"}}
	Register(Info{Name: "msgrate-core-sender", New: newMsgrateCore, Params: params,
		Summary: "client of a besim msgrate benchmark through the core (fig11-core) over verbs: one engine per QP, the scenario's I/O threads with or without thread domains"})
	Register(Info{Name: "msgrate-core-target", New: newMsgrateCore, Params: params,
		Summary: "server of a besim msgrate benchmark through the core (fig11-core) over verbs: answers every message with 32 bytes and counts each point's message rate"})
}

type msgrateCoreRole struct {
	sender bool
	scen   *scenarios.Scenario
	setup  time.Duration
	device string
	qos    verbsQoS
	node   *beNode // the target's
}

func newMsgrateCore(spec Spec) (Role, error) {
	info, _ := Lookup(spec.Role)
	p := ReadParams(info, spec)
	r := &msgrateCoreRole{sender: spec.Role == "msgrate-core-sender"}
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
	b := s.Benchmark
	if b == nil || b.Kind != scenarios.MsgRate || len(b.QPs) == 0 || len(b.ThreadDomains) == 0 {
		return nil, errors.New("the scenario has no msgrate benchmark")
	}
	if b.Through != scenarios.ThroughCore {
		return nil, errors.New("benchmark.through is not core: the msgrate-core roles run the message rate through the ByteExpress core; the msgrate-sender and msgrate-target roles post on the verbs directly")
	}
	r.scen = s
	for i := range r.points() {
		if c := r.config(i); c.MsgSize <= fragsize.ResponseSize || c.QPs < 1 || c.QPs > maxQPs || c.Threads < 1 || c.Depth < 1 {
			return nil, fmt.Errorf("point %s: message %d B (must exceed the %d B answer), %d QPs (1..%d), %d threads, depth %d (each >= 1)",
				MsgrateKey(c.QPs, c.ThreadDomains), c.MsgSize, fragsize.ResponseSize, c.QPs, maxQPs, c.Threads, c.Depth)
		}
	}
	r.qos = vp.qos(s)
	switch {
	case r.sender && len(spec.Peers) != 1:
		return nil, fmt.Errorf("a sender needs one peer, the msgrate-core-target (has %d)", len(spec.Peers))
	case !r.sender && len(spec.Peers) != 0:
		return nil, fmt.Errorf("a target connects to nobody; remove its peers %v", spec.Peers)
	}
	return r, nil
}

func (r *msgrateCoreRole) points() int {
	return len(r.scen.Benchmark.QPs) * len(r.scen.Benchmark.ThreadDomains)
}

// config is point i's msgrate configuration (defaults applied).
func (r *msgrateCoreRole) config(i int) msgrate.Config {
	q, td := msgratePoint(r.scen, i)
	return msgrate.FromScenario(r.scen, q, td).WithDefaults()
}

// sweep is the run's schedule: each slot's warm-up is the set-up and the
// scenario's warmup.
func (r *msgrateCoreRole) sweep(spec Spec) (fragsize.Sweep, error) {
	warm := sim.Time(r.setup.Nanoseconds())*sim.Nanosecond + r.scen.Benchmark.Warmup.Time()
	return fragsize.NewSweep(sim.Time(spec.Duration.Nanoseconds())*sim.Nanosecond, r.points(), warm)
}

// coreCQDepth is a CQ depth per thread that holds the completions of
// engines engines spread over threads threads, as besim sizes it.
func coreCQDepth(engines, threads int) int {
	d := byteexpress.Config{}.Defaults()
	return max(d.CQDepth, ((engines+threads-1)/threads+1)*(d.SQDepth+d.RQDepth))
}

func (r *msgrateCoreRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	if _, err := r.sweep(spec); err != nil {
		return "", err
	}
	if r.sender {
		return "", nil // one endpoint per point, opened in Run
	}
	// The target's engines: every point's, in case a closed point's
	// linger while the next point's connect.
	engines := 0
	for i := range r.points() {
		engines += r.config(i).QPs
	}
	threads := r.config(0).Threads
	n, err := newBENode(ctx, spec, r.device, r.qos, byteexpress.Config{Threads: threads, CQDepth: coreCQDepth(engines, threads)})
	if err != nil {
		return "", err
	}
	r.node = n
	return n.ln.Addr().String(), nil
}

func (r *msgrateCoreRole) Close() error {
	if r.node != nil {
		return r.node.close()
	}
	return nil
}

func (r *msgrateCoreRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	sw, err := r.sweep(spec)
	if err != nil {
		return Result{}, err
	}
	c := r.config(0)
	res := Result{Metrics: map[string]float64{"measure_s": sw.Measure.Seconds(), "threads": float64(c.Threads),
		"message_bytes": float64(c.MsgSize)}}
	if r.sender {
		err = r.send(ctx, spec, peers, sw, &res)
	} else {
		err = r.receive(ctx, spec, sw, &res)
	}
	return res, err
}

// receive answers every message until the end of the run, counting each
// point's in its measured interval (one fragsize.Receiver per point and
// socket stream, so that the target's I/O threads do not contend on one
// lock).
func (r *msgrateCoreRole) receive(ctx context.Context, spec Spec, sw fragsize.Sweep, res *Result) error {
	n := r.node
	c := r.config(0)
	type stripe struct {
		mu sync.Mutex
		rx []*fragsize.Receiver // per point
	}
	stripes := make([]*stripe, c.Threads)
	for j := range stripes {
		st := &stripe{}
		for i := range sw.Points {
			from, to := sw.Window(i)
			st.rx = append(st.rx, fragsize.NewReceiver(c.MsgSize, from, to))
		}
		stripes[j] = st
	}
	var errs firstErr
	var closed atomic.Int64
	n.setHandler(bulkHandler(n, sw, spec.Start, c.MsgSize, func(ev byteexpress.Event) ([]*fragsize.Receiver, *sync.Mutex) {
		st := stripes[ev.Socket.ID()%uint64(len(stripes))]
		return st.rx, &st.mu
	}, &closed, &errs))
	n.listen()
	var err error
	select {
	// The last point's sender drains until half a warm-up after the end;
	// the target answers until a whole one after it, so that the drain
	// never outlives the answers.
	case <-time.After(time.Until(spec.End().Add(time.Duration(sw.Warmup / sim.Nanosecond)))):
	case <-ctx.Done():
		err = fmt.Errorf("stopped (%v)", context.Cause(ctx))
	}
	res.Metrics["engines_closed"] = float64(closed.Load())
	for i := range sw.Points {
		cfg := r.config(i)
		k := MsgrateKey(cfg.QPs, cfg.ThreadDomains)
		msgs := 0
		for _, st := range stripes {
			st.mu.Lock()
			msgs += st.rx[i].Msgs
			st.mu.Unlock()
		}
		res.Metrics["messages/"+k] = float64(msgs)
		res.Metrics["mmps/"+k] = float64(msgs) / sw.Measure.Seconds() / 1e6
	}
	return errors.Join(err, errs.err())
}

// send runs the points in turn, each on a fresh endpoint.
func (r *msgrateCoreRole) send(ctx context.Context, spec Spec, peers PeerMap, sw fragsize.Sweep, res *Result) error {
	peer := spec.Peers[0]
	p, ok := peers[peer]
	if !ok || p.Addr == "" {
		return fmt.Errorf("peer %s has no exchange address", peer)
	}
	host, _, err := net.SplitHostPort(spec.Bind)
	if err != nil {
		return fmt.Errorf("bind %q: %v", spec.Bind, err)
	}
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
		pt, err := r.point(ctx, spec, host, peer, p.Addr, i, cfg, sw)
		res.Metrics["requests/"+k], res.Metrics["responses/"+k] = float64(pt.sent), float64(pt.answers)
		res.Metrics["connected/"+k] = float64(pt.connected)
		if pt.setup > 0 {
			res.Metrics["setup_s/"+k] = pt.setup.Seconds()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// corePoint is what a point of the sender measured.
type corePoint struct {
	sent, answers uint64
	connected     int
	setup         time.Duration // until every engine connected (0: never)
}

// point runs point i: an endpoint with the point's threads and thread
// domains, one engine per QP driven by msgrate.CoreClient until the end of
// the measured interval, then the drain.
func (r *msgrateCoreRole) point(ctx context.Context, spec Spec, host, peer, peerAddr string, i int, cfg msgrate.Config, sw fragsize.Sweep) (pt corePoint, err error) {
	slotStart := spec.Start.Add(time.Duration(sim.Time(i) * sw.Slot / sim.Nanosecond))
	ps := spec
	ps.ID = spec.ID + "." + strconv.Itoa(i) // a fresh ByteExpress address per endpoint
	ps.Bind = net.JoinHostPort(host, "0")
	n, err := newBENode(ctx, ps, r.device, r.qos, byteexpress.Config{Threads: cfg.Threads, NoThreadDomains: !cfg.ThreadDomains,
		EnginePerSocket: true, CQDepth: coreCQDepth(cfg.QPs, cfg.Threads)})
	if err != nil {
		return pt, err
	}
	n.mu.Lock()
	n.peers[byteexpress.Addr(peer)] = peerAddr
	n.mu.Unlock()
	m := msgrate.NewCoreClient(&cfg)
	locks := make([]sync.Mutex, len(m.Streams)) // one per stream (msgrate.CoreClient.Stream)
	var (
		errs      firstErr
		connected atomic.Int64
		allAt     atomic.Int64 // ns after the slot's start when the last engine connected
	)
	sendN := func(sk *byteexpress.Socket, k int) {
		for range k {
			buf, err := n.ep.Allocate(cfg.MsgSize)
			if err != nil {
				errs.add(err)
				return
			}
			if err := sk.Send(buf, cfg.MsgSize); err != nil {
				_ = n.ep.Free(buf)
				errs.add(err)
				return
			}
		}
	}
	n.setHandler(func(ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvConnected:
			if connected.Add(1) == int64(cfg.QPs) {
				allAt.Store(int64(time.Since(slotStart)))
			}
		case byteexpress.EvMessage:
			_ = n.ep.Free(ev.Buf)
			id := ev.Socket.ID()
			mu := &locks[id%uint64(len(locks))]
			mu.Lock()
			work, k := m.Stream(id).Answer()
			mu.Unlock()
			// The application's work for the answer, on the I/O thread
			// that delivered it (besim charges that thread's CPU).
			for end := time.Now().Add(time.Duration(work / sim.Nanosecond)); time.Now().Before(end); {
			}
			sendN(ev.Socket, k)
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
			errs.add(fmt.Errorf("%v: %v", ev.Kind, ev.Err))
		case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
			errs.add(fmt.Errorf("%v: %v", ev.Kind, ev.Err))
		}
	})
	for range cfg.QPs {
		sk, err := n.ep.Dial(byteexpress.Addr(peer))
		if err != nil {
			return pt, errors.Join(fmt.Errorf("dial %s: %w", peer, err), n.close())
		}
		id := sk.ID()
		mu := &locks[id%uint64(len(locks))]
		mu.Lock()
		k := m.Stream(id).Start()
		mu.Unlock()
		sendN(sk, k)
	}
	from, to := sw.Window(i)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	// The set-up: until every engine connected, at most until the
	// scenario's warmup must begin.
	setupEnd := spec.Start.Add(time.Duration((from - r.scen.Benchmark.Warmup.Time()) / sim.Nanosecond))
	for connected.Load() < int64(cfg.QPs) && time.Now().Before(setupEnd) && ctx.Err() == nil {
		<-tick.C
	}
	if c := connected.Load(); c < int64(cfg.QPs) {
		errs.add(fmt.Errorf("%d of %d engines connected after the set-up of %v (raise parameter setup): the measured rate would include the set-up", c, cfg.QPs, r.setup))
	}
	select {
	case <-time.After(time.Until(spec.Start.Add(time.Duration(to / sim.Nanosecond)))):
	case <-ctx.Done():
	}
	for j, st := range m.Streams {
		locks[j].Lock()
		st.Stop()
		locks[j].Unlock()
	}
	// Drain: every message sent answered, or the slot's end and half the
	// next point's warm-up.
	endAt := spec.Start.Add(time.Duration(sim.Time(i+1) * sw.Slot / sim.Nanosecond))
	drainUntil := endAt.Add(time.Duration(sw.Warmup / 2 / sim.Nanosecond))
	counts := func() (sent, answers uint64) {
		for j := range locks {
			locks[j].Lock()
		}
		defer func() {
			for j := range locks {
				locks[j].Unlock()
			}
		}()
		return m.Counts()
	}
	for {
		pt.sent, pt.answers = counts()
		if pt.answers == pt.sent || !time.Now().Before(drainUntil) || ctx.Err() != nil {
			break
		}
		<-tick.C
	}
	pt.connected = int(connected.Load())
	if a := allAt.Load(); a > 0 {
		pt.setup = time.Duration(a)
	}
	if pt.answers != pt.sent {
		errs.add(fmt.Errorf("%d of %d messages unanswered at the end of the slot", pt.sent-pt.answers, pt.sent))
	}
	return pt, errors.Join(errs.err(), n.close())
}
