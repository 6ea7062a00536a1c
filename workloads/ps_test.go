package workloads

import (
	"reflect"
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
)

func psCfg() PSConfig {
	return PSConfig{Cluster: simhost.DefaultConfig(2), Servers: 8, Shards: 64, Rankers: 2, Trainers: 2,
		FanOut: 8, Warmup: 300 * sim.Microsecond, Measure: sim.Millisecond, Seed: 1}
}

func TestPSCluster(t *testing.T) {
	r, err := RunPS(psCfg())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("user reqs %d (p50 %d us, p99 %d us), sub p50 %d us, iterations %d (p50 %d us), clients %.2f Gbps, servers %.2f Gbps, pfc %d, events %d",
		r.UserRequests, r.UserLatency.P50()/1000, r.UserLatency.P99()/1000, r.SubLatency.P50()/1000, r.Iterations,
		r.IterTime.P50()/1000, r.ClientGbps, r.ServerGbps, r.Report.Totals.PFCFramesTx, r.Events)
	switch {
	case len(r.Errors) > 0:
		t.Fatal(r.Errors)
	case r.UserRequests == 0 || r.UserLatency.Count() == 0:
		t.Error("no ranker requests completed")
	case r.Iterations == 0 || r.IterTime.Count() == 0:
		t.Error("no trainer iterations completed")
	case r.ServerGbps <= 0:
		t.Error("no pushes reached the servers")
	case r.UserLatency.P50() < r.SubLatency.P50():
		t.Error("a fan-out request cannot finish before its median sub-request")
	case r.IterTime.P50() < int64(psCfg().Compute/sim.Nanosecond):
		t.Error("an iteration includes the compute time")
	}
	r2, err := RunPS(psCfg())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual([]any{r.UserRequests, r.Iterations, r.Events, r.ClientGbps, r.UserLatency.P99()},
		[]any{r2.UserRequests, r2.Iterations, r2.Events, r2.ClientGbps, r2.UserLatency.P99()}) {
		t.Error("two runs differ")
	}
	c := psCfg()
	c.RankerRate = 20_000
	c.Trainers = 0
	r3, err := RunPS(c)
	if err != nil || r3.UserRequests == 0 || len(r3.Errors) > 0 {
		t.Errorf("open loop: %v, %d requests, %v", err, r3.UserRequests, r3.Errors)
	}
}
