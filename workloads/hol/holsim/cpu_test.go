package holsim

import (
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/hol"
)

// TestCPUGrowsWithMessageRate (simhost's CPU model, driven by the small flow
// of this experiment): the modelled I/O-thread CPU time of both
// hosts grows with the small-message rate, close to linearly.
func TestCPUGrowsWithMessageRate(t *testing.T) {
	const window = 5 * sim.Millisecond
	rates := []int{25_000, 50_000, 100_000, 200_000, 400_000}
	var tx, rx []float64
	for _, r := range rates {
		c, err := simhost.New(simhost.DefaultConfig(2))
		if err != nil {
			t.Fatal(err)
		}
		a, b := c.Host(0), c.Host(1)
		lat := &LatencyApp{M: &hol.LatencyReceiver{Size: 512, To: sim.Never}}
		b.SetApp(lat)
		b.Listen()
		s, err := a.Dial(b)
		if err != nil {
			t.Fatal(err)
		}
		c.Run(sim.Millisecond) // connected, pools warm
		a0, b0 := a.CPUBusy(), b.CPUBusy()
		gen := NewSmallApp(c.Kernel(), a, s, 512, &hol.SmallSender{Every: sim.Second / sim.Time(r), Until: c.Now() + window})
		gen.Start(c.Now())
		c.Run(c.Now() + window)
		ua := float64(a.CPUBusy()-a0) / float64(window)
		ub := float64(b.CPUBusy()-b0) / float64(window)
		mean, _, p99 := hol.LatencyStats(lat.M.Samples)
		t.Logf("%6d msg/s: sender CPU %.2f%%, receiver CPU %.2f%% (%.0f / %.0f ns per message), latency mean %.2f us p99 %.2f us, host util since start %.2f%% / %.2f%%",
			r, 100*ua, 100*ub, ua*1e9/float64(r), ub*1e9/float64(r), mean, p99, 100*a.Stats().Util, 100*b.Stats().Util)
		if gen.Err() != nil || lat.Err() != nil || len(lat.M.Samples) < r*5/1000-2 {
			t.Fatalf("workload: %v %v, %d samples", gen.Err(), lat.Err(), len(lat.M.Samples))
		}
		tx, rx = append(tx, ua), append(rx, ub)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i < len(rates); i++ {
		for _, u := range [][]float64{tx, rx} {
			if ratio := u[i] / u[i-1]; ratio < 1.6 || ratio > 2.4 {
				t.Errorf("doubling the rate %d -> %d changed CPU by x%.2f, want about x2", rates[i-1], rates[i], ratio)
			}
		}
	}
}
