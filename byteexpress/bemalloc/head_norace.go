//go:build !race

package bemalloc

import "unsafe"

// ownerStore sets the entry of a span in the caller's heap cache (see head).
func (e *head) ownerStore(s *span) { e.v = unsafe.Pointer(s) }

// ownerSetCachedBy marks s as held by h's cache (nil: by none); only the
// heap concerned calls it (see span.cachedBy).
func (s *span) ownerSetCachedBy(h *Heap) { s.cachedBy = uintptr(unsafe.Pointer(h)) }
