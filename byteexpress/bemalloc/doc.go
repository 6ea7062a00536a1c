// Package bemalloc is ByteExpress malloc (paper §5.2): a pool of RDMA-
// registered memory with the interface of a general-purpose allocator, built
// on rpmalloc's design. It imports only the verbs port, so it runs the same
// over the simulated RNIC and over real libibverbs.
//
// # What it models
//
// rpmalloc obtains large blocks of size B (4 MB in the paper) from the OS
// and subdivides them; bemalloc hooks the block-acquire and block-release
// callbacks to call ibv_reg_mr and ibv_dereg_mr, and keeps the memory region
// in the block's metadata. One registration is amortized over every
// allocation the block serves, which also keeps the number of MRs (and the
// RNIC's MR cache pressure) small. Figure 3's interface maps to:
//
//	RdmaMemoryPool::Init(ctx)    New(pd, cfg)
//	Allocate(size)               (*Pool).Allocate / (*Heap).Allocate -> Buf
//	GetMR(block)                 (*Pool).GetMR(buf), O(1); MRAt(addr) for any address
//	Deallocate(block)            (*Pool).Deallocate / (*Heap).Deallocate
//
// Buffers are the unit of zero-copy ownership (§5.3.1): the receiver of a
// message allocates the buffer the RNIC writes into, hands it to the
// application, which may pass it to another goroutine and free it there.
// Cross-heap frees are therefore a first-class, lock-free path.
//
// Registered footprint, registration and deregistration counts, live and
// retained blocks and bytes in use are metrics (Stats): Figure 5's footprint
// ramps while the pool grows and then stays flat, the steady state serving
// every allocation from cached registered blocks without calling RegMR.
// BenchmarkAlloc reproduces Figure 4 (operation rate and peak memory
// against thread count, small and large allocations, 10% cross-thread
// frees) against make([]byte)+GC and size-classed sync.Pools, with and
// without Config.HugePages; bench/alloc.sh runs it into results/fig4.
//
// # Memory layout
//
// A block is BlockSize bytes (default 4 MiB) of anonymous private mmap,
// aligned to BlockSize, registered as one MR. syscall.Munmap only unmaps
// whole mappings, so alignment is obtained by mapping BlockSize-pagesize
// bytes more when the kernel's first placement is not aligned; the slack is
// never touched or registered and costs address space only. The memory is
// outside the Go heap: it never moves, the GC never scans it and a real
// NIC can DMA into it. Buf.Bytes is an unsafe.Slice over it.
//
// A block is divided into spans of SpanSize (default 64 KiB, rpmalloc's
// span). Requests are served in three tiers:
//
//   - up to SpanSize/2 (32 KiB): a slot in a span of one size class. The
//     classes are 16..128 bytes in 16-byte steps, then four per power of two
//     (160, 192, 224, 256, 320, ... 28K, 32K): 40 classes, under 25%
//     rounding above 128 bytes, at least two slots per span;
//   - up to BlockSize: a run of whole contiguous spans inside one block
//     (64 KiB granularity), as rpmalloc's large spans;
//   - up to MaxAlloc (default 1 GiB): a dedicated run of contiguous blocks,
//     mapped and registered as one MR.
//
// Block metadata (the MR, the span table, allocation bitmaps) lives in Go
// memory rather than at the block base, so the whole block is usable
// payload and the MR value stays visible to the GC.
//
// # GetMR in O(1)
//
// Blocks are aligned to their size, so the block of any address is
// addr &^ (B-1). A three-level radix keyed by the block index addr>>log2(B)
// maps it to the block (for 4 MiB blocks and 48-bit addresses: 8+9+9 bits, a
// 2 KiB root and 4 KiB middle nodes and leaves allocated on demand, 10 KiB
// for a pool of one block); lookups are three atomic loads and no lock, and every block of a dedicated run points to the
// run. Deallocate uses the same lookup and then the span index
// (addr-base)>>log2(SpanSize); the slot index is computed with a
// precomputed reciprocal (one multiply, no division).
//
// # Heaps: the thread stand-in
//
// rpmalloc keeps a heap per thread. Go has no thread identity, so a
// goroutine that plays a thread (an I/O thread, an application worker)
// owns a *Heap from Pool.NewHeap. Its Allocate and Deallocate take no lock:
// per-class lists of partial spans with intrusive free lists (the link is in
// the free slot) and a cache of free span runs. A buffer freed by a
// goroutine that is not its owner (through its own Heap or through
// Pool.Deallocate) is pushed onto the owner's deferred-free list with one
// CAS, the link in the slot itself, or for a large run in its span struct
// (which the owner reads anyway, where the run's first word is a cold
// cache line); the owner takes the whole list with one Swap at its next
// Allocate. Pool.Allocate goes through a shared
// heap behind a mutex, for callers without a heap. A closed heap is reused
// by the next NewHeap (rpmalloc's heap adoption), so spans it still holds
// keep receiving their frees.
//
// # Caches and release
//
// A span that becomes empty goes to its heap's cache of free runs (exact
// size, else split from the smallest larger run). When no cached run is
// long enough although the cache holds enough spans, the heap first
// coalesces its cached runs that are adjacent in a block (found through
// the block's span table, without sorting): frees come back in any order
// and splits cut long runs, and without it a heap whose cache held
// megabytes in pieces took the pool
// lock for a 1 MB buffer. Beyond HeapCacheBytes (default 8 blocks, 32 MiB:
// rpmalloc's 400-span thread cache rounded up to whole blocks) the cache
// is halved, smallest runs first, into the pool, where each block has a
// bitmap of free spans: runs coalesce there for free and first-fit serves
// run requests. A heap that takes a run from the pool also takes the
// pool's free runs shorter than it into its cache (up to three quarters of
// the bound), since heaps come to the pool only for runs their cache lacks
// and short pieces left there would otherwise never be used again, and the
// footprint would creep up by a block at a time. A block whose spans are all free is retained, up to
// RetainBlocks (default 16 blocks, counting cached dedicated runs); beyond
// that the least recently emptied is deregistered and unmapped.
// Registration and deregistration run outside the pool lock. Heap.Flush
// gives an idle heap's memory back.
//
// # Errors, double free and shutdown
//
// Allocate returns ErrSize for size <= 0 or above MaxAlloc. Deallocate
// always checks, and returns an error rather than panicking: ErrNotOwned for
// an address that is not the start of an allocation of this pool,
// ErrDoubleFree for a buffer that is not allocated (each span has an
// allocation bitmap, which its owner heap sets and clears with plain
// stores, and a bitmap of the slots freed by other goroutines and not yet
// drained, which they set with one atomic OR, so the check is exact
// unless the slot was reallocated in between; a large run has an
// allocated flag instead, which its owner heap sets and clears with plain
// stores and other goroutines clear with a CAS. A double free by the
// owner racing another goroutine's free of the same buffer is not always
// caught: for a large buffer it is a data race that the race detector
// reports; for a slot one of the two frees may return nil, and the slot
// is freed once). Pool.InUse counts allocated buffers over all heaps,
// so higher layers can assert there is no leak at shutdown; Pool.Close
// returns a *LeakError when buffers are still allocated, and keeps the
// blocks that hold them mapped and registered.
//
// Steady-state Allocate and Deallocate (and GetMR) make no Go heap
// allocation; the tests prove it with testing.AllocsPerRun.
package bemalloc
