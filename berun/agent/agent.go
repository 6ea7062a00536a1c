// Package agent is the host side of berun (`berun agent`): it listens on the
// one address it is given, accepts controllers that prove they hold the
// shared token (package wire), and runs the role instances a controller
// assigns (package role) at the instant the controller names, reading the
// NIC counters before and after (package counters) and uploading the
// results.
//
// One controller session runs at a time; another authenticated controller
// is told the agent is busy. Everything is bounded: the handshake (5 s by
// default, each frame at most 4 KiB), unauthenticated connections (at most
// MaxPending at once and MaxPendingPerSource from one source address; a new
// connection over either bound closes the oldest pending one of its own
// source, or of the source holding the most, so idle connections cannot
// lock a controller out), controller silence (IdleTimeout; the controller
// heartbeats every 500 ms), role preparation, the start instant (at most
// MaxStartAhead ahead), and the run itself (Start + duration + grace, after
// which roles are cancelled and given 2 s more before they are reported as
// stuck). A controller that disappears mid-run makes the agent cancel its
// roles and go back to listening; an Abort makes it cancel them and still
// upload what they measured. A role that panics is reported as an error,
// never taking the agent down.
//
// What a controller sends is checked before it is used: the scenario's
// sha256 must be that of its raw bytes (package wire refuses the message
// otherwise), a role must bind a given address, not a wildcard (0.0.0.0,
// ::; allowed only with AllowWildcard, as for the agent's listener), and
// netdev and RDMA device names must be plain names (wire.CheckDevice), as
// the counter reader joins them into sysfs paths.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/besim/besim/berun/counters"
	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/berun/wire"
)

// Config configures an agent.
type Config struct {
	// Listen is the control address; the host part must be given (a
	// wildcard address needs AllowWildcard, which also lets a controller
	// assign roles wildcard bind addresses).
	Listen        string
	AllowWildcard bool
	// Token is the shared secret (wire.LoadToken).
	Token []byte
	// Name identifies the agent in logs and results (default: the host
	// name, made into a valid identifier).
	Name string
	// Timeouts (0: the defaults in brackets): HandshakeTimeout [5s],
	// IdleTimeout [10s] of controller silence, PrepareTimeout [30s] for
	// the roles' Prepare, StartWait [2m] for the start instruction once
	// prepared (other hosts may still be preparing; heartbeats keep
	// proving the controller alive meanwhile), MaxStartAhead [60s],
	// StopTimeout [2s] for roles to return after their context ends.
	HandshakeTimeout, IdleTimeout, PrepareTimeout, StartWait, MaxStartAhead, StopTimeout time.Duration
	// MaxPending bounds unauthenticated connections [8], and
	// MaxPendingPerSource those from one source IP address [2]. A new
	// connection over a bound closes the oldest pending connection of its
	// own source (over the per-source bound) or of the source with the
	// most pending (over the total), instead of being refused.
	MaxPending, MaxPendingPerSource int
	// Counters overrides the counter reader's paths (tests); Root "" is /.
	Counters counters.Config
	// Logf logs a line (nil: discard).
	Logf func(format string, args ...any)
	// Version is reported to controllers.
	Version string
}

// Agent serves controllers.
type Agent struct {
	cfg  Config
	ln   net.Listener
	busy atomic.Bool
	wg   sync.WaitGroup

	mu      sync.Mutex
	pending map[string][]*pendingConn // by source IP, oldest first
	npend   int
	seq     uint64
}

// pendingConn is a connection that has not authenticated yet.
type pendingConn struct {
	nc  net.Conn
	src string
	seq uint64
}

func (c *Config) defaults() error {
	if len(c.Token) < wire.MinTokenLen {
		return fmt.Errorf("agent: token of %d bytes, at least %d needed", len(c.Token), wire.MinTokenLen)
	}
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("agent: --listen %q: want IP:port of the management interface (%v)", c.Listen, err)
	}
	if wire.IsWildcard(host) && !c.AllowWildcard {
		return fmt.Errorf("agent: --listen %q binds every interface; give the management address (or --listen-any to insist)", c.Listen)
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&c.HandshakeTimeout, 5*time.Second)
	set(&c.IdleTimeout, 10*time.Second)
	set(&c.PrepareTimeout, 30*time.Second)
	set(&c.StartWait, 2*time.Minute)
	set(&c.MaxStartAhead, 60*time.Second)
	set(&c.StopTimeout, 2*time.Second)
	if c.MaxPending <= 0 {
		c.MaxPending = 8
	}
	if c.MaxPendingPerSource <= 0 {
		c.MaxPendingPerSource = 2
	}
	c.MaxPendingPerSource = min(c.MaxPendingPerSource, c.MaxPending)
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if c.Name == "" {
		h, _ := os.Hostname()
		c.Name = sanitize(h)
	}
	if err := wire.CheckName("agent name", c.Name); err != nil {
		return fmt.Errorf("agent: %w", err)
	}
	if c.Version == "" {
		c.Version = "dev"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			c.Version = bi.Main.Version
		}
	}
	return nil
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	s = strings.Trim(string(b), ".-_")
	if len(s) > wire.MaxName {
		s = s[:wire.MaxName]
	}
	if s == "" {
		s = "agent"
	}
	return s
}

// New checks cfg and binds the listen address.
func New(cfg Config) (*Agent, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	return &Agent{cfg: cfg, ln: ln, pending: map[string][]*pendingConn{}}, nil
}

// Addr is the bound control address.
func (a *Agent) Addr() net.Addr { return a.ln.Addr() }

// Serve accepts controllers until ctx ends, then closes the listener and
// waits for the session in progress to wind down.
func (a *Agent) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { a.ln.Close() })
	defer stop()
	defer a.wg.Wait()
	for {
		nc, err := a.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		p := a.admit(nc)
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			a.handle(ctx, p)
		}()
	}
}

// admit records nc as pending. Over the per-source bound it first closes
// the oldest pending connection from nc's source; over the total bound,
// the oldest from the source holding the most (the oldest such on a tie).
// Whoever holds idle connections thus only ever displaces its own, or the
// largest holder's, and a controller's fresh connection always gets its
// handshake.
func (a *Agent) admit(nc net.Conn) *pendingConn {
	src := nc.RemoteAddr().String()
	if h, _, err := net.SplitHostPort(src); err == nil {
		src = h
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var victim *pendingConn
	var why string
	if l := a.pending[src]; len(l) >= a.cfg.MaxPendingPerSource {
		victim = l[0]
		why = fmt.Sprintf("%d unauthenticated connections already pending from %s", len(l), src)
	} else if a.npend >= a.cfg.MaxPending {
		for _, l := range a.pending {
			if victim == nil || len(l) > len(a.pending[victim.src]) ||
				len(l) == len(a.pending[victim.src]) && l[0].seq < victim.seq {
				victim = l[0]
			}
		}
		why = fmt.Sprintf("%d unauthenticated connections already pending", a.npend)
	}
	if victim != nil {
		a.cfg.Logf("closed the oldest pending connection from %v for %v: %s", victim.nc.RemoteAddr(), nc.RemoteAddr(), why)
		a.unpend(victim)
		victim.nc.Close()
	}
	a.seq++
	p := &pendingConn{nc: nc, src: src, seq: a.seq}
	a.pending[src] = append(a.pending[src], p)
	a.npend++
	return p
}

// unpend forgets p (once; a.mu held).
func (a *Agent) unpend(p *pendingConn) {
	l := a.pending[p.src]
	for i, x := range l {
		if x == p {
			l = append(l[:i:i], l[i+1:]...)
			a.npend--
			if len(l) == 0 {
				delete(a.pending, p.src)
			} else {
				a.pending[p.src] = l
			}
			return
		}
	}
}

// settled ends p's pending state (authenticated or refused).
func (a *Agent) settled(p *pendingConn) {
	a.mu.Lock()
	a.unpend(p)
	a.mu.Unlock()
}

func (a *Agent) info() *wire.Welcome {
	h, _ := os.Hostname()
	return &wire.Welcome{Agent: wire.AgentInfo{Name: a.cfg.Name, Hostname: h, Version: a.cfg.Version,
		GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, PID: os.Getpid(),
		Listen: a.ln.Addr().String(), Roles: role.Names()}}
}

func (a *Agent) handle(ctx context.Context, p *pendingConn) {
	nc := p.nc
	defer nc.Close()
	c := wire.NewConn(nc)
	ctl, err := c.ServerHandshake(a.cfg.Token, a.cfg.Name, a.info(), a.cfg.HandshakeTimeout)
	a.settled(p)
	if err != nil {
		a.cfg.Logf("refused controller %v: %v", nc.RemoteAddr(), err)
		if !errors.Is(err, wire.ErrAuth) {
			_ = c.Send(&wire.ErrorMsg{Code: "protocol", Reason: clipText(err.Error())})
		}
		return
	}
	if !a.busy.CompareAndSwap(false, true) {
		a.cfg.Logf("refused controller %q from %v: busy with another run", ctl, nc.RemoteAddr())
		_ = c.Send(&wire.ErrorMsg{Code: "busy", Reason: "agent " + a.cfg.Name + " is running another controller's session"})
		return
	}
	defer a.busy.Store(false)
	a.cfg.Logf("controller %q connected from %v", ctl, nc.RemoteAddr())
	s := &session{a: a, c: c, msgs: make(chan wire.Message, 16), rerr: make(chan error, 1)}
	s.phase.Store("idle")
	err = s.run(ctx)
	if err != nil {
		a.cfg.Logf("session with %v ended: %v", nc.RemoteAddr(), err)
	} else {
		a.cfg.Logf("session with %v done", nc.RemoteAddr())
	}
}

type session struct {
	a     *Agent
	c     *wire.Conn
	msgs  chan wire.Message
	rerr  chan error
	phase atomic.Value
	runID string
}

// reader answers heartbeats and forwards other messages.
func (s *session) reader(stop <-chan struct{}) {
	for {
		m, err := s.c.Recv(s.a.cfg.IdleTimeout)
		if err != nil {
			if wire.IsRefusal(err) {
				s.a.cfg.Logf("refused a frame from controller %v: %v", s.c.RemoteAddr(), err)
				_ = s.c.Send(&wire.ErrorMsg{Code: "protocol", Reason: clipText(err.Error())})
			}
			s.rerr <- err
			return
		}
		if hb, ok := m.(*wire.Heartbeat); ok {
			_ = s.c.Send(&wire.Heartbeat{Seq: hb.Seq, SentNS: time.Now().UnixNano(), EchoNS: hb.SentNS, Phase: s.phase.Load().(string)})
			continue
		}
		select {
		case s.msgs <- m:
		case <-stop:
			return
		}
	}
}

var errControllerGone = errors.New("controller connection lost")

// next waits for the next message of one of the given types, for at most
// timeout.
func (s *session) next(timeout time.Duration, types ...wire.Type) (wire.Message, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-s.msgs:
		for _, ty := range types {
			if m.Type() == ty {
				return m, nil
			}
		}
		if e, ok := m.(*wire.ErrorMsg); ok {
			return nil, e
		}
		if ab, ok := m.(*wire.Abort); ok {
			return nil, fmt.Errorf("aborted by the controller: %s", ab.Reason)
		}
		return nil, s.refuse(fmt.Sprintf("expected %v, got %v", types, m.Type()))
	case err := <-s.rerr:
		return nil, fmt.Errorf("%w: %v", errControllerGone, err)
	case <-t.C:
		return nil, s.refuse(fmt.Sprintf("nothing but heartbeats for %v while waiting for %v", timeout, types))
	}
}

func (s *session) refuse(reason string) error {
	_ = s.c.Send(&wire.ErrorMsg{Code: "protocol", Reason: reason})
	return errors.New(reason)
}

type instance struct {
	spec role.Spec
	r    role.Role
	addr string
	res  wire.RoleResult
}

func (s *session) run(ctx context.Context) error {
	stop := make(chan struct{})
	defer close(stop)
	go s.reader(stop)
	a := s.a

	// The controller sends the run once every host has authenticated (its
	// connect phase is bounded by its own timeouts); it heartbeats meanwhile.
	m, err := s.next(a.cfg.StartWait, wire.TypeScenario)
	if err != nil {
		return err
	}
	sc := m.(*wire.Scenario)
	s.runID = sc.RunID
	m, err = s.next(a.cfg.IdleTimeout, wire.TypeAssign)
	if err != nil {
		return err
	}
	as := m.(*wire.Assign)
	if as.RunID != sc.RunID {
		return s.refuse(fmt.Sprintf("assignment for run %s, scenario for run %s", as.RunID, sc.RunID))
	}
	a.cfg.Logf("run %s (%s): host %s, %d role instances, %v + %v grace", sc.RunID, sc.Name, as.Host, len(as.Roles),
		time.Duration(sc.DurationNS), time.Duration(sc.GraceNS))

	// Build and prepare the roles.
	var insts []*instance
	defer func() {
		for _, in := range insts {
			in.r.Close()
		}
	}()
	for _, rs := range as.Roles {
		// As for the agent's own listener: a role binds the address it is
		// given, never every interface (unless the operator allowed that).
		if h, _, err := net.SplitHostPort(rs.Bind); err == nil && wire.IsWildcard(h) && !a.cfg.AllowWildcard {
			err := fmt.Errorf("role %s: bind %q is a wildcard address (every interface); give the data address", rs.ID, rs.Bind)
			_ = s.c.Send(&wire.ErrorMsg{Code: "role", Reason: err.Error()})
			return err
		}
		spec := role.Spec{ID: rs.ID, Role: rs.Role, Host: as.Host, Bind: rs.Bind, Peers: rs.Peers, From: rs.From,
			Params: rs.Params, Duration: time.Duration(sc.DurationNS), Grace: time.Duration(sc.GraceNS), Scenario: sc.Raw,
			Logf: func(f string, args ...any) { a.cfg.Logf("["+rs.ID+"] "+f, args...) }}
		r, err := role.New(spec)
		if err != nil {
			_ = s.c.Send(&wire.ErrorMsg{Code: "role", Reason: err.Error()})
			return err
		}
		insts = append(insts, &instance{spec: spec, r: r})
	}
	cc := a.cfg.Counters
	if !as.Counters.Skip {
		cc.Netdevs, cc.RDMADevices = as.Counters.Netdevs, as.Counters.RDMADevices
		if len(cc.Netdevs) == 0 {
			h, _, _ := net.SplitHostPort(as.DataAddr)
			if ifc, err := counters.InterfaceFor(net.ParseIP(h)); err == nil {
				cc.Netdevs = []string{ifc}
			} else {
				a.cfg.Logf("counters: %v", err)
			}
		}
	}
	var before *counters.Snapshot
	if !as.Counters.Skip {
		before = counters.Read(ctx, cc)
	}
	pctx, cancel := context.WithTimeout(ctx, a.cfg.PrepareTimeout)
	ready := &wire.Ready{RunID: sc.RunID, Bound: map[string]string{}}
	for _, in := range insts {
		addr, err := safePrepare(pctx, in)
		if err != nil {
			cancel()
			err = fmt.Errorf("prepare %s (%s): %w", in.spec.ID, in.spec.Role, err)
			_ = s.c.Send(&wire.ErrorMsg{Code: "role", Reason: err.Error()})
			return err
		}
		in.addr = addr
		ready.Bound[in.spec.ID] = addr
	}
	cancel()
	s.phase.Store("prepared")
	if err := s.c.Send(ready); err != nil {
		return err
	}

	// Wait for the start instruction, then for the instant.
	m, err = s.next(a.cfg.StartWait, wire.TypeStart)
	if err != nil {
		return err
	}
	st := m.(*wire.Start)
	at := time.Unix(0, st.AtUnixNano)
	if ahead := time.Until(at); ahead > a.cfg.MaxStartAhead {
		return s.refuse(fmt.Sprintf("start %v ahead is more than %v away (clocks?)", ahead.Round(time.Millisecond), a.cfg.MaxStartAhead))
	}
	peers := role.PeerMap{}
	for _, p := range st.Peers {
		peers[p.ID] = role.Peer{ID: p.ID, Role: p.Role, Host: p.Host, Addr: p.Addr}
	}
	s.phase.Store("waiting")
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	lost := false
	wait := time.NewTimer(time.Until(at))
	defer wait.Stop()
	select {
	case <-wait.C:
	case m := <-s.msgs:
		if ab, ok := m.(*wire.Abort); ok {
			cancelRun(fmt.Errorf("aborted by the controller before the start: %s", ab.Reason))
		} else {
			return s.refuse(fmt.Sprintf("unexpected %v while waiting for the start", m.Type()))
		}
	case err := <-s.rerr:
		return fmt.Errorf("%w before the start: %v", errControllerGone, err)
	case <-ctx.Done():
		return ctx.Err()
	}

	// Run.
	s.phase.Store("running")
	deadline := at.Add(time.Duration(sc.DurationNS + sc.GraceNS))
	rctx, cancelDeadline := context.WithDeadlineCause(runCtx, deadline, errors.New("run deadline (start + duration + grace) reached"))
	defer cancelDeadline()
	type finished struct {
		in *instance
		rr wire.RoleResult
	}
	done := make(chan finished, len(insts))
	for _, in := range insts {
		in.spec.Start = at
		in.res = wire.RoleResult{ID: in.spec.ID, Role: in.spec.Role, Status: "error", StartedNS: at.UnixNano(),
			Error: fmt.Sprintf("did not return within %v of the run deadline", a.cfg.StopTimeout)}
		go func() { done <- finished{in, safeRun(rctx, in.r, in.spec, peers)} }()
	}
	hard := time.NewTimer(time.Until(deadline) + a.cfg.StopTimeout)
	defer hard.Stop()
	pending := len(insts)
	var notes []string
	for pending > 0 {
		select {
		case f := <-done:
			f.in.res = f.rr
			pending--
		case m := <-s.msgs:
			if ab, ok := m.(*wire.Abort); ok {
				a.cfg.Logf("run %s aborted by the controller: %s", sc.RunID, ab.Reason)
				notes = append(notes, "aborted by the controller: "+ab.Reason)
				cancelRun(errors.New("aborted by the controller: " + ab.Reason))
				hard.Reset(a.cfg.StopTimeout)
			}
		case err := <-s.rerr:
			if !lost {
				lost = true
				a.cfg.Logf("run %s: controller lost (%v); cancelling the roles", sc.RunID, err)
				cancelRun(fmt.Errorf("%w: %v", errControllerGone, err))
				hard.Reset(a.cfg.StopTimeout)
			}
		case <-hard.C:
			notes = append(notes, fmt.Sprintf("%d role instance(s) did not return within %v of their deadline", pending, a.cfg.StopTimeout))
			pending = 0
		}
	}
	if lost {
		return errControllerGone
	}

	// Report.
	s.phase.Store("reporting")
	res := &wire.Result{RunID: sc.RunID, Notes: notes}
	for _, in := range insts {
		res.Roles = append(res.Roles, in.res)
	}
	if before != nil {
		after := counters.Read(ctx, cc)
		if b, err := json.Marshal(counters.Diff(before, after)); err == nil && len(b) <= wire.MaxCounters {
			res.Counters = b
		} else {
			res.Notes = append(res.Notes, fmt.Sprintf("counters dropped: %d bytes (%v)", len(b), err))
		}
	} else {
		res.Counters = json.RawMessage(`{"absent":{"all":"counters disabled in the plan (counters: false)"}}`)
	}
	if b, err := wire.Encode(res); err != nil || len(b) > wire.MaxPayload {
		for i := range res.Roles {
			res.Roles[i].Detail = nil
		}
		res.Notes = append(res.Notes, "role details dropped to fit the result frame")
	}
	if err := s.c.Send(res); err != nil {
		return err
	}
	// Let the controller close first, so that nothing it still sends makes
	// our close reset the connection before it has read the result.
	select {
	case <-s.rerr:
	case <-time.After(a.cfg.IdleTimeout):
	}
	return nil
}

func safePrepare(ctx context.Context, in *instance) (addr string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("role panicked in Prepare: %v", p)
		}
	}()
	return in.r.Prepare(ctx, in.spec)
}

// safeRun runs one instance and returns its result, recovering a panic.
func safeRun(ctx context.Context, r role.Role, spec role.Spec, peers role.PeerMap) (rr wire.RoleResult) {
	rr = wire.RoleResult{ID: spec.ID, Role: spec.Role, StartedNS: time.Now().UnixNano()}
	defer func() {
		if p := recover(); p != nil {
			rr.Status, rr.Error = "error", clipText(fmt.Sprintf("role panicked: %v", p))
		}
		rr.FinishedNS = time.Now().UnixNano()
	}()
	res, err := r.Run(ctx, spec, peers)
	rr.Status = "ok"
	if err != nil {
		rr.Status, rr.Error = "error", clipText(err.Error())
	}
	rr.Metrics = map[string]float64{}
	for k, v := range res.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) || wire.CheckName("metric", k) != nil {
			rr.Notes = append(rr.Notes, clipText(fmt.Sprintf("metric %q = %v dropped (not a finite number or a bad name)", k, v)))
			continue
		}
		rr.Metrics[k] = v
	}
	for _, n := range res.Notes {
		rr.Notes = append(rr.Notes, clipText(n))
	}
	if res.Detail != nil {
		b, err := json.Marshal(res.Detail)
		switch {
		case err != nil:
			rr.Notes = append(rr.Notes, clipText("detail not encodable: "+err.Error()))
		case len(b) > wire.MaxDetail:
			rr.Notes = append(rr.Notes, fmt.Sprintf("detail of %d bytes dropped (at most %d)", len(b), wire.MaxDetail))
		default:
			rr.Detail = b
		}
	}
	if len(rr.Notes) > wire.MaxNotes {
		n := len(rr.Notes) - wire.MaxNotes + 1
		rr.Notes = append(rr.Notes[:wire.MaxNotes-1], fmt.Sprintf("and %d more notes", n))
	}
	return rr
}

func clipText(s string) string {
	if len(s) > wire.MaxText {
		s = s[:wire.MaxText-3] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
