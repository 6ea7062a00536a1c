package peak

import (
	"github.com/besim/besim/units"
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// TestPointsAndAdd: points come from points or the rates x mtus product;
// Add writes one row and three metrics per point, -1 where missing.
func TestPointsAndAdd(t *testing.T) {
	b := &scenarios.Benchmark{Rates: []scenarios.Rate{25 * units.Gbps, 100 * units.Gbps}, MTUs: []scenarios.Size{1024, 4096}}
	pts := Points(b)
	if len(pts) != 4 || pts[1] != (Point{25e9, 4096}) || Key(pts[2]) != "100G/1024B" {
		t.Fatalf("points %+v", pts)
	}
	b = &scenarios.Benchmark{Points: []scenarios.PerfPoint{{Rate: 200 * units.Gbps, MTU: 4096}}, Message: scenarios.MiB, Depth: 8, Fragment: 64 * scenarios.KiB}
	if p := Points(b); len(p) != 1 || p[0] != (Point{200e9, 4096}) {
		t.Fatalf("points %+v", p)
	}
	s := &scenarios.Scenario{Benchmark: b}
	tbl := Table(s)
	var r report.Result
	Add(Point{200e9, 4096}, Measured{BE: 150, RC: 187.5, UD: -1, BEMessages: 9}, Paper{191.36, 114.7}, &tbl, &r)
	if len(tbl.Rows) != 1 || tbl.Rows[0].Values[5] != 80 || tbl.Rows[0].Values[2] != -1 {
		t.Fatalf("row %+v", tbl.Rows)
	}
	m := map[string]float64{}
	for _, x := range r.Metrics {
		m[x.Name] = x.Value
	}
	if m["peak/200G/4096B/be/gbps"] != 150 || m["peak/200G/4096B/rc/gbps"] != 187.5 || m["peak/200G/4096B/ud/gbps"] != -1 {
		t.Fatalf("metrics %v", m)
	}
}
