package role

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/besim/besim/berun/tcpx"
	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/metrics"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/app"
	"github.com/besim/besim/workloads/ps"
)

// The parameter-server roles replay a besim ps-cluster scenario (package
// workloads, paper §2.1) over kernel TCP (or, transport verbs, ByteExpress:
// psverbs.go): ps-server i is besim's server i,
// ps-client i is besim's client i (rankers first, then trainers). Both read
// the workload from the scenario file the controller pushes (Spec.Scenario),
// translated by the same function besim uses (ps.FromScenario), and use
// the same shard placement (ps.ShardServers), shard draws
// (ps.DrawFetch), size distributions and random stream names, so a
// real run replays the simulated traffic pattern. Messages carry besim's
// 24-byte header (slot, send time, op, shard count).
func init() {
	for _, r := range []struct{ name, summary string }{
		{"ps-server", "parameter server of a besim ps-cluster scenario over kernel TCP or verbs: answers fetches with the scenario's response sizes and acknowledges pushes"},
		{"ps-client", "ranker or trainer of a besim ps-cluster scenario over kernel TCP or verbs: fan-out fetches (and compute + push for trainers) to every ps-server peer"},
	} {
		Register(Info{Name: r.name, Summary: r.summary, New: newPS,
			Params: []Param{{Name: "index", Doc: "server or client index in the scenario (required; clients: rankers first, then trainers)"},
				{Name: "transport", Doc: "tcp (kernel TCP, default) or verbs (the ByteExpress core on the host's RDMA device, -tags rdma)"},
				{Name: "device", Doc: "verbs: the RDMA device (default: the first one)"}}})
	}
}

const (
	psHdr     = 24
	psOpFetch = 0
	psOpPush  = 1
	psOpEnd   = 0xFF // end marker from a client; answered by a 40-byte count
	psMaxMsg  = 64 << 20
)

type psRole struct {
	server bool
	idx    int
	cfg    ps.Config
	be     byteexpress.Config // verbs: the scenario's engine settings (app.Engine)
	in     *inbound
	verbs  bool
	device string
	node   *beNode // verbs
}

func newPS(spec Spec) (Role, error) {
	info, _ := Lookup(spec.Role)
	p := ReadParams(info, spec)
	idx := p.Int("index", 0, 1<<20)
	transport, device := "tcp", ""
	if _, set := spec.Params["transport"]; set {
		transport = p.Enum("transport", "tcp", "verbs")
	}
	if _, set := spec.Params["device"]; set {
		device = p.String("device")
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	if len(spec.Scenario) == 0 {
		return nil, errors.New("needs the besim scenario (run it with `berun run SCENARIO.yaml`)")
	}
	s, err := scenarios.Parse("scenario", spec.Scenario)
	if err != nil {
		return nil, err
	}
	if s.Workload == nil || s.Workload.Kind != "ps-cluster" {
		return nil, errors.New("the scenario has no ps-cluster workload")
	}
	cfg, err := ps.FromScenario(s)
	if err != nil {
		return nil, err
	}
	r := &psRole{server: spec.Role == "ps-server", idx: idx, cfg: cfg, be: app.Engine(s.Workload), verbs: transport == "verbs", device: device}
	switch {
	case r.server && idx >= cfg.Servers:
		return nil, fmt.Errorf("index %d: the scenario has %d servers", idx, cfg.Servers)
	case r.server && len(spec.Peers) > 0:
		return nil, fmt.Errorf("a ps-server connects to nobody; remove its peers %v", spec.Peers)
	case !r.server && idx >= cfg.Rankers+cfg.Trainers:
		return nil, fmt.Errorf("index %d: the scenario has %d rankers + %d trainers", idx, cfg.Rankers, cfg.Trainers)
	case !r.server && len(spec.Peers) != cfg.Servers:
		return nil, fmt.Errorf("a ps-client needs the %d ps-servers as peers, in index order (has %d)", cfg.Servers, len(spec.Peers))
	}
	return r, nil
}

func (r *psRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	if r.verbs {
		// Servers and clients alike: the engine exchange listens on the
		// role's bind address.
		n, err := newBENode(ctx, spec.ID, spec.Bind, r.device, r.be)
		if err != nil {
			return "", err
		}
		r.node = n
		return n.ln.Addr().String(), nil
	}
	if !r.server {
		return "", nil
	}
	ln, err := listen(ctx, spec.Bind)
	if err != nil {
		return "", err
	}
	r.in = &inbound{ln: ln, opts: tcpx.Options{MaxMessage: psMaxMsg}}
	return ln.Addr().String(), nil
}

func (r *psRole) Close() error {
	if r.node != nil {
		return r.node.close()
	}
	if r.in != nil {
		return r.in.ln.Close()
	}
	return nil
}

func (r *psRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	if r.verbs && r.server {
		return r.runServerBE(ctx, spec)
	}
	if r.server {
		return r.runServer(ctx, spec)
	}
	return r.runClient(ctx, spec, peers)
}

// psServed is one connection's count on the server.
type psServed struct {
	Fetches, Pushes int64
	RxBytes         int64
	TxBytes         int64
}

func (r *psRole) runServer(ctx context.Context, spec Spec) (Result, error) {
	outs, notes, err := r.in.serve(ctx, spec, func(c *tcpx.Conn, h dataHello) (any, error) {
		// One stream per (server, client): connections are served in
		// parallel, so a shared stream would make sizes depend on timing.
		pc := &psPeer{rng: sim.Stream(r.cfg.Seed, fmt.Sprintf("ps/server%d/%s", r.idx, h.From))}
		var req, resp []byte
		for {
			m, err := c.ReadMsg(req[:0])
			if err != nil {
				if err == io.EOF {
					err = fmt.Errorf("connection closed without the end marker after %d requests", pc.s.Fetches+pc.s.Pushes)
				}
				return &pc.s, err
			}
			req = m
			if resp, err = r.answer(pc, m, resp); err != nil {
				return &pc.s, err
			}
			if err := c.WriteMsg(resp); err != nil || pc.ended {
				return &pc.s, err
			}
		}
	})
	var t psServed
	for _, o := range outs {
		if s, _ := o.res.(*psServed); s != nil {
			t.Fetches += s.Fetches
			t.Pushes += s.Pushes
			t.RxBytes += s.RxBytes
			t.TxBytes += s.TxBytes
		}
	}
	res := Result{Metrics: map[string]float64{"fetches": float64(t.Fetches), "pushes": float64(t.Pushes),
		"rx_bytes": float64(t.RxBytes), "tx_bytes": float64(t.TxBytes), "clients_expected": float64(len(spec.From)),
		"clients_seen": float64(len(outs))}, Notes: notes}
	if err == nil {
		err = joinErrs(outs)
	}
	return res, err
}

// PSDetail is a ps-client's Detail: its histograms (nanoseconds), so the
// controller can merge percentiles across clients exactly.
type PSDetail struct {
	User  *metrics.Histogram `json:"user"`
	Fetch *metrics.Histogram `json:"fetch"`
	// Iteration holds trainer iterations started in the interval; one the
	// end of the run stops before its push is in at its age then.
	Iteration *metrics.Histogram `json:"iteration"`
	// Push and the trainer phases (besim's push, fetch_phase, push_phase):
	// absent from results written before they were added.
	Push       *metrics.Histogram `json:"push,omitempty"`
	FetchPhase *metrics.Histogram `json:"fetch_phase,omitempty"`
	PushPhase  *metrics.Histogram `json:"push_phase,omitempty"`
	// MeasuredRxBytes is the response payload received in the measured
	// interval (besim's client/goodput counts the same).
	MeasuredRxBytes int64   `json:"measured_rx_bytes"`
	MeasuredS       float64 `json:"measured_s"`
}

type psResp struct {
	srv  int
	hdr  [psHdr]byte
	n    int
	at   time.Time
	err  error
	done bool // the end-marker answer
	cnt  [2]int64
}

// parseResp reads a server's response (or end-marker count) m.
func parseResp(srv int, m []byte, from string) psResp {
	rs := psResp{srv: srv, at: time.Now(), n: len(m)}
	if len(m) < psHdr {
		rs.err = fmt.Errorf("response of %d bytes from %s", len(m), from)
		return rs
	}
	copy(rs.hdr[:], m)
	if m[16] == psOpEnd && len(m) >= psHdr+16 {
		rs.done = true
		rs.cnt = [2]int64{int64(binary.LittleEndian.Uint64(m[psHdr:])), int64(binary.LittleEndian.Uint64(m[psHdr+8:]))}
	}
	return rs
}

type psSlot struct {
	start   time.Time
	pushAt  time.Time
	pending int
	push    bool
	compute bool
	servers []int
	shards  []int
}

// psClient is one ranker or trainer: a single goroutine owns the state
// and all writes; one reader goroutine per server connection feeds it.
type psClient struct {
	r       *psRole
	trainer bool
	rng     *rand.Rand
	shardOf []int
	conns   []msgConn
	slots   []psSlot
	base    time.Time
	from    time.Time
	to      time.Time
	d       PSDetail
	sent    int64 // sub-requests and pushes sent
	got     int64
	users   int64
	iters   int64
	perSrv  []int64 // requests sent to each server
	buf     []byte
}

func (r *psRole) runClient(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	cfg := &r.cfg
	pc := &psClient{r: r, trainer: r.idx >= cfg.Rankers, rng: sim.Stream(cfg.Seed, fmt.Sprintf("ps/client%d", r.idx)),
		shardOf: ps.ShardServers(cfg.Shards, cfg.Servers), perSrv: make([]int64, cfg.Servers),
		buf: make([]byte, max(cfg.Request, psHdr))}
	pc.d.User, pc.d.Fetch, pc.d.Iteration = metrics.New(3), metrics.New(3), metrics.New(3)
	pc.d.Push, pc.d.FetchPhase, pc.d.PushPhase = metrics.New(3), metrics.New(3), metrics.New(3)
	n := cfg.RankerOutstanding
	if pc.trainer {
		n = 1
	}
	pc.slots = make([]psSlot, n)
	res := Result{Metrics: map[string]float64{}, Detail: &pc.d}
	src, _, _ := net.SplitHostPort(spec.Bind)
	in := make(chan psResp, 4096)
	var wg sync.WaitGroup
	quit := make(chan struct{})
	defer func() {
		close(quit)
		for _, c := range pc.conns {
			c.Close()
		}
		wg.Wait()
	}()
	if r.verbs {
		if err := pc.dialBE(spec, peers, in, quit); err != nil {
			return res, err
		}
	}
	for i, id := range spec.Peers {
		if r.verbs {
			break
		}
		p, ok := peers[id]
		if !ok || p.Addr == "" {
			return res, fmt.Errorf("peer %s has no data address", id)
		}
		dctx, cancel := context.WithTimeout(ctx, dialTimeout)
		c, err := tcpx.Dial(dctx, p.Addr, src, tcpx.Options{MaxMessage: psMaxMsg})
		cancel()
		if err != nil {
			return res, fmt.Errorf("connect to %s (%s on %s): %w", id, p.Addr, p.Host, err)
		}
		pc.conns = append(pc.conns, c)
		if err := writeJSON(c, dataHello{From: spec.ID, Role: "ps-client", Conn: 0, Conns: 1}); err != nil {
			return res, fmt.Errorf("hello to %s: %w", id, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b []byte
			for {
				m, err := c.ReadMsg(b[:0])
				b = m
				rs := psResp{srv: i, err: err}
				if err == nil {
					rs = parseResp(i, m, id)
				}
				select {
				case in <- rs:
				case <-quit:
					return
				}
				if rs.err != nil || rs.done {
					return
				}
			}
		}()
	}
	err := pc.loop(ctx, spec, in)
	res.Metrics["requests"] = float64(pc.sent)
	res.Metrics["responses"] = float64(pc.got)
	res.Metrics["lost"] = float64(pc.sent - pc.got)
	res.Metrics["user_requests"] = float64(pc.users)
	res.Metrics["iterations"] = float64(pc.iters)
	if pc.trainer {
		res.Metrics["trainer"] = 1
	}
	if h := pc.d.Fetch; h.Count() > 0 {
		res.Metrics["latency_us_p50"] = float64(h.P50()) / 1e3
		res.Metrics["latency_us_p99"] = float64(h.P99()) / 1e3
	}
	return res, err
}

func (pc *psClient) loop(ctx context.Context, spec Spec, in <-chan psResp) error {
	cfg := &pc.r.cfg
	pc.base = spec.Start
	if pc.base.IsZero() {
		pc.base = time.Now()
	}
	pc.from = pc.base.Add(time.Duration(cfg.Warmup / sim.Nanosecond))
	pc.to = spec.End()
	pc.d.MeasuredS = pc.to.Sub(pc.from).Seconds()
	end := time.NewTimer(time.Until(pc.to))
	defer end.Stop()
	// One timer serves open-loop arrivals (rankers) or compute (trainers).
	tick := time.NewTimer(time.Hour)
	tick.Stop()
	defer tick.Stop()
	now := time.Now()
	switch {
	case pc.trainer:
		if err := pc.fetch(0, now); err != nil {
			return err
		}
	case cfg.RankerRate > 0:
		tick.Reset(pc.arrival())
	default:
		for i := range pc.slots {
			if err := pc.fetch(i, now); err != nil {
				return err
			}
		}
	}
	stopping := false
	for {
		if stopping && pc.idle() {
			return pc.finish(ctx, in)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped (%v) with %d of %d requests answered", context.Cause(ctx), pc.got, pc.sent)
		case <-end.C:
			stopping = true
			if pc.trainer && pc.slots[0].compute {
				pc.abandon(time.Now())
			}
		case <-tick.C:
			if stopping {
				for i := range pc.slots {
					pc.slots[i].compute = false
				}
				continue
			}
			now := time.Now()
			if pc.trainer {
				pc.slots[0].compute = false
				if err := pc.push(0); err != nil {
					return err
				}
				continue
			}
			tick.Reset(pc.arrival())
			for i := range pc.slots {
				if pc.slots[i].pending == 0 {
					if err := pc.fetch(i, now); err != nil {
						return err
					}
					break
				}
			}
		case rs := <-in:
			if rs.err != nil {
				return fmt.Errorf("server %d: %w", rs.srv, rs.err)
			}
			if rs.done {
				return fmt.Errorf("server %d: unexpected end-marker answer", rs.srv)
			}
			if err := pc.onResponse(rs, stopping, tick); err != nil {
				return err
			}
		}
	}
}

// abandon records a trainer's iteration that the end of the run stops
// before its push at its age then, as the simulator counts an iteration
// still open at the end, so a stall stays in the percentiles.
func (pc *psClient) abandon(now time.Time) {
	if sl := &pc.slots[0]; pc.in(sl.start) {
		pc.d.Iteration.Record(int64(now.Sub(sl.start)))
	}
}

func (pc *psClient) arrival() time.Duration {
	return max(time.Nanosecond, time.Duration(pc.rng.ExpFloat64()/pc.r.cfg.RankerRate*float64(time.Second)))
}

func (pc *psClient) idle() bool {
	for i := range pc.slots {
		if pc.slots[i].pending > 0 {
			return false
		}
	}
	return true
}

func (pc *psClient) in(t time.Time) bool { return !t.Before(pc.from) && t.Before(pc.to) }

func (pc *psClient) onResponse(rs psResp, stopping bool, tick *time.Timer) error {
	cfg := &pc.r.cfg
	pc.got++
	slot := int(binary.LittleEndian.Uint64(rs.hdr[0:]))
	sent := pc.base.Add(time.Duration(binary.LittleEndian.Uint64(rs.hdr[8:])))
	if slot >= len(pc.slots) || pc.slots[slot].pending == 0 {
		return fmt.Errorf("server %d answered slot %d, which has nothing pending", rs.srv, slot)
	}
	if pc.in(sent) {
		switch rs.hdr[16] {
		case psOpFetch:
			pc.d.Fetch.Record(int64(rs.at.Sub(sent)))
		case psOpPush:
			pc.d.Push.Record(int64(rs.at.Sub(sent)))
		}
	}
	if pc.in(rs.at) {
		pc.d.MeasuredRxBytes += int64(rs.n)
	}
	sl := &pc.slots[slot]
	sl.pending--
	if sl.pending > 0 {
		return nil
	}
	now := rs.at
	switch {
	case pc.trainer && !sl.push:
		if pc.in(sl.start) {
			pc.d.FetchPhase.Record(int64(now.Sub(sl.start)))
		}
		if stopping {
			pc.abandon(now)
			return nil
		}
		sl.compute = true
		tick.Reset(time.Duration(cfg.Compute / sim.Nanosecond))
		return nil
	case pc.trainer:
		if pc.in(sl.pushAt) {
			pc.d.PushPhase.Record(int64(now.Sub(sl.pushAt)))
		}
		if pc.in(sl.start) {
			pc.d.Iteration.Record(int64(now.Sub(sl.start)))
		}
		if pc.in(now) {
			pc.iters++
		}
	default:
		if pc.in(sl.start) {
			pc.d.User.Record(int64(now.Sub(sl.start)))
		}
		if pc.in(now) {
			pc.users++
		}
		if cfg.RankerRate > 0 {
			return nil
		}
	}
	if stopping {
		return nil
	}
	return pc.fetch(slot, time.Now())
}

func (pc *psClient) fetch(i int, now time.Time) error {
	cfg := &pc.r.cfg
	n := cfg.FanOut
	if pc.trainer {
		n = cfg.TrainerShards
	}
	sl := &pc.slots[i]
	sl.start, sl.push = now, false
	sl.servers, sl.shards = ps.DrawFetch(pc.rng, n, pc.shardOf, sl.servers[:0], sl.shards[:0])
	sl.pending = len(sl.servers)
	for j, srv := range sl.servers {
		if err := pc.send(srv, i, psOpFetch, sl.shards[j], cfg.Request); err != nil {
			return err
		}
	}
	return nil
}

func (pc *psClient) push(i int) error {
	sl := &pc.slots[i]
	sl.push, sl.pushAt = true, time.Now()
	sl.pending = len(sl.servers)
	for j, srv := range sl.servers {
		n := 0
		for range sl.shards[j] {
			n += pc.r.cfg.PushSize.Sample(pc.rng)
		}
		if err := pc.send(srv, i, psOpPush, sl.shards[j], max(n, psHdr)); err != nil {
			return err
		}
	}
	return nil
}

func (pc *psClient) send(srv, slot int, op byte, shards, size int) error {
	if size > len(pc.buf) {
		pc.buf = make([]byte, size)
	}
	p := pc.buf[:size]
	binary.LittleEndian.PutUint64(p[0:], uint64(slot))
	binary.LittleEndian.PutUint64(p[8:], uint64(time.Since(pc.base)))
	p[16] = op
	binary.LittleEndian.PutUint32(p[17:], uint32(shards))
	if err := pc.conns[srv].WriteMsg(p); err != nil {
		return fmt.Errorf("request to server %d: %w", srv, err)
	}
	pc.sent++
	pc.perSrv[srv]++
	return nil
}

// finish sends every server the end marker and checks its count of this
// client's requests against what was sent.
func (pc *psClient) finish(ctx context.Context, in <-chan psResp) error {
	var hdr [psHdr]byte
	hdr[16] = psOpEnd
	for srv, c := range pc.conns {
		if err := c.WriteMsg(hdr[:]); err != nil {
			return fmt.Errorf("end marker to server %d: %w", srv, err)
		}
	}
	wait := time.NewTimer(helloTimeout)
	defer wait.Stop()
	var errs []error
	for left := len(pc.conns); left > 0; {
		select {
		case rs := <-in:
			switch {
			case rs.err != nil:
				errs = append(errs, fmt.Errorf("server %d: %w", rs.srv, rs.err))
			case !rs.done:
				errs = append(errs, fmt.Errorf("server %d: a response after the end marker", rs.srv))
				continue
			case rs.cnt[0]+rs.cnt[1] != pc.perSrv[rs.srv]:
				errs = append(errs, fmt.Errorf("server %d counted %d requests, %d were sent", rs.srv, rs.cnt[0]+rs.cnt[1], pc.perSrv[rs.srv]))
			}
			left--
		case <-wait.C:
			return errors.Join(append(errs, fmt.Errorf("%d servers did not answer the end marker within %v", left, helloTimeout))...)
		case <-ctx.Done():
			return errors.Join(append(errs, fmt.Errorf("stopped (%v) waiting for the servers' counts", context.Cause(ctx)))...)
		}
	}
	return errors.Join(errs...)
}
