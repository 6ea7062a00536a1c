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
// no more bytes than the two deltas did. A run of zero deltas from an even
// point whose value is the last kept one (a queue that stayed empty or
// unchanged: most of a long run's points) becomes half as many, a word of
// eight at a time.
func (c *Compact) halve() {
	buf := c.buf
	r, w := 0, 0
	var v, kept int64
	n := 0
	for i := 0; i < c.n; {
		if i&1 == 0 && v == kept {
			if m := zeroWords(buf, r, c.n-i); m > 0 {
				clear(buf[w : w+m/2]) // w <= r: at most the zeros being read
				r, w, n, i = r+m, w+m/2, n+m/2, i+m
				continue
			}
		}
		var d int64
		if x := uint64(buf[r]); x < 0x80 { // one and two bytes without a call
			d, r = int64(x>>1)^-int64(x&1), r+1
		} else if y := uint64(buf[r+1]); y < 0x80 { // a varint's last byte is below 0x80, so buf[r+1] exists
			x = x&0x7f | y<<7
			d, r = int64(x>>1)^-int64(x&1), r+2
		} else {
			d, r = nextDelta(buf, r)
		}
		v += d
		if i&1 == 0 {
			w += putDelta(buf[w:], v-kept)
			kept = v
			n++
		}
		i++
	}
	c.buf = buf[:w]
	c.n, c.last = n, kept
	c.stride *= 2 // capacity is even, so the offered point is on the new grid
}

// putDelta writes d as a zigzag varint (binary.PutVarint's bytes), a delta
// of -64 to 63 without a call.
func putDelta(b []byte, d int64) int {
	if uint64(d+64) < 128 {
		b[0] = byte(d<<1 ^ d>>63)
		return 1
	}
	return binary.PutVarint(b, d)
}

// nextDelta decodes the zigzag varint at b[r:] (binary.Varint), a one-byte
// one without a call, and returns it and the position after it.
func nextDelta(b []byte, r int) (int64, int) {
	if x := b[r]; x < 0x80 {
		return int64(x>>1) ^ -int64(x&1), r + 1
	}
	d, k := binary.Varint(b[r:])
	return d, r + k
}

// zeroWords counts the zero deltas at buf[r:], within the next left points,
// in whole words of eight: runs of an unchanged value, taken without
// decoding them one by one, four words to a test while they last (most
// points of most queues are an empty queue's zeros).
func zeroWords(buf []byte, r, left int) int {
	b := buf[r : r+min(left, len(buf)-r)&^7]
	m := 0
	for len(b) >= 32 && binary.LittleEndian.Uint64(b)|binary.LittleEndian.Uint64(b[8:])|
		binary.LittleEndian.Uint64(b[16:])|binary.LittleEndian.Uint64(b[24:]) == 0 {
		b, m = b[32:], m+32
	}
	for len(b) >= 8 && binary.LittleEndian.Uint64(b) == 0 {
		b, m = b[8:], m+8
	}
	return m
}

// Points yields the kept points in order, without allocating.
func (c *Compact) Points() iter.Seq2[sim.Time, int64] {
	return func(yield func(sim.Time, int64) bool) {
		r := 0
		var v int64
		step := sim.Time(c.stride) * c.dt
		for i := 0; i < c.n; i++ {
			var d int64
			d, r = nextDelta(c.buf, r)
			v += d
			if !yield(c.t0+sim.Time(i)*step, v) {
				return
			}
		}
	}
}

// Fold summarizes the kept points at or after instant from, as a loop over
// Points would: their number, their largest value (0 when there are none)
// and the sum of their values added in order as float64. Points of value
// zero in a row (an empty queue's tail) are taken a word of eight at a
// time: adding +0.0 leaves the sum as it was.
func (c *Compact) Fold(from sim.Time) (n int, hi int64, sum float64) {
	step := sim.Time(c.stride) * c.dt
	first := 0 // the first kept point at or after from
	if from > c.t0 && step > 0 {
		first = int((from - c.t0 + step - 1) / step)
	}
	buf := c.buf
	r := 0
	var v int64
	for i := 0; i < c.n; {
		// hi needs no update: point i-1, also 0, was counted (so hi >= 0)
		// or none was (hi is still 0).
		if v == 0 && i >= first {
			if m := zeroWords(buf, r, c.n-i); m > 0 {
				n, r, i = n+m, r+m, i+m
				continue
			}
		}
		var d int64
		d, r = nextDelta(buf, r)
		v += d
		if i >= first {
			if n == 0 || v > hi {
				hi = v
			}
			sum += float64(v)
			n++
		}
		i++
	}
	return n, hi, sum
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
