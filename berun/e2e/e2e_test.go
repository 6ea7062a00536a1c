package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/besim/besim/berun/controller"
	"github.com/besim/besim/berun/counters"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// berunBin builds cmd/berun once per test binary.
func berunBin(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "berun-e2e-bin-")
		if buildErr != nil {
			return
		}
		goCmd := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(goCmd); err != nil {
			goCmd = "go"
		}
		binPath = filepath.Join(binDir, "berun")
		cmd := exec.Command(goCmd, "build", "-o", binPath, "github.com/besim/besim/cmd/berun")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			buildErr = fmt.Errorf("go build cmd/berun: %v\n%s", err, out.String())
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// syncBuf is a goroutine-safe log buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type agentProc struct {
	name string
	cmd  *exec.Cmd
	addr string
	log  *syncBuf
}

func tokenFile(t *testing.T, dir string) string {
	b := make([]byte, 24)
	rand.Read(b)
	p := filepath.Join(dir, "berun.token")
	if err := os.WriteFile(p, []byte(hex.EncodeToString(b)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startAgent starts `berun agent` (behind prefix, e.g. ip netns exec NS) and
// waits for its "listening ADDR" line.
func startAgent(t *testing.T, name, listen, tok string, prefix ...string) *agentProc {
	t.Helper()
	args := append(append([]string{}, prefix...), berunBin(t), "agent", "--listen", listen, "--token-file", tok, "--name", name)
	cmd := exec.Command(args[0], args[1:]...)
	a := &agentProc{name: name, cmd: cmd, log: &syncBuf{}}
	cmd.Stderr = a.log
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("agent %s log:\n%s", name, a.log.String())
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case line <- sc.Text():
			default:
			}
		}
	}()
	select {
	case l := <-line:
		a.addr = strings.TrimPrefix(l, "listening ")
	case <-time.After(2 * time.Minute): // a hang guard, not a speed bound
		t.Fatalf("agent %s did not start: %s", name, a.log.String())
	}
	return a
}

type ctlResult struct {
	code    int
	stdout  string
	stderr  *syncBuf
	rf      *controller.ResultFile
	elapsed time.Duration
}

// startController starts `berun run` and returns a function waiting for it.
func startController(t *testing.T, dir, planYAML, hostsYAML, tok string, prefix ...string) (wait func() ctlResult, stderr *syncBuf) {
	t.Helper()
	return startControllerArgs(t, dir, planYAML, hostsYAML, tok, nil, prefix...)
}

// startControllerArgs is startController with extra `berun run` flags.
func startControllerArgs(t *testing.T, dir, planYAML, hostsYAML, tok string, extra []string, prefix ...string) (wait func() ctlResult, stderr *syncBuf) {
	t.Helper()
	pf, hf := filepath.Join(dir, "plan.yaml"), filepath.Join(dir, "hosts.yaml")
	os.WriteFile(pf, []byte(planYAML), 0o644)
	os.WriteFile(hf, []byte(hostsYAML), 0o644)
	// A guard against a hang, not a speed bound: generous for a busy machine.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	args := append(append([]string{}, prefix...), berunBin(t), "run", pf, "--hosts", hf, "--out", dir, "--token-file", tok)
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var out bytes.Buffer
	errb := &syncBuf{}
	cmd.Stdout, cmd.Stderr = &out, errb
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func() ctlResult {
		defer cancel()
		err := cmd.Wait()
		r := ctlResult{stdout: out.String(), stderr: errb, elapsed: time.Since(t0)}
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("controller: %v", err)
		}
		if ctx.Err() != nil {
			t.Fatalf("controller did not return within 5 minutes (hung?):\n%s", errb.String())
		}
		m := regexp.MustCompile(`(?m)^result: (.+)$`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("controller exit %d printed no result path:\n%s\n%s", r.code, r.stdout, errb.String())
		}
		b, err := os.ReadFile(m[1])
		if err != nil {
			t.Fatal(err)
		}
		r.rf = &controller.ResultFile{}
		if err := json.Unmarshal(b, r.rf); err != nil {
			t.Fatalf("result file: %v", err)
		}
		return r
	}, errb
}

func hostsFile(agents ...*agentProc) string {
	var b strings.Builder
	b.WriteString("hosts:\n")
	for _, a := range agents {
		ip := a.addr[:strings.LastIndex(a.addr, ":")]
		fmt.Fprintf(&b, "  - {name: %s, control: %q, data: %s}\n", a.name, a.addr, ip)
	}
	return b.String()
}

func metric(t *testing.T, rf *controller.ResultFile, id, name string) float64 {
	t.Helper()
	r := rf.Role(id)
	if r == nil {
		t.Fatalf("no result for role %s", id)
	}
	v, ok := r.Metrics[name]
	if !ok {
		t.Fatalf("role %s has no metric %s (has %v)", id, name, r.Metrics)
	}
	return v
}

const threeHostPlan = `name: e2e-loopback
duration: 1500ms
grace: 5s
roles:
  - {id: sink, role: tcp-bulk, host: h2, params: {mode: sink}}
  - {id: send, role: tcp-bulk, host: h1, peers: [sink], params: {mode: send, message_size: 1MiB}}
  - {id: srv,  role: tcp-echo, host: h3, params: {mode: server}}
  - {id: cli,  role: tcp-echo, host: h1, peers: [srv], params: {mode: client, outstanding: 4}}
  - {id: cli2, role: tcp-echo, host: h2, peers: [srv], params: {mode: client, message_size: 1KiB, response_size: 8KiB}}
`

func TestThreeAgents(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := tokenFile(t, dir)
	var agents []*agentProc
	for _, n := range []string{"h1", "h2", "h3"} {
		agents = append(agents, startAgent(t, n, "127.0.0.1:0", tok))
	}
	wait, _ := startController(t, dir, threeHostPlan, hostsFile(agents...), tok)
	r := wait()
	rf := r.rf
	if r.code != 0 || rf.Status != "ok" || len(rf.Failures) != 0 {
		t.Fatalf("exit %d, status %s, failures %v\n%s\n%s", r.code, rf.Status, rf.Failures, r.stdout, r.stderr.String())
	}
	t.Logf("controller took %v\n%s", r.elapsed, r.stdout)

	sent, recv := metric(t, rf, "send", "messages"), metric(t, rf, "sink", "messages")
	if sent < 1 || sent != recv || metric(t, rf, "send", "acked_messages") != sent || metric(t, rf, "sink", "bytes") != sent*(1<<20) {
		t.Errorf("bulk: sent %v, sink got %v", sent, recv)
	}
	if metric(t, rf, "sink", "throughput_gbps") <= 0 || metric(t, rf, "send", "throughput_gbps") <= 0 {
		t.Error("bulk throughput missing")
	}
	for _, cli := range []string{"cli", "cli2"} {
		req, resp := metric(t, rf, cli, "requests"), metric(t, rf, cli, "responses")
		if req < 1 || req != resp || metric(t, rf, cli, "lost") != 0 {
			t.Errorf("%s: %v requests, %v responses", cli, req, resp)
		}
		p50, p99 := metric(t, rf, cli, "latency_us_p50"), metric(t, rf, cli, "latency_us_p99")
		if p50 <= 0 || p99 < p50 {
			t.Errorf("%s latency p50 %v p99 %v", cli, p50, p99)
		}
	}
	if srv := metric(t, rf, "srv", "requests"); srv != metric(t, rf, "cli", "requests")+metric(t, rf, "cli2", "requests") {
		t.Errorf("server served %v requests", srv)
	}
	for _, h := range rf.Hosts {
		if h.Clock == nil || h.Clock.Samples < 3 || h.Agent == nil || h.Agent.Name != h.Name {
			t.Errorf("host %s: clock %+v agent %+v", h.Name, h.Clock, h.Agent)
		}
		// How close to the start instant each role started depends on
		// how busy the machine is: logged, not asserted.
		for _, ro := range h.Roles {
			t.Logf("role %s started %v ms from the start instant", ro.ID, ro.StartSkewMS)
		}
		if h.Counters == nil {
			t.Fatalf("host %s: no counters section", h.Name)
		}
		var rep counters.Report
		if err := json.Unmarshal(*h.Counters, &rep); err != nil {
			t.Fatal(err)
		}
		// This machine has no RDMA NIC: the counters must say so, not be zero.
		if _, err := os.Stat("/sys/class/infiniband"); err != nil {
			if rep.Absent["infiniband"] == "" {
				t.Errorf("host %s: no absent reason for infiniband: %+v", h.Name, rep)
			}
			for k := range rep.Delta {
				if strings.HasPrefix(k, "infiniband/") {
					t.Errorf("host %s: infiniband counter %s reported without a device", h.Name, k)
				}
			}
		}
		if h.Name == "h1" {
			t.Logf("h1 counters absent: %v", rep.Absent)
		}
	}
}

const killPlan = `name: e2e-kill
duration: 3s
grace: 5s
roles:
  - {id: sink, role: tcp-bulk, host: h2, params: {mode: sink}}
  - {id: send, role: tcp-bulk, host: h1, peers: [sink], params: {mode: send}}
  - {id: srv,  role: tcp-echo, host: h3, params: {mode: server}}
  - {id: cli,  role: tcp-echo, host: h1, peers: [srv], params: {mode: client}}
`

// TestAgentKilledMidRun kills h2 during the run: the controller must report
// h2 as failed, keep h1's and h3's results, and return in bounded time.
func TestAgentKilledMidRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := tokenFile(t, dir)
	h1 := startAgent(t, "h1", "127.0.0.1:0", tok)
	h2 := startAgent(t, "h2", "127.0.0.1:0", tok)
	h3 := startAgent(t, "h3", "127.0.0.1:0", tok)
	wait, ctlLog := startController(t, dir, killPlan, hostsFile(h1, h2, h3), tok)

	// Kill h2 once it is running.
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(ctlLog.String(), "start at") {
		if time.Now().After(deadline) {
			t.Fatalf("run never started:\n%s", ctlLog.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // start lead (1 s) + 0.5 s into the run
	killed := time.Now()
	h2.cmd.Process.Signal(syscall.SIGKILL)

	r := wait()
	rf := r.rf
	// That it returned at all (startController's guard) and why h2
	// failed ("lost": the liveness check, below) are the checks; how
	// fast depends on the machine and is only logged.
	t.Logf("controller returned %v after the kill, exit %d\n%s", time.Since(killed), r.code, r.stdout)
	if r.code != 3 || rf.Status != "partial" {
		t.Errorf("exit %d status %s, want 3 partial", r.code, rf.Status)
	}
	if len(rf.Failures) != 1 || rf.Failures[0].Host != "h2" || rf.Failures[0].Phase != "run" {
		t.Fatalf("failures %+v, want h2 in the run phase", rf.Failures)
	}
	t.Logf("h2 failure: %s", rf.Failures[0].Reason)
	if !strings.Contains(rf.Failures[0].Reason, "lost") {
		t.Errorf("failure reason %q", rf.Failures[0].Reason)
	}
	if h := rf.Host("h2"); h.Status != "failed" || h.Roles[0].Status != "missing" {
		t.Errorf("h2 %+v", h)
	}
	// The others' results are kept: the echo pair is unaffected, the sender
	// reports its partial counts and the error.
	if st := rf.Role("cli").Status; st != "ok" || metric(t, rf, "cli", "lost") != 0 || metric(t, rf, "srv", "requests") != metric(t, rf, "cli", "requests") {
		t.Errorf("echo pair affected: %+v / %+v", rf.Role("cli"), rf.Role("srv"))
	}
	snd := rf.Role("send")
	if snd.Status != "error" || snd.Error == "" || metric(t, rf, "send", "messages") < 1 {
		t.Errorf("sender to the killed sink: %+v", snd)
	}
	if rf.Host("h3").Status != "ok" || rf.Host("h1").Status != "error" {
		t.Errorf("h1 %s h3 %s", rf.Host("h1").Status, rf.Host("h3").Status)
	}
}

// TestWrongToken: an agent holding another token is reported as failed at
// connect, the run is aborted, and the agent logs why it refused.
func TestWrongToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := tokenFile(t, dir)
	other := filepath.Join(t.TempDir(), "other.token")
	os.WriteFile(other, []byte("a-completely-different-token\n"), 0o600)
	h1 := startAgent(t, "h1", "127.0.0.1:0", tok)
	h2 := startAgent(t, "h2", "127.0.0.1:0", other)
	plan := "name: e2e-token\nduration: 1s\nroles:\n  - {id: sink, role: tcp-bulk, host: h2, params: {mode: sink}}\n  - {id: send, role: tcp-bulk, host: h1, peers: [sink], params: {mode: send}}\n"
	wait, _ := startController(t, dir, plan, hostsFile(h1, h2), tok)
	r := wait()
	if r.code != 1 || r.rf.Status != "failed" || len(r.rf.Failures) != 1 || r.rf.Failures[0].Host != "h2" || r.rf.Failures[0].Phase != "connect" {
		t.Fatalf("exit %d status %s failures %+v", r.code, r.rf.Status, r.rf.Failures)
	}
	if !strings.Contains(r.rf.Failures[0].Reason, "authentication failed") {
		t.Errorf("reason %q", r.rf.Failures[0].Reason)
	}
	if h := r.rf.Host("h1"); h.Status != "aborted" {
		t.Errorf("h1 %+v", h)
	}
	time.Sleep(100 * time.Millisecond)
	if !strings.Contains(h2.log.String(), "refused controller") {
		t.Errorf("agent h2 did not log the refusal:\n%s", h2.log.String())
	}
}

// TestMalformedFrames: garbage on the control port is refused with a logged
// reason and the agent keeps serving.
func TestMalformedFrames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := tokenFile(t, dir)
	h1 := startAgent(t, "h1", "127.0.0.1:0", tok)
	for _, junk := range [][]byte{
		[]byte("GET / HTTP/1.1\r\n\r\n"),
		{'B', 'R', 1, 1, 0xff, 0xff, 0xff, 0xff},
		{'B', 'R', 1, 10, 0, 0, 0, 10},
	} {
		c, err := dialTCP(h1.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Write(junk)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		io.ReadAll(c) // the agent answers with an error frame and closes
		c.Close()
	}
	time.Sleep(100 * time.Millisecond)
	log := h1.log.String()
	for _, w := range []string{"bad magic", "larger than allowed", "not allowed here"} {
		if !strings.Contains(log, w) {
			t.Errorf("agent log lacks %q:\n%s", w, log)
		}
	}
	// Still serving: a real run works.
	h2 := startAgent(t, "h2", "127.0.0.1:0", tok)
	plan := "name: e2e-after-junk\nduration: 300ms\nroles:\n  - {id: srv, role: tcp-echo, host: h2, params: {mode: server}}\n  - {id: cli, role: tcp-echo, host: h1, peers: [srv], params: {mode: client}}\n"
	wait, _ := startController(t, dir, plan, hostsFile(h1, h2), tok)
	if r := wait(); r.code != 0 {
		t.Fatalf("run after junk: exit %d\n%s", r.code, r.stdout)
	}
}
