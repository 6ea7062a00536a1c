package role

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
	"unsafe"

	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/ibv"
	"github.com/besim/besim/workloads/perftest"
)

// The perftest roles replay a besim perftest benchmark scenario (package
// workloads/perftest, paper §5.1, Table 2: ib_send_bw, RC against UD)
// between two hosts' RDMA devices: perftest-client sends, perftest-server
// receives and measures. They run the endpoints besim simulates
// (perftest.Endpoint: the QP setup, tx_depth SENDs outstanding with every
// cq_mod-th signalled, rx_depth receives kept posted, the interval
// counts), polled in a loop in wall-clock time, always over verbs (there
// is no TCP form of this benchmark).
//
// The scenario's points (link rate, MTU) are hardware properties a run
// cannot choose: the roles measure each transport of the scenario once,
// at the two ports' path MTU (the smaller active MTU) and link rate, with
// the scenario's message size, depths and cq_mod, and report which point
// of the scenario the link matches, if any. The run's duration is split
// evenly between the transports: each gets the scenario's warmup, then a
// measured interval of the rest (berun/plan sizes the run from the
// scenario's duration, or --duration, as the measured interval of each).
//
// Over the TCP connection from the client to the server's bind address the
// two exchange their ports' MTU and rate, then per transport the QP
// information (ibv.ExchangeQPInfo), a ready byte (the server's receives
// are posted; its clock starts), a stop byte (the server's interval is
// over) and a drained byte (every SEND the client posted has completed),
// after which both destroy their QPs.
func init() {
	Register(Info{Name: "perftest-server", New: newPerftest, Params: perftestParams(),
		Summary: "receiver of a besim perftest (Table 2) scenario over verbs: measures each transport's goodput at the link's MTU"})
	Register(Info{Name: "perftest-client", New: newPerftest, Params: perftestParams(),
		Summary: "sender of a besim perftest (Table 2) scenario over verbs: ib_send_bw-like SENDs to its perftest-server peer"})
}

func perftestParams() []Param {
	var out []Param
	for _, p := range fanParams("") {
		if p.Name != "index" && p.Name != "transport" {
			out = append(out, p)
		}
	}
	return out
}

// perfRole is a perftest-server or perftest-client instance.
type perfRole struct {
	server bool
	device string
	qos    verbsQoS
	scen   *scenarios.Scenario
	trans  []verbs.QPType
	msg    int // the scenario's message size (0: each transport's default)
	warmup time.Duration

	vctx verbs.Context
	gid  int
	ln   net.Listener
	mem  []byte
}

func newPerftest(spec Spec) (Role, error) {
	info, _ := Lookup(spec.Role)
	p := ReadParams(info, spec)
	vp := readVerbsParams(p, spec)
	if err := p.Err(); err != nil {
		return nil, err
	}
	s, err := roleScenario(spec)
	if err != nil {
		return nil, err
	}
	if s.Benchmark == nil || s.Benchmark.Kind != scenarios.Perftest {
		return nil, errors.New("the scenario has no perftest benchmark")
	}
	r := &perfRole{server: spec.Role == "perftest-server", device: vp.device, qos: vp.qos(s), scen: s,
		trans: perftest.Transports(s), msg: int(s.Benchmark.Message), warmup: time.Duration(s.Benchmark.Warmup.Time() / sim.Nanosecond)}
	switch {
	case r.server && len(spec.Peers) > 0:
		return nil, fmt.Errorf("a perftest-server connects to nobody; remove its peers %v", spec.Peers)
	case !r.server && len(spec.Peers) != 1:
		return nil, fmt.Errorf("a perftest-client needs exactly one perftest-server peer (has %d)", len(spec.Peers))
	case len(r.trans) == 0:
		return nil, errors.New("the scenario's benchmark measures no transport")
	}
	return r, nil
}

// measure is each transport's measured interval: its share of the run's
// duration less the warmup.
func (r *perfRole) measure(spec Spec) (time.Duration, error) {
	m := spec.Duration/time.Duration(len(r.trans)) - r.warmup
	if m <= 0 {
		return 0, fmt.Errorf("duration %v for %d transports leaves no measured interval after the warmup %v of each (use --duration)", spec.Duration, len(r.trans), r.warmup)
	}
	return m, nil
}

func (r *perfRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	if _, err := r.measure(spec); err != nil {
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
	r.gid = r.qos.gid
	if r.gid < 0 {
		host, _, _ := net.SplitHostPort(spec.Bind)
		g, how, err := autoGID(device, 1, net.ParseIP(host))
		if err != nil {
			return "", fmt.Errorf("verbs: %w", err)
		}
		r.gid = g
		if spec.Logf != nil {
			spec.Logf("%s: %s", spec.ID, how)
		}
	}
	var err error
	if r.vctx, err = OpenVerbs(device, r.gid); err != nil {
		return "", fmt.Errorf("verbs: %w", err)
	}
	if a := r.vctx.Attr(); !a.PortMTU.Valid() || a.PortRate <= 0 {
		return "", fmt.Errorf("verbs: %s port 1 reports MTU %d and rate %d b/s (is the port ACTIVE?)", device, a.PortMTU, a.PortRate)
	}
	// One buffer serves every transport: a message (RC's default 64 KiB,
	// UD at most the 4096-byte MTU) and UD's GRH.
	size := max(r.msg, 65536, 4096) + perftest.GRHBytes
	if r.mem, err = mapMem(size); err != nil {
		return "", fmt.Errorf("perftest: %d bytes of registered memory: %w", size, err)
	}
	if !r.server {
		return "", nil
	}
	if r.ln, err = listen(ctx, spec.Bind); err != nil {
		return "", err
	}
	return r.ln.Addr().String(), nil
}

func (r *perfRole) Close() error {
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

// PerftestDetail is a perftest role's Detail: the link it measured on and
// one entry per transport.
type PerftestDetail struct {
	Device string `json:"device"`
	// RateBps and PathMTU are the link's: the smaller of the two ports'
	// active rate and MTU.
	RateBps  int64 `json:"rate_bps"`
	PathMTU  int   `json:"path_mtu"`
	GIDIndex int   `json:"gid_index"`
	// Match is the scenario point ("100G/4096B") the link is, "" if none;
	// Points lists the scenario's.
	Match  string        `json:"match"`
	Points []string      `json:"points"`
	Runs   []PerftestRun `json:"runs"`
}

// PerftestRun is one transport's measurement (the server's counts).
type PerftestRun struct {
	Key       string  `json:"key"` // perftest.Key: "100G/4096B/rc"
	Transport string  `json:"transport"`
	Message   int     `json:"message"`
	Msgs      uint64  `json:"msgs"`  // received in the interval (server) or posted (client)
	Bytes     uint64  `json:"bytes"` // payload received in the interval (server)
	MeasuredS float64 `json:"measured_s"`
	Gbps      float64 `json:"gbps"`
	MsgRate   float64 `json:"msg_rate"` // messages per second
	PktRate   float64 `json:"pkt_rate"` // MTU-sized packets per second
	LineGbps  float64 `json:"line_gbps"`
	Error     string  `json:"error,omitempty"`
}

// perfHello is what the two sides exchange first: the port's MTU and rate.
const perfHelloMagic = "BEP1"

func perfHello(conn net.Conn, a verbs.DeviceAttr) (mtu verbs.MTU, rate int64, err error) {
	var out, in [16]byte
	copy(out[:], perfHelloMagic)
	binary.BigEndian.PutUint32(out[4:], uint32(a.PortMTU))
	binary.BigEndian.PutUint64(out[8:], uint64(a.PortRate))
	_ = conn.SetDeadline(time.Now().Add(helloTimeout))
	defer conn.SetDeadline(time.Time{})
	if _, err := conn.Write(out[:]); err != nil {
		return 0, 0, fmt.Errorf("hello: %w", err)
	}
	if _, err := io.ReadFull(conn, in[:]); err != nil {
		return 0, 0, fmt.Errorf("hello: %w", err)
	}
	if string(in[:4]) != perfHelloMagic {
		return 0, 0, fmt.Errorf("hello: the peer sent %q, not a perftest hello", in[:4])
	}
	pm, pr := verbs.MTU(binary.BigEndian.Uint32(in[4:])), int64(binary.BigEndian.Uint64(in[8:]))
	if !pm.Valid() || pr <= 0 {
		return 0, 0, fmt.Errorf("hello: the peer's port has MTU %d, rate %d b/s", pm, pr)
	}
	return min(a.PortMTU, pm), min(a.PortRate, pr), nil
}

// readSignal waits up to d for byte want on conn.
func readSignal(conn net.Conn, want byte, d time.Duration) error {
	_ = conn.SetReadDeadline(time.Now().Add(d))
	defer conn.SetReadDeadline(time.Time{})
	var b [1]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		return fmt.Errorf("waiting for %q from the peer: %w", want, err)
	}
	if b[0] != want {
		return fmt.Errorf("the peer sent %q, want %q", b[0], want)
	}
	return nil
}

// Protocol bytes.
const (
	perfReady   = 'R'
	perfStop    = 'S'
	perfDrained = 'D'
)

func (r *perfRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	measure, err := r.measure(spec)
	if err != nil {
		return Result{}, err
	}
	conn, done, err := pairConn(ctx, spec, peers, r.ln, !r.server)
	if err != nil {
		return Result{}, err
	}
	defer done()
	attr := r.vctx.Attr()
	det := &PerftestDetail{Device: r.vctx.Name(), GIDIndex: r.gid}
	res := Result{Metrics: map[string]float64{}, Detail: det}
	mtu, rate, err := perfHello(conn, attr)
	if err != nil {
		return res, err
	}
	det.RateBps, det.PathMTU = rate, int(mtu)
	res.Metrics["port_rate_gbps"], res.Metrics["path_mtu"] = float64(rate)/1e9, float64(mtu)
	seen := map[string]bool{}
	for _, run := range r.scen.Benchmark.PerfRuns() {
		pt := fmt.Sprintf("%s/%dB", perftest.RateKey(int64(run.Rate)), run.MTU)
		if !seen[pt] {
			seen[pt] = true
			det.Points = append(det.Points, pt)
			if int64(run.Rate) == rate && verbs.MTU(run.MTU) == mtu {
				det.Match = pt
			}
		}
	}
	here := fmt.Sprintf("%s/%dB", perftest.RateKey(rate), mtu)
	if det.Match != "" {
		res.Notes = append(res.Notes, fmt.Sprintf("link %s (rate and path MTU of the two ports): the scenario's point %s", here, det.Match))
	} else {
		res.Notes = append(res.Notes, fmt.Sprintf("link %s matches none of the scenario's points (%s): measured at the link's own rate and MTU, which besim did not simulate", here, strings.Join(det.Points, ", ")))
	}
	if mtu != attr.PortMTU {
		res.Notes = append(res.Notes, fmt.Sprintf("path MTU %d: the peer's active MTU, below this port's %d", mtu, attr.PortMTU))
	}
	var errs []error
	for _, t := range r.trans {
		cfg := perftest.ScenarioConfig(r.scen, t, mtu, r.msg)
		cfg.Duration = sim.Time(measure.Nanoseconds()) * sim.Nanosecond
		cfg.GIDIndex, cfg.TrafficClass, cfg.ServiceLevel = uint8(r.gid), r.qos.dscp<<2, r.qos.prio
		cfg = cfg.WithDefaults()
		pr := PerftestRun{Key: perftest.Key(rate, mtu, t), Transport: perftest.TransportName(t), Message: cfg.MsgSize}
		tn := pr.Transport
		if err := cfg.Validate(); err != nil {
			// Both sides see the same configuration and skip it alike.
			pr.Error = err.Error()
			det.Runs = append(det.Runs, pr)
			res.Notes = append(res.Notes, fmt.Sprintf("%s: not run: %v", tn, err))
			continue
		}
		err := r.runOne(ctx, conn, cfg, &pr, rate)
		det.Runs = append(det.Runs, pr)
		if r.server {
			res.Metrics[tn+"_gbps"] = pr.Gbps
			res.Metrics[tn+"_line_gbps"] = pr.LineGbps
			res.Metrics[tn+"_msg_rate_mps"] = pr.MsgRate / 1e6
			res.Metrics[tn+"_pkt_rate_mpps"] = pr.PktRate / 1e6
			res.Metrics[tn+"_msgs"] = float64(pr.Msgs)
		} else {
			res.Metrics[tn+"_sent"] = float64(pr.Msgs)
		}
		res.Metrics[tn+"_message_bytes"] = float64(pr.Message)
		if err != nil {
			pr.Error = err.Error()
			det.Runs[len(det.Runs)-1].Error = pr.Error
			errs = append(errs, fmt.Errorf("%s: %w", tn, err))
			break // the exchange with the peer is out of step
		}
	}
	return res, errors.Join(errs...)
}

// pairConn is the control connection of a two-host benchmark's roles: the
// dialing side connects to its one peer, the other accepts it on ln (until
// helloTimeout after the start). The connection is closed when ctx ends;
// done closes it and stops that watch.
func pairConn(ctx context.Context, spec Spec, peers PeerMap, ln net.Listener, dialing bool) (conn net.Conn, done func(), err error) {
	if dialing {
		conn, err = dialPeer(ctx, spec, peers)
	} else {
		conn, err = acceptOne(ctx, ln, time.Until(spec.Start)+helloTimeout)
	}
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	return conn, func() { stop(); conn.Close() }, nil
}

// dialPeer connects to the role's one peer from the role's bind address.
func dialPeer(ctx context.Context, spec Spec, peers PeerMap) (net.Conn, error) {
	id := spec.Peers[0]
	p, ok := peers[id]
	if !ok || p.Addr == "" {
		return nil, fmt.Errorf("peer %s has no address", id)
	}
	src, _, _ := net.SplitHostPort(spec.Bind)
	d := net.Dialer{Timeout: dialTimeout}
	if ip := net.ParseIP(src); ip != nil {
		d.LocalAddr = &net.TCPAddr{IP: ip}
	}
	c, err := d.DialContext(ctx, "tcp", p.Addr)
	if err != nil {
		return nil, fmt.Errorf("connect to %s (%s on %s): %w", id, p.Addr, p.Host, err)
	}
	return c, nil
}

// acceptOne accepts the client's connection, giving up after d or when
// ctx ends.
func acceptOne(ctx context.Context, ln net.Listener, d time.Duration) (net.Conn, error) {
	if tl, ok := ln.(*net.TCPListener); ok {
		_ = tl.SetDeadline(time.Now().Add(d))
	}
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	c, err := ln.Accept()
	if err != nil {
		return nil, fmt.Errorf("waiting for the perftest-client: %w", err)
	}
	return c, nil
}

// runOne measures one transport: endpoints, QP exchange, then the
// client sends until the server's interval is over.
func (r *perfRole) runOne(ctx context.Context, conn net.Conn, cfg perftest.Config, pr *PerftestRun, rate int64) error {
	var ep *perftest.Endpoint
	if r.server {
		ep = perftest.NewReceiver(cfg)
	} else {
		ep = perftest.NewSender(cfg)
	}
	defer ep.Close()
	if err := ep.Open(r.vctx, uintptr(unsafe.Pointer(&r.mem[0]))); err != nil {
		return err
	}
	peer, err := ibv.ExchangeQPInfo(conn, ep.Info())
	if err != nil {
		return err
	}
	if peer.MTU != cfg.MTU {
		return fmt.Errorf("the peer's QP runs at MTU %d, this one at %d", peer.MTU, cfg.MTU)
	}
	if err := ep.Connect(peer); err != nil {
		return err
	}
	if r.server {
		return r.serve(ctx, conn, ep, cfg, pr, rate)
	}
	return r.send(ctx, conn, ep, pr)
}

// signal waits in the background for byte want on conn.
func signal(conn net.Conn, want byte, d time.Duration) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- readSignal(conn, want, d) }()
	return ch
}

func since(t0 time.Time) sim.Time { return sim.Time(time.Since(t0).Nanoseconds()) * sim.Nanosecond }

func (r *perfRole) serve(ctx context.Context, conn net.Conn, ep *perftest.Endpoint, cfg perftest.Config, pr *PerftestRun, rate int64) error {
	if err := ep.PostReceives(); err != nil {
		return err
	}
	t0 := time.Now()
	if _, err := conn.Write([]byte{perfReady}); err != nil {
		return fmt.Errorf("ready: %w", err)
	}
	end := cfg.Warmup + cfg.Duration
	var err error
	for err == nil && since(t0) < end {
		select {
		case <-ctx.Done():
			err = fmt.Errorf("stopped (%v)", context.Cause(ctx))
		default:
			err = ep.Step(since(t0))
		}
	}
	st := ep.Stats()
	secs := cfg.Duration.Seconds()
	pr.Msgs, pr.Bytes, pr.MeasuredS = st.Msgs, st.Bytes, secs
	pr.Gbps = float64(st.Bytes) * 8 / secs / 1e9
	pr.MsgRate = float64(st.Msgs) / secs
	pr.PktRate = pr.MsgRate * float64(cfg.Packets())
	pr.LineGbps = perftest.LinePayloadGbps(cfg.Transport, rate, cfg.MTU)
	if err != nil {
		return err
	}
	// Keep receiving while the client drains, so that its last SENDs find
	// receives posted.
	if _, err := conn.Write([]byte{perfStop}); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	drained := signal(conn, perfDrained, helloTimeout)
	for {
		select {
		case err := <-drained:
			return err
		default:
		}
		if err := ep.Step(since(t0)); err != nil {
			return err
		}
	}
}

func (r *perfRole) send(ctx context.Context, conn net.Conn, ep *perftest.Endpoint, pr *PerftestRun) error {
	if err := readSignal(conn, perfReady, helloTimeout); err != nil {
		return err
	}
	t0 := time.Now()
	c := ep.Config()
	stopped := signal(conn, perfStop, time.Duration((c.Warmup+c.Duration)/sim.Nanosecond)+helloTimeout)
	defer func() { pr.Msgs = ep.Stats().Posted }()
	for {
		select {
		case err := <-stopped:
			if err != nil {
				return err
			}
			ep.Stop()
			deadline := time.Now().Add(helloTimeout)
			for !ep.Drained() {
				if err := ep.Step(since(t0)); err != nil {
					return err
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("%d SENDs posted, %d completions: not drained within %v", ep.Stats().Posted, ep.Stats().Completions, helloTimeout)
				}
			}
			if _, err := conn.Write([]byte{perfDrained}); err != nil {
				return fmt.Errorf("drained: %w", err)
			}
			return nil
		case <-ctx.Done():
			return fmt.Errorf("stopped (%v)", context.Cause(ctx))
		default:
		}
		if err := ep.Step(since(t0)); err != nil {
			return err
		}
	}
}
