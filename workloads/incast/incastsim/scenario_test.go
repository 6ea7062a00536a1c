package incastsim

import (
	"bytes"
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/workloads/app"
	"github.com/besim/besim/workloads/internal/wltest"
)

func TestWorkloadDefaultsAgree(t *testing.T) {
	s, err := scenarios.Load("fig14-incast")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := FromScenario(s)
	if err != nil {
		t.Fatal(err)
	}
	leaves, hpl := cfg.Layout()
	if tp := s.Fabric.Topology; tp.Leaves != leaves || tp.HostsPerLeaf != hpl || hpl != app.DefaultHostsPerLeaf {
		t.Errorf("scenario topology %+v, workloads layout %d x %d (default %d)", tp, leaves, hpl, app.DefaultHostsPerLeaf)
	}
	if cfg.Cluster.BE.Cwnd != 0 || cfg.Cluster.BE.FragSize != 4096 || cfg.Cluster.NIC.SizesOnly {
		t.Errorf("BE %+v, NIC sizes-only %v", cfg.Cluster.BE, cfg.Cluster.NIC.SizesOnly)
	}
}

// TestWorkloadRun runs fig14-incast (64 servers, no window: PFC fires) and
// with a 4 KiB window (no PFC), twice each for determinism.
func TestWorkloadRun(t *testing.T) {
	run := func(window scenarios.Window) (*report.Result, []byte) {
		s, err := scenarios.Load("fig14-incast")
		if err != nil {
			t.Fatal(err)
		}
		s.Workload.Window = window
		r := wltest.Run(t, s)
		if r.Timing == nil || r.Timing.Events == 0 {
			t.Error("no timing")
		}
		return r, wltest.JSON(t, r)
	}
	none, j1 := run(scenarios.Window{None: true})
	_, j2 := run(scenarios.Window{None: true})
	if !bytes.Equal(j1, j2) {
		t.Error("fig14-incast: two runs differ")
	}
	win, _ := run(scenarios.Window{Size: 4 * scenarios.KiB})
	m := func(r *report.Result, name string) float64 {
		v, ok := r.Metric(name)
		if !ok {
			t.Fatalf("no metric %s", name)
		}
		return v.Value
	}
	if m(none, "pfc/frames_tx") == 0 || m(win, "pfc/frames_tx") != 0 {
		t.Errorf("pfc frames: none %v, 4KiB %v", m(none, "pfc/frames_tx"), m(win, "pfc/frames_tx"))
	}
	if m(win, "victim/goodput") < 20 || m(none, "victim/goodput") > 0.5*m(win, "victim/goodput") {
		t.Errorf("victim goodput: none %.2f, 4KiB %.2f Gbps", m(none, "victim/goodput"), m(win, "victim/goodput"))
	}
	if m(win, "pull/count") == 0 || m(win, "pull/p99") < m(win, "pull/p50") {
		t.Errorf("pulls %v p50 %v p99 %v", m(win, "pull/count"), m(win, "pull/p50"), m(win, "pull/p99"))
	}
	if _, ok := win.Table("incast"); !ok {
		t.Error("no incast table")
	}
}
