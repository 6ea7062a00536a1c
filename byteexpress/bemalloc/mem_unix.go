//go:build unix

package bemalloc

import (
	"syscall"
	"unsafe"
)

// mapping is one anonymous private mmap. addr is the BlockSize-aligned start
// of the usable range [addr, addr+size); raw is the slice syscall.Mmap
// returned, which is what syscall.Munmap needs back.
type mapping struct {
	raw  []byte
	addr uintptr
	size uintptr
}

// mapAligned maps size bytes of anonymous memory aligned to align (a power
// of two). It first tries an exact mapping and keeps it if the kernel
// happened to align it; otherwise it over-allocates by align-pagesize and
// uses the aligned window inside. syscall.Munmap can only unmap a whole
// mapping, so the slack (never touched, never registered, so it costs
// address space but no physical memory) stays with the mapping until it is
// released. With huge, the usable range is advised MADV_HUGEPAGE, so that
// a kernel whose transparent huge pages are in madvise mode backs it with
// 2 MiB pages where it can (Config.HugePages).
func mapAligned(size, align uintptr, huge bool) (mapping, error) {
	const prot = syscall.PROT_READ | syscall.PROT_WRITE
	const flags = syscall.MAP_ANON | syscall.MAP_PRIVATE
	raw, err := syscall.Mmap(-1, 0, int(size), prot, flags)
	if err != nil {
		return mapping{}, err
	}
	if start := sliceAddr(raw); start&(align-1) == 0 {
		return advise(mapping{raw: raw, addr: start, size: size}, huge), nil
	}
	if err := syscall.Munmap(raw); err != nil {
		return mapping{}, err
	}
	page := uintptr(syscall.Getpagesize())
	slack := uintptr(0)
	if align > page {
		slack = align - page
	}
	raw, err = syscall.Mmap(-1, 0, int(size+slack), prot, flags)
	if err != nil {
		return mapping{}, err
	}
	start := (sliceAddr(raw) + align - 1) &^ (align - 1)
	return advise(mapping{raw: raw, addr: start, size: size}, huge), nil
}

func (m *mapping) unmap() error {
	if m.raw == nil {
		return nil
	}
	err := syscall.Munmap(m.raw)
	m.raw = nil
	return err
}

func sliceAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }
