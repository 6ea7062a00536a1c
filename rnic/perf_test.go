package rnic

import (
	"testing"

	"github.com/besim/besim/verbs"
)

// TestTable2Shape: paper Table 2 from the cost model, not from constants:
// RC within 10% of the line payload rate everywhere; UD close to RC at
// 25G/1KB and 100G/4KB, about half the line at 100G/1KB and about 115 Gb/s
// at 200G/4KB, where one WQE, one receive and one CQE per MTU-sized
// datagram make UD packet-rate-limited.
func TestTable2Shape(t *testing.T) {
	rows := Table2(nil)
	for _, r := range rows {
		t.Logf("%3dG/%4dB  RC %7.2f (paper %6.2f, line %6.2f)   UD %7.2f (paper %6.2f, line %6.2f)",
			r.Rate/Gbps, r.MTU, r.ModelRC, r.PaperRC, r.LineRC, r.ModelUD, r.PaperUD, r.LineUD)
		if r.RCErr != nil || r.UDErr != nil {
			t.Fatalf("errors: %v %v", r.RCErr, r.UDErr)
		}
		if r.ModelRC < 0.9*r.LineRC || r.ModelRC > r.LineRC*1.001 {
			t.Errorf("%dG/%d: RC %.2f Gb/s, want within 90%%..100%% of %.2f", r.Rate/Gbps, r.MTU, r.ModelRC, r.LineRC)
		}
	}
	within := func(name string, v, lo, hi float64) {
		if v < lo || v > hi {
			t.Errorf("%s: %.2f Gb/s, want %.0f..%.0f", name, v, lo, hi)
		}
	}
	within("UD 25G/1KB", rows[0].ModelUD, 0.95*rows[0].ModelRC, rows[0].LineUD*1.001)
	within("UD 100G/1KB", rows[1].ModelUD, 35, 65)
	within("UD 100G/4KB", rows[2].ModelUD, 0.95*rows[2].ModelRC, rows[2].LineUD*1.001)
	within("UD 200G/4KB", rows[3].ModelUD, 90, 140)
}

// TestPerfTestDefaults: a deeper send queue keeps RC at line rate with
// consistent message and packet rates, and a UD message above the MTU is
// refused.
func TestPerfTestDefaults(t *testing.T) {
	r, err := PerfTest(PerfConfig{Transport: verbs.RC, Rate: 25 * Gbps, MTU: 1024, TxDepth: 256})
	must(t, err)
	if r.Gbps < 0.97*r.LineGbps || r.MsgRate <= 0 || r.PacketRate < r.MsgRate {
		t.Fatalf("%+v", r)
	}
	if _, err := PerfTest(PerfConfig{Transport: verbs.UD, MTU: 1024, MsgSize: 2048}); err == nil {
		t.Fatal("UD message above the MTU accepted")
	}
}

// TestFigure11Shape: the 512-byte message rate of eight I/O threads falls
// past 64 QPs when QPs beyond the provider's dedicated doorbell registers
// share locked ones across threads, and stays flat with one thread domain
// per thread.
func TestFigure11Shape(t *testing.T) {
	qps := []int{8, 64, 128, 256, 512}
	rate := map[bool][]float64{}
	for _, td := range []bool{false, true} {
		for _, n := range qps {
			r, err := MsgRateTest(MsgRateConfig{QPs: n, ThreadDomains: td})
			must(t, err)
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
	run := func(entries int) MsgRateResult {
		cfg := DefaultConfig()
		cfg.QPCacheEntries = entries
		r, err := MsgRateTest(MsgRateConfig{QPs: 256, ThreadDomains: true, AppWork: 1, NIC: &cfg})
		must(t, err)
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
