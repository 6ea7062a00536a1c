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
	tb.Helper()
	cfg := DefaultConfig(2)
	cfg.Fabric.HostLink.Delay = DefaultTestbedLinkDelay
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
	}{{"small-512B", 512, 16}, {"large-64KiB", 64 << 10, 4}} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStream(t, tc.size, tc.window)
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
