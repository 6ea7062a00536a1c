package peaksim

import (
	"testing"

	"github.com/besim/besim/workloads/internal/wltest"
)

// TestFig9Scenario: the peak benchmark at 25 Gb/s / 1024 B and 100 Gb/s /
// 1024 B, cut short: ByteExpress reaches at least 90% of RC perftest on
// the same NIC model, and UD perftest is packet-rate bound at 100 Gb/s
// with a 1024-byte MTU (Table 2), below both.
func TestFig9Scenario(t *testing.T) {
	s := wltest.Parse(t, "fig9-cut", `name: fig9-cut
duration: 1.5ms
benchmark:
  kind: peak
  warmup: 1ms
  points: [{rate: 25Gbps, mtu: 1024}, {rate: 100Gbps, mtu: 1024}]
`)
	r := wltest.Run(t, s)
	m := wltest.Metrics(r)
	for _, k := range []string{"25G/1024B", "100G/1024B"} {
		be, rc, ud := m["peak/"+k+"/be/gbps"], m["peak/"+k+"/rc/gbps"], m["peak/"+k+"/ud/gbps"]
		t.Logf("%s: ByteExpress %.2f, RC %.2f, UD %.2f Gbps", k, be, rc, ud)
		if rc <= 0 || be < 0.9*rc || be > 1.01*rc {
			t.Errorf("%s: ByteExpress %.2f vs RC perftest %.2f Gbps (want 90-101%%)", k, be, rc)
		}
	}
	if ud, be := m["peak/100G/1024B/ud/gbps"], m["peak/100G/1024B/be/gbps"]; ud <= 0 || ud > 0.6*be {
		t.Errorf("100G/1024B: UD %.2f vs ByteExpress %.2f Gbps: want UD packet-rate bound", ud, be)
	}
	if tb, ok := r.Table("peak"); !ok || len(tb.Rows) != 2 {
		t.Errorf("peak table: %+v", tb)
	}
}
