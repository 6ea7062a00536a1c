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

// TestCoreClient: a socket starts with Depth messages; each answer costs
// its jittered work and is followed by one message until Stop, after
// which answers are still counted but nothing follows; sockets map to
// Threads independent streams, each as deterministic as its seed; every
// message sent is answered once the sends stop (conservation).
func TestCoreClient(t *testing.T) {
	cfg := Config{Threads: 3, Depth: 4, Seed: 7}.WithDefaults()
	run := func() (works []int64, c *CoreClient) {
		c = NewCoreClient(&cfg)
		if len(c.Streams) != 3 || c.Stream(1) != c.Stream(4) || c.Stream(1) == c.Stream(2) {
			t.Fatalf("%d streams; socket 1's and 4's must be one, 2's another", len(c.Streams))
		}
		out := map[uint64]int{} // messages outstanding per socket
		for id := uint64(1); id <= 6; id++ {
			out[id] = c.Stream(id).Start()
			if out[id] != cfg.Depth {
				t.Fatalf("socket %d starts with %d messages, want Depth %d", id, out[id], cfg.Depth)
			}
		}
		for round := range 20 {
			if round == 10 {
				for _, s := range c.Streams {
					s.Stop()
				}
			}
			for id := uint64(1); id <= 6; id++ {
				if out[id] == 0 {
					continue
				}
				w, n := c.Stream(id).Answer()
				if w < cfg.AppWork/2 || w > cfg.AppWork*3/2 {
					t.Fatalf("work %v outside AppWork +- 50%%", w)
				}
				if want := map[bool]int{true: 0, false: 1}[round >= 10]; n != want {
					t.Fatalf("round %d: %d messages after an answer, want %d", round, n, want)
				}
				out[id] += n - 1
				works = append(works, int64(w))
			}
		}
		if c.Stream(1).Start() != 0 {
			t.Error("a stopped stream starts a new socket with messages")
		}
		sent, answers := c.Counts()
		if sent != answers || sent != 6*uint64(cfg.Depth)+60 {
			t.Errorf("%d sent, %d answered; want equal, 6 x Depth + 60", sent, answers)
		}
		return works, c
	}
	a, _ := run()
	b, _ := run()
	if len(a) != len(b) {
		t.Fatal("two runs answered differently")
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("answer %d: work %d then %d: the streams are not deterministic", i, a[i], b[i])
		}
	}
}
