// Package sim is besim's discrete-event kernel: virtual time in integer
// picoseconds, a single-threaded event queue with deterministic tie-breaking,
// cancellable timers and per-component random streams.
//
// It follows docs/ARCHITECTURE.md "Event kernel": handlers are methods on
// long-lived components (no closure or goroutine per event), and each component keeps
// few pending events, so the queue grows with ports rather than packets.
//
// Speed (go test -bench Hold ./sim, the hold model: pop the earliest event,
// push one at now + a uniform random increment, mean 1 us): about 48-55 ns per
// event with 100k pending and 0 allocs, against 370-510 ns for container/heap
// in the same run on this project's 2-core machine (2026-12-02).
package sim

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"

	"github.com/besim/besim/units"
)

// Time is virtual time in picoseconds. Picoseconds keep the serialization of a
// 64 B frame at 400 Gbps (1.28 ns) exact while int64 still spans 106 days.
type Time int64

// Units of virtual time.
const (
	Picosecond  Time = 1
	Nanosecond  Time = 1000 * Picosecond
	Microsecond Time = 1000 * Nanosecond
	Millisecond Time = 1000 * Microsecond
	Second      Time = 1000 * Millisecond

	// Never is later than any reachable instant; "no event pending".
	Never Time = math.MaxInt64
)

// Seconds returns t in seconds as a float (for reports, never for scheduling).
func (t Time) Seconds() float64 { return float64(t) / float64(Second) }

// String formats t with the largest unit that keeps it readable, e.g. "1.28ns",
// "55us", "10ms".
func (t Time) String() string {
	if t == Never {
		return "never"
	}
	neg := t < 0
	a := t
	if neg {
		a = -t
	}
	var unit string
	var div Time
	switch {
	case a >= Second:
		unit, div = "s", Second
	case a >= Millisecond:
		unit, div = "ms", Millisecond
	case a >= Microsecond:
		unit, div = "us", Microsecond
	case a >= Nanosecond:
		unit, div = "ns", Nanosecond
	default:
		unit, div = "ps", Picosecond
	}
	s := strconv.FormatFloat(float64(a)/float64(div), 'f', -1, 64)
	if len(s) > 8 {
		s = strconv.FormatFloat(float64(a)/float64(div), 'g', 6, 64)
	}
	if neg {
		s = "-" + s
	}
	return s + unit
}

// TxTime is the serialization time of n bytes at rate, rounded up to a whole
// picosecond so that a busy link never runs faster than its rate. n stays a
// plain int64: it is a frame's or message's byte count on the packet path.
func TxTime(n int64, rate units.Rate) Time {
	if rate <= 0 {
		panic(fmt.Sprintf("sim.TxTime: non-positive rate %d", rate))
	}
	if n < 0 {
		panic(fmt.Sprintf("sim.TxTime: negative size %d", n))
	}
	// ceil(n*8 * 1e12 / rate) in 128-bit arithmetic: a 2 MB message at
	// 100 Gbps already overflows the 64-bit product.
	hi, lo := bits.Mul64(uint64(n)*8, uint64(Second))
	if hi >= uint64(rate) {
		panic(fmt.Sprintf("sim.TxTime: %d bytes at %d bit/s overflows virtual time", n, rate))
	}
	q, r := bits.Div64(hi, lo, uint64(rate))
	if r != 0 {
		q++
	}
	return Time(q)
}
