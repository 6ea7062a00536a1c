package fragsize

import (
	"github.com/besim/besim/units"
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// TestMachines: the sender keeps Window messages outstanding per flow and
// sends one per response until stopped; the receiver answers bulk
// messages with ResponseSize bytes and counts only those in its interval.
func TestMachines(t *testing.T) {
	s := NewSender(8)
	if n := s.Start(); n != 8 {
		t.Fatalf("Start asks for %d messages, want 8", n)
	}
	if n := s.Response(); n != 1 {
		t.Fatalf("Response asks for %d, want 1", n)
	}
	s.Stop()
	if n := s.Response(); n != 0 || s.Sent != 9 || s.Resps != 2 {
		t.Fatalf("after Stop: %d asked, sent %d, responses %d; want 0, 9, 2", n, s.Sent, s.Resps)
	}
	r := NewReceiver(1<<20, 100, 200)
	if r.Bulk(32) || !r.Bulk(1<<20) {
		t.Fatal("Bulk: a 32-byte message is not bulk, a 1 MiB one is")
	}
	for _, now := range []sim.Time{99, 100, 199, 200} {
		if n := r.Message(now, 1<<20); n != ResponseSize {
			t.Fatalf("response of %d bytes, want %d", n, ResponseSize)
		}
	}
	if r.Msgs != 2 || r.Bytes != 2<<20 {
		t.Fatalf("counted %d messages, %d bytes; want 2 in [100, 200)", r.Msgs, r.Bytes)
	}
}

// TestPrepare: defaults, and the errors for a message too small or no
// window.
func TestPrepare(t *testing.T) {
	var c Config
	if err := c.Prepare(); err != nil || len(c.Rates) != 2 || len(c.FragSizes) != 8 || c.MsgSize != 1<<20 || c.Window != 8 || c.MTU != 1024 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	if w, m := c.Interval(25 * units.Gbps); w <= 0 || m != 2*w {
		t.Fatalf("interval at 25G: warm-up %v, measure %v; want 20 and 40 message times", w, m)
	}
	for _, bad := range []Config{{MsgSize: 10}, {Window: -1}} {
		if err := bad.Prepare(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestReduce: the metric names, and -1 for points not measured.
func TestReduce(t *testing.T) {
	s, err := scenarios.Load("fig10")
	if err != nil {
		t.Fatal(err)
	}
	rate := s.Benchmark.Rates[0]
	tbl := Table(s)
	var r report.Result
	Add(s, rate, []Point{{Gbps: 10, LineGbps: 20, Efficiency: 0.5}}, &tbl, &r)
	m := map[string]float64{}
	for _, x := range r.Metrics {
		m[x.Name] = x.Value
	}
	k := "fragsize/" + RateKey(int64(rate)) + "/512B/"
	if m[k+"gbps"] != 10 || m[k+"efficiency"] != 50 {
		t.Errorf("first point: %v %v", m[k+"gbps"], m[k+"efficiency"])
	}
	if m["fragsize/"+RateKey(int64(rate))+"/1024B/gbps"] != -1 || len(tbl.Rows) != len(s.Benchmark.Fragments) {
		t.Errorf("missing point not -1, or %d rows", len(tbl.Rows))
	}
}

// TestSweep: the slots, windows and point lookup of a wall-clock sweep,
// and a run too short to measure.
func TestSweep(t *testing.T) {
	d := SweepDuration(3, 10, 80)
	sw, err := NewSweep(d, 3, 10)
	if err != nil || sw.Measure < 80 || sw.Slot*3 != d {
		t.Fatalf("sweep of %v: %+v, %v", d, sw, err)
	}
	if from, to := sw.Window(1); from != sw.Slot+10 || to != from+sw.Measure || to > 2*sw.Slot {
		t.Errorf("window 1: [%v, %v) of slot %v", from, to, sw.Slot)
	}
	if sw.Point(-1) != 0 || sw.Point(sw.Slot) != 1 || sw.Point(10*sw.Slot) != 2 {
		t.Error("Point does not clamp to the slots")
	}
	if _, err := NewSweep(100, 2, 50); err == nil {
		t.Error("a 50-long slot with a 50 warm-up was accepted")
	}
}
