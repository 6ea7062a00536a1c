package controller

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/besim/besim/berun/agent"
	"github.com/besim/besim/berun/plan"
)

var token = []byte("in-process-test-token-0123456789")

// proxy forwards one control connection and can cut or freeze it.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	conns  []net.Conn
	frozen chan struct{} // closed = forwarding
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, frozen: make(chan struct{})}
	close(p.frozen)
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go p.pump(c, u)
			go p.pump(u, c)
		}
	}()
	return p
}

func (p *proxy) pump(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			gate := p.frozen
			p.mu.Unlock()
			<-gate
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err == io.EOF {
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
			}
			return
		}
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

// freeze stops forwarding without closing: a hung host.
func (p *proxy) freeze() {
	p.mu.Lock()
	p.frozen = make(chan struct{})
	p.mu.Unlock()
}

type cluster struct {
	hosts  *plan.Hosts
	agents map[string]*agent.Agent
	prox   map[string]*proxy
}

func startCluster(t *testing.T, names ...string) *cluster {
	t.Helper()
	c := &cluster{agents: map[string]*agent.Agent{}, prox: map[string]*proxy{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var y strings.Builder
	y.WriteString("hosts:\n")
	for _, n := range names {
		a, err := agent.New(agent.Config{Listen: "127.0.0.1:0", Token: token, Name: n, IdleTimeout: 3 * time.Second, Logf: func(f string, args ...any) { t.Logf(n+": "+f, args...) }})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); a.Serve(ctx) }()
		p := newProxy(t, a.Addr().String())
		c.agents[n], c.prox[n] = a, p
		fmt.Fprintf(&y, "  - {name: %s, control: %q, data: 127.0.0.1}\n", n, p.ln.Addr().String())
	}
	hs, err := plan.ParseHosts("hosts.yaml", []byte(y.String()))
	if err != nil {
		t.Fatal(err)
	}
	c.hosts = hs
	return c
}

func runPlan(t *testing.T, c *cluster, planYAML string, during func()) *ResultFile {
	t.Helper()
	p, err := plan.ParsePlan("plan.yaml", []byte(planYAML))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var once sync.Once
	cfg := Config{Plan: p, Hosts: c.hosts, Token: token, Liveness: time.Second, StartDelay: 200 * time.Millisecond,
		Logf: func(f string, args ...any) {
			t.Logf("ctl: "+f, args...)
			if strings.HasPrefix(f, "start at") {
				once.Do(func() { close(started) })
			}
		}}
	if during != nil {
		go func() {
			select {
			case <-started:
				during()
			case <-time.After(20 * time.Second):
			}
		}()
	}
	rf, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rf
}

const pairPlan = `name: inproc
duration: 1s
grace: 3s
roles:
  - {id: sink, role: tcp-bulk, host: b, params: {mode: sink}}
  - {id: send, role: tcp-bulk, host: a, peers: [sink], params: {mode: send, message_size: 64KiB}}
  - {id: srv, role: tcp-echo, host: c, params: {mode: server}}
  - {id: cli, role: tcp-echo, host: a, peers: [srv], params: {mode: client}}
`

func TestRunInProcess(t *testing.T) {
	c := startCluster(t, "a", "b", "c")
	rf := runPlan(t, c, pairPlan, nil)
	if rf.Status != "ok" {
		t.Fatalf("status %s failures %+v\n%s", rf.Status, rf.Failures, Summary(rf))
	}
	if rf.Role("send").Metrics["messages"] != rf.Role("sink").Metrics["messages"] || rf.Role("cli").Metrics["lost"] != 0 {
		t.Fatalf("%s", Summary(rf))
	}
	path, err := rf.Write(t.TempDir())
	if err != nil || !strings.HasSuffix(path, ".json") {
		t.Fatalf("write: %v %v", path, err)
	}
}

// TestConnectionCut: the control connection to b drops mid-run; b is
// reported failed in the run phase and the others' results are kept.
func TestConnectionCut(t *testing.T) {
	c := startCluster(t, "a", "b", "c")
	t0 := time.Now()
	rf := runPlan(t, c, pairPlan, func() { time.Sleep(500 * time.Millisecond); c.prox["b"].cut() })
	if len(rf.Failures) != 1 || rf.Failures[0].Host != "b" || rf.Failures[0].Phase != "run" || rf.Status != "partial" {
		t.Fatalf("failures %+v status %s", rf.Failures, rf.Status)
	}
	if rf.Role("cli").Status != "ok" || rf.Host("c").Status != "ok" {
		t.Fatalf("others lost:\n%s", Summary(rf))
	}
	if el := time.Since(t0); el > 10*time.Second {
		t.Fatalf("took %v", el)
	}
}

// TestHungHost: b stops answering (frozen, not closed): it is failed after
// the liveness timeout, with a reason that says so.
func TestHungHost(t *testing.T) {
	c := startCluster(t, "a", "b", "c")
	t0 := time.Now()
	rf := runPlan(t, c, pairPlan, func() { time.Sleep(300 * time.Millisecond); c.prox["b"].freeze() })
	if len(rf.Failures) != 1 || rf.Failures[0].Host != "b" || !strings.Contains(rf.Failures[0].Reason, "no answer") {
		t.Fatalf("failures %+v\n%s", rf.Failures, Summary(rf))
	}
	if rf.Host("c").Status != "ok" || rf.Role("cli").Status != "ok" {
		t.Fatalf("others lost:\n%s", Summary(rf))
	}
	if el := time.Since(t0); el > 15*time.Second {
		t.Fatalf("took %v", el)
	}
}

// TestAgentBusy: a second controller is refused while a session runs.
func TestAgentBusy(t *testing.T) {
	c := startCluster(t, "a", "b", "c")
	var second *ResultFile
	rf := runPlan(t, c, pairPlan, func() {
		p, _ := plan.ParsePlan("p2.yaml", []byte("name: second\nduration: 1s\nroles: [{id: s2, role: tcp-echo, host: a, params: {mode: server}}]\n"))
		second, _ = Run(context.Background(), Config{Plan: p, Hosts: c.hosts, Token: token})
	})
	if rf.Status != "ok" {
		t.Fatalf("first run: %s", Summary(rf))
	}
	if second == nil || second.Status != "failed" || !strings.Contains(second.Failures[0].Reason, "busy") {
		t.Fatalf("second controller: %+v", second)
	}
}

func TestUnreachableHost(t *testing.T) {
	c := startCluster(t, "a", "b", "c")
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	hs, _ := plan.ParseHosts("h.yaml", []byte(fmt.Sprintf("hosts:\n  - {name: a, control: %q, data: 127.0.0.1}\n  - {name: b, control: %q, data: 127.0.0.1}\n  - {name: c, control: %q, data: 127.0.0.1}\n",
		c.prox["a"].ln.Addr().String(), dead, c.prox["c"].ln.Addr().String())))
	c.hosts = hs
	rf := runPlan(t, c, pairPlan, nil)
	if rf.Status != "failed" || len(rf.Failures) != 1 || rf.Failures[0].Phase != "connect" || rf.Host("a").Status != "aborted" {
		t.Fatalf("%+v\n%s", rf.Failures, Summary(rf))
	}
}
