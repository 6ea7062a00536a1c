package fabric

import (
	"testing"

	"github.com/besim/besim/sim"
)

// Live agrees with the Report's totals at every instant of a run that
// pauses (lossless incast) and drops and marks (lossy incast), never
// falls, and allocates nothing.
func TestLiveMatchesReport(t *testing.T) {
	n := build(t, func(c *Config) { c.Topology = Topology{Kind: Star, Hosts: 17} })
	for i := 0; i < 8; i++ {
		addFlow(t, n, Flow{Src: NodeID(i), Dst: 16, Prio: lossless, Size: 2_000_000})
		addFlow(t, n, Flow{Src: NodeID(8 + i), Dst: 16, Prio: lossy, Size: 2_000_000})
	}
	var prev Live
	for at := 50 * sim.Microsecond; at <= 8*sim.Millisecond; at += 50 * sim.Microsecond {
		n.Run(at)
		l := checkLive(t, n)
		if l.PFCFramesTx < prev.PFCFramesTx || l.XOFFEvents < prev.XOFFEvents || l.Drops < prev.Drops ||
			l.ECNMarks < prev.ECNMarks || l.StormTrips < prev.StormTrips || l.WatchdogDrops < prev.WatchdogDrops {
			t.Fatalf("at %v: a counter fell: %+v after %+v", at, l, prev)
		}
		prev = l
	}
	if prev.PFCFramesTx == 0 || prev.XOFFEvents == 0 || prev.Drops == 0 || prev.ECNMarks == 0 {
		t.Fatalf("the run should have paused, dropped and marked: %+v", prev)
	}
	if a := testing.AllocsPerRun(10, func() { _ = n.Live() }); a != 0 {
		t.Fatalf("Live allocates %v times", a)
	}
}

// checkLive fails t unless the running totals Live reads equal the sums
// the Report makes over every port and priority now; it returns them.
func checkLive(t *testing.T, n *Network) Live {
	t.Helper()
	l := n.Live()
	tt := n.Report().Totals
	if want := tt.Live(); l != want {
		t.Fatalf("at %v: Live %+v, Report's totals %+v", n.K.Now(), l, want)
	}
	return l
}
