//go:build !race

package bemalloc

import "unsafe"

// ownerStore sets the entry of a span in the caller's heap cache (see head).
func (e *head) ownerStore(s *span) { e.v = unsafe.Pointer(s) }
