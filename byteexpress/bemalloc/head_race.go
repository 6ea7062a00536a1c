//go:build race

package bemalloc

import (
	"sync/atomic"
	"unsafe"
)

// ownerStore sets the entry of a span in the caller's heap cache (see head).
func (e *head) ownerStore(s *span) { e.Store(s) }

// ownerSetCachedBy marks s as held by h's cache (nil: by none); only the
// heap concerned calls it (see span.cachedBy).
func (s *span) ownerSetCachedBy(h *Heap) {
	atomic.StoreUintptr(&s.cachedBy, uintptr(unsafe.Pointer(h)))
}
