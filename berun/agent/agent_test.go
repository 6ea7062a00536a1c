package agent

import (
	"context"
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
// dropped after the handshake timeout, and at most MaxPending are held.
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
	if !strings.Contains(log, "unauthenticated connections already pending") || !strings.Contains(log, "refused controller") {
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
