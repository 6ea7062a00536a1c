package bemalloc

import (
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/besim/besim/verbs"
)

const (
	noSlot     = ^uint32(0)
	classLarge = -1 // a run of spans holding one allocation
	classHuge  = -2 // a dedicated run of blocks holding one allocation
	// refillBatch is how many single spans a heap takes from the pool per
	// lock acquisition when it needs a span for a size class.
	refillBatch = 4
)

// bitWords is the length of each of the two bitmaps of a span of n slots
// (span.bits, span.rbits): one bit per slot, in whole cache lines (the owner writes
// one, other goroutines the other, and spans of different owners should
// not share a line). Spans get their bitmaps when they first serve a size
// class (Heap.refill), not when their block is mapped: a block holding
// large runs or a few classes of big slots keeps none or a few words
// instead of one bit per possible 16-byte slot of every span (32 KiB a 4
// MiB block).
func bitWords(n uint32) int { return (int(n) + 511) / 512 * 8 }

// span is a run of k contiguous spans of a block: a size-class span (k = 1)
// carved into slots, or one large allocation (k spans). Span structs live in
// their block's spans array, one per possible run start, so carving and
// reusing spans never allocates; they are 128 bytes (two cache lines, and
// the array, a power of two of them, is line-aligned) so that spans owned
// by different heaps do not share cache lines.
type span struct {
	// Size-class state and the partial list's back link: the first 56
	// bytes, which share a cache line with the previous span's blk.
	magic uint64 // divMagic(size)
	// bits and rbits are the first words of two bitmaps of nbits words
	// each (at least bitWords(nslots)), the halves of one slice: bits has
	// a bit set for each allocated slot, rbits for each slot freed by
	// another goroutine and not yet drained by the owner. Only the owner
	// writes bits (Allocate sets, its own frees and the drain clear),
	// outside the race detector with plain loads and stores (ownerOr,
	// ownerAndNot in head_norace.go): an atomic OR or AND is a locked
	// instruction on x86, which waits for the stores the goroutine has
	// buffered, and on the fast paths those are the caller's stores to
	// its cold buffers (issue 18: in Figure 4's small workload with two
	// goroutines, the free's atomic AND was a fifth of the CPU time).
	// Other goroutines read bits atomically, and claim a slot they free
	// with an atomic OR on rbits (a second free of it fails there), which
	// the owner's drain clears. They are pointers rather than slices (a
	// word is reached with bitWord, without a bounds check: the slot
	// index is checked against nslots) so that the first 56 bytes still
	// hold the fields of a class span's allocation and free.
	bits, rbits *atomic.Uint64
	nbits       uint32
	nslots      uint32
	free        uint32 // head of the intrusive free list, noSlot if empty
	bump        uint32 // slots [bump, nslots) were never handed out since init
	used        uint32 // slots allocated and not yet freed back to the owner
	prev        *span  // heap partial list (the cache's lists are singly linked)
	// Bytes 56 to 119: what a large run's allocation, free (own or
	// cross-heap), deferred drain, heap-cache push and pop, split and
	// coalescing read and write. The spans array has pointers and is over 512 bytes, so the
	// runtime puts an 8-byte type header before it and its elements start
	// 8 bytes past a 64-byte boundary (TestSpanLayout checks where): this
	// range is one cache line, and the large path touches one line of the
	// span.
	base  uintptr
	owner atomic.Pointer[Heap]
	next  *span // heap partial list or heap cache
	// cachedBy is the address of the heap whose cache holds the run, 0
	// when the run is in no heap cache. Only that heap sets and clears it
	// (pushCache, popCache, coalesce), with ownerSetCachedBy (a plain store
	// outside the race detector, see head); coalesce reads it atomically
	// on the neighbours of its runs, which may be other heaps' runs. It is
	// only compared with a heap's address, never dereferenced, so it is a
	// uintptr: storing it needs no GC write barrier check (a pool's heaps
	// live as long as the pool, in Pool.heaps, and Go does not move them).
	cachedBy uintptr
	// dnext links a freed large run on its owner's deferred-free list
	// (Heap.pushDeferredRun): the address pushed before it, written by the
	// goroutine that frees the run before its CAS, read by the owner after
	// taking the list.
	dnext uintptr
	class int32
	size  uint32 // slot size (class span) or run bytes (large)
	// state is 1 while a large or huge run is allocated. Frees from
	// other goroutines, Find and the huge path access it atomically
	// (sync/atomic functions); the owner heap sets it on allocation and
	// clears it on its own frees with plain loads and stores, which on x86
	// are not locked instructions, so that its fast path does not wait
	// for the stores the caller just made to the cold buffer. Those
	// accesses are ordered with every other goroutine's by the handover of
	// the Buf (or the deferred-free list), so they do not race unless the
	// program frees a buffer twice concurrently.
	state uint32
	k     uint32 // spans in the run
	// blk is the block the span is in; the keys of a buffer are its
	// block's (blk.lkey, blk.rkey: a few block structs stay in cache,
	// where a copy here took 8 bytes of the line).
	blk *block
	_   [8]byte
}

// bitWord returns word w of the bitmap that starts at b (span.bits,
// span.rbits); w must be below span.nbits.
func bitWord(b *atomic.Uint64, w uint64) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Add(unsafe.Pointer(b), w*8))
}

// isCachedBy reports whether s is a run in h's cache. It may be called on
// any span; only h makes it true.
func (s *span) isCachedBy(h *Heap) bool {
	return atomic.LoadUintptr(&s.cachedBy) == uintptr(unsafe.Pointer(h))
}

// block is one mapping registered as one MR: a BlockSize block subdivided
// into spans, or a dedicated run of whole blocks for one huge allocation.
// It plays the role of rpmalloc's block header, kept in Go memory (found
// through the radix) rather than at the block base so that all of the block
// stays usable and the MR, a Go value, stays visible to the GC.
type block struct {
	// What every free and drain reads first (radix lookup, then the span
	// table) and allocation reads for the Buf, at the start of the struct.
	base  uintptr
	heads []head // span index -> run that covers it
	huge  bool
	lkey  uint32
	rkey  uint32
	spans []span
	mr    verbs.MR
	size  uintptr
	m     mapping
	// Pool.mu:
	free  []uint64 // spans free at pool level
	nfree int
	list  *blockList
	next  *block
	prev  *block
	idx   int // in Pool.blocks
}

// headOf returns the run that covers addr, an address that the radix maps
// to b, a block of spans (not a dedicated run): its span table entry,
// without a bounds check (the address is inside the block).
func (b *block) headOf(addr uintptr, spanShift uint) *span {
	i := (addr - b.base) >> (spanShift & 63)
	return (*head)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(b.heads)), i*unsafe.Sizeof(head{}))).Load()
}

type blockList struct {
	head, tail *block
	n          int
}

func (l *blockList) pushFront(b *block) {
	b.list, b.prev, b.next = l, nil, l.head
	if l.head != nil {
		l.head.prev = b
	} else {
		l.tail = b
	}
	l.head = b
	l.n++
}

func (l *blockList) remove(b *block) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		l.head = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		l.tail = b.prev
	}
	b.list, b.next, b.prev = nil, nil, nil
	l.n--
}

// Pool is a registered memory pool on one protection domain (paper §5.2,
// Figure 3's RdmaMemoryPool). Its methods are safe for concurrent use;
// Allocate/Deallocate on the Pool go through one shared heap behind a
// mutex, while each thread-like goroutine should own a Heap (NewHeap) for
// lock-free allocation.
type Pool struct {
	pd  verbs.PD
	cfg Config

	// Shifts are used as x >> (shift & 63) on hot paths: the mask (a
	// no-op, shifts are below 64) spares the compiler's code for shifts
	// of 64 or more.
	blockShift, spanShift uint
	nspans                int
	maxSmall              int // largest class size: SpanSize/2
	maxRun                int // largest run of spans: min(BlockSize, MaxAlloc)
	classSize             []uint32
	classSlots            []uint32
	classMagic            []uint64
	heapCacheSpans        int
	retain                int

	radix  radix
	closed atomic.Bool

	mu       sync.Mutex
	partial  blockList // blocks with some spans free at pool level
	empty    blockList // blocks with every span free (retained)
	blocks   []*block  // every live block
	huge     []*block  // free dedicated runs (retained)
	hugeHeld int       // blocks in huge
	heaps    []*Heap
	spare    []*Heap // closed heaps, reused (adopted) by NewHeap
	lastErr  error

	// heapVisits counts the times a heap took Pool.mu to take runs from
	// the pool or give its cache back (takeRun, flushCache): the pool-level
	// traffic the heap caches exist to avoid (tests read it).
	heapVisits atomic.Int64

	sharedMu sync.Mutex
	shared   *Heap

	footprint, peak     atomic.Int64
	regs, deregs        atomic.Int64
	regErrs, deregErrs  atomic.Int64
	blocksLive          atomic.Int64
	hugeLive, hugeBytes atomic.Int64
	// Frees made through Pool.Deallocate, which has no heap to count them.
	poolFreed, poolFreedBytes atomic.Int64
}

// New creates a pool whose blocks are registered on pd (Figure 3's Init with
// a device context). No memory is mapped until the first allocation unless
// cfg.InitialBlocks asks for it.
func New(pd verbs.PD, cfg Config) (*Pool, error) {
	if pd == nil {
		return nil, errors.New("bemalloc: nil PD")
	}
	cfg, err := cfg.normalize()
	if err != nil {
		return nil, err
	}
	p := &Pool{
		pd:         pd,
		cfg:        cfg,
		blockShift: uint(bits.TrailingZeros(uint(cfg.BlockSize))),
		spanShift:  uint(bits.TrailingZeros(uint(cfg.SpanSize))),
		nspans:     cfg.BlockSize / cfg.SpanSize,
		maxSmall:   cfg.SpanSize / 2,
		maxRun:     min(cfg.BlockSize, cfg.MaxAlloc),
		retain:     max(cfg.RetainBlocks, 0),
	}
	p.heapCacheSpans = max(cfg.HeapCacheBytes, 0) / cfg.SpanSize
	p.radix = newRadix(p.blockShift)
	n := numClasses(p.spanShift)
	p.classSize = make([]uint32, n)
	p.classSlots = make([]uint32, n)
	p.classMagic = make([]uint64, n)
	for c := range n {
		sz := classSize(c)
		p.classSize[c] = uint32(sz)
		p.classSlots[c] = uint32(cfg.SpanSize / sz)
		p.classMagic[c] = divMagic(uint64(sz))
	}
	p.shared = p.newHeapLocked()
	for range cfg.InitialBlocks {
		b, err := p.newBlock(1, false)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.mu.Lock()
		p.addBlockLocked(b)
		p.mu.Unlock()
	}
	return p, nil
}

// Config returns the pool's configuration with defaults filled in.
func (p *Pool) Config() Config { return p.cfg }

// Allocate returns a registered buffer of size bytes from the pool's shared
// heap (Figure 3's Allocate). Hot paths should use a Heap instead.
func (p *Pool) Allocate(size int) (Buf, error) {
	p.sharedMu.Lock()
	b, err := p.shared.Allocate(size)
	p.sharedMu.Unlock()
	return b, err
}

// Deallocate returns b to the pool (Figure 3's Deallocate). It may be called
// from any goroutine, for a buffer from any heap of this pool; it takes no
// lock (the buffer goes to its owner heap's deferred-free list).
func (p *Pool) Deallocate(b Buf) error { return p.free(b.addr, nil) }

// GetMR returns the memory region that holds b, or nil if b is not from this
// pool (Figure 3's GetMR). It is O(1): blocks are BlockSize-aligned, so the
// block index addr>>log2(BlockSize) selects the block in a three-level radix.
func (p *Pool) GetMR(b Buf) verbs.MR { return p.MRAt(b.addr) }

// MRAt returns the memory region that contains addr (any byte of a pool
// block, for instance a fragment p+S of a large buffer), or nil.
func (p *Pool) MRAt(addr uintptr) verbs.MR {
	if blk := p.radix.lookup(addr); blk != nil {
		return blk.mr
	}
	return nil
}

// Find returns the live allocation that contains addr, with Len set to its
// capacity (slot size or run length), for code that holds only an address
// or a []byte into the pool.
func (p *Pool) Find(addr uintptr) (Buf, bool) {
	blk := p.radix.lookup(addr)
	if blk == nil {
		return Buf{}, false
	}
	if blk.huge {
		if atomic.LoadUint32(&blk.spans[0].state) == 1 {
			return Buf{addr: blk.base, n: int(blk.size), lkey: blk.lkey, rkey: blk.rkey}, true
		}
		return Buf{}, false
	}
	s := blk.headOf(addr, p.spanShift)
	if s == nil {
		return Buf{}, false
	}
	if s.class == classLarge {
		if atomic.LoadUint32(&s.state) == 1 && addr < s.base+uintptr(s.size) {
			return Buf{addr: s.base, n: int(s.size), lkey: blk.lkey, rkey: blk.rkey}, true
		}
		return Buf{}, false
	}
	idx, _ := bits.Mul64(uint64(addr-s.base), s.magic)
	if w, m := idx>>6, uint64(1)<<(idx&63); idx >= uint64(s.nslots) || bitWord(s.bits, w).Load()&m == 0 || bitWord(s.rbits, w).Load()&m != 0 {
		return Buf{}, false
	}
	return Buf{addr: s.base + uintptr(idx)*uintptr(s.size), n: int(s.size), lkey: blk.lkey, rkey: blk.rkey}, true
}

// free is the deallocation path shared by Heap.Deallocate (h = the caller's
// heap) and Pool.Deallocate (h = nil). It is lock-free: a buffer owned by h
// goes straight back to its span; any other goes onto its owner's
// deferred-free list.
func (p *Pool) free(addr uintptr, h *Heap) error {
	if p.closed.Load() {
		return ErrClosed
	}
	blk := p.radix.lookup(addr)
	if blk == nil {
		return ErrNotOwned
	}
	if blk.huge {
		return p.freeHuge(blk, addr)
	}
	s := blk.headOf(addr, p.spanShift)
	if s == nil {
		return ErrNotOwned
	}
	if s.class < 0 {
		if addr != s.base {
			return ErrNotOwned
		}
		o := s.owner.Load()
		if o != h {
			if !atomic.CompareAndSwapUint32(&s.state, 1, 0) {
				return ErrDoubleFree
			}
			p.countFree(h, s.size)
			o.pushDeferredRun(s)
			return nil
		}
		// The owner's free: plain accesses (see span.state).
		if s.state != 1 {
			return ErrDoubleFree
		}
		s.state = 0
		h.live.add(-1)
		h.liveBytes.add(-int64(s.size))
		h.pushCache(s) // cacheRun, inlined
		if h.cached > p.heapCacheSpans {
			h.flushCache(p.heapCacheSpans / 2)
		}
		return nil
	}
	off := uint64(addr - s.base)
	idx, _ := bits.Mul64(off, s.magic)
	if idx >= uint64(s.nslots) || idx*uint64(s.size) != off {
		return ErrNotOwned
	}
	w, m := idx>>6, uint64(1)<<(idx&63)
	o := s.owner.Load()
	if o != h {
		// Claim the slot in the remote-free bitmap, then check that it is
		// allocated, in that order: the owner's drain clears the
		// allocation bit before the remote-free bit, so a free that
		// claims a slot just drained sees it unallocated.
		r := bitWord(s.rbits, w)
		if r.Or(m)&m != 0 {
			return ErrDoubleFree // freed by another goroutine, not yet drained
		}
		if bitWord(s.bits, w).Load()&m == 0 {
			r.And(^m)
			return ErrDoubleFree
		}
		p.countFree(h, s.size)
		o.pushDeferred(addr)
		return nil
	}
	// The owner's free: plain accesses to the allocation bitmap (see
	// span.bits).
	a := bitWord(s.bits, w)
	if ownerLoad(a)&m == 0 || bitWord(s.rbits, w).Load()&m != 0 {
		return ErrDoubleFree
	}
	ownerAndNot(a, m)
	h.live.add(-1)
	h.liveBytes.add(-int64(s.size))
	// freeSlot, with the common case (s neither full before nor empty
	// after) inlined: the slot's address is addr.
	*(*uint32)(ptrAt(addr)) = s.free
	s.free = uint32(idx)
	if u := s.used; u != s.nslots && u != 1 {
		s.used = u - 1
		return nil
	}
	h.slotFreed(s)
	return nil
}

// countFree counts a free of a size-byte buffer on the heap it was made
// through (owner-written counters, no locked instruction), or at pool level
// for Pool.Deallocate.
func (p *Pool) countFree(h *Heap, size uint32) {
	if h != nil {
		h.live.add(-1)
		h.liveBytes.add(-int64(size))
		return
	}
	p.poolFreed.Add(1)
	p.poolFreedBytes.Add(int64(size))
}

// newBlock maps n contiguous, BlockSize-aligned blocks and registers them as
// one MR: rpmalloc's span-map callback turned into ibv_reg_mr. It runs
// without Pool.mu (registration can take milliseconds on a real NIC).
func (p *Pool) newBlock(n int, huge bool) (*block, error) {
	size := uintptr(n) << p.blockShift
	m, err := mapAligned(size, uintptr(1)<<p.blockShift, p.cfg.HugePages)
	if err != nil {
		return nil, fmt.Errorf("bemalloc: mmap %d bytes: %w", size, err)
	}
	if m.addr+size > 1<<addrBits {
		m.unmap()
		return nil, fmt.Errorf("bemalloc: mmap returned %#x, beyond the %d-bit address space the pool indexes", m.addr, addrBits)
	}
	mr, err := p.pd.RegMR(m.addr, int(size), p.cfg.Access)
	if err != nil {
		m.unmap()
		p.regErrs.Add(1)
		return nil, fmt.Errorf("bemalloc: register %d-byte block: %w", size, err)
	}
	p.regs.Add(1)
	p.blocksLive.Add(int64(n))
	fp := p.footprint.Add(int64(size))
	for {
		pk := p.peak.Load()
		if fp <= pk || p.peak.CompareAndSwap(pk, fp) {
			break
		}
	}
	b := &block{base: m.addr, size: size, m: m, mr: mr, lkey: mr.LKey(), rkey: mr.RKey(), huge: huge}
	if huge {
		b.spans = make([]span, 1)
		s := &b.spans[0]
		s.base, s.size, s.class, s.blk = b.base, uint32(min(size, 1<<31)), classHuge, b
		return b, nil
	}
	b.spans = make([]span, p.nspans)
	b.heads = make([]head, p.nspans)
	b.free = make([]uint64, (p.nspans+63)/64)
	for i := range p.nspans {
		s := &b.spans[i]
		s.base = b.base + uintptr(i)<<p.spanShift
		s.blk, s.free = b, noSlot
		b.free[i>>6] |= 1 << (i & 63)
	}
	b.nfree = p.nspans
	return b, nil
}

// addBlockLocked publishes a new block: radix entries, block list.
func (p *Pool) addBlockLocked(b *block) {
	b.idx = len(p.blocks)
	p.blocks = append(p.blocks, b)
	p.radix.set(b.base, b.size, b)
	if !b.huge {
		p.empty.pushFront(b)
	}
}

// unlinkBlockLocked removes b from every pool structure; the caller releases
// it once Pool.mu is dropped.
func (p *Pool) unlinkBlockLocked(b *block) {
	if b.list != nil {
		b.list.remove(b)
	}
	p.radix.set(b.base, b.size, nil)
	last := p.blocks[len(p.blocks)-1]
	p.blocks[b.idx], last.idx = last, b.idx
	p.blocks[len(p.blocks)-1] = nil
	p.blocks = p.blocks[:len(p.blocks)-1]
}

// releaseBlocks deregisters and unmaps a chain of unlinked blocks (linked
// by next): rpmalloc's span-unmap callback turned into ibv_dereg_mr.
func (p *Pool) releaseBlocks(chain *block) error {
	var errs []error
	for b := chain; b != nil; {
		next := b.next
		b.next = nil
		if err := b.mr.Dereg(); err != nil {
			p.deregErrs.Add(1)
			errs = append(errs, fmt.Errorf("bemalloc: deregister block %#x: %w", b.base, err))
		} else {
			p.deregs.Add(1)
		}
		if err := b.m.unmap(); err != nil {
			errs = append(errs, fmt.Errorf("bemalloc: munmap block %#x: %w", b.base, err))
		}
		p.footprint.Add(-int64(b.size))
		p.blocksLive.Add(-int64(b.size >> p.blockShift))
		b = next
	}
	err := errors.Join(errs...)
	if err != nil {
		p.mu.Lock()
		p.lastErr = err
		p.mu.Unlock()
	}
	return err
}

// relistLocked moves b to the list its free-span count calls for.
func (p *Pool) relistLocked(b *block) {
	var want *blockList
	switch b.nfree {
	case 0:
	case p.nspans:
		want = &p.empty
	default:
		want = &p.partial
	}
	if b.list == want {
		return
	}
	if b.list != nil {
		b.list.remove(b)
	}
	if want != nil {
		want.pushFront(b)
	}
}

// findRun returns the first index of k consecutive set bits among the
// first n bits of bm, or -1.
func findRun(bm []uint64, n, k int) int {
	if n <= 64 {
		// One word: x keeps bit i iff bits i..i+k-1 are all set, computed
		// by doubling the run length checked (log k shift-ands).
		x, have := bm[0], 1
		for have < k {
			step := min(have, k-have)
			x &= x >> step
			have += step
		}
		if x == 0 {
			return -1
		}
		return bits.TrailingZeros64(x)
	}
	run := 0
	for i := 0; i < n; i++ {
		w := bm[i>>6]
		if w>>(i&63) == 0 {
			run = 0
			i |= 63
			continue
		}
		if w>>(i&63)&1 != 0 {
			if run++; run == k {
				return i - k + 1
			}
		} else {
			run = 0
		}
	}
	return -1
}

// carveLocked takes a run of k spans from a partly used block (first fit),
// else from an empty one, else returns nil.
func (p *Pool) carveLocked(k int) *span {
	for b := p.partial.head; b != nil; b = b.next {
		if b.nfree < k {
			continue
		}
		if i := findRun(b.free, p.nspans, k); i >= 0 {
			return p.carveAtLocked(b, i, k)
		}
	}
	if b := p.empty.head; b != nil {
		return p.carveAtLocked(b, 0, k)
	}
	return nil
}

func (p *Pool) carveAtLocked(b *block, i, k int) *span {
	for j := i; j < i+k; j++ {
		b.free[j>>6] &^= 1 << (j & 63)
	}
	b.nfree -= k
	p.relistLocked(b)
	s := &b.spans[i]
	s.k = uint32(k)
	for j := i; j < i+k; j++ {
		b.heads[j].Store(s)
	}
	return s
}

// giveLocked returns a run to its block at pool level.
func (p *Pool) giveLocked(s *span) {
	b := s.blk
	i := int((s.base - b.base) >> p.spanShift)
	for j := i; j < i+int(s.k); j++ {
		b.free[j>>6] |= 1 << (j & 63)
	}
	b.nfree += int(s.k)
	p.relistLocked(b)
}

// trimLocked unlinks retained blocks beyond RetainBlocks, dedicated runs
// first, then the least recently emptied blocks, and returns them chained
// for releaseBlocks.
func (p *Pool) trimLocked() *block {
	var chain *block
	for p.empty.n+p.hugeHeld > p.retain {
		var b *block
		if len(p.huge) > 0 {
			b = p.huge[0]
			copy(p.huge, p.huge[1:])
			p.huge[len(p.huge)-1] = nil
			p.huge = p.huge[:len(p.huge)-1]
			p.hugeHeld -= int(b.size >> p.blockShift)
		} else {
			b = p.empty.tail
		}
		p.unlinkBlockLocked(b)
		b.next = chain
		chain = b
	}
	return chain
}

// takeRun returns a run of k spans for heap h, mapping and registering a
// new block when no block at pool level has room. For single spans it also
// moves up to refillBatch-1 more into h's cache, to amortize the lock; for
// runs it moves the pool's shorter free runs there (takeFragmentsLocked).
func (p *Pool) takeRun(h *Heap, k int) (*span, error) {
	p.heapVisits.Add(1)
	p.mu.Lock()
	for {
		if p.closed.Load() {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		if s := p.carveLocked(k); s != nil {
			if k == 1 {
				for n := 1; n < refillBatch && h.cached < p.heapCacheSpans && p.partial.head != nil; n++ {
					h.pushCache(p.carveLocked(1))
				}
			} else {
				p.takeFragmentsLocked(h, k)
			}
			p.mu.Unlock()
			return s, nil
		}
		p.mu.Unlock()
		b, err := p.newBlock(1, false)
		if err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.addBlockLocked(b)
	}
}

// takeFragmentsLocked moves the pool's free runs shorter than k into h's
// cache, until the cache holds three quarters of its bound. A heap visits
// the pool only when its cache has no run long enough, so short runs given
// back to the pool (flushCache returns the smallest first) would otherwise
// stay there unused while their heap keeps splitting its long cached runs
// for short requests: with two heaps in Figure 4's large workload the pool
// accumulated about a thousand free spans in pieces, no run long enough
// for the next miss, and the footprint grew by a registered block every
// few hundred thousand operations (148 MiB after 4M operations per heap).
// In the heap cache the pieces serve short requests (exact fit first,
// then the smallest larger run) and coalesce with the heap's runs.
func (p *Pool) takeFragmentsLocked(h *Heap, k int) {
	limit := p.heapCacheSpans * 3 / 4
	for b := p.partial.head; b != nil && h.cached < limit; {
		next := b.next
		for i := 0; i < p.nspans && h.cached < limit; {
			if b.free[i>>6]>>(i&63)&1 == 0 {
				i++
				continue
			}
			j := i
			for j < p.nspans && b.free[j>>6]>>(j&63)&1 != 0 {
				j++
			}
			if j-i < k {
				h.pushCache(p.carveAtLocked(b, i, j-i))
			}
			i = j
		}
		b = next
	}
}

// giveRuns returns runs to the pool and releases blocks beyond retention.
func (p *Pool) giveRuns(runs ...*span) {
	p.mu.Lock()
	for _, s := range runs {
		p.giveLocked(s)
	}
	chain := p.trimLocked()
	p.mu.Unlock()
	p.releaseBlocks(chain)
}

// allocHuge serves a request above BlockSize with a dedicated run of
// contiguous blocks, registered as one MR and cached at pool level when
// freed.
func (p *Pool) allocHuge(size int) (Buf, error) {
	n := (size + 1<<p.blockShift - 1) >> p.blockShift
	p.mu.Lock()
	var blk *block
	for i, b := range p.huge {
		if int(b.size>>p.blockShift) == n {
			blk = b
			copy(p.huge[i:], p.huge[i+1:])
			p.huge[len(p.huge)-1] = nil
			p.huge = p.huge[:len(p.huge)-1]
			p.hugeHeld -= n
			break
		}
	}
	p.mu.Unlock()
	if blk == nil {
		var err error
		if blk, err = p.newBlock(n, true); err != nil {
			return Buf{}, err
		}
		p.mu.Lock()
		if p.closed.Load() {
			p.mu.Unlock()
			blk.next = nil
			p.releaseBlocks(blk)
			return Buf{}, ErrClosed
		}
		p.addBlockLocked(blk)
		p.mu.Unlock()
	}
	atomic.StoreUint32(&blk.spans[0].state, 1)
	p.hugeLive.Add(1)
	p.hugeBytes.Add(int64(blk.size))
	return Buf{addr: blk.base, n: size, lkey: blk.lkey, rkey: blk.rkey}, nil
}

func (p *Pool) freeHuge(blk *block, addr uintptr) error {
	if addr != blk.base {
		return ErrNotOwned
	}
	if !atomic.CompareAndSwapUint32(&blk.spans[0].state, 1, 0) {
		return ErrDoubleFree
	}
	p.hugeLive.Add(-1)
	p.hugeBytes.Add(-int64(blk.size))
	p.mu.Lock()
	p.huge = append(p.huge, blk)
	p.hugeHeld += int(blk.size >> p.blockShift)
	chain := p.trimLocked()
	p.mu.Unlock()
	p.releaseBlocks(chain)
	return nil
}

// blockLiveLocked reports whether b holds an allocated buffer. Pool must be
// quiescent (Close).
func (p *Pool) blockLiveLocked(b *block) bool {
	if b.huge {
		return atomic.LoadUint32(&b.spans[0].state) == 1
	}
	for i := 0; i < p.nspans; {
		if b.free[i>>6]>>(i&63)&1 != 0 {
			i++
			continue
		}
		s := b.heads[i].Load()
		switch {
		case s.class == classLarge:
			if atomic.LoadUint32(&s.state) == 1 {
				return true
			}
		case s.used > 0:
			return true
		}
		i += int(max(s.k, 1))
	}
	return false
}

// Stats is a snapshot of the pool's metrics.
type Stats struct {
	// Footprint is the registered memory: bytes mapped and registered now
	// (paper Figure 5). PeakFootprint is its maximum so far (Figure 4's
	// peak memory).
	Footprint, PeakFootprint int64
	// Registrations and Deregistrations count successful RegMR and Dereg
	// calls; a steady state does neither.
	Registrations, Deregistrations int64
	// RegErrors and DeregErrors count failed calls.
	RegErrors, DeregErrors int64
	// BlocksLive is the number of BlockSize blocks mapped and registered
	// (a dedicated run of n blocks counts n). BlocksRetained of them are
	// empty and cached at pool level.
	BlocksLive, BlocksRetained int64
	// InUse is the number of allocated buffers and InUseBytes their
	// capacity (slot size or run length), over all heaps.
	InUse, InUseBytes int64
	// Heaps is the number of heaps created (open or closed).
	Heaps int
}

// Stats returns the current metrics. It is safe to call concurrently with
// allocation; the in-use counts are exact when no allocation is in flight.
func (p *Pool) Stats() Stats {
	st := Stats{
		Footprint:       p.footprint.Load(),
		PeakFootprint:   p.peak.Load(),
		Registrations:   p.regs.Load(),
		Deregistrations: p.deregs.Load(),
		RegErrors:       p.regErrs.Load(),
		DeregErrors:     p.deregErrs.Load(),
		BlocksLive:      p.blocksLive.Load(),
	}
	p.mu.Lock()
	st.BlocksRetained = int64(p.empty.n + p.hugeHeld)
	st.Heaps = len(p.heaps)
	st.InUse, st.InUseBytes = p.inUseLocked()
	p.mu.Unlock()
	return st
}

func (p *Pool) inUseLocked() (n, bytes int64) {
	// The pool-level frees first: a buffer is counted live before any
	// goroutine can free it, so reading them first never counts a free
	// through Pool.Deallocate whose allocation is not yet seen. A free
	// through another heap may be seen before its allocation while both
	// are in flight (the heaps are read one after the other), which is
	// why the counts are exact only when no allocation is in flight.
	n, bytes = -p.poolFreed.Load(), -p.poolFreedBytes.Load()
	for _, h := range p.heaps {
		n += h.live.load()
		bytes += h.liveBytes.load()
	}
	return n + p.hugeLive.Load(), bytes + p.hugeBytes.Load()
}

// InUse is the number of buffers currently allocated from the pool, over
// all heaps. A buffer freed from another goroutine stops counting at once,
// before its owner drains it. Higher layers assert InUse() == 0 at shutdown.
func (p *Pool) InUse() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, _ := p.inUseLocked()
	return n
}

// Close releases the pool: every heap's deferred frees are drained, then
// every block without a live buffer is deregistered and unmapped. Buffers
// still allocated are reported as a *LeakError and the blocks holding them
// stay mapped and registered. Close must not run concurrently with
// allocation or deallocation; heaps must not be used afterwards (their
// calls return ErrClosed). The PD is not deallocated.
func (p *Pool) Close() error {
	p.sharedMu.Lock()
	defer p.sharedMu.Unlock()
	p.mu.Lock()
	if p.closed.Load() {
		p.mu.Unlock()
		return ErrClosed
	}
	heaps := append([]*Heap(nil), p.heaps...)
	p.mu.Unlock()
	for _, h := range heaps {
		h.drain()
	}
	p.mu.Lock()
	p.closed.Store(true)
	var leak LeakError
	leak.Buffers, leak.Bytes = p.inUseLocked()
	var chain *block
	for _, b := range append([]*block(nil), p.blocks...) {
		if p.blockLiveLocked(b) {
			leak.Blocks++
			continue
		}
		p.unlinkBlockLocked(b)
		b.next = chain
		chain = b
	}
	p.huge, p.hugeHeld = nil, 0
	prev := p.lastErr
	p.mu.Unlock()
	err := p.releaseBlocks(chain)
	if prev != nil {
		err = errors.Join(prev, err)
	}
	if leak.Buffers > 0 {
		return errors.Join(&leak, err)
	}
	return err
}
