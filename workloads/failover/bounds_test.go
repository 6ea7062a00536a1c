package failover

import (
	"testing"

	"github.com/besim/besim/sim"
)

// TestRateRecoveryBounds: the reduction never indexes past its bins,
// whatever the fault time (after the end, in the last bin, before the
// first, none) and however few bins the run had.
func TestRateRecoveryBounds(t *testing.T) {
	ms := sim.Millisecond
	for _, tc := range []struct {
		bins    []int
		faultAt sim.Time
		base    float64
		after   sim.Time
	}{
		{[]int{4, 4}, 5 * ms, 0, 0},            // fault after the end (the old panic)
		{[]int{4, 4}, 2 * ms, 4, 0},            // at the end: no bin after it
		{nil, 3 * ms, 0, 0},                    // no bins at all
		{[]int{4, 4, 0, 4}, -1, 0, 0},          // no fault
		{[]int{4, 4, 0, 4}, ms / 2, 0, 0},      // before the first full bin
		{[]int{4, 4, 0, 4}, 2 * ms, 4, 2 * ms}, // dips, back in bin 3
		{[]int{4, 4, 0, 0}, 2 * ms, 4, -1},     // never back
	} {
		base, after := rateRecovery(tc.bins, ms, tc.faultAt)
		if base != tc.base || after != tc.after {
			t.Errorf("bins %v fault %v: %v, %v; want %v, %v", tc.bins, tc.faultAt, base, after, tc.base, tc.after)
		}
	}
	if b, a := rateRecovery([]int{1}, 0, ms); b != 0 || a != 0 {
		t.Errorf("zero bin: %v %v", b, a)
	}
}
