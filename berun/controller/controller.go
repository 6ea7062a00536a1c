// Package controller is the driving side of berun (`berun run`): it reads a
// run plan and a hosts file (package plan), connects to the agent on every
// host that has roles, authenticates both ways with the shared token
// (package wire), pushes the run, has every host prepare its roles, measures
// each agent's clock offset from heartbeat round trips, starts all hosts at
// one instant T (sent in each agent's own clock), watches liveness while
// they run, and gathers their results into one JSON document (ResultFile).
//
// Every wait is bounded: dial and handshake (5 s each by default), prepare
// (35 s), the run (T + duration + grace + 2 s for roles to stop), and the
// upload (10 s after that). Agents answer a heartbeat every 500 ms; a host
// silent for Liveness (3 s), or whose connection drops, is reported as
// failed with its name, the phase and the reason, and the run goes on for
// the others, whose results are kept. A failure before the start aborts the
// run (nothing has run yet, so partial results would mean nothing) and the
// result file says which host failed and why. Interrupting the controller
// (context cancelled) sends Abort to every host and still collects what they
// measured.
//
// This is the paper's evaluation set-up (§8) in miniature: the same plan
// replayed on real hosts over kernel TCP (the baseline) and, once the
// workloads exist, over verbs, with the NIC counters (CNPs, pause frames,
// NAKs) read around each run on every host.
package controller

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/besim/besim/berun/plan"
	"github.com/besim/besim/berun/wire"
)

// Config configures a run.
type Config struct {
	Plan  *plan.Plan
	Hosts *plan.Hosts
	Token []byte
	// Timeouts (0: the default in brackets): DialTimeout [5s],
	// HandshakeTimeout [5s], PrepareTimeout [35s], Heartbeat [500ms]
	// interval, Liveness [3s] of silence before a host is failed,
	// StartDelay [1s] minimum lead of the start instant, StopTimeout [2s]
	// for roles after the run deadline, UploadTimeout [10s].
	DialTimeout, HandshakeTimeout, PrepareTimeout, Heartbeat, Liveness, StartDelay, StopTimeout, UploadTimeout time.Duration
	// Logf logs progress (nil: discard).
	Logf    func(format string, args ...any)
	Version string
}

func (c *Config) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&c.DialTimeout, 5*time.Second)
	set(&c.HandshakeTimeout, 5*time.Second)
	set(&c.PrepareTimeout, 35*time.Second)
	set(&c.Heartbeat, 500*time.Millisecond)
	set(&c.Liveness, 3*time.Second)
	set(&c.StartDelay, time.Second)
	set(&c.StopTimeout, 2*time.Second)
	set(&c.UploadTimeout, 10*time.Second)
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if c.Version == "" {
		c.Version = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			c.Version = bi.Main.Version
		}
	}
}

type event struct {
	h   *host
	m   wire.Message
	err error
}

type host struct {
	cfg     *plan.Host
	as      plan.Assignment
	conn    *wire.Conn
	welcome *wire.Welcome
	ready   *wire.Ready
	result  *wire.Result
	failure *Failure
	stop    chan struct{}
	seq     atomic.Uint64

	mu      sync.Mutex
	samples int
	bestRTT time.Duration
	offset  time.Duration
}

func (h *host) live() bool { return h.failure == nil && h.result == nil }

// sample records a heartbeat answer: echoed is the controller's send time
// it carries, agentNS the agent's clock when it answered.
func (h *host) sample(echoed, agentNS int64, recv time.Time) {
	rtt := time.Duration(recv.UnixNano() - echoed)
	if echoed <= 0 || rtt < 0 {
		return
	}
	off := time.Duration(agentNS - (echoed+recv.UnixNano())/2)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.samples++
	if h.samples == 1 || rtt < h.bestRTT {
		h.bestRTT, h.offset = rtt, off
	}
}

func (h *host) clock() (rtt, off time.Duration, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.bestRTT, h.offset, h.samples
}

type run struct {
	cfg    Config
	rf     *ResultFile
	hosts  []*host
	events chan event
	done   chan struct{}
	runID  string
}

func newRunID() string {
	b := make([]byte, 4)
	rand.Read(b)
	return time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b)
}

// Run carries out the plan and returns the result document. The error is
// non-nil only when the inputs are wrong (nothing was contacted); failures
// of hosts are in the document (Status, Failures).
func Run(ctx context.Context, cfg Config) (*ResultFile, error) {
	cfg.defaults()
	if cfg.Plan == nil || cfg.Hosts == nil {
		return nil, errors.New("controller: plan and hosts are required")
	}
	if len(cfg.Token) < wire.MinTokenLen {
		return nil, fmt.Errorf("controller: token of %d bytes, at least %d needed", len(cfg.Token), wire.MinTokenLen)
	}
	assigns, err := plan.Assign(cfg.Plan, cfg.Hosts)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(cfg.Plan.Raw)
	hn, _ := os.Hostname()
	r := &run{cfg: cfg, events: make(chan event, 64), done: make(chan struct{}), runID: newRunID()}
	r.rf = &ResultFile{Format: Format, RunID: r.runID, Started: time.Now(),
		Plan: PlanInfo{Name: cfg.Plan.Name, File: cfg.Plan.File, SHA256: hex.EncodeToString(sum[:]),
			DurationS: cfg.Plan.Dur.Seconds(), GraceS: cfg.Plan.GraceDur.Seconds()},
		Controller: ControllerInfo{Hostname: hn, Version: cfg.Version, GoVersion: runtime.Version()}}
	for _, a := range assigns {
		r.hosts = append(r.hosts, &host{cfg: a.Host, as: a, stop: make(chan struct{})})
	}
	defer func() {
		close(r.done)
		for _, h := range r.hosts {
			if h.conn != nil {
				h.conn.Close()
			}
		}
	}()
	r.execute(ctx)
	r.finish()
	return r.rf, nil
}

func (r *run) logf(format string, args ...any) { r.cfg.Logf(format, args...) }

func (r *run) fail(h *host, phase, reason string) {
	if !h.live() {
		return
	}
	h.failure = &Failure{Host: h.cfg.Name, Phase: phase, Reason: reason}
	r.rf.Failures = append(r.rf.Failures, *h.failure)
	r.logf("host %s FAILED (%s): %s", h.cfg.Name, phase, reason)
	close(h.stop)
	if h.conn != nil {
		h.conn.Close()
	}
}

func (r *run) liveHosts() []*host {
	var l []*host
	for _, h := range r.hosts {
		if h.live() {
			l = append(l, h)
		}
	}
	return l
}

// explain turns a connection error into what an operator needs to know.
func explain(err error, liveness time.Duration) string {
	var ne net.Error
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, net.ErrClosed):
		return fmt.Sprintf("connection to the agent lost (%v): agent killed or host down?", err)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Sprintf("no answer from the agent for %v (agent hung or host unreachable): %v", liveness, err)
	}
	return err.Error()
}

func (r *run) reader(h *host) {
	for {
		m, err := h.conn.Recv(r.cfg.Liveness)
		if err == nil {
			if hb, ok := m.(*wire.Heartbeat); ok {
				h.sample(hb.EchoNS, hb.SentNS, time.Now())
				continue
			}
		}
		select {
		case r.events <- event{h, m, err}:
		case <-r.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (r *run) heartbeat(h *host, every time.Duration, n int) {
	t := time.NewTicker(every)
	defer t.Stop()
	for i := 0; n <= 0 || i < n; i++ {
		if h.conn.Send(&wire.Heartbeat{Seq: h.seq.Add(1), SentNS: time.Now().UnixNano()}) != nil {
			return
		}
		select {
		case <-t.C:
		case <-h.stop:
			return
		case <-r.done:
			return
		}
	}
}

// await waits until every live host sent a message of type want (passed to
// got) or failed, or until deadline (then the silent ones fail). It returns
// early with the context's error.
func (r *run) await(ctx context.Context, want wire.Type, phase string, deadline time.Time, got func(*host, wire.Message)) error {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	answered := map[*host]bool{}
	pending := func() int {
		n := 0
		for _, h := range r.liveHosts() {
			if !answered[h] {
				n++
			}
		}
		return n
	}
	for pending() > 0 {
		select {
		case ev := <-r.events:
			h := ev.h
			if !h.live() {
				continue
			}
			switch m := ev.m.(type) {
			case nil:
				r.fail(h, phase, explain(ev.err, r.cfg.Liveness))
			case *wire.ErrorMsg:
				r.fail(h, phase, fmt.Sprintf("agent refused (%s): %s", m.Code, m.Reason))
			default:
				if m.Type() != want || answered[h] {
					r.fail(h, phase, fmt.Sprintf("protocol: unexpected %v while waiting for %v", m.Type(), want))
					continue
				}
				answered[h] = true
				got(h, m)
			}
		case <-timer.C:
			for _, h := range r.liveHosts() {
				if !answered[h] {
					r.fail(h, phase, fmt.Sprintf("no %v from the agent within the %s timeout", want, phase))
				}
			}
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

func (r *run) abortAll(reason string) {
	for _, h := range r.liveHosts() {
		_ = h.conn.Send(&wire.Abort{RunID: r.runID, Reason: reason})
	}
}

// parallel runs f for each live host at once, waits, and fails the hosts
// for which f returned an error.
func (r *run) parallel(phase string, f func(h *host) error) {
	var wg sync.WaitGroup
	live := r.liveHosts()
	errs := make([]error, len(live))
	for i, h := range live {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f(h) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			r.fail(live[i], phase, explain(err, r.cfg.Liveness))
		}
	}
}

func (r *run) preStartFailed(what string) bool {
	if len(r.rf.Failures) == 0 {
		return false
	}
	var names []string
	for _, f := range r.rf.Failures {
		names = append(names, f.Host)
	}
	reason := fmt.Sprintf("%s failed on %v; run aborted before the start", what, names)
	r.abortAll(reason)
	r.rf.Notes = append(r.rf.Notes, reason)
	for _, h := range r.liveHosts() {
		close(h.stop)
		h.conn.Close()
		h.failure = &Failure{Host: h.cfg.Name, Phase: "aborted", Reason: reason}
	}
	return true
}

func (r *run) execute(ctx context.Context) {
	cfg, p := r.cfg, r.cfg.Plan
	hn, _ := os.Hostname()

	// Connect and authenticate.
	r.logf("run %s: %s on %d hosts for %v", r.runID, p.Name, len(r.hosts), p.Dur)
	type conn struct {
		h   *host
		c   *wire.Conn
		w   *wire.Welcome
		err error
	}
	res := make(chan conn, len(r.hosts))
	for _, h := range r.hosts {
		go func() {
			d := net.Dialer{Timeout: cfg.DialTimeout}
			nc, err := d.DialContext(ctx, "tcp", h.cfg.Control)
			if err != nil {
				res <- conn{h: h, err: fmt.Errorf("connect to agent at %s: %w", h.cfg.Control, err)}
				return
			}
			c := wire.NewConn(nc)
			w, err := c.ClientHandshake(cfg.Token, hn, cfg.HandshakeTimeout)
			if err != nil {
				nc.Close()
			}
			res <- conn{h, c, w, err}
		}()
	}
	for range r.hosts {
		c := <-res
		if c.err != nil {
			r.fail(c.h, "connect", c.err.Error())
			continue
		}
		c.h.conn, c.h.welcome = c.c, c.w
		// Heartbeats start at once, so an agent waiting for slower hosts
		// to connect sees a live controller.
		go r.reader(c.h)
		go r.heartbeat(c.h, cfg.Heartbeat, 0)
		r.logf("host %s: agent %s (%s, pid %d) authenticated", c.h.cfg.Name, c.w.Agent.Name, c.w.Agent.Hostname, c.w.Agent.PID)
	}
	if r.preStartFailed("connecting") {
		return
	}

	// Push the run and the assignments; wait until every host is prepared.
	sum := sha256.Sum256(p.Raw)
	sc := &wire.Scenario{RunID: r.runID, Name: p.Name, File: shortName(p.File), Raw: p.Raw, SHA256: sum[:],
		DurationNS: int64(p.Dur), GraceNS: int64(p.GraceDur)}
	r.parallel("prepare", func(h *host) error {
		as := &wire.Assign{RunID: r.runID, Host: h.cfg.Name,
			DataAddr: net.JoinHostPort(h.cfg.DataIP().String(), "0"), Roles: h.as.Roles,
			Counters: wire.CounterConfig{Skip: !p.ReadCounters(), Netdevs: h.cfg.Netdevs, RDMADevices: h.cfg.RDMADevices}}
		if err := h.conn.Send(sc); err != nil {
			return err
		}
		return h.conn.Send(as)
	})
	err := r.await(ctx, wire.TypeReady, "prepare", time.Now().Add(cfg.PrepareTimeout), func(h *host, m wire.Message) {
		h.ready = m.(*wire.Ready)
	})
	if err != nil {
		r.rf.Notes = append(r.rf.Notes, fmt.Sprintf("interrupted while preparing: %v", err))
		r.abortAll("controller interrupted")
		for _, h := range r.liveHosts() {
			r.fail(h, "aborted", "controller interrupted before the start")
		}
		return
	}
	if r.preStartFailed("preparing") {
		return
	}

	// Clock samples: a quick burst of heartbeats per host.
	r.parallel("prepare", func(h *host) error { r.heartbeat(h, 5*time.Millisecond, 8); return nil })
	time.Sleep(50 * time.Millisecond)
	lead := cfg.StartDelay
	peers := []wire.Peer{}
	for _, h := range r.hosts {
		rtt, off, n := h.clock()
		lead = max(lead, 4*rtt)
		r.logf("host %s: clock offset %v (rtt %v, %d samples)", h.cfg.Name, off, rtt, n)
		for _, rs := range h.as.Roles {
			peers = append(peers, wire.Peer{ID: rs.ID, Role: rs.Role, Host: h.cfg.Name, Addr: h.ready.Bound[rs.ID]})
		}
	}
	sort.Slice(peers, func(i, j int) bool { return peers[i].ID < peers[j].ID })

	// Start everyone at T, each in its own clock.
	t := time.Now().Add(lead)
	r.rf.StartAt = &t
	r.logf("start at %s (in %v)", t.Format(time.RFC3339Nano), lead)
	r.parallel("start", func(h *host) error {
		_, off, _ := h.clock()
		return h.conn.Send(&wire.Start{RunID: r.runID, AtUnixNano: t.Add(off).UnixNano(), Peers: peers})
	})

	// Collect.
	deadline := t.Add(p.Dur + p.GraceDur + cfg.StopTimeout + cfg.UploadTimeout)
	for {
		err := r.await(ctx, wire.TypeResult, "run", deadline, func(h *host, m wire.Message) {
			h.result = m.(*wire.Result)
			close(h.stop)
			h.conn.Close()
			r.logf("host %s: results in (%d role instances)", h.cfg.Name, len(h.result.Roles))
		})
		if err == nil {
			return
		}
		r.logf("interrupted (%v): aborting the run and collecting what was measured", err)
		r.rf.Notes = append(r.rf.Notes, fmt.Sprintf("controller interrupted (%v); run aborted", err))
		r.abortAll("controller interrupted")
		ctx = context.Background()
		deadline = time.Now().Add(cfg.StopTimeout + cfg.UploadTimeout)
	}
}

func shortName(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			p = p[i+1:]
			break
		}
	}
	if len(p) > wire.MaxAddr {
		p = p[:wire.MaxAddr]
	}
	return p
}

// finish builds the per-host results and the overall status.
func (r *run) finish() {
	rf := r.rf
	rf.Finished = time.Now()
	anyResult, allOK := false, true
	for _, h := range r.hosts {
		hr := HostResult{Name: h.cfg.Name, Control: h.cfg.Control, Data: h.cfg.Data, Status: "ok", Failure: h.failure}
		if h.welcome != nil {
			a := h.welcome.Agent
			hr.Agent = &a
		}
		rtt, off, n := h.clock()
		if n > 0 {
			hr.Clock = &Clock{OffsetUS: float64(off) / 1e3, RTTUS: float64(rtt) / 1e3, Samples: n}
		}
		got := map[string]*wire.RoleResult{}
		if h.result != nil {
			anyResult = true
			for i := range h.result.Roles {
				got[h.result.Roles[i].ID] = &h.result.Roles[i]
			}
			if len(h.result.Counters) > 0 {
				c := h.result.Counters
				hr.Counters = &c
			}
			hr.Notes = h.result.Notes
		}
		for _, rs := range h.as.Roles {
			res := RoleResult{ID: rs.ID, Role: rs.Role, Status: "missing", Error: "no result: the host failed before reporting"}
			if g := got[rs.ID]; g != nil {
				res = RoleResult{ID: g.ID, Role: g.Role, Status: g.Status, Error: g.Error, Metrics: g.Metrics, Detail: g.Detail, Notes: g.Notes,
					ElapsedS: time.Duration(g.FinishedNS - g.StartedNS).Seconds()}
				if rf.StartAt != nil {
					res.StartSkewMS = float64(time.Unix(0, g.StartedNS).Add(-off).Sub(*rf.StartAt)) / 1e6
				}
			}
			if res.Status != "ok" && hr.Status == "ok" {
				hr.Status = "error"
			}
			hr.Roles = append(hr.Roles, res)
		}
		if h.failure != nil {
			hr.Status = "failed"
			if h.failure.Phase == "aborted" {
				hr.Status = "aborted"
			}
		}
		if hr.Status != "ok" {
			allOK = false
		}
		rf.Hosts = append(rf.Hosts, hr)
	}
	switch {
	case allOK:
		rf.Status = "ok"
	case anyResult:
		rf.Status = "partial"
	default:
		rf.Status = "failed"
	}
}

// Summary is a short human-readable account of a result.
func Summary(rf *ResultFile) string {
	s := fmt.Sprintf("run %s (%s): %s\n", rf.RunID, rf.Plan.Name, rf.Status)
	for _, h := range rf.Hosts {
		s += fmt.Sprintf("  %-12s %s", h.Name, h.Status)
		if h.Failure != nil {
			s += fmt.Sprintf(" [%s] %s", h.Failure.Phase, h.Failure.Reason)
		}
		s += "\n"
		for _, ro := range h.Roles {
			s += fmt.Sprintf("    %-12s %-9s %-7s", ro.ID, ro.Role, ro.Status)
			for _, k := range []string{"throughput_gbps", "messages", "requests", "latency_us_p50", "latency_us_p99"} {
				if v, ok := ro.Metrics[k]; ok {
					s += " " + k + "=" + strconv.FormatFloat(v, 'g', 4, 64)
				}
			}
			if ro.Error != "" {
				s += " error: " + ro.Error
			}
			s += "\n"
		}
	}
	return s
}
