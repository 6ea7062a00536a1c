package bemalloc

import "sync/atomic"

// ownCount is a counter that only one goroutine changes (a heap's owner:
// its live allocations and their bytes) and that any goroutine may read
// (Stats). Reads are atomic loads. Outside the race detector the owner
// adds with a plain load and store (ownCount.add in owncount_norace.go):
// an atomic add is a locked instruction on x86, which waits for every
// store the goroutine has buffered, and on the allocation fast path those
// are the caller's stores to the cold buffer it was just given, so two
// counter updates per operation cost more than the rest of the path
// (Figure 4's large allocations, issue 18). A word-sized plain store is
// not torn, and the Go memory model lets a concurrent read observe the
// old or the new value, which is all Stats promises while allocations are
// in flight; once they stop (and the reader synchronizes with the owner),
// the count is exact. Under the race detector, which reports such a read,
// the owner adds atomically (owncount_race.go).
type ownCount struct {
	_ [0]atomic.Int64 // 8-byte alignment for the atomic loads on 32-bit platforms
	v int64
}

func (c *ownCount) load() int64 { return atomic.LoadInt64(&c.v) }
