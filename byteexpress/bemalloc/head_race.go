//go:build race

package bemalloc

// ownerStore sets the entry of a span in the caller's heap cache (see head).
func (e *head) ownerStore(s *span) { e.Store(s) }
