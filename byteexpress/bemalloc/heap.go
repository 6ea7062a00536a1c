package bemalloc

import (
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// Heap is a thread-local heap, the stand-in for one of rpmalloc's
// per-thread heaps: Go has no thread identity, so a goroutine that plays a
// thread (an I/O thread, an application worker) owns a Heap explicitly.
// Allocate and Deallocate take no lock on the fast path. A Heap is not safe
// for concurrent use; any goroutine may free a Heap's buffers, through its
// own Heap or through Pool.Deallocate: those frees go onto this heap's
// lock-free deferred-free list, which the owner drains on its next
// Allocate.
type Heap struct {
	_ [64]byte
	// Written by other goroutines (frees of this heap's buffers) and read
	// by the owner, on a line of its own.
	deferred atomic.Uintptr // Treiber stack of freed addresses; the link is in the slot, or span.dnext for a large run
	_        [56]byte
	// Written by the owner only (read by Stats): the heap's allocations
	// minus the frees made through it, of its own buffers and of other
	// heaps' (a cross-thread free counts on the freeing heap, so that it
	// writes no counter on the owner's lines). Their sum over the heaps,
	// less the frees made through Pool.Deallocate, is the pool's in-use
	// count.
	live      ownCount
	liveBytes ownCount
	pool      *Pool
	partial   []*span // per size class: spans with free slots; allocation takes the head
	cache     []*span // per span count k: free runs of k spans (LIFO)
	cached    int     // spans in cache
	scratch   []*span // coalesce's buffer: room for every cached run
	closed    bool
	_         [64]byte
}

// NewHeap returns a heap for one thread-like goroutine. A closed heap is
// reused when available (rpmalloc's heap adoption): it may still own spans
// with live buffers, whose later frees it then collects.
func (p *Pool) NewHeap() *Heap {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n := len(p.spare); n > 0 {
		h := p.spare[n-1]
		p.spare = p.spare[:n-1]
		h.closed = false
		return h
	}
	return p.newHeapLocked()
}

func (p *Pool) newHeapLocked() *Heap {
	h := &Heap{pool: p, partial: make([]*span, len(p.classSize)), cache: make([]*span, p.nspans+1),
		// A run is pushed before the cache is trimmed back to its bound.
		scratch: make([]*span, 0, p.heapCacheSpans+p.nspans)}
	p.heaps = append(p.heaps, h)
	return h
}

// listAt returns &l[i] without a bounds check, for the heads of a heap's
// span lists (partial, cache) at an index that the caller's arguments
// bound: a size class of a size up to maxSmall, a span count up to
// nspans.
func listAt(l []*span, i int) **span {
	return (**span)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(l)), uintptr(i)*unsafe.Sizeof((*span)(nil))))
}

// Pool returns the pool the heap allocates from.
func (h *Heap) Pool() *Pool { return h.pool }

// Allocate returns a registered buffer of size bytes (1 <= size <=
// MaxAlloc). Sizes up to SpanSize/2 are a slot of a size class; up to
// BlockSize a run of spans; beyond, a dedicated run of blocks.
func (h *Heap) Allocate(size int) (Buf, error) {
	p := h.pool
	if p.closed.Load() {
		return Buf{}, ErrClosed
	}
	if h.deferred.Load() != 0 {
		// In a function of its own, so that this one keeps its values in
		// registers (no spills for a call on every allocation).
		return h.drainAllocate(size)
	}
	if uint(size-1) >= uint(p.maxSmall) {
		// A run of spans. The fast path, a cached run of exactly the span
		// count asked for that this heap already owns, is popped here
		// (popCache) without a call.
		if uint(size-1) < uint(p.maxRun) {
			shift := p.spanShift & 63
			k := (size + p.cfg.SpanSize - 1) >> shift
			c := listAt(h.cache, k) // k <= nspans: size <= BlockSize
			if s := *c; s != nil && s.owner.Load() == h {
				*c = s.next
				s.next = nil
				h.cached -= k
				s.ownerSetCachedBy(nil)
				return h.useRun(s, size, uint32(k<<shift))
			}
		}
		return h.allocRun(size)
	}
	c := classOf(size)
	s := *listAt(h.partial, c) // c < len(h.partial): size <= maxSmall
	if s == nil {
		var err error
		if s, err = h.refill(c); err != nil {
			return Buf{}, err
		}
	}
	idx := s.free
	var addr uintptr
	if idx != noSlot {
		addr = s.base + uintptr(idx)*uintptr(s.size)
		s.free = *(*uint32)(ptrAt(addr))
	} else {
		idx = s.bump
		s.bump++
		addr = s.base + uintptr(idx)*uintptr(s.size)
	}
	if s.used++; s.used == s.nslots {
		h.unlink(s)
	}
	ownerOr(bitWord(s.bits, uint64(idx>>6)), 1<<(idx&63)) // a plain store (see span.bits)
	h.live.add(1)
	h.liveBytes.add(int64(s.size))
	b := s.blk
	return Buf{addr: addr, n: size, lkey: b.lkey, rkey: b.rkey}, nil
}

// Deallocate returns b to the pool. A buffer allocated by this heap goes
// back to its span at once; one allocated by another heap is pushed onto
// that heap's deferred-free list with one CAS. It returns ErrDoubleFree if
// b is not allocated and ErrNotOwned if b is not the start of an allocation
// from this pool; the checks cost two loads from a span's bitmaps on this
// heap's own buffers and one atomic OR on another heap's (see span.bits).
func (h *Heap) Deallocate(b Buf) error { return h.pool.free(b.addr, h) }

// drainAllocate is Allocate when other goroutines have freed buffers of
// this heap: it takes them back first. Allocate calls it again only if
// more frees arrived meanwhile, each of a buffer this heap handed out
// before, so the recursion ends (at most one level per live buffer; in
// practice none).
func (h *Heap) drainAllocate(size int) (Buf, error) {
	h.drain()
	return h.Allocate(size)
}

// useRun hands out run s, of runBytes bytes, taken for a size-byte buffer
// and owned by h.
func (h *Heap) useRun(s *span, size int, runBytes uint32) (Buf, error) {
	s.class = classLarge
	s.size = runBytes
	// A plain store (see span.state): no other goroutine can hold this
	// run's address until the Buf is passed on. An atomic store is a
	// locked instruction on x86, which waits for the caller's buffered
	// stores.
	s.state = 1
	h.live.add(1)
	h.liveBytes.add(int64(runBytes))
	b := s.blk
	return Buf{addr: s.base, n: size, lkey: b.lkey, rkey: b.rkey}, nil
}

// allocRun serves sizes above the largest class that Allocate's fast path
// does not: a size that is not a run (ErrSize, a dedicated run of blocks),
// a cached run that another heap owned last, a split or coalesced cached
// run, or a run from the pool.
func (h *Heap) allocRun(size int) (Buf, error) {
	p := h.pool
	if size <= 0 || size > p.cfg.MaxAlloc {
		return Buf{}, ErrSize
	}
	if size > p.cfg.BlockSize {
		return p.allocHuge(size)
	}
	shift := p.spanShift & 63
	k := (size + p.cfg.SpanSize - 1) >> shift
	s := h.takeCached(k)
	if s == nil {
		var err error
		if s, err = p.takeRun(h, k); err != nil {
			return Buf{}, err
		}
	}
	if s.owner.Load() != h {
		// Only here: a run from this heap's own cache (the common
		// case) is already this heap's.
		s.owner.Store(h)
	}
	return h.useRun(s, size, uint32(k<<shift))
}

// refill gives class c a fresh span: from the heap cache, else from the
// pool (which maps and registers a block when it has none).
func (h *Heap) refill(c int) (*span, error) {
	p := h.pool
	s := h.takeCached(1)
	if s == nil {
		var err error
		if s, err = p.takeRun(h, 1); err != nil {
			return nil, err
		}
	}
	s.class = int32(c)
	s.size = p.classSize[c]
	s.nslots = p.classSlots[c]
	s.magic = p.classMagic[c]
	if w := bitWords(s.nslots); int(s.nbits) < w {
		// The span's first class with this many slots: its bitmaps (all
		// zero, every slot having been freed and drained) grow once and
		// are kept, so a span reused for the same classes allocates
		// nothing.
		b := make([]atomic.Uint64, 2*w)
		s.bits, s.rbits, s.nbits = &b[0], &b[w], uint32(w)
	}
	s.free, s.bump, s.used = noSlot, 0, 0
	s.owner.Store(h)
	h.push(s)
	return s, nil
}

// freeSlot returns slot idx to s, which this heap owns.
func (h *Heap) freeSlot(s *span, idx uint32) {
	*(*uint32)(ptrAt(s.base + uintptr(idx)*uintptr(s.size))) = s.free
	s.free = idx
	h.slotFreed(s)
}

// slotFreed counts a slot pushed onto s's free list out of s.used, moving
// s onto its class's partial list if it was full and giving it back if it
// is now empty. The owner's free (Pool.free) does the common case, neither,
// itself.
func (h *Heap) slotFreed(s *span) {
	if s.used == s.nslots {
		h.push(s)
	}
	if s.used--; s.used == 0 && (h.partial[s.class] != s || s.next != nil) {
		// Empty and not the class's only span: give it back. The only
		// span of a class stays, so that alternating alloc/free of one
		// buffer does not bounce a span.
		h.unlink(s)
		h.cacheRun(s)
	}
}

// push puts s at the head of its class's partial list.
func (h *Heap) push(s *span) {
	s.prev, s.next = nil, h.partial[s.class]
	if s.next != nil {
		s.next.prev = s
	}
	h.partial[s.class] = s
}

func (h *Heap) unlink(s *span) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		h.partial[s.class] = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	}
	s.next, s.prev = nil, nil
}

func (h *Heap) pushCache(s *span) {
	k := s.k
	c := listAt(h.cache, int(k)) // a run has at most nspans spans
	s.next = *c                  // singly linked: prev is the partial list's
	*c = s
	h.cached += int(k)
	s.ownerSetCachedBy(h)
}

func (h *Heap) popCache(k int) *span {
	c := &h.cache[k]
	s := *c
	if s != nil {
		*c = s.next
		s.next = nil
		h.cached -= k
		s.ownerSetCachedBy(nil)
	}
	return s
}

// takeCached returns a cached run of exactly k spans or, failing that, the
// front of the smallest larger cached run, whose tail stays cached as a run
// of its own; when the cache holds k spans but no run that long, it
// coalesces the cache and tries again. nil sends the heap to the pool.
func (h *Heap) takeCached(k int) *span {
	if s := h.popCache(k); s != nil {
		return s
	}
	return h.takeCachedMiss(k)
}

// takeCachedMiss is takeCached once the cache has no run of exactly k
// spans.
func (h *Heap) takeCachedMiss(k int) *span {
	if h.cached < k {
		return nil
	}
	if s := h.splitCached(k); s != nil {
		return s
	}
	if h.coalesce() {
		if s := h.popCache(k); s != nil {
			return s
		}
		return h.splitCached(k)
	}
	return nil
}

// splitCached takes the front k spans of the smallest cached run longer
// than k; the tail stays cached as a run of its own.
func (h *Heap) splitCached(k int) *span {
	for j := k + 1; j < len(h.cache); j++ {
		if h.cache[j] == nil {
			continue
		}
		s := h.popCache(j)
		b := s.blk
		i := int((s.base-b.base)>>(h.pool.spanShift&63)) + k
		rest := &b.spans[i]
		rest.k = uint32(j - k)
		for x := i; x < i+j-k; x++ {
			b.heads[x].ownerStore(rest)
		}
		s.k = uint32(k)
		h.pushCache(rest)
		return s
	}
	return nil
}

// coalesce merges the cached runs that are adjacent in their block into
// single runs, as the pool's free-span bitmaps do, and reports whether any
// merged. Frees arrive in any order and splits cut long runs, so a cache
// that holds enough spans for a request may hold them only in pieces; the
// heap calls this when a request finds no cached run long enough, before
// it goes to the pool under Pool.mu. It finds neighbours through the
// block's span table instead of sorting the runs by address: a run whose
// left neighbour (the run covering the span before it) is in this cache
// is merged by that neighbour; any other run starts a chain and absorbs
// the cached runs that follow it. Every run is looked at a bounded number
// of times, and a neighbour that is another heap's is only tested
// (span.isCachedBy), never written. The runs are collected in a buffer
// the heap allocated when created.
func (h *Heap) coalesce() bool {
	if h.cached > cap(h.scratch) {
		return false // more runs than the buffer holds (not reached: see newHeapLocked)
	}
	runs := h.scratch[:0]
	for k := 1; k < len(h.cache); k++ {
		for s := h.cache[k]; s != nil; s = s.next {
			runs = append(runs, s)
		}
		h.cache[k] = nil
	}
	h.cached = 0
	merged := false
	shift := h.pool.spanShift & 63
	nspans := h.pool.nspans
	for _, s := range runs {
		if !s.isCachedBy(h) {
			continue // merged into an earlier chain
		}
		b := s.blk
		i := int((s.base - b.base) >> shift)
		if i > 0 {
			if l := b.heads[i-1].Load(); l != nil && l.isCachedBy(h) && l.base+uintptr(l.k)<<shift == s.base {
				continue // its left neighbour's chain takes it
			}
		}
		for end := i + int(s.k); end < nspans; end = i + int(s.k) {
			n := b.heads[end].Load()
			if n == nil || !n.isCachedBy(h) || n.base != s.base+uintptr(s.k)<<shift {
				break
			}
			for x := end; x < end+int(n.k); x++ {
				b.heads[x].ownerStore(s)
			}
			s.k += n.k
			n.next = nil
			n.ownerSetCachedBy(nil)
			merged = true
		}
		h.pushCache(s)
	}
	clear(runs)
	return merged
}

// cacheRun keeps a free run in the heap cache; beyond HeapCacheBytes the
// cache is halved by returning its smallest runs to the pool (large runs
// serve any request by splitting; small ones are what the pool can
// coalesce back into a whole block).
func (h *Heap) cacheRun(s *span) {
	h.pushCache(s)
	if h.cached > h.pool.heapCacheSpans {
		h.flushCache(h.pool.heapCacheSpans / 2)
	}
}

// flushCache returns cached runs to the pool until at most keep spans
// remain, smallest runs first, under one lock acquisition.
func (h *Heap) flushCache(keep int) {
	p := h.pool
	p.heapVisits.Add(1)
	p.mu.Lock()
	for k := 1; k < len(h.cache) && h.cached > keep; k++ {
		for h.cache[k] != nil && h.cached > keep {
			p.giveLocked(h.popCache(k))
		}
	}
	chain := p.trimLocked()
	p.mu.Unlock()
	p.releaseBlocks(chain)
}

// pushDeferred queues a freed buffer of this heap (called by another
// goroutine): a slot's first word links the stack.
func (h *Heap) pushDeferred(addr uintptr) {
	h.pushDeferredAt(addr, (*uintptr)(ptrAt(addr)))
}

// pushDeferredRun queues a freed large run of this heap (called by another
// goroutine, which has just cleared s.state with a CAS and so is the only
// one to push it): the link is s.dnext rather than the run's first word,
// a cold cache line that neither the freeing goroutine nor the owner would
// otherwise touch; the drain reads the span anyway.
func (h *Heap) pushDeferredRun(s *span) { h.pushDeferredAt(s.base, &s.dnext) }

// pushDeferredAt pushes addr with its link stored at *link: one CAS.
func (h *Heap) pushDeferredAt(addr uintptr, link *uintptr) {
	for {
		old := h.deferred.Load()
		*link = old
		if h.deferred.CompareAndSwap(old, addr) {
			return
		}
	}
}

// drain takes the whole deferred-free list (one Swap: a single consumer
// needs no ABA protection) and frees each buffer locally. The list keeps
// the order of the frees whatever their kind (a large run's link is in its
// span, a slot's in the slot), so the owner's caches evolve as if every
// free had been its own.
func (h *Heap) drain() {
	p := h.pool
	for addr := h.deferred.Swap(0); addr != 0; {
		blk := p.radix.lookup(addr)
		s := blk.headOf(addr, p.spanShift)
		var next uintptr
		if s.class == classLarge {
			next = s.dnext
			h.cacheRun(s)
		} else {
			next = *(*uintptr)(ptrAt(addr))
			idx, _ := bits.Mul64(uint64(addr-s.base), s.magic)
			w, m := idx>>6, uint64(1)<<(idx&63)
			// The allocation bit first, then the remote-free bit (see
			// Pool.free). A slot found unallocated was also freed by this
			// heap meanwhile, a double free racing the other goroutine's
			// (not reported: one of the two frees returned nil), and is
			// already on its span's free list.
			if a := bitWord(s.bits, w); ownerLoad(a)&m != 0 {
				ownerAndNot(a, m)
				h.freeSlot(s, uint32(idx))
			}
			bitWord(s.rbits, w).And(^m)
		}
		addr = next
	}
}

// Flush returns what the heap holds without live buffers to the pool:
// deferred frees are drained and empty spans and cached runs go back, so
// that empty blocks can be retained at pool level or released. An idle
// thread calls it to give its memory back.
func (h *Heap) Flush() {
	if h.pool.closed.Load() {
		return
	}
	h.drain()
	for c := range h.partial {
		for s := h.partial[c]; s != nil; {
			next := s.next
			if s.used == 0 {
				h.unlink(s)
				h.pushCache(s)
			}
			s = next
		}
	}
	h.flushCache(0)
}

// Close flushes the heap and hands it back to the pool for reuse by a later
// NewHeap. Spans with live buffers stay with it; their frees from other
// goroutines keep arriving on its deferred list until it is adopted or the
// pool is closed. The heap must not be used after Close.
func (h *Heap) Close() error {
	if h.closed {
		return ErrClosed
	}
	h.Flush()
	h.closed = true
	p := h.pool
	p.mu.Lock()
	p.spare = append(p.spare, h)
	p.mu.Unlock()
	return nil
}
