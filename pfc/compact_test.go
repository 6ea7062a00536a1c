package pfc

import (
	"encoding/binary"
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

// halveReference is halve without its fast paths: decode every point, keep
// the even ones, re-encode their deltas with binary.PutVarint.
func halveReference(c *Compact) {
	var kept, v int64
	out := []byte{}
	r, n := 0, 0
	for i := 0; i < c.n; i++ {
		d, k := binary.Varint(c.buf[r:])
		r += k
		v += d
		if i%2 == 0 {
			out = binary.AppendVarint(out, v-kept)
			kept = v
			n++
		}
	}
	c.buf, c.n, c.last, c.stride = out, n, kept, c.stride*2
}

// TestCompactHalveMatchesReference halves series of runs of equal values
// (zero deltas at every alignment, after points whose value differs from
// the last kept one) and of deltas on both sides of the one-byte limit, and
// checks the bytes against the plain re-encoding.
func TestCompactHalveMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	deltas := []int64{0, 1, -1, 63, -64, 64, -65, 1078, 8191, -8192, 8192, -8193, 1 << 20, -(1 << 40)} // one to six bytes, and their edges
	for trial := 0; trial < 2000; trial++ {
		capacity := 2 * (1 + rng.IntN(40))
		a := NewCompact(capacity, 0, 1)
		var v int64
		every := []int{2, 3, 12}[trial%3] // a change every few points, or long runs
		for a.n < a.cap {
			if rng.IntN(every) == 0 {
				v += deltas[rng.IntN(len(deltas))]
			}
			a.Add(v)
		}
		b := &Compact{cap: a.cap, n: a.n, last: a.last, buf: slices.Clone(a.buf), stride: a.stride}
		a.halve()
		halveReference(b)
		if !slices.Equal(a.buf, b.buf) || a.n != b.n || a.last != b.last || a.stride != b.stride {
			t.Fatalf("trial %d: halve kept n=%d last=%d %x, reference n=%d last=%d %x", trial, a.n, a.last, a.buf, b.n, b.last, b.buf)
		}
	}
}

// TestCompactFoldMatchesPoints checks Fold against a loop over Points, for
// series with long runs of zero and of other values, negative values, and
// instants before, on and between the kept points.
func TestCompactFoldMatchesPoints(t *testing.T) {
	// A run of eight zeros taken whole after negative points is the largest.
	c := NewCompact(64, 0, 1)
	c.Add(-5)
	c.AddN(9, 0) // a delta of +5, then eight zero deltas
	if n, hi, sum := c.Fold(0); n != 10 || hi != 0 || sum != -5 {
		t.Fatalf("-5 then nine zeros: Fold = %d, %d, %v, want 10, 0, -5", n, hi, sum)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 3000; trial++ {
		const t0, dt = sim.Time(100), sim.Time(10)
		c := NewCompact(2*(1+rng.IntN(60)), t0, dt)
		every := []int{2, 5, 30}[trial%3]
		values := []int64{0, 0, 0, 1, 1500, -7, 1 << 33}
		if trial%2 == 1 {
			values = []int64{0, -7, -1500} // the largest may be 0, after negatives
		}
		var v int64
		for range rng.IntN(400) {
			if rng.IntN(every) == 0 {
				v = values[rng.IntN(len(values))]
			}
			c.AddN(1+rng.Int64N(3), v)
		}
		from := sim.Time(rng.Int64N(int64(t0) + 5000))
		var n int
		var hi int64
		var sum float64
		for at, x := range c.Points() {
			if at < from {
				continue
			}
			if n == 0 || x > hi {
				hi = x
			}
			sum += float64(x)
			n++
		}
		gn, ghi, gsum := c.Fold(from)
		if gn != n || ghi != hi || gsum != sum {
			t.Fatalf("trial %d from %d: Fold = %d, %d, %v; Points = %d, %d, %v", trial, from, gn, ghi, gsum, n, hi, sum)
		}
	}
}

// TestZeroWordsCountsWholeZeroWords checks zeroWords against a byte-by-byte
// count (the zero bytes at buf[r:], within left of them, rounded down to
// whole words of eight), for zero runs shorter and longer than its
// four-word step, ending at, before and after the limit.
func TestZeroWordsCountsWholeZeroWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 20000; trial++ {
		buf := make([]byte, rng.IntN(200))
		for i := range buf {
			if rng.IntN(60) == 0 {
				buf[i] = byte(1 + rng.IntN(255))
			}
		}
		r := rng.IntN(len(buf) + 1)
		left := rng.IntN(len(buf) + 10)
		want := 0
		for want < min(left, len(buf)-r) && buf[r+want] == 0 {
			want++
		}
		want = min(want, min(left, len(buf)-r)&^7) &^ 7
		if got := zeroWords(buf, r, left); got != want {
			t.Fatalf("trial %d: zeroWords(%x, %d, %d) = %d, want %d", trial, buf, r, left, got, want)
		}
	}
}
