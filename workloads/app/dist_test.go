package app

import (
	"math"
	"slices"
	"testing"

	"github.com/besim/besim/sim"
)

func TestSizeDist(t *testing.T) {
	rng := sim.Stream(1, "test")
	for _, d := range []SizeDist{
		{Kind: Fixed, Size: 100},
		{Kind: Uniform, Min: 10, Max: 30},
		{Kind: LogNormal, Mean: 20_000, P99: 50_000},
		{Kind: Empirical, CDF: []CDFPoint{{Size: 1000, P: 0.5}, {Size: 3000, P: 1}}},
	} {
		if err := d.Prepare(); err != nil {
			t.Fatal(err)
		}
		const n = 200_000
		v := make([]int, n)
		sum := 0.0
		for i := range v {
			v[i] = d.Sample(rng)
			sum += float64(v[i])
		}
		mean := sum / n
		if want := d.MeanSize(); math.Abs(mean-want) > 0.02*want {
			t.Errorf("%s: sample mean %.1f, want %.1f", d.Kind, mean, want)
		}
		if d.Kind == LogNormal {
			slices.Sort(v)
			if p99 := float64(v[n*99/100]); math.Abs(p99-50_000) > 0.03*50_000 {
				t.Errorf("lognormal p99 %.0f, want 50000", p99)
			}
		}
	}
	for _, d := range []SizeDist{{Kind: Fixed}, {Kind: Uniform, Min: 5, Max: 2}, {Kind: LogNormal, Mean: 10, P99: 5},
		{Kind: Empirical, CDF: []CDFPoint{{Size: 10, P: 0.5}}}, {Kind: "pareto"}} {
		if err := d.Prepare(); err == nil {
			t.Errorf("%+v: want an error", d)
		}
	}
}
