package flows

import (
	"math/rand/v2"
	"testing"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/pfc"
	"github.com/besim/besim/sim"
)

// queuesAfter skips queues by their high-water mark; it must give what
// folding every queue gives. The first case is a spike (a high mark, a
// low mean) before a queue that stays at a lower depth: skipping by the
// largest depth so far instead of the largest mean would miss its mean.
func TestQueuesAfterMatchesEveryQueue(t *testing.T) {
	const dt = 10 * sim.Microsecond
	queue := func(depths ...int64) fabric.PrioReport {
		c := pfc.NewRecorder(64, 0, dt)
		var hw int64
		for _, d := range depths {
			c.AddN(1, d)
			hw = max(hw, d)
		}
		return fabric.PrioReport{PrioCounters: fabric.PrioCounters{MaxQueue: hw}, Depth: c}
	}
	report := func(qs ...fabric.PrioReport) *fabric.Report {
		return &fabric.Report{Switches: []fabric.SwitchReport{{Ports: []fabric.PortReport{{Prios: qs}}}}}
	}
	all := func(rep *fabric.Report, from sim.Time) (qmax int64, qmean float64) {
		for _, q := range rep.Switches[0].Ports[0].Prios {
			if n, hi, s := q.Depth.Compact().Fold(from); n > 0 {
				qmax, qmean = max(qmax, hi), max(qmean, s/float64(n))
			}
		}
		return qmax, qmean
	}
	spike := report(queue(0, 0, 1000, 0, 0, 0, 0, 0, 0, 0), queue(500, 500, 500, 500))
	if qmax, qmean := queuesAfter(spike, 0); qmax != 1000 || qmean != 500 {
		t.Fatalf("spike then steady queue: max %d mean %v, want 1000 and 500", qmax, qmean)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		qs := make([]fabric.PrioReport, 1+rng.IntN(8))
		for i := range qs {
			depths := make([]int64, 1+rng.IntN(40))
			for j := range depths {
				if rng.IntN(3) > 0 {
					depths[j] = rng.Int64N(100_000)
				}
			}
			qs[i] = queue(depths...)
		}
		rep, from := report(qs...), sim.Time(rng.IntN(30))*dt
		gmax, gmean := queuesAfter(rep, from)
		wmax, wmean := all(rep, from)
		if gmax != wmax || gmean != wmean {
			t.Fatalf("from %v: max %d mean %v, every queue folded gives %d and %v", from, gmax, gmean, wmax, wmean)
		}
	}
}
