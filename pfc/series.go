package pfc

import "github.com/besim/besim/sim"

// Sampler is a time-series hook: components call Sample at instants of
// interest (a PFC state change, a periodic queue-depth tick).
type Sampler interface {
	Sample(t sim.Time, v int64)
}

// Series is a bounded-memory time series. It keeps at most Cap points: when
// full it drops every other point and from then on keeps only every second
// sample offered (then every fourth, ...), so a long run degrades resolution,
// never memory. Points are allocated once, in NewSeries.
type Series struct {
	T []sim.Time
	V []int64

	stride int // keep one sample in stride
	skip   int // samples to skip before the next kept one
}

var _ Sampler = (*Series)(nil)

// NewSeries returns an empty series holding at most capacity points
// (rounded up to an even number, at least 2).
func NewSeries(capacity int) *Series {
	capacity = max(capacity, 2)
	capacity += capacity & 1
	return &Series{T: make([]sim.Time, 0, capacity), V: make([]int64, 0, capacity), stride: 1}
}

// Stride is how many offered samples each kept point now stands for.
func (s *Series) Stride() int { return s.stride }

// Sample offers one point.
func (s *Series) Sample(t sim.Time, v int64) {
	if s.skip > 0 {
		s.skip--
		return
	}
	if len(s.T) == cap(s.T) {
		n := 0
		for i := 0; i < len(s.T); i += 2 {
			s.T[n], s.V[n] = s.T[i], s.V[i]
			n++
		}
		s.T, s.V = s.T[:n], s.V[:n]
		s.stride *= 2 // capacity is even, so the offered point is on the new grid
	}
	s.T = append(s.T, t)
	s.V = append(s.V, v)
	s.skip = s.stride - 1
}

// SampleN offers n points of the same value v at instants t, t+dt, ...,
// t+(n-1)*dt: the series it leaves is the one n calls of Sample would, but
// the samples it would skip cost nothing, so a value that held for many
// ticks is recorded in time proportional to the points kept, not to n.
func (s *Series) SampleN(t, dt sim.Time, n int64, v int64) {
	for n > 0 {
		if s.skip > 0 {
			k := min(int64(s.skip), n)
			s.skip -= int(k)
			n -= k
			t += sim.Time(k) * dt
			continue
		}
		s.Sample(t, v)
		n--
		t += dt
	}
}

// Len is the number of points kept.
func (s *Series) Len() int { return len(s.T) }
