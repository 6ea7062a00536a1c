// Package testalloc wraps bemalloc for tests of the ByteExpress core: every
// Deallocate error (double or foreign free) panics, freed memory is
// poisoned so a use after free corrupts payloads visibly, allocation
// failures can be injected, and per-thread heaps are handed to the I/O
// threads (ThreadHeaps) like bemalloc heaps in production.
package testalloc

import (
	"fmt"
	"sync/atomic"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/bemalloc"
	"github.com/besim/besim/verbs"
)

// Pool is the checking allocator. Safe for concurrent use (heaps from
// ThreadHeap are for their thread only).
type Pool struct {
	p      *bemalloc.Pool
	poison bool
	// Fail makes every Allocate fail while set.
	Fail atomic.Bool
}

var (
	_ byteexpress.Allocator   = (*Pool)(nil)
	_ byteexpress.ThreadHeaps = (*Pool)(nil)
)

// New creates a bemalloc pool registering in pd.
func New(pd verbs.PD, poison bool) *Pool {
	p, err := bemalloc.New(pd, bemalloc.Config{})
	if err != nil {
		panic(err)
	}
	return &Pool{p: p, poison: poison}
}

// Bemalloc is the underlying pool.
func (p *Pool) Bemalloc() *bemalloc.Pool { return p.p }

var errInjected = fmt.Errorf("testalloc: injected allocation failure")

// Allocate implements byteexpress.Allocator.
func (p *Pool) Allocate(size int) (byteexpress.Buffer, error) {
	if p.Fail.Load() {
		return byteexpress.Buffer{}, errInjected
	}
	return p.p.Allocate(size)
}

// Deallocate implements byteexpress.Allocator; it panics on any error.
func (p *Pool) Deallocate(b byteexpress.Buffer) error {
	p.poisonBuf(b)
	if err := p.p.Deallocate(b); err != nil {
		panic(fmt.Sprintf("testalloc: free of %#x (%d bytes): %v", b.Addr(), b.Len(), err))
	}
	return nil
}

func (p *Pool) poisonBuf(b byteexpress.Buffer) {
	if p.poison {
		d := b.Bytes()
		for i := range d {
			d[i] = 0xdd
		}
	}
}

// ThreadHeap implements byteexpress.ThreadHeaps.
func (p *Pool) ThreadHeap(int) byteexpress.Allocator { return &Heap{p: p, h: p.p.NewHeap()} }

// Heap is one thread's heap.
type Heap struct {
	p *Pool
	h *bemalloc.Heap
}

// Allocate implements byteexpress.Allocator.
func (h *Heap) Allocate(size int) (byteexpress.Buffer, error) {
	if h.p.Fail.Load() {
		return byteexpress.Buffer{}, errInjected
	}
	return h.h.Allocate(size)
}

// Deallocate implements byteexpress.Allocator; it panics on any error.
func (h *Heap) Deallocate(b byteexpress.Buffer) error {
	h.p.poisonBuf(b)
	if err := h.h.Deallocate(b); err != nil {
		panic(fmt.Sprintf("testalloc: heap free of %#x (%d bytes): %v", b.Addr(), b.Len(), err))
	}
	return nil
}

// Close gives the heap back to the pool.
func (h *Heap) Close() error { return h.h.Close() }

// Outstanding is the number of live allocations.
func (p *Pool) Outstanding() int { return int(p.p.InUse()) }

// Close closes the pool (a *bemalloc.LeakError if buffers are live).
func (p *Pool) Close() error { return p.p.Close() }
