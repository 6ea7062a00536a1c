package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/besim/besim/berun/agent"
	"github.com/besim/besim/berun/controller"
	"github.com/besim/besim/berun/plan"
	"github.com/besim/besim/berun/role"
	"github.com/besim/besim/report"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/fakeverbs"
)

// The verbs half of the end-to-end tests: cmd/berun's agents link
// libibverbs only with -tags rdma and this machine has no RDMA device, so
// a scenario whose roles run the ByteExpress core on verbs is replayed by
// agents in this process (the same agent, controller and role code as
// the processes), their devices in-memory NICs (verbs/fakeverbs) behind a
// ConnectX-like sysfs GID table.

var inprocToken = []byte("in-process-e2e-token-0123456789")

// useFakeNICs points the verbs roles at in-memory NICs for the test. Tests
// that call it must not run in parallel (the hooks are package state).
func useFakeNICs(t *testing.T) {
	t.Helper()
	// RetryTimeout 10 ms, not the default 100 us: a requester whose
	// responder is not yet ready to receive retries 7 times a tenth of it
	// apart, and on a loaded CI machine the peer's QP can take longer than
	// 100 us of wall clock to reach RTR (a ConnectX with the usual ack
	// timeout retries for far longer).
	fnet := fakeverbs.New(fakeverbs.Config{Latency: 5000, RetryTimeout: 10_000_000})
	start := time.Now()
	stop := fnet.RunClock(func() int64 { return time.Since(start).Nanoseconds() }, 10*time.Microsecond)
	oldOpen, oldDev, oldFS := role.OpenVerbs, role.DefaultDevice, role.SysfsRoot
	var mu sync.Mutex
	n := 0
	role.OpenVerbs = func(dev string, gid int) (verbs.Context, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return fnet.NewContext("nic" + strconv.Itoa(n)), nil
	}
	role.DefaultDevice = func() (string, error) { return "mlx5_0", nil }
	d := "class/infiniband/mlx5_0/ports/1/"
	role.SysfsRoot = fstest.MapFS{
		d + "gids/3": {Data: []byte("0000:0000:0000:0000:0000:ffff:7f00:0001\n")}, d + "gid_attrs/types/3": {Data: []byte("RoCE v2\n")},
	}
	t.Cleanup(func() {
		role.OpenVerbs, role.DefaultDevice, role.SysfsRoot = oldOpen, oldDev, oldFS
		stop()
	})
}

// runInProcess replays scenario scen (named name) on n in-process agents
// with the plan berun makes of it (measured interval dur), and returns
// the result file and its report in besim's format.
func runInProcess(t *testing.T, name string, scen []byte, n int, dur time.Duration) (*controller.ResultFile, *report.Result) {
	return runInProcessOn(t, name, scen, n, dur, false)
}

// runInProcessOn is runInProcess; with verbs, the workload roles run the
// core on verbs as `berun run --transport verbs` makes them.
func runInProcessOn(t *testing.T, name string, scen []byte, n int, dur time.Duration, verbs bool) (*controller.ResultFile, *report.Result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var y strings.Builder
	y.WriteString("hosts:\n")
	for i := range n {
		h := "h" + strconv.Itoa(i+1)
		a, err := agent.New(agent.Config{Listen: "127.0.0.1:0", Token: inprocToken, Name: h, IdleTimeout: 10 * time.Second,
			Logf: func(f string, args ...any) { t.Logf(h+": "+f, args...) }})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() { defer wg.Done(); a.Serve(ctx) }()
		fmt.Fprintf(&y, "  - {name: %s, control: %q, data: 127.0.0.1}\n", h, a.Addr().String())
	}
	hs, err := plan.ParseHosts("hosts.yaml", []byte(y.String()))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.FromScenario(name+".yaml", scen, hs, dur)
	if err != nil {
		t.Fatal(err)
	}
	if verbs {
		for i := range p.Roles {
			if r := p.Roles[i].Role; strings.HasPrefix(r, "ps-") || strings.HasPrefix(r, "incast-") || strings.HasPrefix(r, "failover-") || strings.HasPrefix(r, "pingpong-") {
				p.Roles[i].Params["transport"] = "verbs"
			}
		}
	}
	rf, err := controller.Run(context.Background(), controller.Config{Plan: p, Hosts: hs, Token: inprocToken,
		StartDelay: 300 * time.Millisecond, Logf: func(f string, args ...any) { t.Logf("ctl: "+f, args...) }})
	if err != nil {
		t.Fatal(err)
	}
	if rf.Status != "ok" {
		t.Fatalf("status %s, failures %+v\n%s", rf.Status, rf.Failures, controller.Summary(rf))
	}
	return rf, controller.Report(rf)
}
