package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Shaping of the namespace test.
const (
	shapedRateMbit = 100 // tbf rate on each veth end
	shapedDelayMS  = 5   // netem delay on each veth end, when netem exists
)

func sh(t *testing.T, args ...string) error {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// TestNetnsShaped runs an agent in each of two network namespaces joined by
// a veth pair shaped with tbf (rate) and, where the kernel has it, netem
// (delay), and checks that berun measures what the shaping imposes: echo RTT
// at least the configured round-trip delay, bulk throughput at most the
// shaped rate. It needs root and `ip netns`; otherwise it skips, saying why.
// The namespaces and their addresses (10.213.N.1 and .2) are the test's own
// and are always deleted.
func TestNetnsShaped(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces (run the tests as root to exercise shaped links)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("the ip command (iproute2) is not installed")
	}
	if _, err := exec.LookPath("tc"); err != nil {
		t.Skip("the tc command (iproute2) is not installed")
	}
	t.Parallel()
	b := make([]byte, 3)
	rand.Read(b)
	id := hex.EncodeToString(b)
	nsA, nsB := "berun-e2e-"+id+"-a", "berun-e2e-"+id+"-b"
	vA, vB := "bea"+id, "beb"+id // interface names stay under 15 bytes
	subnet := fmt.Sprintf("10.213.%d", 1+int(b[0])%254)
	ipA, ipB := subnet+".1", subnet+".2"

	if err := sh(t, "ip", "netns", "add", nsA); err != nil {
		t.Skipf("ip netns does not work here: %v", err)
	}
	t.Cleanup(func() { sh(t, "ip", "netns", "del", nsA) })
	if err := sh(t, "ip", "netns", "add", nsB); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sh(t, "ip", "netns", "del", nsB) })
	exA, exB := []string{"ip", "netns", "exec", nsA}, []string{"ip", "netns", "exec", nsB}
	steps := [][]string{
		{"ip", "link", "add", vA, "netns", nsA, "type", "veth", "peer", "name", vB, "netns", nsB},
		append(exA, "ip", "link", "set", "lo", "up"),
		append(exB, "ip", "link", "set", "lo", "up"),
		append(exA, "ip", "addr", "add", ipA+"/24", "dev", vA),
		append(exB, "ip", "addr", "add", ipB+"/24", "dev", vB),
		append(exA, "ip", "link", "set", vA, "up"),
		append(exB, "ip", "link", "set", vB, "up"),
	}
	for _, s := range steps {
		if err := sh(t, s...); err != nil {
			t.Fatalf("setting up the namespaces: %v", err)
		}
	}
	// netem (delay) at the root with tbf (rate) below it; without netem,
	// tbf alone and no delay check.
	delay := true
	for _, x := range []struct {
		ex  []string
		dev string
	}{{exA, vA}, {exB, vB}} {
		netem := append(append([]string{}, x.ex...), "tc", "qdisc", "add", "dev", x.dev, "root", "handle", "1:", "netem", "delay", fmt.Sprintf("%dms", shapedDelayMS))
		tbfParent := []string{"parent", "1:1", "handle", "10:"}
		if delay {
			if err := sh(t, netem...); err != nil {
				t.Logf("netem qdisc not available in this kernel (%v): delay not shaped, RTT check skipped; rate still shaped with tbf", err)
				delay = false
			}
		}
		if !delay {
			tbfParent = []string{"root"}
		}
		tbf := append(append(append(append([]string{}, x.ex...), "tc", "qdisc", "add", "dev", x.dev), tbfParent...),
			"tbf", "rate", fmt.Sprintf("%dmbit", shapedRateMbit), "burst", "32kb", "latency", "100ms")
		if err := sh(t, tbf...); err != nil {
			t.Skipf("tc tbf does not work here: %v", err)
		}
	}

	dir := t.TempDir()
	tok := tokenFile(t, dir)
	a := startAgent(t, "ns-a", ipA+":0", tok, exA...)
	bAgent := startAgent(t, "ns-b", ipB+":0", tok, exB...)
	plan := `name: e2e-netns
duration: 2s
roles:
  - {id: sink, role: tcp-bulk, host: ns-b, params: {mode: sink}}
  - {id: send, role: tcp-bulk, host: ns-a, peers: [sink], params: {mode: send, message_size: 256KiB}}
  - {id: srv,  role: tcp-echo, host: ns-b, params: {mode: server}}
  - {id: cli,  role: tcp-echo, host: ns-a, peers: [srv], params: {mode: client}}
`
	// The controller runs in namespace A: it reaches both agents, and
	// nothing outside the two namespaces is involved.
	wait, _ := startController(t, dir, plan, hostsFile(a, bAgent), tok, exA...)
	r := wait()
	rf := r.rf
	t.Logf("%s", r.stdout)
	if r.code != 0 || rf.Status != "ok" {
		t.Fatalf("exit %d status %s failures %+v\n%s", r.code, rf.Status, rf.Failures, r.stderr.String())
	}
	rate := float64(shapedRateMbit) / 1000 // Gbps
	for _, id := range []string{"sink", "send"} {
		g := metric(t, rf, id, "throughput_gbps")
		t.Logf("%s throughput %.4f Gbps, shaped at %.3f Gbps", id, g, rate)
		if g > rate*1.05 {
			t.Errorf("%s measured %.4f Gbps over a link shaped at %.3f Gbps", id, g, rate)
		}
		if g < rate*0.3 {
			t.Errorf("%s measured only %.4f Gbps on a %.3f Gbps link", id, g, rate)
		}
	}
	minRTT := metric(t, rf, "cli", "latency_us_min")
	t.Logf("echo RTT min %.0f us, p50 %.0f us", minRTT, metric(t, rf, "cli", "latency_us_p50"))
	if delay {
		want := float64(2*shapedDelayMS) * 1000
		if minRTT < want {
			t.Errorf("echo RTT %.0f us below the configured round trip %v us", minRTT, want)
		}
	}
	if metric(t, rf, "cli", "lost") != 0 || math.IsNaN(minRTT) {
		t.Errorf("echo lost requests")
	}
}
