package msgrate

import (
	"testing"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// TestPoster: round-robin over the QPs with room, one signalled WR in
// SignalEvery, a completion retiring SignalEvery, the application work
// within its jitter.
func TestPoster(t *testing.T) {
	cfg := Config{Depth: 4, SignalEvery: 2}.WithDefaults()
	p := NewPoster(&cfg, 0)
	a, b := p.AddQP(), p.AddQP()
	var order []int
	for {
		q, id, sig, ok := p.Next()
		if !ok {
			break
		}
		if sig != (id%2 == 0) {
			t.Fatalf("WR %d on QP %d: signalled %v", id, q, sig)
		}
		if w := p.Posted(q); w < cfg.AppWork/2 || w > cfg.AppWork*3/2 {
			t.Fatalf("application work %v outside 150 ns +- 50%%", w)
		}
		order = append(order, q)
	}
	if len(order) != 8 || order[0] != a || order[1] != b || order[2] != a {
		t.Fatalf("posted on %v, want 8 alternating", order)
	}
	p.Completed(b)
	if q, _, _, ok := p.Next(); !ok || q != b {
		t.Fatalf("after a completion on QP %d: %d, %v", b, q, ok)
	}
	if o := Owners(&Config{QPs: 8, Threads: 2}); len(o) != 8 {
		t.Fatalf("owners %v", o)
	}
}

// TestReduce: the metric names and the no-TD / TD ratio.
func TestReduce(t *testing.T) {
	s, err := scenarios.Load("fig11")
	if err != nil {
		t.Fatal(err)
	}
	b := s.Benchmark
	pts := make([][]Point, len(b.QPs))
	for i := range pts {
		for range b.ThreadDomains {
			pts[i] = append(pts[i], Point{Mmps: 10, Shared: 0})
		}
	}
	var r report.Result
	Reduce(s, pts, &r)
	if len(r.Metrics) != len(b.QPs)*len(b.ThreadDomains) || len(r.Tables) != 1 {
		t.Fatalf("%d metrics, %d tables", len(r.Metrics), len(r.Tables))
	}
	if m, ok := r.Metric("msgrate/td/64/mmps"); !ok || m.Value != 10 {
		t.Errorf("msgrate/td/64/mmps: %+v %v", m, ok)
	}
}
