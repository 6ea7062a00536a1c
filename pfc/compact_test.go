package pfc

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/besim/besim/sim"
)

// TestCompactMatchesSeries offers the same samples to a Series and a Compact
// and checks they keep the same points, for several capacities and runs of
// equal values.
func TestCompactMatchesSeries(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, capacity := range []int{1, 2, 3, 8, 64, 1024} {
		const t0, dt = sim.Time(7), sim.Time(10)
		s := NewSeries(capacity)
		c := NewCompact(capacity, t0, dt)
		at := t0
		for step := 0; step < 3000; step++ {
			v := rng.Int64N(1<<40) - 1<<39
			if rng.IntN(3) == 0 {
				v = rng.Int64N(3) * 1024
			}
			n := int64(1)
			if rng.IntN(4) == 0 {
				n = rng.Int64N(50)
			}
			s.SampleN(at, dt, n, v)
			c.AddN(n, v)
			at += sim.Time(n) * dt
			if step%97 == 0 || step == 2999 {
				got := c.Series()
				if !slices.Equal(got.T, s.T) || !slices.Equal(got.V, s.V) || c.Stride() != s.Stride() || c.Len() != s.Len() {
					t.Fatalf("capacity %d step %d: compact\n%v\n%v stride %d\nseries\n%v\n%v stride %d",
						capacity, step, got.T, got.V, c.Stride(), s.T, s.V, s.Stride())
				}
			}
		}
	}
}

// TestCompactAddNIsRepeatedAdd checks that AddN keeps exactly the bytes n
// calls of Add keep, for long runs of equal values across halvings.
func TestCompactAddNIsRepeatedAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, capacity := range []int{2, 4, 10, 64, 1024} {
		a := NewCompact(capacity, 0, 1)
		b := NewCompact(capacity, 0, 1)
		for step := 0; step < 2000; step++ {
			v := rng.Int64N(4) * 1000
			if rng.IntN(5) == 0 {
				v = rng.Int64N(1<<40) - 1<<39
			}
			n := rng.Int64N(3)
			if rng.IntN(3) == 0 {
				n = rng.Int64N(5000)
			}
			a.AddN(n, v)
			for i := int64(0); i < n; i++ {
				b.Add(v)
			}
			if !slices.Equal(a.buf, b.buf) || a.n != b.n || a.last != b.last || a.stride != b.stride || a.skip != b.skip {
				t.Fatalf("capacity %d step %d (AddN(%d, %d)): AddN kept n=%d stride=%d skip=%d %x, Add kept n=%d stride=%d skip=%d %x",
					capacity, step, n, v, a.n, a.stride, a.skip, a.buf, b.n, b.stride, b.skip, b.buf)
			}
		}
	}
}
