package peak

import (
	"github.com/besim/besim/units"
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
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

// TestSchedule: a run of ScheduleDuration gives every series at least the
// measured interval asked for, ByteExpress's slot first, the transports
// after it back to back to the run's end; a run too short is refused.
func TestSchedule(t *testing.T) {
	const warm, meas = 2 * sim.Millisecond, 5 * sim.Millisecond
	for n := range 3 {
		d := ScheduleDuration(n, warm, meas)
		sc, err := NewSchedule(d, n, warm)
		if err != nil {
			t.Fatalf("%d transports, %v: %v", n, d, err)
		}
		from, to := sc.BE.Window(0)
		if from != warm || to-from < meas || to > sc.BESlot || sc.Perftest != sc.BESlot {
			t.Errorf("%d transports: ByteExpress window [%v, %v) of slot %v", n, from, to, sc.BESlot)
		}
		if n > 0 && sc.Each-warm < meas {
			t.Errorf("%d transports: each measures %v, want at least %v", n, sc.Each-warm, meas)
		}
		if sc.Perftest+sim.Time(n)*sc.Each != d || sc.Each%sim.Nanosecond != 0 {
			t.Errorf("%d transports: perftest from %v, %v each, in a run of %v", n, sc.Perftest, sc.Each, d)
		}
	}
	if _, err := NewSchedule(5*sim.Millisecond, 2, warm); err == nil {
		t.Error("5 ms for three series with a 2 ms warm-up each was accepted")
	}
}
