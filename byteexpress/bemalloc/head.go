package bemalloc

import (
	"sync/atomic"
	"unsafe"
)

// head is an entry of a block's span table (block.heads): the run that
// covers a span. Load and Store are atomic: frees and Find from any
// goroutine look runs up by address while the pool carves and heaps split
// and merge them. ownerStore is for the heap that holds the span in its
// cache (splitCached, coalesce): no other goroutine holds an address in a
// cached run, so no other goroutine reads those entries unless it frees
// or looks up memory it no longer owns. Outside the race detector
// ownerStore is a plain store (head_norace.go), since an atomic store is
// an XCHG on x86, a locked instruction that waits for the stores the
// caller of Allocate just made to its cold buffer; splitting a cached run
// rewrites up to a block's worth of entries, and in Figure 4's large
// workload those stores were 6-10% of the CPU time. A pointer-sized plain
// store is not torn, and a reader that is ordered after the heap's next
// handover of a buffer (the only legitimate reader) sees it. Under the
// race detector ownerStore is atomic (head_race.go), so that the detector
// does not report such an illegitimate read as the allocator's race.
type head struct {
	v unsafe.Pointer // *span
}

func (e *head) Load() *span   { return (*span)(atomic.LoadPointer(&e.v)) }
func (e *head) Store(s *span) { atomic.StorePointer(&e.v, unsafe.Pointer(s)) }
