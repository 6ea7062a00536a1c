package pfc

import (
	"encoding/binary"
	"iter"

	"github.com/besim/besim/sim"
)

// Compact is a Series of samples offered on a uniform time grid (t0, t0+dt,
// t0+2dt, ...), stored compactly: the instants are implicit and the values
// are zigzag varint deltas, so a point costs 1-3 bytes where a Series point
// costs 16. It keeps exactly the points a Series of the same capacity keeps
// (the same decimation), and Series rebuilds that Series.
type Compact struct {
	t0, dt sim.Time
	cap    int
	n      int   // points kept
	last   int64 // value of the last kept point
	buf    []byte
	stride int
	skip   int
}

// NewCompact returns an empty compact series holding at most capacity points
// (rounded like NewSeries), whose k-th offered sample is at t0 + k*dt.
func NewCompact(capacity int, t0, dt sim.Time) *Compact {
	capacity = max(capacity, 2)
	capacity += capacity & 1
	return &Compact{t0: t0, dt: dt, cap: capacity, stride: 1}
}

// Len is the number of points kept.
func (c *Compact) Len() int { return c.n }

// Stride is how many offered samples each kept point now stands for.
func (c *Compact) Stride() int { return c.stride }

// Bytes is the memory the points occupy (capacity of the encoded buffer).
func (c *Compact) Bytes() int { return cap(c.buf) }

// Add offers the next sample on the grid.
func (c *Compact) Add(v int64) {
	if c.skip > 0 {
		c.skip--
		return
	}
	if c.n == c.cap {
		c.halve()
	}
	c.buf = binary.AppendVarint(c.buf, v-c.last)
	c.last = v
	c.n++
	c.skip = c.stride - 1
}

// AddN offers n samples of the same value v, in time proportional to the
// points kept, not to n. It keeps what n calls of Add keep, byte for byte;
// a run of v equal to the last kept value is appended as one block of zero
// deltas (one byte each) up to the next halving, not point by point.
func (c *Compact) AddN(n int64, v int64) {
	for n > 0 {
		if c.skip > 0 {
			k := min(int64(c.skip), n)
			c.skip -= int(k)
			n -= k
			continue
		}
		if v == c.last && c.n < c.cap {
			// k points, each taking stride samples but the last, which
			// takes one and leaves stride-1 to skip, as Add would.
			s := int64(c.stride)
			k := min(int64(c.cap-c.n), (n+s-1)/s)
			c.buf = append(c.buf, make([]byte, k)...)
			c.n += int(k)
			n -= (k-1)*s + 1
			c.skip = c.stride - 1
			continue
		}
		c.Add(v)
		n--
	}
}

// halve keeps every other point, in place: the delta of two points fits in
// no more bytes than the two deltas did.
func (c *Compact) halve() {
	r, w := 0, 0
	var v, kept int64
	n := 0
	for i := 0; i < c.n; i++ {
		var d int64
		if b := c.buf[r]; b < 0x80 { // one-byte varint: most deltas
			d = int64(b>>1) ^ -int64(b&1)
			r++
		} else {
			var k int
			d, k = binary.Varint(c.buf[r:])
			r += k
		}
		v += d
		if i&1 == 0 {
			w += binary.PutVarint(c.buf[w:], v-kept)
			kept = v
			n++
		}
	}
	c.buf = c.buf[:w]
	c.n, c.last = n, kept
	c.stride *= 2 // capacity is even, so the offered point is on the new grid
}

// Points yields the kept points in order, without allocating.
func (c *Compact) Points() iter.Seq2[sim.Time, int64] {
	return func(yield func(sim.Time, int64) bool) {
		r := 0
		var v int64
		step := sim.Time(c.stride) * c.dt
		for i := 0; i < c.n; i++ {
			d, k := binary.Varint(c.buf[r:])
			r += k
			v += d
			if !yield(c.t0+sim.Time(i)*step, v) {
				return
			}
		}
	}
}

// Series rebuilds the Series of the same capacity offered the same samples.
func (c *Compact) Series() *Series {
	s := &Series{T: make([]sim.Time, 0, c.n), V: make([]int64, 0, c.n), stride: c.stride, skip: c.skip}
	for t, v := range c.Points() {
		s.T = append(s.T, t)
		s.V = append(s.V, v)
	}
	return s
}
