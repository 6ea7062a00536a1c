package role

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/fragsize"
)

// The fragsize roles replay a besim fragsize benchmark (package
// workloads/fragsize, the paper's Figure 10: one engine's goodput against
// the fragment size) over the ByteExpress core on the hosts' RDMA devices
// (always verbs: the fragment size is the core's). fragsize-sender runs
// fragsize.Sender, fragsize-receiver fragsize.Receiver, the machines
// besim's simulation drives. The sweep is sequential in wall-clock time
// (fragsize.Sweep): the run is cut into one slot per fragment size; in
// slot i the sender opens a fresh endpoint with that fragment size (the
// receiver takes the sender's size from the engine exchange), keeps the
// scenario's depth of messages outstanding, stops at the end of the
// measured interval and waits for the answers in flight. The receiver
// counts the message bytes that arrive in each point's measured interval,
// besim's goodput (besim counts the NIC's payload, under 0.1% more).
// The link rate is the hosts': the receiver reads its port's active rate,
// which names the point in besim's metrics (fragsize/RATE/SIZE/gbps;
// parameter rate overrides it), and says so when the scenario has no
// such point.
func init() {
	Register(Info{Name: "fragsize-receiver", New: newFragsize, Params: fragsizeParams(),
		Summary: "receiver of a besim fragsize benchmark (Figure 10) over verbs: answers every message with 32 bytes and measures the goodput of each fragment size"})
	Register(Info{Name: "fragsize-sender", New: newFragsize, Params: fragsizeParams(),
		Summary: "sender of a besim fragsize benchmark (Figure 10) over verbs: one engine per fragment size in turn, the scenario's depth of messages outstanding"})
}

func fragsizeParams() []Param {
	return []Param{
		{Name: "rate", Doc: "the hosts' link rate, which names the point in besim's metrics (e.g. 25Gbps); default: the receiver's port's active rate"},
		{Name: "device", Doc: "the RDMA device (default: the first one)"},
		{Name: "gid_index", Default: "auto", Doc: "GID table index (auto: the RoCE v2 GID of the data IP, from sysfs)"},
		{Name: "prio", Doc: "802.1p priority of the QPs (service level); default: the scenario's lossless priority"},
		{Name: "dscp", Doc: "DSCP of the QPs (traffic class DSCP << 2); default 8 x prio + 2"}}
}

type fragsizeRole struct {
	sender bool
	cfg    fragsize.Config
	rates  []scenarios.Rate // the scenario's
	rate   scenarios.Rate   // the link's: parameter rate, or 0 until the port says
	notes  []string
	device string
	qos    verbsQoS
	node   *beNode // the receiver's
}

func newFragsize(spec Spec) (Role, error) {
	info, _ := Lookup(spec.Role)
	p := ReadParams(info, spec)
	r := &fragsizeRole{sender: spec.Role == "fragsize-sender"}
	vp := readVerbsParams(p, spec)
	r.device = vp.device
	rate := ""
	if _, set := spec.Params["rate"]; set {
		rate = p.String("rate")
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	s, err := roleScenario(spec)
	if err != nil {
		return nil, err
	}
	if s.Benchmark == nil || s.Benchmark.Kind != scenarios.Fragsize || len(s.Benchmark.Rates) == 0 {
		return nil, errors.New("the scenario has no fragsize benchmark")
	}
	r.rates = s.Benchmark.Rates
	if rate != "" {
		if r.rate, err = scenarios.ParseRate(rate); err != nil || r.rate <= 0 {
			return nil, fmt.Errorf("parameter rate=%q: want a rate like 25Gbps (%v)", rate, err)
		}
	}
	r.cfg = fragsize.FromScenario(s, r.rates[0])
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

// sweep is the run's schedule.
func (r *fragsizeRole) sweep(spec Spec) (fragsize.Sweep, error) {
	return fragsize.NewSweep(sim.Time(spec.Duration.Nanoseconds())*sim.Nanosecond, len(r.cfg.FragSizes), r.cfg.Warmup)
}

func (r *fragsizeRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	if _, err := r.sweep(spec); err != nil {
		return "", err
	}
	if r.sender {
		return "", nil // one endpoint per point, opened in Run
	}
	if r.rate == 0 {
		if err := r.portRate(spec); err != nil {
			return "", err
		}
	}
	if !slices.Contains(r.rates, r.rate) {
		r.notes = append(r.notes, fmt.Sprintf("the link's %s is none of the scenario's rates %v: its metrics have no besim counterpart", r.rate, r.rates))
	}
	n, err := newBENode(ctx, spec, r.device, r.qos, byteexpress.Config{})
	if err != nil {
		return "", err
	}
	r.node = n
	return n.ln.Addr().String(), nil
}

// portRate reads the active rate of the receiver's port (the device and
// GID the endpoint will use).
func (r *fragsizeRole) portRate(spec Spec) error {
	a, err := portAttr(spec, r.device, r.qos)
	if err != nil {
		return fmt.Errorf("%w; or give parameter rate", err)
	}
	r.rate = scenarios.Rate(a.PortRate)
	return nil
}

func (r *fragsizeRole) Close() error {
	if r.node != nil {
		return r.node.close()
	}
	return nil
}

func (r *fragsizeRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	sw, err := r.sweep(spec)
	if err != nil {
		return Result{}, err
	}
	res := Result{Metrics: map[string]float64{"measure_s": sw.Measure.Seconds()}, Notes: r.notes}
	if !r.sender {
		res.Metrics["rate_bps"] = float64(r.rate)
	}
	if r.sender {
		err = r.send(ctx, spec, peers, sw, &res)
	} else {
		err = r.receive(ctx, spec, sw, &res)
	}
	return res, err
}

// senderPoint is the point of a sender endpoint's address (ID.i).
func senderPoint(a byteexpress.Addr) (int, bool) {
	s := string(a)
	dot := strings.LastIndexByte(s, '.')
	if dot < 0 {
		return 0, false
	}
	i, err := strconv.Atoi(s[dot+1:])
	return i, err == nil && i >= 0
}

// pointSenderGone reports whether a failed socket or engine (ev) is a
// point's sender that closed its endpoint after that point's window, as
// every point's sender does after its drain: expected, not an error.
func pointSenderGone(ev byteexpress.Event, sw fragsize.Sweep, start time.Time) bool {
	i, ok := senderPoint(ev.Remote)
	if !ok || i >= sw.Points {
		return false
	}
	_, to := sw.Window(i)
	return since(start) >= to
}

// bulkHandler is the event handler of node n receiving a sweep's bulk
// messages of msgSize bytes: each message is counted by the
// fragsize.Receiver of the point it arrives in (pick gives the event's
// receivers, one per point, and the lock that guards them) and answered
// with that receiver's response size; a point's sender closing its
// endpoint after its window counts in closed (pointSenderGone); any other
// failure, or a message of another size, is an error in errs.
func bulkHandler(n *beNode, sw fragsize.Sweep, start time.Time, msgSize int, pick func(byteexpress.Event) ([]*fragsize.Receiver, *sync.Mutex), closed *atomic.Int64, errs *firstErr) func(byteexpress.Event) {
	return func(ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvMessage:
			rx, mu := pick(ev)
			if !rx[0].Bulk(ev.Len) {
				_ = n.ep.Free(ev.Buf)
				errs.add(fmt.Errorf("%s: a message of %d bytes, the scenario's are %d", ev.Remote, ev.Len, msgSize))
				return
			}
			now := since(start)
			mu.Lock()
			size := rx[sw.Point(now)].Message(now, ev.Len)
			mu.Unlock()
			_ = n.ep.Free(ev.Buf)
			out, err := n.ep.Allocate(size)
			if err != nil {
				errs.add(err)
				return
			}
			clear(out.Bytes()[:size])
			if err := ev.Socket.Send(out, size); err != nil {
				_ = n.ep.Free(out)
				errs.add(err)
			}
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
		case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
			if pointSenderGone(ev, sw, start) {
				closed.Add(1)
				return
			}
			errs.add(fmt.Errorf("%s: %v: %v", ev.Remote, ev.Kind, ev.Err))
		}
	}
}

func fragKey(f int) string { return strconv.Itoa(f) + "B" }

// firstErr keeps the first few errors of a role's I/O threads.
type firstErr struct {
	mu   sync.Mutex
	errs []error
}

func (e *firstErr) add(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.errs) < 8 {
		e.errs = append(e.errs, err)
	}
}

func (e *firstErr) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return errors.Join(e.errs...)
}

// receive answers every message until the end of the run, counting each
// point's measured bytes in its own fragsize.Receiver.
func (r *fragsizeRole) receive(ctx context.Context, spec Spec, sw fragsize.Sweep, res *Result) error {
	n := r.node
	var mu sync.Mutex
	rx := make([]*fragsize.Receiver, sw.Points)
	for i := range rx {
		from, to := sw.Window(i)
		rx[i] = fragsize.NewReceiver(r.cfg.MsgSize, from, to)
	}
	var errs firstErr
	var closed atomic.Int64
	n.setHandler(bulkHandler(n, sw, spec.Start, r.cfg.MsgSize, func(byteexpress.Event) ([]*fragsize.Receiver, *sync.Mutex) { return rx, &mu }, &closed, &errs))
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
	res.Metrics["engines_closed"] = float64(closed.Load())
	for i, m := range rx {
		k := fragKey(r.cfg.FragSizes[i])
		res.Metrics["gbps/"+k] = float64(m.Bytes) * 8 / sw.Measure.Seconds() / 1e9
		res.Metrics["messages/"+k] = float64(m.Msgs)
	}
	return errors.Join(err, errs.err())
}

// send runs the points in turn, each on a fresh endpoint.
func (r *fragsizeRole) send(ctx context.Context, spec Spec, peers PeerMap, sw fragsize.Sweep, res *Result) error {
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
	for i, f := range r.cfg.FragSizes {
		at := spec.Start.Add(time.Duration(sim.Time(i) * sw.Slot / sim.Nanosecond))
		select {
		case <-time.After(time.Until(at)):
		case <-ctx.Done():
			return errors.Join(append(errs, fmt.Errorf("stopped (%v)", context.Cause(ctx)))...)
		}
		sent, resps, err := r.point(ctx, spec, host, peer, p.Addr, i, f, sw)
		k := fragKey(f)
		res.Metrics["requests/"+k], res.Metrics["responses/"+k] = float64(sent), float64(resps)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s fragments: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// point runs one fragment size: an endpoint with it, the sender's machine
// until the end of the measured interval, then the drain.
func (r *fragsizeRole) point(ctx context.Context, spec Spec, host, peer, peerAddr string, i, frag int, sw fragsize.Sweep) (sent, resps uint64, err error) {
	ps := spec
	ps.ID = spec.ID + "." + strconv.Itoa(i) // a fresh ByteExpress address per endpoint
	ps.Bind = net.JoinHostPort(host, "0")
	n, err := newBENode(ctx, ps, r.device, r.qos, byteexpress.Config{FragSize: frag})
	if err != nil {
		return 0, 0, err
	}
	n.mu.Lock()
	n.peers[byteexpress.Addr(peer)] = peerAddr
	n.mu.Unlock()
	var (
		mu    sync.Mutex
		m     = fragsize.NewSender(r.cfg.Window)
		errs  firstErr
		sock  *byteexpress.Socket
		ready = make(chan struct{})
	)
	sendN := func(k int) {
		for range k {
			buf, err := n.ep.Allocate(r.cfg.MsgSize)
			if err != nil {
				errs.add(err)
				return
			}
			if err := sock.Send(buf, r.cfg.MsgSize); err != nil {
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
			sendN(k)
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
			errs.add(fmt.Errorf("%v: %v", ev.Kind, ev.Err))
		case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
			errs.add(fmt.Errorf("%v: %v", ev.Kind, ev.Err))
		}
	})
	if sock, err = n.ep.Dial(byteexpress.Addr(peer)); err != nil {
		close(ready)
		return 0, 0, errors.Join(fmt.Errorf("dial %s: %w", peer, err), n.close())
	}
	close(ready)
	mu.Lock()
	k := m.Start()
	mu.Unlock()
	sendN(k)
	_, to := sw.Window(i)
	stopAt := spec.Start.Add(time.Duration(to / sim.Nanosecond))
	endAt := spec.Start.Add(time.Duration(sim.Time(i+1) * sw.Slot / sim.Nanosecond))
	select {
	case <-time.After(time.Until(stopAt)):
	case <-ctx.Done():
	}
	mu.Lock()
	m.Stop()
	mu.Unlock()
	// Drain: every message sent answered, or the slot's end and half the
	// next point's warm-up (a next point that starts that late still
	// measures only its own messages: its first ones fall in its warm-up).
	drainUntil := endAt.Add(time.Duration(sw.Warmup / 2 / sim.Nanosecond))
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		mu.Lock()
		sent, resps = m.Sent, m.Resps
		mu.Unlock()
		if resps == sent || !time.Now().Before(drainUntil) || ctx.Err() != nil {
			break
		}
		<-tick.C
	}
	if resps != sent {
		errs.add(fmt.Errorf("%d of %d messages unanswered at the end of the slot", sent-resps, sent))
	}
	return sent, resps, errors.Join(errs.err(), n.close())
}
