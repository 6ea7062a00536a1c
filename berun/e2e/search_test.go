package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/besim/besim/berun/agent"
	"github.com/besim/besim/berun/controller"
	"github.com/besim/besim/berun/counters"
	"github.com/besim/besim/berun/plan"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sweep"
)

// TestHardwareSearch runs the Table 4 search on hardware end to end —
// `--search workload.servers=2..10 --until 'pfc/frames_tx>0'` on
// fig14-incast, each probe a run through berun's agents and controller
// over loopback TCP — against a counter source the test controls: each
// agent's ethtool -S (counters.Config.Exec) reports tx_prio3_pause
// frames during a run with 6 or more servers and none below. The search
// stops at the right point (largest 5, first true 6, in 2 + 3 runs) and
// writes besim's search table: the same name, title, columns and
// crossing as besim's search of the same base gives with the same
// threshold.
func TestHardwareSearch(t *testing.T) {
	data, err := scenarios.Builtin("fig14-incast")
	if err != nil {
		t.Fatal(err)
	}
	const threshold = 6
	var mu sync.Mutex
	cur, pauses := 0, uint64(0)
	fakeEthtool := func(ctx context.Context, name string, args ...string) ([]byte, error) {
		if len(args) != 2 || args[0] != "-S" {
			return nil, fmt.Errorf("fake ethtool: unexpected arguments %v", args)
		}
		mu.Lock()
		defer mu.Unlock()
		if cur >= threshold {
			pauses += 7 // a run's worth: the agent differences its reads before and after
		}
		return []byte(fmt.Sprintf("NIC statistics:\n     tx_prio3_pause: %d\n     rx_prio3_pause: 0\n     tx_prio3_pause_duration: 0\n", pauses)), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	var y strings.Builder
	y.WriteString("hosts:\n")
	for i := range 3 {
		h := "h" + strconv.Itoa(i+1)
		a, err := agent.New(agent.Config{Listen: "127.0.0.1:0", Token: inprocToken, Name: h, IdleTimeout: 10 * time.Second,
			Logf:     func(string, ...any) {},
			Counters: counters.Config{Root: t.TempDir(), Exec: fakeEthtool, LookPath: func(string) (string, error) { return "/fake/ethtool", nil }}})
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
	base, err := sweep.NewBase("fig14-incast.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := sweep.ParseSearch("workload.servers=2..10")
	if err != nil {
		t.Fatal(err)
	}
	if s.Until, err = sweep.ParsePredicate("pfc/frames_tx>0"); err != nil {
		t.Fatal(err)
	}
	var probed []int
	hw, err := controller.Search(base, s, func(sc *scenarios.Scenario) (*controller.ResultFile, error) {
		mu.Lock()
		cur = sc.Workload.Servers
		mu.Unlock()
		probed = append(probed, sc.Workload.Servers)
		yml, err := sc.YAML()
		if err != nil {
			return nil, err
		}
		p, err := plan.FromScenario("fig14-incast.yaml", yml, hs, 300*time.Millisecond)
		if err != nil {
			return nil, err
		}
		return controller.Run(context.Background(), controller.Config{Plan: p, Hosts: hs, Token: inprocToken, StartDelay: 300 * time.Millisecond})
	})
	if err != nil {
		t.Fatalf("search: %v (probed %v)", err, probed)
	}
	t.Logf("probed servers %v", probed)
	got, ok := hw.Table("search")
	if !ok || len(got.Rows) != 1 {
		t.Fatalf("no search table with one row: %+v", hw.Tables)
	}
	var b strings.Builder
	got.WriteText(&b)
	t.Logf("\n%s", b.String())
	row := got.Rows[0].Values
	if row[0] != threshold-1 || row[1] != threshold || row[2] != 0 || !(row[3] > 0) || row[4] != 5 || len(probed) != 5 {
		t.Errorf("row %v (largest, first true, at largest, at first true, runs), probed %v; want largest %d, first true %d, 5 runs",
			row, probed, threshold-1, threshold)
	}
	// besim's search of the same base, its simulator answering with the
	// same threshold: the same table but for the values at the ends.
	sim, _, err := sweep.RunSearch(base, s, nil, sweep.Options{Simulate: func(sc *scenarios.Scenario) (*report.Result, report.Timing, error) {
		r := &report.Result{Tool: "besim", Scenario: sc.Name}
		r.Add("pfc/frames_tx", float64(max(0, sc.Workload.Servers-threshold+1)), "frames")
		return r, report.Timing{}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sim.Table("search")
	if got.Title != want.Title || got.KeyName != want.KeyName || fmt.Sprint(got.Columns) != fmt.Sprint(want.Columns) ||
		got.Rows[0].Key != want.Rows[0].Key || row[0] != want.Rows[0].Values[0] || row[1] != want.Rows[0].Values[1] || row[4] != want.Rows[0].Values[4] {
		t.Errorf("berun's search table\n%+v\nis not besim's\n%+v", got, want)
	}
}
