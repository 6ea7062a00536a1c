package role

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/hol"
)

// The hol roles replay a besim hol benchmark (package workloads/hol, the
// paper's Figure 13: a small flow's latency on an engine shared with large
// flows, with fragmentation and without) over the ByteExpress core on the
// hosts' RDMA devices (always verbs: the fragment size is the core's).
// hol-sender runs hol.SmallSender for the small flow and fragsize.Sender
// for the large flows, hol-receiver hol.LatencyReceiver and
// fragsize.Receiver, the machines besim's simulation (holsim) drives. The
// points (large-flow counts outer, fragmented first) run one after the
// other in wall-clock slots (fragsize.Sweep): in slot i the sender opens a
// fresh endpoint with the point's fragment size (the receiver takes it
// from the engine exchange), dials one socket for the small flow and one
// per large flow (all on the one engine), keeps the large flows' window
// outstanding, sends a small message every interval stamped with its
// sequence number and send time, stops at the end of the measured
// interval and waits for the answers in flight. The receiver records the
// one-way latency of the small messages sent in the measured interval: the
// two hosts' clocks are the agents' (each one's own view of the
// synchronized start), so across hosts the latency includes the error of
// the controller's clock-offset estimate (in the result file); on one host
// there is none.
func init() {
	Register(Info{Name: "hol-receiver", New: newHol, Params: holParams(),
		Summary: "receiver of a besim hol benchmark (Figure 13) over verbs: the small flow's one-way latency and the large flows' goodput per point"})
	Register(Info{Name: "hol-sender", New: newHol, Params: holParams(),
		Summary: "sender of a besim hol benchmark (Figure 13) over verbs: per point one engine carrying a small flow and 0..8 large flows"})
}

func holParams() []Param {
	return []Param{
		{Name: "device", Doc: "the RDMA device (default: the first one)"},
		{Name: "gid_index", Default: "auto", Doc: "GID table index (auto: the RoCE v2 GID of the data IP, from sysfs)"},
		{Name: "prio", Doc: "802.1p priority of the QPs (service level); default: the scenario's lossless priority"},
		{Name: "dscp", Doc: "DSCP of the QPs (traffic class DSCP << 2); default 8 x prio + 2"}}
}

type holRole struct {
	sender bool
	cfg    hol.Config
	device string
	qos    verbsQoS
	node   *beNode // the receiver's
}

// holPoint is point i of cfg: its large-flow count and fragment size.
func holPoint(cfg *hol.Config, i int) (flows int, frag bool, fragSize int) {
	flows, frag = cfg.LargeFlows[i/2], i%2 == 0
	return flows, frag, cfg.Settings()[i%2]
}

// HolKey is point i's key in the roles' metrics and besim's names:
// FLOWS/fragmented or FLOWS/whole.
func HolKey(cfg *hol.Config, i int) string {
	n, frag, _ := holPoint(cfg, i)
	if frag {
		return strconv.Itoa(n) + "/fragmented"
	}
	return strconv.Itoa(n) + "/whole"
}

func newHol(spec Spec) (Role, error) {
	info, _ := Lookup(spec.Role)
	p := ReadParams(info, spec)
	r := &holRole{sender: spec.Role == "hol-sender"}
	vp := readVerbsParams(p, spec)
	r.device = vp.device
	if err := p.Err(); err != nil {
		return nil, err
	}
	s, err := roleScenario(spec)
	if err != nil {
		return nil, err
	}
	if s.Benchmark == nil || s.Benchmark.Kind != scenarios.HOL {
		return nil, errors.New("the scenario has no hol benchmark")
	}
	r.cfg = hol.FromScenario(s)
	if err := r.cfg.Prepare(); err != nil {
		return nil, err
	}
	r.qos = vp.qos(s)
	switch {
	case r.sender && len(spec.Peers) != 1:
		return nil, fmt.Errorf("a sender needs one peer, the receiver (has %d)", len(spec.Peers))
	case !r.sender && len(spec.Peers) != 0:
		return nil, fmt.Errorf("a receiver connects to nobody; remove its peers %v", spec.Peers)
	}
	return r, nil
}

func (r *holRole) points() int { return 2 * len(r.cfg.LargeFlows) }

func (r *holRole) sweep(spec Spec) (fragsize.Sweep, error) {
	return fragsize.NewSweep(sim.Time(spec.Duration.Nanoseconds())*sim.Nanosecond, r.points(), r.cfg.Warmup)
}

func (r *holRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	if _, err := r.sweep(spec); err != nil {
		return "", err
	}
	if r.sender {
		return "", nil // one endpoint per point, opened in Run
	}
	n, err := newBENode(ctx, spec, r.device, r.qos, byteexpress.Config{})
	if err != nil {
		return "", err
	}
	r.node = n
	return n.ln.Addr().String(), nil
}

func (r *holRole) Close() error {
	if r.node != nil {
		return r.node.close()
	}
	return nil
}

func (r *holRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	sw, err := r.sweep(spec)
	if err != nil {
		return Result{}, err
	}
	res := Result{Metrics: map[string]float64{"measure_s": sw.Measure.Seconds()}}
	if !r.sender {
		// What the controller's table title names (hol.Reduce).
		res.Metrics["small_bytes"], res.Metrics["large_bytes"] = float64(r.cfg.SmallSize), float64(r.cfg.LargeSize)
		res.Metrics["fragment_bytes"], res.Metrics["interval_s"] = float64(r.cfg.FragSize), r.cfg.Interval.Seconds()
	}
	if r.sender {
		err = r.send(ctx, spec, peers, sw, &res)
	} else {
		err = r.receive(ctx, spec, sw, &res)
	}
	return res, err
}

// receive answers every large message and records the small flow, per
// point (the sender endpoint's address names it), until the end of the
// run.
func (r *holRole) receive(ctx context.Context, spec Spec, sw fragsize.Sweep, res *Result) error {
	n := r.node
	var mu sync.Mutex
	bulk := make([]*fragsize.Receiver, sw.Points)
	lat := make([]*hol.LatencyReceiver, sw.Points)
	for i := range bulk {
		from, to := sw.Window(i)
		bulk[i] = fragsize.NewReceiver(r.cfg.LargeSize, from, to)
		lat[i] = &hol.LatencyReceiver{Size: r.cfg.SmallSize, From: from, To: to}
	}
	var errs firstErr
	n.setHandler(func(ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvMessage:
			i, ok := senderPoint(ev.Remote)
			if !ok || i >= sw.Points {
				_ = n.ep.Free(ev.Buf)
				errs.add(fmt.Errorf("%s: a message from an endpoint that is no point's sender", ev.Remote))
				return
			}
			now := since(spec.Start)
			if lat[i].Small(ev.Len) {
				h, err := hol.ParseHeader(ev.Buf.Bytes()[:ev.Len])
				_ = n.ep.Free(ev.Buf)
				mu.Lock()
				if err == nil {
					lat[i].Message(now, h)
				}
				mu.Unlock()
				if err != nil {
					errs.add(fmt.Errorf("%s: %w", ev.Remote, err))
				}
				return
			}
			if !bulk[i].Bulk(ev.Len) || ev.Len != r.cfg.LargeSize {
				_ = n.ep.Free(ev.Buf)
				errs.add(fmt.Errorf("%s: a message of %d bytes, the scenario's are %d and %d", ev.Remote, ev.Len, r.cfg.SmallSize, r.cfg.LargeSize))
				return
			}
			mu.Lock()
			size := bulk[i].Message(now, ev.Len)
			mu.Unlock()
			_ = n.ep.Free(ev.Buf)
			out, err := n.ep.Allocate(size)
			if err != nil {
				errs.add(err)
				return
			}
			if err := ev.Socket.Send(out, size); err != nil {
				_ = n.ep.Free(out)
				errs.add(err)
			}
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
		case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
			if pointSenderGone(ev, sw, spec.Start) {
				return
			}
			errs.add(fmt.Errorf("%s: %v: %v", ev.Remote, ev.Kind, ev.Err))
		}
	})
	n.listen()
	var err error
	select {
	// The last point's sender drains until half a warm-up after the end.
	case <-time.After(time.Until(spec.End().Add(time.Duration(sw.Warmup / 2 / sim.Nanosecond)))):
	case <-ctx.Done():
		err = fmt.Errorf("stopped (%v)", context.Cause(ctx))
	}
	mu.Lock()
	defer mu.Unlock()
	var orderErrs []error
	for i := range bulk {
		k := HolKey(&r.cfg, i)
		mean, p50, p99 := hol.LatencyStats(lat[i].Samples)
		res.Metrics["mean_us/"+k] = mean
		res.Metrics["p50_us/"+k] = p50
		res.Metrics["p99_us/"+k] = p99
		res.Metrics["samples/"+k] = float64(len(lat[i].Samples))
		res.Metrics["large_gbps/"+k] = float64(bulk[i].Bytes) * 8 / sw.Measure.Seconds() / 1e9
		res.Metrics["large_messages/"+k] = float64(bulk[i].Msgs)
		if e := lat[i].Err(); e != nil {
			orderErrs = append(orderErrs, fmt.Errorf("%s: %w", k, e))
		}
	}
	return errors.Join(err, errs.err(), errors.Join(orderErrs...))
}

// send runs the points in turn, each on a fresh endpoint.
func (r *holRole) send(ctx context.Context, spec Spec, peers PeerMap, sw fragsize.Sweep, res *Result) error {
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
		st, err := r.point(ctx, spec, host, peer, p.Addr, i, sw)
		k := HolKey(&r.cfg, i)
		res.Metrics["small_sent/"+k] = float64(st.small)
		res.Metrics["requests/"+k], res.Metrics["responses/"+k] = float64(st.sent), float64(st.resps)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

type holStats struct{ small, sent, resps uint64 }

// point runs point i: an endpoint with its fragment size, the large flows'
// and the small flow's machines until the end of the measured interval,
// then the drain of the large flows.
func (r *holRole) point(ctx context.Context, spec Spec, host, peer, peerAddr string, i int, sw fragsize.Sweep) (st holStats, err error) {
	flows, _, frag := holPoint(&r.cfg, i)
	ps := spec
	ps.ID = spec.ID + "." + strconv.Itoa(i) // a fresh ByteExpress address per endpoint
	ps.Bind = net.JoinHostPort(host, "0")
	n, err := newBENode(ctx, ps, r.device, r.qos, byteexpress.Config{FragSize: frag})
	if err != nil {
		return st, err
	}
	n.mu.Lock()
	n.peers[byteexpress.Addr(peer)] = peerAddr
	n.mu.Unlock()
	var (
		mu    sync.Mutex
		m     = fragsize.NewSender(r.cfg.LargeWindow)
		errs  firstErr
		ready = make(chan struct{})
	)
	sendLarge := func(sock *byteexpress.Socket, k int) {
		for range k {
			buf, err := n.ep.Allocate(r.cfg.LargeSize)
			if err != nil {
				errs.add(err)
				return
			}
			if err := sock.Send(buf, r.cfg.LargeSize); err != nil {
				_ = n.ep.Free(buf)
				errs.add(err)
				return
			}
		}
	}
	n.setHandler(func(ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvMessage:
			_ = n.ep.Free(ev.Buf)
			<-ready
			mu.Lock()
			k := m.Response()
			mu.Unlock()
			sendLarge(ev.Socket, k)
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
			errs.add(fmt.Errorf("%v: %v", ev.Kind, ev.Err))
		case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
			errs.add(fmt.Errorf("%v: %v", ev.Kind, ev.Err))
		}
	})
	small, err := n.ep.Dial(byteexpress.Addr(peer))
	large := make([]*byteexpress.Socket, 0, flows)
	for range flows {
		if err != nil {
			break
		}
		var s *byteexpress.Socket
		if s, err = n.ep.Dial(byteexpress.Addr(peer)); err == nil {
			large = append(large, s)
		}
	}
	close(ready)
	if err != nil {
		return st, errors.Join(fmt.Errorf("dial %s: %w", peer, err), n.close())
	}
	for _, s := range large {
		mu.Lock()
		k := m.Start()
		mu.Unlock()
		sendLarge(s, k)
	}
	_, to := sw.Window(i)
	// The small flow: hol.SmallSender's ticks in wall-clock time since the
	// run's start. A tick that comes late (the OS timer) is sent late, and
	// the next one is an interval after it, as the machine says.
	g := &hol.SmallSender{Every: r.cfg.Interval, Until: to}
	for ctx.Err() == nil {
		send, h, rearm, next := g.Tick(since(spec.Start))
		if send {
			buf, err := n.ep.Allocate(r.cfg.SmallSize)
			if err != nil {
				errs.add(err)
				break
			}
			h.Put(buf.Bytes())
			if err := small.Send(buf, r.cfg.SmallSize); err != nil {
				_ = n.ep.Free(buf)
				errs.add(err)
				break
			}
			st.small++
		}
		if !rearm {
			break
		}
		time.Sleep(time.Until(spec.Start.Add(time.Duration(next / sim.Nanosecond))))
	}
	mu.Lock()
	m.Stop()
	mu.Unlock()
	// Drain: every large message sent answered, or the slot's end and half
	// the next point's warm-up (a next point that starts that late still
	// measures only its own messages: its first ones fall in its warm-up).
	endAt := spec.Start.Add(time.Duration(sim.Time(i+1) * sw.Slot / sim.Nanosecond))
	drainUntil := endAt.Add(time.Duration(sw.Warmup / 2 / sim.Nanosecond))
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		mu.Lock()
		st.sent, st.resps = m.Sent, m.Resps
		mu.Unlock()
		if st.resps == st.sent || !time.Now().Before(drainUntil) || ctx.Err() != nil {
			break
		}
		<-tick.C
	}
	if st.resps != st.sent {
		errs.add(fmt.Errorf("%d of %d large messages unanswered at the end of the slot", st.sent-st.resps, st.sent))
	}
	// The small messages sent last need their time to arrive too: the
	// endpoint stays open until the slot's end.
	select {
	case <-time.After(time.Until(endAt)):
	case <-ctx.Done():
	}
	return st, errors.Join(errs.err(), n.close())
}
