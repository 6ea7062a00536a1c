package hol

import (
	"fmt"
	"strings"
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// TestSmallFlow: the sender ticks every Every until Until with numbered,
// stamped headers; the header round-trips; the receiver records the
// latency of messages sent in its interval and reports a gap in the
// sequence.
func TestSmallFlow(t *testing.T) {
	g := &SmallSender{Every: 10, Until: 30}
	r := &LatencyReceiver{Size: 512, From: 10, To: 30}
	for now := sim.Time(0); ; {
		send, h, rearm, next := g.Tick(now)
		if !send {
			if rearm {
				t.Fatal("rearmed after Until")
			}
			break
		}
		p := make([]byte, HeaderSize)
		h.Put(p)
		got, err := ParseHeader(p)
		if err != nil || got != h {
			t.Fatalf("header %+v round-trips to %+v, %v", h, got, err)
		}
		r.Message(now+5, got)
		now = next
	}
	if len(r.Samples) != 2 || r.Samples[0] != 5 || r.Err() != nil {
		t.Fatalf("samples %v, err %v; want two of 5 (sent at 10 and 20)", r.Samples, r.Err())
	}
	r.Message(100, Header{Seq: 7, Sent: 90})
	if r.Err() == nil || !strings.Contains(r.Err().Error(), "message 7 arrived, expected 3") {
		t.Fatalf("out of order: %v", r.Err())
	}
	if _, err := ParseHeader(make([]byte, 8)); err == nil {
		t.Fatal("parsed an 8-byte header")
	}
	if mean, p50, p99 := LatencyStats([]sim.Time{3 * sim.Microsecond, sim.Microsecond, 2 * sim.Microsecond}); mean != 2 || p50 != 2 || p99 != 3 {
		t.Fatalf("stats %v %v %v, want 2 2 3 us", mean, p50, p99)
	}
}

// TestPrepare: defaults and the errors.
func TestPrepare(t *testing.T) {
	var c Config
	if err := c.Prepare(); err != nil || c.Settings() != [2]int{4 << 10, 1 << 20} || len(c.LargeFlows) != 5 {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	for _, bad := range []Config{{SmallSize: 8}, {SmallSize: 2048, LargeSize: 1024}, {LargeWindow: -1}} {
		if err := bad.Prepare(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestReduce: the metric names, and -1 for settings not measured.
func TestReduce(t *testing.T) {
	s, err := scenarios.Load("fig13")
	if err != nil {
		t.Fatal(err)
	}
	var r report.Result
	Reduce(s, []Point{{MeanUs: 2.5, P99Us: 3}}, &r)
	n := s.Benchmark.LargeFlows[0]
	if m, ok := r.Metric(fmt.Sprintf("hol/%d/fragmented/mean", n)); !ok || m.Value != 2.5 {
		t.Errorf("first point: %+v %v", m, ok)
	}
	if m, ok := r.Metric(fmt.Sprintf("hol/%d/whole/p99", n)); !ok || m.Value != -1 {
		t.Errorf("missing point: %+v %v", m, ok)
	}
	if len(r.Tables) != 1 || len(r.Tables[0].Rows) != 2*len(s.Benchmark.LargeFlows) {
		t.Errorf("tables %+v", r.Tables)
	}
}
