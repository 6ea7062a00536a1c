//go:build !unix

package bemalloc

import "errors"

type mapping struct {
	addr uintptr
	size uintptr
}

func mapAligned(size, align uintptr, huge bool) (mapping, error) {
	return mapping{}, errors.New("bemalloc: anonymous mmap is not available on this platform")
}

func (m *mapping) unmap() error { return nil }
