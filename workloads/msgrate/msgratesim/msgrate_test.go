package msgratesim

import (
	"testing"

	"github.com/besim/besim/rnic"
	"github.com/besim/besim/workloads/msgrate"
)

// TestFigure11Shape: the 512-byte message rate of eight I/O threads falls
// past 64 QPs when QPs beyond the provider's dedicated doorbell registers
// share locked ones across threads, and stays flat with one thread domain
// per thread.
func TestFigure11Shape(t *testing.T) {
	qps := []int{8, 64, 128, 256, 512}
	rate := map[bool][]float64{}
	for _, td := range []bool{false, true} {
		for _, n := range qps {
			r, err := Test(Config{Config: msgrate.Config{QPs: n, ThreadDomains: td}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("thread domains %-5v QPs %3d: %6.2f Mmsg/s, %3d QPs on shared doorbells, %4.1f%% CPU in doorbell locks",
				td, n, r.Mmps, r.SharedQPs, 100*r.LockShare)
			rate[td] = append(rate[td], r.Mmps)
		}
	}
	no, yes := rate[false], rate[true]
	if no[1] < 0.95*no[0] {
		t.Errorf("without TDs the rate already falls by 64 QPs: %.2f -> %.2f", no[0], no[1])
	}
	if no[4] > 0.75*no[1] {
		t.Errorf("without TDs 512 QPs keep %.2f of %.2f Mmsg/s (want < 75%%)", no[4], no[1])
	}
	for i := 1; i < len(qps); i++ {
		if no[i] > no[i-1]*1.02 {
			t.Errorf("without TDs the rate rises from %d to %d QPs", qps[i-1], qps[i])
		}
		if yes[i] < 0.95*yes[0] {
			t.Errorf("with TDs %d QPs: %.2f vs %.2f Mmsg/s at 8", qps[i], yes[i], yes[0])
		}
	}
}

// TestQPCacheThrash: when more QPs are active than the NIC caches, every
// packet misses and pays a context fetch; the message rate of a NIC-bound
// run drops and the misses are counted.
func TestQPCacheThrash(t *testing.T) {
	run := func(entries int) Result {
		cfg := rnic.DefaultConfig()
		cfg.QPCacheEntries = entries
		r, err := Test(Config{Config: msgrate.Config{QPs: 256, ThreadDomains: true, AppWork: 1}, NIC: &cfg})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("cache %4d: %6.2f Mmsg/s, client hits %d misses %d", entries, r.Mmps, r.Client.QPCacheHits, r.Client.QPCacheMisses)
		return r
	}
	big, small := run(1024), run(64)
	if big.Client.QPCacheMisses > 2*256 || small.Client.QPCacheMisses < 10*big.Client.QPCacheMisses {
		t.Fatalf("misses %d (cache 1024) vs %d (cache 64)", big.Client.QPCacheMisses, small.Client.QPCacheMisses)
	}
	if small.Mmps > 0.9*big.Mmps {
		t.Fatalf("thrashing cache: %.2f Mmsg/s vs %.2f", small.Mmps, big.Mmps)
	}
}
