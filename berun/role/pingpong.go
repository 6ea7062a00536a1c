package role

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/besim/besim/berun/internal/tcpx"
	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/workloads/fragsize"
	"github.com/besim/besim/workloads/pingpong"
)

// The pingpong roles replay a besim pingpong benchmark (package
// workloads/pingpong, the paper's Figure 8, §5.5: latency with one
// message outstanding) between two hosts: pingpong-sender runs
// pingpong.Pinger, the machine besim's simulation drives, and
// pingpong-server answers every message with the scenario's response
// size. With param transport verbs the messages travel over the
// ByteExpress core on the hosts' RDMA devices (one socket for the whole
// run); with tcp (the default, as for the other workload roles) over one
// kernel TCP connection (tcpx), the paper's §8 baseline.
//
// The message sizes run one after the other in wall-clock slots
// (fragsize.Sweep): in slot i the sender makes a Pinger for size i whose
// measured interval is the slot's window, sends a message, and on each
// answer calls Arrived (with the server's arrival time, which the answer
// carries in its first 8 bytes when the response has room), Answered and
// Send again, until Send says the interval is over; the last message is
// answered in the slot's drain (the rest of the slot and half a warm-up).
// Over verbs the sends happen on the I/O thread that delivered the answer,
// as besim's simulated application does.
//
// besim's one-way time is read off one clock; here it is the server's
// arrival clock minus the sender's send clock, less the offset between
// the two clocks, which the sender estimates (ppOffset) from up to 32
// probes of response-sized messages both ways in the first slot's
// warm-up (the server answers them as any message). The estimate assumes
// a small message takes as long each way, so the one-way time of a
// message of the response's size is about half its round trip by
// construction; for larger messages it shows the asymmetry.
//
// The scenario's points (link rate, MTU) name the metrics
// (pingpong/RATE/MTU/SIZE/...). Over verbs both roles report their port's
// active rate and MTU (the controller keys the run by the smaller of
// each, the path the core's QPs use); over kernel TCP there is no RoCE
// path MTU, and the run is reported under the scenario's point when it has
// exactly one (params rate and mtu override either).
func init() {
	Register(Info{Name: "pingpong-server", New: newPingpong, Params: pingpongParams(),
		Summary: "server of a besim pingpong benchmark (Figure 8): answers every message with the scenario's response size, over kernel TCP or the ByteExpress core on verbs"})
	Register(Info{Name: "pingpong-sender", New: newPingpong, Params: pingpongParams(),
		Summary: "sender of a besim pingpong benchmark (Figure 8): one message outstanding, each message size in its own slot, round-trip and one-way latency"})
}

func pingpongParams() []Param {
	var out []Param
	for _, p := range fanParams("") {
		if p.Name != "index" {
			out = append(out, p)
		}
	}
	return append(out,
		Param{Name: "rate", Doc: "the hosts' link rate, which names the point in besim's metrics (e.g. 100Gbps); default: verbs, the port's active rate; tcp, the scenario's point if it has one"},
		Param{Name: "mtu", Doc: "the path MTU that names the point (e.g. 1024); default: verbs, the port's active MTU; tcp, the scenario's point if it has one"})
}

// ppStampLen is the answer's header: the server's arrival time (sim.Time
// since the run's start, little endian).
const ppStampLen = 8

type pingpongRole struct {
	sender   bool
	verbs    bool
	sizes    []int
	response int
	warmup   sim.Time
	points   []pingpong.Point // the scenario's
	rate     int64            // param rate, or the port's (verbs), or 0
	mtu      int
	device   string
	qos      verbsQoS
	notes    []string
	node     *beNode
	in       *inbound
}

func newPingpong(spec Spec) (Role, error) {
	info, _ := Lookup(spec.Role)
	p := ReadParams(info, spec)
	vp := readVerbsParams(p, spec)
	r := &pingpongRole{sender: spec.Role == "pingpong-sender", device: vp.device}
	r.verbs = p.Enum("transport", "", "tcp", "verbs") == "verbs"
	if v, set := spec.Params["rate"]; set {
		rt, err := scenarios.ParseRate(v)
		if err != nil || rt <= 0 {
			return nil, fmt.Errorf("parameter rate=%q: want a rate like 100Gbps (%v)", v, err)
		}
		r.rate = int64(rt)
	}
	if _, set := spec.Params["mtu"]; set {
		r.mtu = p.Int("mtu", 256, 1<<16)
	}
	if err := p.Err(); err != nil {
		return nil, err
	}
	s, err := roleScenario(spec)
	if err != nil {
		return nil, err
	}
	if s.Benchmark == nil || s.Benchmark.Kind != scenarios.PingPong {
		return nil, errors.New("the scenario has no pingpong benchmark")
	}
	b := s.Benchmark
	for _, m := range b.Messages {
		r.sizes = append(r.sizes, int(m))
	}
	r.response, r.warmup, r.points = int(b.Response), b.Warmup.Time(), pingpong.Points(b)
	r.qos = vp.qos(s)
	switch {
	case r.sender && len(spec.Peers) != 1:
		return nil, fmt.Errorf("a pingpong-sender needs one peer, the pingpong-server (has %d)", len(spec.Peers))
	case !r.sender && len(spec.Peers) != 0:
		return nil, fmt.Errorf("a pingpong-server connects to nobody; remove its peers %v", spec.Peers)
	case !r.verbs && (r.rate == 0) != (r.mtu == 0):
		return nil, errors.New("give parameters rate and mtu together")
	case !r.verbs && r.rate == 0 && len(r.points) != 1:
		return nil, fmt.Errorf("over kernel TCP the link's point is not read: the scenario has %d points; give parameters rate and mtu, or cut the scenario to the hosts' point", len(r.points))
	}
	if !r.verbs && r.rate == 0 {
		r.rate, r.mtu = r.points[0].Rate, r.points[0].MTU
		r.notes = append(r.notes, fmt.Sprintf("kernel TCP: the link's rate and a RoCE path MTU are not read; the latencies are reported under the scenario's only point %s/%dB", pingpong.RateKey(r.rate), r.mtu))
	}
	if r.response < ppStampLen {
		r.notes = append(r.notes, fmt.Sprintf("the %d-byte response has no room for the server's arrival time: the one-way latency is not measured", r.response))
	}
	return r, nil
}

func (r *pingpongRole) sweep(spec Spec) (fragsize.Sweep, error) {
	sw, err := fragsize.NewSweep(sim.Time(spec.Duration.Nanoseconds())*sim.Nanosecond, len(r.sizes), r.warmup)
	if err != nil {
		return sw, fmt.Errorf("pingpong: %w", err)
	}
	return sw, nil
}

func (r *pingpongRole) maxMsg() int {
	m := r.response
	for _, s := range r.sizes {
		m = max(m, s)
	}
	return m
}

func (r *pingpongRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	if _, err := r.sweep(spec); err != nil {
		return "", err
	}
	if !r.verbs {
		if r.sender {
			return "", nil
		}
		ln, err := listen(ctx, spec.Bind)
		if err != nil {
			return "", err
		}
		r.in = &inbound{ln: ln, opts: tcpx.Options{MaxMessage: r.maxMsg() + 64}}
		return ln.Addr().String(), nil
	}
	if r.rate == 0 || r.mtu == 0 {
		a, err := portAttr(spec, r.device, r.qos)
		if err != nil {
			return "", fmt.Errorf("%w; or give parameters rate and mtu", err)
		}
		if r.rate == 0 {
			r.rate = a.PortRate
		}
		if r.mtu == 0 {
			r.mtu = int(a.PortMTU)
		}
	}
	if !slices.Contains(r.points, pingpong.Point{Rate: r.rate, MTU: r.mtu}) {
		var pts []string
		for _, p := range r.points {
			pts = append(pts, fmt.Sprintf("%s/%dB", pingpong.RateKey(p.Rate), p.MTU))
		}
		r.notes = append(r.notes, fmt.Sprintf("this port's %s/%dB is none of the scenario's points (%s): its metrics have no besim counterpart", pingpong.RateKey(r.rate), r.mtu, strings.Join(pts, ", ")))
	}
	n, err := newBENode(ctx, spec, r.device, r.qos, byteexpress.Config{})
	if err != nil {
		return "", err
	}
	r.node = n
	return n.ln.Addr().String(), nil
}

func (r *pingpongRole) Close() error {
	if r.node != nil {
		return r.node.close()
	}
	if r.in != nil {
		return r.in.ln.Close()
	}
	return nil
}

// portAttr reads the attributes (active rate and MTU) of port 1 of the
// device and GID a verbs role will use, on a context of its own.
func portAttr(spec Spec, device string, qos verbsQoS) (verbs.DeviceAttr, error) {
	if device == "" {
		d, err := DefaultDevice()
		if err != nil {
			return verbs.DeviceAttr{}, fmt.Errorf("verbs transport: %w", err)
		}
		device = d
	}
	gid := qos.gid
	if gid < 0 {
		host, _, _ := net.SplitHostPort(spec.Bind)
		g, _, err := autoGID(device, 1, net.ParseIP(host))
		if err != nil {
			return verbs.DeviceAttr{}, fmt.Errorf("verbs transport: %w", err)
		}
		gid = g
	}
	vctx, err := OpenVerbs(device, gid)
	if err != nil {
		return verbs.DeviceAttr{}, fmt.Errorf("verbs transport: %w", err)
	}
	a := vctx.Attr()
	if err := vctx.Close(); err != nil {
		return a, fmt.Errorf("verbs transport: %w", err)
	}
	if a.PortRate <= 0 || !a.PortMTU.Valid() {
		return a, fmt.Errorf("verbs: %s port 1 reports rate %d b/s and MTU %d (is the port ACTIVE?)", device, a.PortRate, a.PortMTU)
	}
	return a, nil
}

func (r *pingpongRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	sw, err := r.sweep(spec)
	if err != nil {
		return Result{}, err
	}
	tr := 0.0
	if r.verbs {
		tr = 1
	}
	res := Result{Metrics: map[string]float64{"measure_s": sw.Measure.Seconds(), "rate_bps": float64(r.rate), "mtu": float64(r.mtu),
		"response_bytes": float64(r.response), "verbs": tr}, Notes: r.notes}
	switch {
	case r.sender && r.verbs:
		err = r.sendBE(ctx, spec, peers, sw, &res)
	case r.sender:
		err = r.sendTCP(ctx, spec, peers, sw, &res)
	case r.verbs:
		err = r.serveBE(ctx, spec, sw, &res)
	default:
		err = r.serveTCP(ctx, spec, &res)
	}
	return res, err
}

// answerStamp fills an answer: the arrival time at, then zeros.
func answerStamp(p []byte, at sim.Time) {
	clear(p)
	if len(p) >= ppStampLen {
		binary.LittleEndian.PutUint64(p, uint64(at))
	}
}

// arrival is the server's arrival time an answer carries, if it has room.
func arrival(p []byte) (sim.Time, bool) {
	if len(p) < ppStampLen {
		return 0, false
	}
	return sim.Time(binary.LittleEndian.Uint64(p)), true
}

// ppSlot is one message size's measurement on the sender.
type ppSlot struct {
	p          *pingpong.Pinger
	sent, resp uint64
	done       chan struct{} // closed once the Pinger stops with nothing in flight
	closed     bool
}

// result adds a slot's statistics to the sender's metrics under its size.
func (s *ppSlot) result(m map[string]float64) {
	st := pingpong.Summarize(s.p)
	k := strconv.Itoa(s.p.Size) + "B"
	m["requests/"+k], m["responses/"+k] = float64(s.sent), float64(s.resp)
	m["samples/"+k] = float64(st.Samples)
	m["mean_us/"+k], m["p50_us/"+k], m["p99_us/"+k], m["max_us/"+k] = st.RTTMean, st.RTTP50, st.RTTP99, st.Max
	m["oneway_mean_us/"+k], m["oneway_p99_us/"+k] = st.OneWayMean, st.OneWayP99
}

// ppOffset estimates the server's clock minus the sender's from probe
// exchanges of response-sized messages both ways: NTP's rule on the probe
// with the smallest round trip (the server's arrival stamp minus the
// middle of that round trip), which assumes a small message takes as long
// each way. The agents' synchronized start alone leaves the error of the
// controller's clock-offset estimate (tens of microseconds over heartbeats),
// more than a one-way time.
type ppOffset struct {
	n          int
	rtt, theta sim.Time
}

func (o *ppOffset) add(t1, t2, t4 sim.Time) {
	if rtt := t4 - t1; o.n == 0 || rtt < o.rtt {
		o.rtt, o.theta = rtt, t2-t1-rtt/2
	}
	o.n++
}

// result adds the estimate to the sender's metrics.
func (o *ppOffset) result(m map[string]float64) {
	m["offset_probes"] = float64(o.n)
	if o.n > 0 {
		m["clock_offset_us"] = float64(o.theta) / float64(sim.Microsecond)
		m["offset_rtt_us"] = float64(o.rtt) / float64(sim.Microsecond)
	}
}

// ppProbes is the most probes the sender makes; they stop earlier at the
// end of the first slot's warm-up.
const ppProbes = 32

// slotTimes are slot i's start and the end of its drain (the slot's end).
func slotTimes(spec Spec, sw fragsize.Sweep, i int) (start, end time.Time) {
	at := func(t sim.Time) time.Time { return spec.Start.Add(time.Duration(t / sim.Nanosecond)) }
	return at(sim.Time(i) * sw.Slot), at(sim.Time(i+1) * sw.Slot)
}

func sleepUntil(ctx context.Context, t time.Time) error {
	select {
	case <-time.After(time.Until(t)):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stopped (%v)", context.Cause(ctx))
	}
}

// sendBE runs the slots over one ByteExpress socket: the first message of
// a slot from this goroutine, every next one from the I/O thread that
// delivered the previous answer.
func (r *pingpongRole) sendBE(ctx context.Context, spec Spec, peers PeerMap, sw fragsize.Sweep, res *Result) error {
	peer := spec.Peers[0]
	pa, ok := peers[peer]
	if !ok || pa.Addr == "" {
		return fmt.Errorf("peer %s has no exchange address", peer)
	}
	n := r.node
	n.mu.Lock()
	n.peers[byteexpress.Addr(peer)] = pa.Addr
	n.mu.Unlock()
	var (
		mu   sync.Mutex
		cur  *ppSlot
		sock *byteexpress.Socket
		errs firstErr
		// The probes before the first slot's Pinger: whether they run,
		// the one in flight's send time, how many were answered, when
		// they stop, and probed, closed once they are over.
		off      ppOffset
		probing  bool
		probeT1  sim.Time
		probes   int
		probeEnd sim.Time
		probed   = make(chan struct{})
	)
	send := func(size int) {
		buf, err := n.ep.Allocate(size)
		if err == nil {
			if err = sock.Send(buf, size); err != nil {
				_ = n.ep.Free(buf)
			}
		}
		if err != nil {
			errs.add(err)
		}
	}
	// next asks the slot's Pinger for the next message (mu held): it
	// reports whether to send, and closes done once the Pinger is over.
	next := func(s *ppSlot, now sim.Time) bool {
		if s.p.Send(now) {
			s.sent++
			return true
		}
		if s.sent == s.resp && !s.closed {
			s.closed = true
			close(s.done)
		}
		return false
	}
	n.setHandler(func(ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvMessage:
			now := since(spec.Start)
			at, stamped := arrival(ev.Buf.Bytes()[:ev.Len])
			_ = n.ep.Free(ev.Buf)
			mu.Lock()
			if probing {
				if stamped {
					off.add(probeT1, at, now)
				}
				probes++
				if probing = probes < ppProbes && now < probeEnd; probing {
					probeT1 = since(spec.Start)
				} else {
					close(probed)
				}
				more := probing
				mu.Unlock()
				if more {
					send(r.response)
				}
				return
			}
			s := cur
			if s == nil || s.resp >= s.sent {
				mu.Unlock()
				errs.add(fmt.Errorf("%s: an answer to no message", ev.Remote))
				return
			}
			if stamped && off.n > 0 {
				s.p.Arrived(at - off.theta)
			}
			s.p.Answered(now)
			s.resp++
			more := next(s, now)
			mu.Unlock()
			if more {
				send(s.p.Size)
			}
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
			errs.add(fmt.Errorf("%v: %v", ev.Kind, ev.Err))
		case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
			errs.add(fmt.Errorf("%v: %v", ev.Kind, ev.Err))
		}
	})
	var err error
	if sock, err = n.ep.Dial(byteexpress.Addr(peer)); err != nil {
		return fmt.Errorf("dial %s: %w", peer, err)
	}
	var out []error
	// Probes in the first slot's warm-up, sent like the Pinger's messages:
	// each next one from the I/O thread that delivered the last answer.
	if r.response >= ppStampLen {
		probeEnd = sw.Warmup
		mu.Lock()
		probing, probeT1 = true, since(spec.Start)
		mu.Unlock()
		send(r.response)
		select {
		case <-probed:
		case <-time.After(time.Until(spec.Start.Add(time.Duration(sw.Slot / sim.Nanosecond)))):
			out = append(out, errors.New("a probe unanswered in the first slot"))
		case <-ctx.Done():
		}
		mu.Lock()
		probing = false
		off.result(res.Metrics)
		mu.Unlock()
	}
	for i, size := range r.sizes {
		start, end := slotTimes(spec, sw, i)
		if err := sleepUntil(ctx, start); err != nil {
			out = append(out, err)
			break
		}
		from, to := sw.Window(i)
		s := &ppSlot{p: &pingpong.Pinger{Size: size, From: from, To: to}, done: make(chan struct{})}
		mu.Lock()
		cur = s
		more := next(s, since(spec.Start))
		mu.Unlock()
		if more {
			send(size)
		}
		// Drain: the answer in flight, or the slot's end and half the next
		// slot's warm-up (a next slot that starts that late still measures
		// only its own messages).
		select {
		case <-s.done:
		case <-time.After(time.Until(end.Add(time.Duration(sw.Warmup / 2 / sim.Nanosecond)))):
		case <-ctx.Done():
		}
		mu.Lock()
		if s.resp != s.sent {
			out = append(out, fmt.Errorf("%d B: %d of %d messages unanswered at the end of the slot", size, s.sent-s.resp, s.sent))
		}
		s.result(res.Metrics)
		mu.Unlock()
		if ctx.Err() != nil {
			out = append(out, fmt.Errorf("stopped (%v)", context.Cause(ctx)))
			break
		}
	}
	return errors.Join(append(out, errs.err())...)
}

// serveBE answers every message until the end of the run.
func (r *pingpongRole) serveBE(ctx context.Context, spec Spec, sw fragsize.Sweep, res *Result) error {
	n := r.node
	var (
		msgs   atomic.Int64
		closed atomic.Int64
		errs   firstErr
	)
	_, last := sw.Window(sw.Points - 1)
	n.setHandler(func(ev byteexpress.Event) {
		switch ev.Kind {
		case byteexpress.EvMessage:
			now := since(spec.Start)
			_ = n.ep.Free(ev.Buf)
			out, err := n.ep.Allocate(r.response)
			if err != nil {
				errs.add(err)
				return
			}
			answerStamp(out.Bytes()[:r.response], now)
			if err := ev.Socket.Send(out, r.response); err != nil {
				_ = n.ep.Free(out)
				errs.add(err)
				return
			}
			msgs.Add(1)
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
		case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
			// The sender closes its endpoint once its last slot is over.
			if since(spec.Start) >= last {
				closed.Add(1)
				return
			}
			errs.add(fmt.Errorf("%s: %v: %v", ev.Remote, ev.Kind, ev.Err))
		}
	})
	n.listen()
	// The last slot's sender drains until half a warm-up after the end.
	err := sleepUntil(ctx, spec.End().Add(time.Duration(sw.Warmup/2/sim.Nanosecond)))
	res.Metrics["messages"] = float64(msgs.Load())
	res.Metrics["engines_closed"] = float64(closed.Load())
	return errors.Join(err, errs.err())
}

// sendTCP runs the slots over one kernel TCP connection, then sends the
// end marker (an empty message) and checks the server's count.
func (r *pingpongRole) sendTCP(ctx context.Context, spec Spec, peers PeerMap, sw fragsize.Sweep, res *Result) error {
	var sent int64
	outs := outbound(ctx, spec, peers, 1, dataHello{From: spec.ID, Role: spec.Role, ResponseSize: r.response},
		func(c *tcpx.Conn, _ Peer, _ int) (any, error) {
			msg := make([]byte, r.maxMsg())
			in := make([]byte, r.maxMsg()+64)
			var off ppOffset
			defer off.result(res.Metrics)
			roundTrip := func(size int) (at sim.Time, stamped bool, err error) {
				if err = c.WriteMsg(msg[:size]); err != nil {
					return 0, false, err
				}
				var a []byte
				if a, err = c.ReadMsg(in); err != nil {
					return 0, false, err
				}
				if len(a) != r.response {
					return 0, false, fmt.Errorf("an answer of %d bytes, want %d", len(a), r.response)
				}
				at, stamped = arrival(a)
				return at, stamped, nil
			}
			// Probes in the first slot's warm-up.
			for r.response >= ppStampLen && off.n < ppProbes && (off.n == 0 || since(spec.Start) < sw.Warmup) {
				t1 := since(spec.Start)
				at, _, err := roundTrip(r.response)
				if err != nil {
					return nil, fmt.Errorf("probe: %w", err)
				}
				off.add(t1, at, since(spec.Start))
				sent++
			}
			for i, size := range r.sizes {
				start, _ := slotTimes(spec, sw, i)
				if err := sleepUntil(ctx, start); err != nil {
					return nil, err
				}
				from, to := sw.Window(i)
				s := &ppSlot{p: &pingpong.Pinger{Size: size, From: from, To: to}}
				var err error
				for err == nil && s.p.Send(since(spec.Start)) {
					s.sent++
					var at sim.Time
					var stamped bool
					if at, stamped, err = roundTrip(size); err != nil {
						break
					}
					now := since(spec.Start)
					if stamped && off.n > 0 {
						s.p.Arrived(at - off.theta)
					}
					s.p.Answered(now)
					s.resp++
				}
				s.result(res.Metrics)
				sent += int64(s.sent)
				if err != nil {
					return nil, fmt.Errorf("%d B: %w", size, err)
				}
			}
			// End marker: the server answers with its count.
			if err := c.WriteMsg(nil); err != nil {
				return nil, err
			}
			var sum summary
			if err := readJSON(c, &sum, helloTimeout); err != nil {
				return nil, fmt.Errorf("the server's count: %w", err)
			}
			if sum.Messages != sent {
				return nil, fmt.Errorf("the server answered %d messages, this sender sent %d", sum.Messages, sent)
			}
			return nil, nil
		}, tcpx.Options{MaxMessage: r.maxMsg() + 64})
	return joinErrs(outs)
}

// serveTCP answers every message on the sender's connection until its end
// marker, which it answers with its count.
func (r *pingpongRole) serveTCP(ctx context.Context, spec Spec, res *Result) error {
	var total atomic.Int64
	outs, notes, err := r.in.serve(ctx, spec, func(c *tcpx.Conn, h dataHello) (any, error) {
		in := make([]byte, r.maxMsg()+64)
		out := make([]byte, r.response)
		var n int64
		for {
			m, err := c.ReadMsg(in)
			if err != nil {
				return nil, err
			}
			if len(m) == 0 {
				return nil, writeJSON(c, summary{Messages: n})
			}
			answerStamp(out, since(spec.Start))
			if err := c.WriteMsg(out); err != nil {
				return nil, err
			}
			n++
			total.Add(1)
		}
	})
	res.Notes = append(res.Notes, notes...)
	res.Metrics["messages"] = float64(total.Load())
	return errors.Join(err, joinErrs(outs))
}
