package agent

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/besim/besim/berun/wire"
)

var tok = []byte("agent-test-token-0123456789")

func TestConfigRefusals(t *testing.T) {
	for _, c := range []struct {
		cfg   Config
		words string
	}{
		{Config{Listen: "127.0.0.1:0", Token: []byte("short")}, "token"},
		{Config{Listen: ":7070", Token: tok}, "binds every interface"},
		{Config{Listen: "0.0.0.0:7070", Token: tok}, "binds every interface"},
		{Config{Listen: "[::]:7070", Token: tok}, "binds every interface"},
		{Config{Listen: "127.0.0.1", Token: tok}, "want IP:port"},
		{Config{Listen: "127.0.0.1:0", Token: tok, Name: "bad name!"}, "agent name"},
	} {
		if _, err := New(c.cfg); err == nil || !strings.Contains(err.Error(), c.words) {
			t.Errorf("%+v: %v, want %q", c.cfg.Listen, err, c.words)
		}
	}
	if sanitize("node-1.example.com") != "node-1.example.com" || sanitize("a b/c") != "a-b-c" || sanitize("") != "agent" {
		t.Error("sanitize")
	}
}

type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) logf(f string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(strings.TrimSpace(strings.ReplaceAll(f, "%v", "")) + "\n")
	for _, a := range args {
		if e, ok := a.(error); ok {
			l.b.WriteString(e.Error() + "\n")
		}
	}
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPendingBoundAndSilentPeers: connections that never authenticate are
// dropped after the handshake timeout, and at most MaxPending are held (a
// newer one closes the oldest).
func TestPendingBoundAndSilentPeers(t *testing.T) {
	lb := &logBuf{}
	a, err := New(Config{Listen: "127.0.0.1:0", Token: tok, Name: "a", MaxPending: 2, HandshakeTimeout: 300 * time.Millisecond, Logf: lb.logf})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Serve(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	var conns []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", a.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(time.Minute)) // a hang guard, not a speed bound
		buf := make([]byte, 256)
		for {
			if _, err := c.Read(buf); err != nil {
				break // closed by the agent: over the bound, or handshake timeout
			}
		}
		c.Close()
	}
	log := lb.String()
	if !strings.Contains(log, "closed the oldest pending connection") || !strings.Contains(log, "refused controller") {
		t.Fatalf("log:\n%s", log)
	}
	// A real controller still gets in.
	nc, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := wire.NewConn(nc)
	defer c.Close()
	w, err := c.ClientHandshake(tok, "test", 2*time.Second)
	if err != nil || w.Agent.Name != "a" || len(w.Agent.Roles) == 0 {
		t.Fatalf("handshake after junk: %+v %v", w, err)
	}
	// Garbage after authentication is refused with a reason.
	nc.Write([]byte{'B', 'R', 1, 99, 0, 0, 0, 0})
	m, err := c.Recv(2 * time.Second)
	if e, ok := m.(*wire.ErrorMsg); err != nil || !ok || !strings.Contains(e.Reason, "unknown message type") {
		t.Fatalf("after garbage: %v %v", m, err)
	}
}

// serve starts an agent on loopback; the returned function stops it.
func serve(t *testing.T, cfg Config) (*Agent, func()) {
	t.Helper()
	cfg.Listen, cfg.Token = "127.0.0.1:0", tok
	if cfg.Name == "" {
		cfg.Name = "a"
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Serve(ctx); close(done) }()
	return a, func() { cancel(); <-done }
}

// TestControllerAdmittedPastIdleConnections: whoever can reach the control
// port holds idle, unauthenticated connections (more than MaxPending, from
// another source and from the controller's own), and the handshake
// timeout is far away; a controller connecting afterwards still
// authenticates, and the idle source holds at most its per-source share.
func TestControllerAdmittedPastIdleConnections(t *testing.T) {
	lb := &logBuf{}
	a, stop := serve(t, Config{MaxPending: 4, MaxPendingPerSource: 2, HandshakeTimeout: time.Hour, Logf: lb.logf})
	defer stop()
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	other := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	if c, err := other.Dial("tcp", a.Addr().String()); err != nil {
		t.Logf("no second loopback source (%v): idle connections from the controller's address only", err)
		other = &net.Dialer{}
	} else {
		idle = append(idle, c)
	}
	for range 9 {
		c, err := other.Dial("tcp", a.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	for range 3 {
		c, err := net.Dial("tcp", a.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	nc, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := wire.NewConn(nc)
	defer c.Close()
	w, err := c.ClientHandshake(tok, "ctl", time.Minute) // a hang guard, not a speed bound
	if err != nil || w.Agent.Name != "a" {
		t.Fatalf("controller after %d idle connections: %+v %v\nlog:\n%s", len(idle), w, err, lb.String())
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.npend > a.cfg.MaxPending {
		t.Errorf("%d pending, bound %d", a.npend, a.cfg.MaxPending)
	}
	for src, l := range a.pending {
		if len(l) > a.cfg.MaxPendingPerSource {
			t.Errorf("%d pending from %s, bound %d", len(l), src, a.cfg.MaxPendingPerSource)
		}
	}
	if !strings.Contains(lb.String(), "closed the oldest pending connection") {
		t.Errorf("no pending connection was closed:\n%s", lb.String())
	}
}

// dialSession authenticates to a fresh agent and returns the connection.
func dialSession(t *testing.T, cfg Config) (*wire.Conn, func()) {
	t.Helper()
	a, stop := serve(t, cfg)
	nc, err := net.Dial("tcp", a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := wire.NewConn(nc)
	if _, err := c.ClientHandshake(tok, "ctl", time.Minute); err != nil {
		t.Fatal(err)
	}
	return c, func() { c.Close(); stop() }
}

// TestScenarioDigestChecked: a scenario whose sha256 is not that of its raw
// bytes is refused (the agent runs what the controller recorded, or
// nothing). Encode refuses to build such a frame, so it is written by hand.
func TestScenarioDigestChecked(t *testing.T) {
	c, stop := dialSession(t, Config{})
	defer stop()
	raw := []byte("name: n\n")
	wrong := sha256.Sum256([]byte("name: m\n"))
	p, err := json.Marshal(&wire.Scenario{RunID: "r1", Name: "n", File: "n.yaml", Raw: raw, SHA256: wrong[:],
		DurationNS: int64(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.NetConn().Write(append(wire.AppendHeader(nil, wire.TypeScenario, len(p)), p...)); err != nil {
		t.Fatal(err)
	}
	m, err := c.Recv(time.Minute)
	if e, ok := m.(*wire.ErrorMsg); err != nil || !ok || !strings.Contains(e.Reason, "is not the digest") {
		t.Fatalf("scenario with a wrong digest: %v %v", m, err)
	}
}

// TestWildcardRoleBindRefused: a role told to bind every interface is
// refused, as the agent's own listener is.
func TestWildcardRoleBindRefused(t *testing.T) {
	for _, bind := range []string{"0.0.0.0:0", "[::]:5000"} {
		c, stop := dialSession(t, Config{})
		raw := []byte("name: n\n")
		sum := sha256.Sum256(raw)
		if err := c.Send(&wire.Scenario{RunID: "r1", Name: "n", File: "n.yaml", Raw: raw, SHA256: sum[:], DurationNS: int64(time.Second)}); err != nil {
			t.Fatal(err)
		}
		if err := c.Send(&wire.Assign{RunID: "r1", Host: "h1", DataAddr: "127.0.0.1:0",
			Roles: []wire.RoleSpec{{ID: "sink", Role: "tcp-bulk", Bind: bind}}, Counters: wire.CounterConfig{Skip: true}}); err != nil {
			t.Fatal(err)
		}
		m, err := c.Recv(time.Minute)
		if e, ok := m.(*wire.ErrorMsg); err != nil || !ok || e.Code != "role" || !strings.Contains(e.Reason, "wildcard") {
			t.Errorf("bind %s: %v %v", bind, m, err)
		}
		stop()
	}
}
