package bemalloc

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/besim/besim/verbs"
)

// Defaults of Config.
const (
	DefaultBlockSize    = 4 << 20  // B in the paper: the registration unit
	DefaultSpanSize     = 64 << 10 // rpmalloc's span: the unit a size class owns
	DefaultMaxAlloc     = 1 << 30
	DefaultRetainBlocks = 16 // 64 MiB of empty registered blocks kept at pool level
	// DefaultHeapCacheBlocks is the default heap cache, in blocks: 8 (32
	// MiB, 512 spans of 64 KiB) per heap. rpmalloc's thread cache holds up
	// to 400 single spans (MAX_THREAD_SPAN_CACHE, 25 MiB of 64 KiB spans)
	// plus up to 100-k/2 runs of each span count k; bemalloc bounds its
	// cache in bytes and takes the whole number of blocks at or above
	// rpmalloc's 400 spans. Below it, Figure 4's large allocations (64 KB-1
	// MB) overflow the cache and come back from the pool under its lock:
	// with coalescing, 1 to 8 heaps visit the pool about 28 times per 1000
	// operations with 2-block caches, 0.5-0.8 with 400 spans and under 0.1
	// with 8 blocks (TestFigure4LargeStaysInHeapCaches).
	DefaultHeapCacheBlocks = 8
	DefaultAccess          = verbs.AccessLocalWrite | verbs.AccessRemoteWrite | verbs.AccessRemoteRead

	maxMaxAlloc      = 1 << 31 // an SGE length is 32 bits; IB messages are at most 2 GiB
	minBlockSize     = 64 << 10
	maxBlockSize     = 1 << 30 // span offsets stay below 2^32 (divMagic)
	minSpanSize      = 4 << 10
	maxSpansPerBlock = 1 << 14
)

// Config configures a Pool. The zero value selects every default.
type Config struct {
	// BlockSize is the unit obtained from the OS with mmap and registered
	// with one RegMR: a power of two in [64 KiB, 1 GiB]. Blocks are aligned
	// to their size, which is what makes GetMR O(1). Default 4 MiB.
	BlockSize int
	// SpanSize is the unit a size class takes from a block (rpmalloc's
	// span): a power of two in [4 KiB, BlockSize], at most 16384 per block.
	// Requests up to SpanSize/2 are slots of a size class; larger ones up to
	// BlockSize are runs of whole spans. Default 64 KiB (or BlockSize if
	// smaller).
	SpanSize int
	// MaxAlloc is the largest request, at most 2 GiB. Requests above
	// BlockSize get a dedicated run of contiguous blocks registered as one
	// MR. Default 1 GiB.
	MaxAlloc int
	// Access are the MR access flags. Default local write, remote write and
	// remote read (the receiver of a large message allocates the RDMA WRITE
	// destination from the pool, paper §5.3.2).
	Access verbs.Access
	// RetainBlocks is how many empty blocks (counting a cached dedicated
	// run of n blocks as n) stay mapped and registered in the pool-level
	// cache; emptier beyond it are deregistered and unmapped. 0 selects
	// DefaultRetainBlocks; a negative value retains none.
	RetainBlocks int
	// HeapCacheBytes bounds the free spans each Heap keeps for itself
	// before returning them to the pool (rpmalloc's thread cache). 0 selects
	// DefaultHeapCacheBlocks BlockSizes; a negative value disables the heap
	// cache.
	HeapCacheBytes int
	// InitialBlocks blocks are mapped and registered by New, so the first
	// allocations do not pay for registration.
	InitialBlocks int
	// HugePages advises the kernel to back blocks with transparent huge
	// pages (madvise MADV_HUGEPAGE; rpmalloc's enable_huge_pages option).
	// Blocks are BlockSize-aligned, so a 4 MiB block is two 2 MiB pages:
	// fewer TLB misses when large buffers are touched across many blocks
	// (Figure 4's large allocations), and on a real NIC fewer translation
	// entries per MR. It costs resident memory: the first touch of a
	// 2 MiB page makes all of it resident, where 4 KiB pages make resident
	// only what is touched, so a simulation with many mostly idle pools
	// (one per simulated host) keeps it off. A hint only: it has no effect
	// where THP is disabled or unavailable. Default off.
	HugePages bool
}

// Errors returned by the pool.
var (
	// ErrSize: the requested size is <= 0 or above Config.MaxAlloc.
	ErrSize = errors.New("bemalloc: invalid allocation size")
	// ErrDoubleFree: the buffer is not currently allocated (already
	// deallocated). Detection is exact unless the slot was handed out again
	// in between, in which case the second free frees the new owner's
	// buffer, as with any allocator.
	ErrDoubleFree = errors.New("bemalloc: buffer is not allocated (double free)")
	// ErrNotOwned: the address is not the start of an allocation from this
	// pool (a foreign buffer, an interior pointer or the zero Buf).
	ErrNotOwned = errors.New("bemalloc: address is not an allocation of this pool")
	// ErrClosed: the pool (or heap) has been closed.
	ErrClosed = errors.New("bemalloc: pool closed")
)

// LeakError is returned by Pool.Close when buffers are still allocated. The
// blocks that hold them stay mapped and registered (so the buffers remain
// valid memory and a PD with live MRs cannot be deallocated silently);
// everything else is released.
type LeakError struct {
	Buffers int64 // buffers still allocated
	Bytes   int64 // their capacity in bytes
	Blocks  int   // blocks kept mapped and registered because of them
}

func (e *LeakError) Error() string {
	return fmt.Sprintf("bemalloc: pool closed with %d buffers (%d bytes) still allocated; %d blocks kept registered",
		e.Buffers, e.Bytes, e.Blocks)
}

// normalize fills defaults and validates.
func (c Config) normalize() (Config, error) {
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	if c.BlockSize < minBlockSize || c.BlockSize > maxBlockSize || bits.OnesCount(uint(c.BlockSize)) != 1 {
		return c, fmt.Errorf("bemalloc: BlockSize %d is not a power of two in [%d, %d]", c.BlockSize, minBlockSize, maxBlockSize)
	}
	if c.SpanSize == 0 {
		c.SpanSize = min(DefaultSpanSize, c.BlockSize)
	}
	if c.SpanSize < minSpanSize || c.SpanSize > c.BlockSize || bits.OnesCount(uint(c.SpanSize)) != 1 ||
		c.BlockSize/c.SpanSize > maxSpansPerBlock {
		return c, fmt.Errorf("bemalloc: SpanSize %d is not a power of two in [%d, BlockSize] with at most %d spans per block",
			c.SpanSize, minSpanSize, maxSpansPerBlock)
	}
	if c.MaxAlloc == 0 {
		c.MaxAlloc = DefaultMaxAlloc
	}
	if c.MaxAlloc < 0 || c.MaxAlloc > maxMaxAlloc {
		return c, fmt.Errorf("bemalloc: MaxAlloc %d is not in (0, %d]", c.MaxAlloc, maxMaxAlloc)
	}
	if c.Access == 0 {
		c.Access = DefaultAccess
	}
	switch {
	case c.RetainBlocks == 0:
		c.RetainBlocks = DefaultRetainBlocks
	case c.RetainBlocks < 0:
		c.RetainBlocks = -1
	}
	switch {
	case c.HeapCacheBytes == 0:
		c.HeapCacheBytes = DefaultHeapCacheBlocks * c.BlockSize
	case c.HeapCacheBytes < 0:
		c.HeapCacheBytes = -1
	}
	if c.InitialBlocks < 0 {
		return c, fmt.Errorf("bemalloc: InitialBlocks %d < 0", c.InitialBlocks)
	}
	return c, nil
}
