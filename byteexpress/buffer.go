package byteexpress

import "github.com/besim/besim/byteexpress/bemalloc"

// Buffer is one allocation of registered memory from bemalloc (paper §5.2):
// Bytes() is the usable memory, Addr its address as the NIC sees it, and
// LKey/RKey the keys of the memory region that holds it. It is a plain
// 24-byte value; copies refer to the same memory.
//
// Ownership is explicit and moves with the value:
//
//   - an application that passes a Buffer to (*Socket).Send or SendTo gives
//     it to the core, which returns it to the allocator once the NIC no
//     longer reads it (or hands it back in an EvSendFailed event);
//   - a Buffer in an EvMessage event belongs to the application from then
//     on (zero-copy receive, §5.3.1); the application frees it with
//     Endpoint.Free (or the allocator's Deallocate), from any goroutine.
type Buffer = bemalloc.Buf

// Allocator is what the core needs from bemalloc (Figure 3): registered
// memory in the endpoint's protection domain, with remote-write access so
// peers can WRITE into received-message buffers. *bemalloc.Pool and
// *bemalloc.Heap implement it.
//
// Deallocate of the Allocator given to NewEndpoint must be safe from any
// goroutine (received buffers are freed by application threads, §5.2
// "cross-thread free"). When it is a *bemalloc.Pool, each I/O thread
// allocates from its own bemalloc.Heap (lock-free; rpmalloc's thread
// cache); an Allocator implementing ThreadHeaps supplies per-thread
// allocators itself.
type Allocator interface {
	Allocate(size int) (Buffer, error)
	Deallocate(b Buffer) error
}

// ThreadHeaps is optionally implemented by an Allocator with per-thread
// caches: I/O thread i then allocates and frees through ThreadHeap(i), used
// by that thread only. If the returned Allocator has a Close() error method
// it is called when the endpoint closes.
type ThreadHeaps interface {
	ThreadHeap(i int) Allocator
}

var (
	_ Allocator = (*bemalloc.Pool)(nil)
	_ Allocator = (*bemalloc.Heap)(nil)
)
