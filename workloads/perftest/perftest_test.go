package perftest

import (
	"testing"

	"github.com/besim/besim/rnic"
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
			r.Rate/rnic.Gbps, r.MTU, r.ModelRC, r.PaperRC, r.LineRC, r.ModelUD, r.PaperUD, r.LineUD)
		if r.RCErr != nil || r.UDErr != nil {
			t.Fatalf("errors: %v %v", r.RCErr, r.UDErr)
		}
		if r.ModelRC < 0.9*r.LineRC || r.ModelRC > r.LineRC*1.001 {
			t.Errorf("%dG/%d: RC %.2f Gb/s, want within 90%%..100%% of %.2f", r.Rate/rnic.Gbps, r.MTU, r.ModelRC, r.LineRC)
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
	r, err := Run(Config{Transport: verbs.RC, Rate: 25 * rnic.Gbps, MTU: 1024, TxDepth: 256})
	if err != nil {
		t.Fatal(err)
	}
	if r.Gbps < 0.97*r.LineGbps || r.MsgRate <= 0 || r.PacketRate < r.MsgRate {
		t.Fatalf("%+v", r)
	}
	if _, err := Run(Config{Transport: verbs.UD, MTU: 1024, MsgSize: 2048}); err == nil {
		t.Fatal("UD message above the MTU accepted")
	}
}
