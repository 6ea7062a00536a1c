//go:build !race

package bemalloc

import (
	"sync/atomic"
	"unsafe"
)

// ownerStore sets the entry of a span in the caller's heap cache (see head).
func (e *head) ownerStore(s *span) { e.v = unsafe.Pointer(s) }

// ownerSetCachedBy marks s as held by h's cache (nil: by none); only the
// heap concerned calls it (see span.cachedBy).
func (s *span) ownerSetCachedBy(h *Heap) { s.cachedBy = uintptr(unsafe.Pointer(h)) }

// ownerLoad, ownerOr and ownerAndNot read and change a word of a span's
// allocation bitmap (span.bits), which only the owner heap writes; other
// goroutines read it atomically (see span.bits).
func ownerLoad(w *atomic.Uint64) uint64      { return *(*uint64)(unsafe.Pointer(w)) }
func ownerOr(w *atomic.Uint64, m uint64)     { *(*uint64)(unsafe.Pointer(w)) |= m }
func ownerAndNot(w *atomic.Uint64, m uint64) { *(*uint64)(unsafe.Pointer(w)) &^= m }
