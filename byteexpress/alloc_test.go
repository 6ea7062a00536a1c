package byteexpress_test

import (
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
)

// TestSteadyStateAllocs measures Go heap allocations per message on the
// steady-state path: Allocate payload, Send, both I/O threads' Polls
// (scheduler, post, completion processing, receive, credit return) until
// delivery, and the receiver's Free. The fake NIC and bemalloc are in the
// loop too; both are allocation-free in steady state.
func TestSteadyStateAllocs(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int
		cfg  byteexpress.Config
	}{
		{"small-512B", 512, byteexpress.Config{}},
		{"large-64KiB", 64 << 10, byteexpress.Config{}},
		{"large-1MiB-cwnd", 1 << 20, byteexpress.Config{Cwnd: 16 << 10}},
		{"small-srq", 512, byteexpress.Config{UseSRQ: true, SRQDepth: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			cfg.KeepaliveInterval = -1 // timers are not on the per-message path
			c, a, b, sa, _ := pair(t, cfg)
			c.checkInv = false
			threads := []*byteexpress.IOThread{a.ep.Threads()[0], b.ep.Threads()[0]}
			got, target := 0, 0
			now := c.now
			drive := func() {
				for got < target {
					for _, th := range threads {
						r := th.Poll(time.Duration(now))
						for i := range r.Events {
							if ev := &r.Events[i]; ev.Kind == byteexpress.EvMessage {
								got++
								_ = b.ep.Free(ev.Buf)
							}
						}
					}
					nt, ok := c.net.Next()
					if !ok {
						if got < target {
							t.Fatalf("stalled: %d of %d delivered", got, target)
						}
						return
					}
					now = nt
					c.net.Advance(now)
				}
			}
			one := func() {
				buf, err := a.ep.Allocate(tc.size)
				if err != nil {
					t.Fatal(err)
				}
				if err := sa.Send(buf, tc.size); err != nil {
					t.Fatal(err)
				}
				target++
				drive()
			}
			runs := 300
			if tc.size > 64<<10 {
				runs = 60
			}
			for range runs {
				one()
			}
			allocs := testing.AllocsPerRun(runs, one)
			t.Logf("%s: %.2f allocations per message", tc.name, allocs)
			if allocs != 0 {
				t.Errorf("%.2f Go allocations per message in steady state, want 0", allocs)
			}
			c.now = now
			c.shutdown()
		})
	}
}
