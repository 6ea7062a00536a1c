package pfc

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// TestRecorderIsCompact offers random runs to a Recorder and to a Compact
// of the same capacity: at every point Recorder.Compact is the Compact,
// field for field, whether the recorder still logs its runs (short
// series), has become a Compact (long ones) or was read before (reading
// does not change it). Runs: single samples and long ones, repeated
// values, values of one to nine varint bytes, negative ones, n of 0.
func TestRecorderIsCompact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 300; trial++ {
		capacity := 2 * (1 + rng.IntN(60))
		r, c := NewRecorder(capacity, 5, 3), NewCompact(capacity, 5, 3)
		var v int64
		calls := rng.IntN([]int{10, 200, 3000}[trial%3])
		for i := 0; i < calls; i++ {
			switch rng.IntN(5) {
			case 0:
				v += rng.Int64N(2000) - 1000
			case 1:
				v = rng.Int64N(1<<40) - 1<<39
			case 2:
				v = 0
			}
			n := int64(1 + rng.IntN(3))
			if rng.IntN(4) == 0 {
				n = rng.Int64N(500)
			}
			r.AddN(n, v)
			c.AddN(n, v)
			if rng.IntN(50) == 0 || i == calls-1 {
				if got := r.Compact(); !reflect.DeepEqual(got, c) {
					t.Fatalf("trial %d, call %d (capacity %d, logging %v): recorder's compact\n%+v\nwant\n%+v", trial, i, capacity, r.c == nil, got, c)
				}
			}
		}
	}
}

// A recorder's memory stays bounded by its capacity: once its log of runs
// would outgrow a full Compact, it records into one.
func TestRecorderBounded(t *testing.T) {
	r := NewRecorder(64, 0, 1)
	for i := range 100_000 {
		r.AddN(1, int64(i%7)*1500)
	}
	if len(r.log) > 2*64+20 || r.c == nil || r.c.Bytes() > 4*64 {
		t.Fatalf("log %d bytes, compact %v (%d bytes)", len(r.log), r.c != nil, r.Compact().Bytes())
	}
}
