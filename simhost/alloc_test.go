package simhost

import (
	"testing"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/sim"
)

// stream is a two-host closed-loop stream: size-byte messages, window
// outstanding, a 32-byte response each.
type stream struct {
	c    *Cluster
	tx   *BulkSender
	rx   *BulkReceiver
	a, b *Host
}

func newStream(tb testing.TB, size, window int) *stream {
	return newStreamCfg(tb, size, window, false)
}

// newStreamCfg is newStream with the NICs of a workload cluster (lean:
// RDMAHead = AppHead and RecvView) or placing every byte.
func newStreamCfg(tb testing.TB, size, window int, lean bool) *stream {
	tb.Helper()
	cfg := DefaultConfig(2)
	cfg.Fabric.HostLink.Delay = DefaultTestbedLinkDelay
	if lean {
		cfg.NIC.RDMAHead, cfg.NIC.RecvView = AppHead, true
	}
	c, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	a, b := c.Host(0), c.Host(1)
	rx := &BulkReceiver{min: size, respSize: 32, to: sim.Never}
	b.SetApp(rx)
	b.Listen()
	s, err := a.Dial(b)
	if err != nil {
		tb.Fatal(err)
	}
	tx := &BulkSender{size: size, window: window, socks: []*byteexpress.Socket{s}}
	a.SetApp(tx)
	tx.start(a)
	return &stream{c: c, tx: tx, rx: rx, a: a, b: b}
}

func (s *stream) check(tb testing.TB) {
	tb.Helper()
	if s.tx.err != nil || s.rx.err != nil || s.c.Err() != nil {
		tb.Fatal(s.tx.err, s.rx.err, s.c.Err())
	}
}

// TestSteadyStateZeroAllocs: once pools, rings and queues have grown, a
// stream allocates no Go memory per message anywhere in the stack (app,
// core, bemalloc, RNIC, fabric, kernel, this adapter).
func TestSteadyStateZeroAllocs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		size   int
		window int
		lean   bool
	}{{"small-512B", 512, 16, false}, {"large-64KiB", 64 << 10, 4, false},
		{"small-512B-lean", 512, 16, true}, {"large-64KiB-lean", 64 << 10, 4, true}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStreamCfg(t, tc.size, tc.window, tc.lean)
			// The kernel's radix wheel allocates a slot's slice the first time virtual
			// time reaches it: warm up past one turn of the levels in use.
			s.c.Run(150 * sim.Millisecond)
			m0 := s.rx.msgs
			allocs := testing.AllocsPerRun(20, func() { s.c.RunFor(200 * sim.Microsecond) })
			s.check(t)
			per := float64(s.rx.msgs-m0) / 21
			t.Logf("%.2f allocs per 200 us run, %.0f messages per run: %.4f allocs/message", allocs, per, allocs/per)
			if per < 1 {
				t.Fatal("no traffic")
			}
			if allocs != 0 {
				t.Errorf("%.2f allocations per run of %.0f messages", allocs, per)
			}
			if err := s.c.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestLeanNICSameRun: the NICs of a workload cluster (RDMAHead, RecvView)
// move fewer bytes but change nothing the core does: the same streams of
// small and large messages deliver the same messages with the same core
// statistics and NIC counters at every instant checked.
func TestLeanNICSameRun(t *testing.T) {
	for _, tc := range []struct {
		size, window int
	}{{512, 16}, {3000, 8}, {64 << 10, 4}} {
		full, lean := newStreamCfg(t, tc.size, tc.window, false), newStreamCfg(t, tc.size, tc.window, true)
		for range 5 {
			full.c.RunFor(300 * sim.Microsecond)
			lean.c.RunFor(300 * sim.Microsecond)
			full.check(t)
			lean.check(t)
			if full.rx.msgs != lean.rx.msgs || full.tx.resps != lean.tx.resps {
				t.Fatalf("%d B: %d messages, %d responses with every byte placed; %d and %d lean",
					tc.size, full.rx.msgs, full.tx.resps, lean.rx.msgs, lean.tx.resps)
			}
			for i, h := range []*Host{full.a, full.b} {
				l := []*Host{lean.a, lean.b}[i]
				if fs, ls := h.Stats(), l.Stats(); fs != ls {
					t.Fatalf("%d B: host %d core stats differ:\n full %+v\n lean %+v", tc.size, i, fs, ls)
				}
				if fs, ls := h.NIC().Stats(), l.NIC().Stats(); fs != ls {
					t.Fatalf("%d B: host %d NIC stats differ:\n full %+v\n lean %+v", tc.size, i, fs, ls)
				}
			}
		}
		if full.rx.msgs == 0 {
			t.Fatalf("%d B: no messages", tc.size)
		}
	}
}
