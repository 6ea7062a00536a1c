package simhost

import (
	"testing"
	"time"

	"github.com/besim/besim/sim"
)

// BenchmarkStream measures simulator speed on a two-host stream: each
// iteration simulates 100 us of virtual time; reported are messages per
// wall-clock second, kernel events per wall-clock second and the ratio of
// virtual to wall time.
func BenchmarkStream(b *testing.B) {
	for _, tc := range []struct {
		name   string
		size   int
		window int
	}{{"512B", 512, 16}, {"64KiB", 64 << 10, 4}, {"1MiB", 1 << 20, 4}} {
		b.Run(tc.name, func(b *testing.B) {
			s := newStream(b, tc.size, tc.window)
			s.c.Run(20 * sim.Millisecond)
			m0, e0 := s.rx.msgs, s.c.Kernel().Events()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for range b.N {
				s.c.RunFor(100 * sim.Microsecond)
			}
			wall := time.Since(start).Seconds()
			b.StopTimer()
			s.check(b)
			msgs, evs := float64(s.rx.msgs-m0), float64(s.c.Kernel().Events()-e0)
			b.ReportMetric(msgs/wall, "msgs/s")
			b.ReportMetric(evs/wall, "events/s")
			b.ReportMetric(float64(b.N)*100e-6/wall, "sim-s/s")
			b.ReportMetric(evs/max(msgs, 1), "events/msg")
		})
	}
}
