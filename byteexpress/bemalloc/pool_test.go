package bemalloc

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/besim/besim/verbs"
)

const (
	tB = DefaultBlockSize
	tS = DefaultSpanSize
)

func newPool(t testing.TB, cfg Config) (*Pool, *fakePD) {
	t.Helper()
	pd := newFakePD()
	p, err := New(pd, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p, pd
}

// closeClean closes p, requires no leak and no registered MR left.
func closeClean(t testing.TB, p *Pool, pd *fakePD) {
	t.Helper()
	if n := p.InUse(); n != 0 {
		t.Errorf("InUse at shutdown = %d, want 0", n)
	}
	if err := p.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if st := p.Stats(); st.Footprint != 0 || st.BlocksLive != 0 {
		t.Errorf("after Close: footprint %d, blocks %d", st.Footprint, st.BlocksLive)
	}
	if err := pd.Dealloc(); err != nil {
		t.Errorf("PD.Dealloc after Close: %v", err)
	}
}

func mrCovers(mr verbs.MR, addr uintptr, n int) bool {
	return mr != nil && mr.Addr() <= addr && addr+uintptr(n) <= mr.Addr()+uintptr(mr.Len())
}

func mustAlloc(t testing.TB, h *Heap, size int) Buf {
	t.Helper()
	b, err := h.Allocate(size)
	if err != nil {
		t.Fatalf("Allocate(%d): %v", size, err)
	}
	return b
}

func mustFree(t testing.TB, h *Heap, b Buf) {
	t.Helper()
	if err := h.Deallocate(b); err != nil {
		t.Fatalf("Deallocate(%#x, %d): %v", b.Addr(), b.Len(), err)
	}
}

func TestSizeClasses(t *testing.T) {
	n := numClasses(16)
	if n != 40 || classSize(n-1) != tS/2 {
		t.Fatalf("64 KiB spans: %d classes, largest %d; want 40, %d", n, classSize(n-1), tS/2)
	}
	for c := 1; c < n; c++ {
		if classSize(c) <= classSize(c-1) || classSize(c)%16 != 0 {
			t.Fatalf("class %d size %d after %d", c, classSize(c), classSize(c-1))
		}
		if classOf(classSize(c)) != c {
			t.Fatalf("classOf(classSize(%d)) = %d", c, classOf(classSize(c)))
		}
	}
	for size := 1; size <= tS/2; size++ {
		c := classOf(size)
		if classSize(c) < size || (c > 0 && classSize(c-1) >= size) {
			t.Fatalf("size %d -> class %d (%d), not the smallest fit", size, c, classSize(c))
		}
		if size > linearMax && float64(classSize(c)-size) > 0.25*float64(size) {
			t.Fatalf("size %d -> %d wastes more than 25%%", size, classSize(c))
		}
	}
	// Larger spans (up to 1 GiB, classes up to 512 MiB): around every class
	// boundary.
	for c := numClasses(16); c < numClasses(30); c++ {
		for size := classSize(c-1) + 1; size <= classSize(c); size += max(1, (classSize(c)-classSize(c-1))/7) {
			for _, sz := range []int{size, classSize(c) - 1, classSize(c)} {
				if got := classOf(sz); got != c {
					t.Fatalf("classOf(%d) = %d, want %d", sz, got, c)
				}
			}
		}
	}
}

func TestDivMagic(t *testing.T) {
	for c := range numClasses(16) {
		d := uint64(classSize(c))
		m := divMagic(d)
		for n := uint64(0); n < tS; n++ {
			if q, _ := bits.Mul64(n, m); q != n/d {
				t.Fatalf("%d/%d = %d via magic, want %d", n, d, q, n/d)
			}
		}
		for _, n := range []uint64{1<<32 - 1, 1 << 30, 1<<31 + 7} {
			if q, _ := bits.Mul64(n, m); q != n/d {
				t.Fatalf("%d/%d = %d via magic, want %d", n, d, q, n/d)
			}
		}
	}
}

func TestSpanLayout(t *testing.T) {
	if sz := unsafe.Sizeof(span{}); sz%64 != 0 {
		t.Fatalf("span is %d bytes, want a multiple of the 64-byte cache line", sz)
	}
	// The large path's fields share one cache line (span's comment): in
	// a block's spans array they lie within one 64-byte line.
	p, pd := newPool(t, Config{})
	h := p.NewHeap()
	x := mustAlloc(t, h, 100<<10)
	blk := p.radix.lookup(x.Addr())
	for _, sp := range []*span{&blk.spans[0], &blk.spans[1], &blk.spans[p.nspans-1]} {
		lo, hi := uintptr(unsafe.Pointer(&sp.base)), uintptr(unsafe.Pointer(&sp.blk))+unsafe.Sizeof(sp.blk)
		if lo/64 != (hi-1)/64 {
			t.Errorf("span fields base..blk at %#x..%#x cross a cache line", lo, hi)
		}
	}
	mustFree(t, h, x)
	h.Close()
	closeClean(t, p, pd)
}

// roundTripSizes covers every size class (its smallest and largest request),
// span runs and dedicated block runs.
func roundTripSizes() []int {
	var sizes []int
	for c := range numClasses(16) {
		lo := 1
		if c > 0 {
			lo = classSize(c-1) + 1
		}
		sizes = append(sizes, lo, classSize(c))
	}
	return append(sizes, tS/2+1, tS, tS+1, 5*tS+3, tB-1, tB, tB+1, 3*tB)
}

func TestRoundTripAllSizes(t *testing.T) {
	p, pd := newPool(t, Config{})
	h := p.NewHeap()
	for _, size := range roundTripSizes() {
		for _, via := range []string{"heap", "pool"} {
			var b Buf
			var err error
			if via == "heap" {
				b, err = h.Allocate(size)
			} else {
				b, err = p.Allocate(size)
			}
			if err != nil {
				t.Fatalf("%s Allocate(%d): %v", via, size, err)
			}
			if b.Len() != size || len(b.Bytes()) != size || cap(b.Bytes()) != size {
				t.Fatalf("Allocate(%d): Len %d, Bytes len %d cap %d", size, b.Len(), len(b.Bytes()), cap(b.Bytes()))
			}
			align := uintptr(16)
			switch {
			case size > tB:
				align = tB
			case size > tS/2:
				align = tS
			}
			if b.Addr()%align != 0 {
				t.Fatalf("Allocate(%d) = %#x, not %d-aligned", size, b.Addr(), align)
			}
			bs := b.Bytes()
			bs[0], bs[size-1] = 0xa5, 0x5a
			mr := p.GetMR(b)
			if !mrCovers(mr, b.Addr(), size) {
				t.Fatalf("GetMR(%#x+%d) = %v does not cover it", b.Addr(), size, mr)
			}
			if mr.LKey() != b.LKey() || mr.RKey() != b.RKey() || b.SGE().LKey != mr.LKey() || b.SGE().Length != uint32(size) {
				t.Fatalf("keys: buf %x/%x sge %+v, MR %x/%x", b.LKey(), b.RKey(), b.SGE(), mr.LKey(), mr.RKey())
			}
			if mr.Access() != DefaultAccess {
				t.Fatalf("MR access %v, want %v", mr.Access(), DefaultAccess)
			}
			if via == "heap" {
				mustFree(t, h, b)
			} else if err := p.Deallocate(b); err != nil {
				t.Fatalf("pool Deallocate(%d): %v", size, err)
			}
		}
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	closeClean(t, p, pd)
}

func TestGetMR(t *testing.T) {
	p, pd := newPool(t, Config{RetainBlocks: -1, HeapCacheBytes: -1})
	h := p.NewHeap()
	small := mustAlloc(t, h, 100)
	whole := mustAlloc(t, h, tB)    // a run of every span of one block
	run := mustAlloc(t, h, 7*tS+1)  // 8 spans inside a block
	huge := mustAlloc(t, h, 3*tB+1) // 4 blocks, one MR
	var goVar [64]byte
	cases := []struct {
		name string
		addr uintptr
		want verbs.MR // nil: not from the pool
		len  int      // expected MR length
	}{
		{"small slot", small.Addr(), p.GetMR(small), tB},
		{"small slot last byte", small.Addr() + 99, p.GetMR(small), tB},
		{"first byte of a block", whole.Addr(), p.GetMR(whole), tB},
		{"last byte of a block", whole.Addr() + tB - 1, p.GetMR(whole), tB},
		{"span run interior", run.Addr() + 3*tS + 17, p.GetMR(run), tB},
		{"span run last byte", run.Addr() + 7*tS, p.GetMR(run), tB},
		{"huge run first byte", huge.Addr(), p.GetMR(huge), 4 * tB},
		{"huge run second block", huge.Addr() + tB, p.GetMR(huge), 4 * tB},
		{"huge run last byte", huge.Addr() + 4*tB - 1, p.GetMR(huge), 4 * tB},
		{"Go heap address", uintptr(unsafe.Pointer(&goVar[0])), nil, 0},
		{"nil address", 0, nil, 0},
		{"top of address space", ^uintptr(0), nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := p.MRAt(c.addr)
			if c.want == nil {
				if got != nil {
					t.Fatalf("MRAt(%#x) = %v, want nil", c.addr, got)
				}
				return
			}
			if got != c.want || !mrCovers(got, c.addr, 1) || got.Len() != c.len {
				t.Fatalf("MRAt(%#x) = MR %#x+%d, want %#x+%d containing it", c.addr, got.Addr(), got.Len(), c.want.Addr(), c.len)
			}
			if got.Addr()%tB != 0 {
				t.Fatalf("MR %#x is not block-aligned", got.Addr())
			}
		})
	}
	if p.MRAt(whole.Addr()+tB) == p.GetMR(whole) {
		t.Fatal("first byte after a block maps to the same MR")
	}
	if p.GetMR(small) == p.GetMR(huge) || p.GetMR(whole) == p.GetMR(huge) {
		t.Fatal("distinct blocks share an MR")
	}
	// Released blocks disappear from the index.
	hugeAddr, wholeAddr := huge.Addr(), whole.Addr()
	for _, b := range []Buf{small, whole, run, huge} {
		mustFree(t, h, b)
	}
	h.Flush()
	if p.MRAt(hugeAddr) != nil || p.MRAt(wholeAddr) != nil {
		t.Fatal("GetMR finds a released block")
	}
	h.Close()
	closeClean(t, p, pd)
}

func TestFind(t *testing.T) {
	p, pd := newPool(t, Config{})
	h := p.NewHeap()
	for _, size := range []int{1, 100, 5000, tS/2 + 1, 3 * tS, tB + 1} {
		b := mustAlloc(t, h, size)
		bs := b.Bytes()
		for _, off := range []int{0, size / 2, size - 1} {
			f, ok := p.Find(uintptr(unsafe.Pointer(&bs[off])))
			if !ok || f.Addr() != b.Addr() || f.Len() < size || f.LKey() != b.LKey() {
				t.Fatalf("Find(+%d) of %d-byte buf = %#x+%d %v, want %#x", off, size, f.Addr(), f.Len(), ok, b.Addr())
			}
		}
		mustFree(t, h, b)
		if _, ok := p.Find(b.Addr()); ok {
			t.Fatalf("Find finds freed %d-byte buffer", size)
		}
	}
	h.Close()
	closeClean(t, p, pd)
}

// fill writes a pattern derived from id: every byte of small buffers, and
// the first and last 4 KiB plus every 4 KiB of large ones.
func fill(b []byte, id uint32) {
	visit(b, func(i int) { b[i] = byte(id*131 + uint32(i)*7) })
}

func check(b []byte, id uint32) bool {
	ok := true
	visit(b, func(i int) {
		if b[i] != byte(id*131+uint32(i)*7) {
			ok = false
		}
	})
	return ok
}

func visit(b []byte, f func(int)) {
	const edge = 4096
	if len(b) <= 3*edge {
		for i := range b {
			f(i)
		}
		return
	}
	for i := 0; i < edge; i++ {
		f(i)
		f(len(b) - 1 - i)
	}
	for i := edge; i < len(b)-edge; i += edge {
		f(i)
	}
}

func TestNoOverlapRandomized(t *testing.T) {
	p, pd := newPool(t, Config{RetainBlocks: 2})
	heaps := []*Heap{p.NewHeap(), p.NewHeap()}
	rng := rand.New(rand.NewPCG(1, 2))
	type liveBuf struct {
		b  Buf
		id uint32
	}
	var live []liveBuf
	verify := func() {
		type iv struct{ lo, hi uintptr }
		ivs := make([]iv, 0, len(live))
		for _, l := range live {
			if !check(l.b.Bytes(), l.id) {
				t.Fatalf("buffer %d at %#x+%d corrupted", l.id, l.b.Addr(), l.b.Len())
			}
			f, ok := p.Find(l.b.Addr())
			if !ok || f.Addr() != l.b.Addr() {
				t.Fatalf("live buffer %#x not found", l.b.Addr())
			}
			// Its last byte too: every span of a run taken from a heap
			// cache (split, coalesced) must point at it.
			if g, ok := p.Find(l.b.Addr() + uintptr(l.b.Len()-1)); !ok || g.Addr() != l.b.Addr() {
				t.Fatalf("last byte of live buffer %#x+%d not found (%#x %v)", l.b.Addr(), l.b.Len(), g.Addr(), ok)
			}
			ivs = append(ivs, iv{f.Addr(), f.Addr() + uintptr(f.Len())})
		}
		slices.SortFunc(ivs, func(a, b iv) int { return int(a.lo>>4) - int(b.lo>>4) })
		for i := 1; i < len(ivs); i++ {
			if ivs[i].lo < ivs[i-1].hi {
				t.Fatalf("allocations overlap: [%#x,%#x) and [%#x,%#x)", ivs[i-1].lo, ivs[i-1].hi, ivs[i].lo, ivs[i].hi)
			}
		}
	}
	var id uint32
	for op := range 30000 {
		if len(live) > 0 && (len(live) > 600 || rng.IntN(2) == 0) {
			i := rng.IntN(len(live))
			l := live[i]
			live[i] = live[len(live)-1]
			live = live[:len(live)-1]
			if !check(l.b.Bytes(), l.id) {
				t.Fatalf("op %d: buffer %d corrupted before free", op, l.id)
			}
			mustFree(t, heaps[rng.IntN(2)], l.b) // half the frees are cross-heap
		} else {
			var size int
			switch r := rng.IntN(1000); {
			case r < 700:
				size = 1 + rng.IntN(tS/2)
			case r < 995:
				size = tS/2 + 1 + rng.IntN(tB-tS/2)
			default:
				size = tB + 1 + rng.IntN(2*tB)
			}
			id++
			b := mustAlloc(t, heaps[rng.IntN(2)], size)
			fill(b.Bytes(), id)
			live = append(live, liveBuf{b, id})
		}
		if op%2000 == 0 {
			verify()
		}
	}
	verify()
	if n := p.InUse(); n != int64(len(live)) {
		t.Fatalf("InUse = %d, want %d", n, len(live))
	}
	for _, l := range live {
		mustFree(t, heaps[0], l.b)
	}
	for _, h := range heaps {
		h.Close()
	}
	closeClean(t, p, pd)
}

func TestDeferredFreeIsReused(t *testing.T) {
	p, pd := newPool(t, Config{})
	a := p.NewHeap()
	const n = 8 * tS / 256 // eight full spans of the 256-byte class
	bufs := make([]Buf, n)
	first := map[uintptr]bool{}
	for i := range bufs {
		bufs[i] = mustAlloc(t, a, 256)
		first[bufs[i].Addr()] = true
	}
	regs, _, _ := pd.counts()
	done := make(chan struct{})
	go func() { // another "thread" frees everything through its own heap
		defer close(done)
		b := p.NewHeap()
		for _, x := range bufs {
			if err := b.Deallocate(x); err != nil {
				t.Errorf("cross-heap Deallocate: %v", err)
			}
		}
		b.Close()
	}()
	<-done
	if n := p.InUse(); n != 0 {
		t.Fatalf("InUse after cross-heap frees = %d", n)
	}
	if a.deferred.Load() == 0 {
		t.Fatal("cross-heap frees did not go onto the owner's deferred list")
	}
	reused := 0
	for i := range bufs {
		bufs[i] = mustAlloc(t, a, 256)
		if first[bufs[i].Addr()] {
			reused++
		}
	}
	if reused != n {
		t.Fatalf("%d of %d buffers reused after deferred free", reused, n)
	}
	if r, _, _ := pd.counts(); r != regs {
		t.Fatalf("registrations went %d -> %d although freed memory was available", regs, r)
	}
	for _, b := range bufs {
		mustFree(t, a, b)
	}
	a.Close()
	closeClean(t, p, pd)
}

// TestHeapCacheCoalesces frees eight adjacent runs of two spans in a
// scrambled order, so that the heap cache holds sixteen free spans only in
// pieces, and checks that a sixteen-span request is served from them (at
// the lowest of their addresses: the pool would carve first-fit past them,
// since the heap still holds them) rather than from the pool, and that the
// cycle allocates no Go memory once warm.
func TestHeapCacheCoalesces(t *testing.T) {
	p, pd := newPool(t, Config{})
	h := p.NewHeap()
	const n, run = 8, 2 * tS
	var bufs [n]Buf
	cycle := func() {
		lowest := ^uintptr(0)
		for i := range bufs {
			bufs[i] = mustAlloc(t, h, run)
			lowest = min(lowest, bufs[i].Addr())
		}
		for _, i := range [n]int{5, 1, 7, 3, 0, 6, 2, 4} {
			mustFree(t, h, bufs[i])
		}
		big := mustAlloc(t, h, n*run)
		if big.Addr() != lowest {
			t.Fatalf("%d-byte buffer at %#x, want %#x: the heap's free pieces were not coalesced", n*run, big.Addr(), lowest)
		}
		mustFree(t, h, big)
	}
	cycle()
	regs, _, _ := pd.counts()
	if a := testing.AllocsPerRun(10, cycle); a != 0 {
		t.Errorf("coalescing cycle: %v Go heap allocations, want 0", a)
	}
	if r, _, _ := pd.counts(); r != regs {
		t.Errorf("registrations went %d -> %d in the steady cycle", regs, r)
	}
	h.Close()
	closeClean(t, p, pd)
}

// TestCrossHeapConcurrent passes buffers around a ring of goroutines, each
// with its own heap, which check the contents and free them: every free of
// a received buffer is a cross-heap free. Run with -race.
func TestCrossHeapConcurrent(t *testing.T) {
	p, pd := newPool(t, Config{})
	const workers, iters = 4, 3000
	chans := make([]chan Buf, workers)
	for i := range chans {
		chans[i] = make(chan Buf, 64)
	}
	stats := make(chan struct{})
	go func() { // concurrent metric reads must be race-free
		for {
			select {
			case <-stats:
				return
			default:
				_ = p.Stats()
			}
		}
	}()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := p.NewHeap()
			defer h.Close()
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			in, out := chans[w], chans[(w+1)%workers]
			sent, recv := 0, 0
			for sent < iters || recv < iters {
				if sent < iters {
					size := 2 + rng.IntN(3*tS) // two distinct marker bytes
					b, err := h.Allocate(size)
					if err != nil {
						t.Error(err)
						return
					}
					bs := b.Bytes()
					bs[0], bs[size-1] = byte(size), byte(size>>8)
					select {
					case out <- b:
						sent++
						continue
					default:
						if err := h.Deallocate(b); err != nil { // local free
							t.Error(err)
							return
						}
					}
				}
				select {
				case b := <-in:
					bs := b.Bytes()
					if bs[0] != byte(b.Len()) || bs[b.Len()-1] != byte(b.Len()>>8) {
						t.Errorf("received buffer corrupted")
					}
					if err := h.Deallocate(b); err != nil {
						t.Error(err)
						return
					}
					recv++
				default:
				}
			}
		}()
	}
	wg.Wait()
	close(stats)
	closeClean(t, p, pd)
}

// TestSteadyStateNoRegistration: after warm-up the registered pool has
// reached its size and further alloc/free cycles (mixed sizes, two heaps,
// cross-heap frees) never call RegMR or Dereg (paper §5.2, Figure 5).
func TestSteadyStateNoRegistration(t *testing.T) {
	// Each round frees everything, so the retained cache must cover the
	// whole working set for the steady state to be registration-free.
	p, pd := newPool(t, Config{RetainBlocks: 1024})
	a, b := p.NewHeap(), p.NewHeap()
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := make([]int, 3000)
	for i := range sizes {
		switch r := rng.IntN(100); {
		case r < 80:
			sizes[i] = 1 + rng.IntN(16<<10)
		case r < 99:
			sizes[i] = 64<<10 + rng.IntN(1<<20)
		default:
			sizes[i] = tB + 1 + rng.IntN(tB)
		}
	}
	round := func() {
		bufs := make([]Buf, 0, len(sizes))
		for i, sz := range sizes {
			h := a
			if i%3 == 0 {
				h = b
			}
			bufs = append(bufs, mustAlloc(t, h, sz))
		}
		rng.Shuffle(len(bufs), func(i, j int) { bufs[i], bufs[j] = bufs[j], bufs[i] })
		for i, x := range bufs {
			h := a
			if i%10 == 0 {
				h = b
			}
			mustFree(t, h, x)
		}
	}
	for range 3 {
		round()
	}
	st0 := p.Stats()
	var footprints []int64
	for range 30 {
		round()
		footprints = append(footprints, p.Stats().Footprint)
	}
	st := p.Stats()
	if st.Registrations != st0.Registrations || st.Deregistrations != st0.Deregistrations {
		t.Fatalf("steady state registered %d and deregistered %d blocks",
			st.Registrations-st0.Registrations, st.Deregistrations-st0.Deregistrations)
	}
	for _, f := range footprints {
		if f != st0.Footprint {
			t.Fatalf("footprint moved in steady state: %d -> %v", st0.Footprint, footprints)
		}
	}
	t.Logf("steady footprint %d MiB, %d registrations, peak %d MiB", st.Footprint>>20, st.Registrations, st.PeakFootprint>>20)
	a.Close()
	b.Close()
	closeClean(t, p, pd)
}

// TestFootprintRamp reproduces Figure 5's shape: the registered footprint
// rises while the working set grows (8 intervals), creeps up a little while
// random churn fragments the spans, then stays flat although allocation
// continues: the last 20 intervals do no registration at all.
func TestFootprintRamp(t *testing.T) {
	p, pd := newPool(t, Config{})
	h := p.NewHeap()
	rng := rand.New(rand.NewPCG(5, 6))
	var live []Buf
	var samples, regs []int64
	for interval := range 40 {
		target := min(interval+1, 8) * 500 // working set grows for 8 intervals
		for range 5000 {
			if len(live) >= target || (len(live) > 0 && rng.IntN(3) == 0) {
				i := rng.IntN(len(live))
				mustFree(t, h, live[i])
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
			} else {
				live = append(live, mustAlloc(t, h, 1+rng.IntN(32<<10)))
			}
		}
		st := p.Stats()
		samples = append(samples, st.Footprint)
		regs = append(regs, st.Registrations)
	}
	mib := make([]int64, len(samples))
	for i, s := range samples {
		mib[i] = s >> 20
	}
	t.Logf("footprint per interval (MiB): %v", mib)
	for i := 1; i < 8; i++ {
		if samples[i] <= samples[i-1] {
			t.Fatalf("footprint did not ramp with the working set: %v MiB", mib)
		}
	}
	if last := samples[len(samples)-1]; float64(last) > 1.1*float64(samples[7]) {
		t.Fatalf("footprint kept growing after the working set stopped: %v MiB", mib)
	}
	if regs[len(regs)-1] != regs[19] {
		t.Fatalf("registrations in the last 20 intervals: %d", regs[len(regs)-1]-regs[19])
	}
	for _, b := range live {
		mustFree(t, h, b)
	}
	h.Close()
	closeClean(t, p, pd)
}

func TestZeroAllocsSteadyState(t *testing.T) {
	p, pd := newPool(t, Config{})
	a, b := p.NewHeap(), p.NewHeap()
	sizes := []int{16, 100, 1500, 9000, 32 << 10, 100 << 10, 1 << 20, tB + 1}
	warm := func() {
		for _, sz := range sizes {
			x := mustAlloc(t, a, sz)
			mustFree(t, a, x)
			x = mustAlloc(t, a, sz)
			mustFree(t, b, x)
			x, _ = p.Allocate(sz)
			p.Deallocate(x)
		}
	}
	warm()
	warm()
	var x Buf
	var mr verbs.MR
	cases := map[string]func(){
		"heap small": func() {
			x, _ = a.Allocate(100)
			a.Deallocate(x)
		},
		"heap mixed sizes": func() {
			for _, sz := range sizes {
				x, _ = a.Allocate(sz)
				a.Deallocate(x)
			}
		},
		"cross-heap free and drain": func() {
			for _, sz := range sizes {
				x, _ = a.Allocate(sz)
				b.Deallocate(x)
			}
		},
		"pool Allocate/Deallocate": func() {
			x, _ = p.Allocate(4096)
			p.Deallocate(x)
		},
		"GetMR and Bytes": func() {
			mr = p.GetMR(x)
			_ = x.Bytes()
		},
	}
	for name, f := range cases {
		if n := testing.AllocsPerRun(1000, f); n != 0 {
			t.Errorf("%s: %v Go heap allocations per run, want 0", name, n)
		}
	}
	_ = mr
	a.Close()
	b.Close()
	closeClean(t, p, pd)
}

func TestReleasePolicy(t *testing.T) {
	t.Run("retain limit", func(t *testing.T) {
		p, pd := newPool(t, Config{RetainBlocks: 2, HeapCacheBytes: -1})
		h := p.NewHeap()
		var bufs []Buf
		for range 8 {
			bufs = append(bufs, mustAlloc(t, h, tB)) // one whole block each
		}
		if r, _, _ := pd.counts(); r != 8 {
			t.Fatalf("%d registrations for 8 blocks", r)
		}
		for _, b := range bufs {
			mustFree(t, h, b)
		}
		st := p.Stats()
		if st.Deregistrations != 6 || st.Footprint != 2*tB || st.BlocksRetained != 2 || st.BlocksLive != 2 {
			t.Fatalf("after freeing 8 blocks with retain 2: %+v", st)
		}
		if st.PeakFootprint != 8*tB {
			t.Fatalf("peak footprint %d, want %d", st.PeakFootprint, 8*tB)
		}
		bufs = bufs[:2]
		for i := range bufs {
			bufs[i] = mustAlloc(t, h, tB)
		}
		if r, _, _ := pd.counts(); r != 8 {
			t.Fatal("retained blocks not reused")
		}
		for _, b := range bufs {
			mustFree(t, h, b)
		}
		h.Close()
		closeClean(t, p, pd)
	})
	t.Run("retain none", func(t *testing.T) {
		p, pd := newPool(t, Config{RetainBlocks: -1})
		h := p.NewHeap()
		var bufs []Buf
		for range 3 * tB / 4096 { // three blocks of 4 KiB slots
			bufs = append(bufs, mustAlloc(t, h, 4096))
		}
		for _, b := range bufs {
			mustFree(t, h, b)
		}
		if st := p.Stats(); st.Footprint == 0 {
			t.Fatal("the heap cache should still hold some spans")
		}
		h.Flush()
		st := p.Stats()
		if st.Footprint != 0 || st.Deregistrations != st.Registrations {
			t.Fatalf("after Flush with retain none: %+v", st)
		}
		if _, _, live := pd.counts(); live != 0 {
			t.Fatalf("%d MRs still registered", live)
		}
		h.Close()
		closeClean(t, p, pd)
	})
	t.Run("huge run cached", func(t *testing.T) {
		p, pd := newPool(t, Config{RetainBlocks: 4})
		h := p.NewHeap()
		b := mustAlloc(t, h, 2*tB+1)
		addr := b.Addr()
		mustFree(t, h, b)
		b = mustAlloc(t, h, 3*tB-5)
		if r, _, _ := pd.counts(); r != 1 || b.Addr() != addr {
			t.Fatalf("dedicated run not reused: %d registrations", r)
		}
		mustFree(t, h, b)
		b = mustAlloc(t, h, 2*tB) // freed: 3 + 2 cached > 4, the older run goes
		mustFree(t, h, b)
		if st := p.Stats(); st.Deregistrations != 1 || st.BlocksRetained != 2 || st.Footprint != 2*tB {
			t.Fatalf("retention of dedicated runs: %+v", st)
		}
		h.Close()
		closeClean(t, p, pd)
	})
}

func TestCloseReportsLeaks(t *testing.T) {
	p, pd := newPool(t, Config{})
	h := p.NewHeap()
	mustAlloc(t, h, 100)
	mustAlloc(t, h, 300<<10)
	hb := mustAlloc(t, h, tB+1)
	freed := mustAlloc(t, h, 1000)
	mustFree(t, h, freed)
	if n := p.InUse(); n != 3 {
		t.Fatalf("InUse = %d, want 3", n)
	}
	err := p.Close()
	var leak *LeakError
	if !errors.As(err, &leak) {
		t.Fatalf("Close with live buffers = %v, want *LeakError", err)
	}
	if leak.Buffers != 3 || leak.Blocks != 2 || leak.Bytes != 112+5*tS+2*tB {
		t.Fatalf("leak report %+v", leak)
	}
	if _, _, live := pd.counts(); live != 2 {
		t.Fatalf("%d MRs registered, want the 2 leaked blocks", live)
	}
	if pd.Dealloc() == nil {
		t.Fatal("PD deallocated although leaked blocks are registered")
	}
	hb.Bytes()[tB] = 1 // leaked memory stays mapped
	if err := p.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := h.Allocate(10); !errors.Is(err, ErrClosed) {
		t.Fatalf("Allocate after Close = %v", err)
	}
	if _, err := p.Allocate(10); !errors.Is(err, ErrClosed) {
		t.Fatalf("pool Allocate after Close = %v", err)
	}
	if err := h.Deallocate(hb); !errors.Is(err, ErrClosed) {
		t.Fatalf("Deallocate after Close = %v", err)
	}
}

func TestErrors(t *testing.T) {
	p, pd := newPool(t, Config{MaxAlloc: 3 * tB})
	h, other := p.NewHeap(), p.NewHeap()
	for _, size := range []int{0, -1, 3*tB + 1} {
		if _, err := h.Allocate(size); !errors.Is(err, ErrSize) {
			t.Errorf("Allocate(%d) = %v, want ErrSize", size, err)
		}
	}
	for _, size := range []int{100, 200 << 10, 2 * tB} {
		b := mustAlloc(t, h, size)
		if err := h.Deallocate(Buf{addr: b.Addr() + 16}); !errors.Is(err, ErrNotOwned) {
			t.Errorf("interior pointer of %d-byte buffer: %v, want ErrNotOwned", size, err)
		}
		mustFree(t, h, b)
		if err := h.Deallocate(b); !errors.Is(err, ErrDoubleFree) {
			t.Errorf("double free of %d-byte buffer: %v, want ErrDoubleFree", size, err)
		}
		if err := other.Deallocate(b); !errors.Is(err, ErrDoubleFree) {
			t.Errorf("cross-heap double free of %d-byte buffer: %v, want ErrDoubleFree", size, err)
		}
		if err := p.Deallocate(b); !errors.Is(err, ErrDoubleFree) {
			t.Errorf("pool double free of %d-byte buffer: %v, want ErrDoubleFree", size, err)
		}
	}
	// A buffer freed by another heap and not yet drained is still a double free.
	b := mustAlloc(t, h, 64)
	mustFree(t, other, b)
	if err := other.Deallocate(b); !errors.Is(err, ErrDoubleFree) {
		t.Errorf("double free of a deferred buffer: %v", err)
	}
	if err := h.Deallocate(b); !errors.Is(err, ErrDoubleFree) {
		t.Errorf("owner's free of a deferred buffer: %v", err)
	}
	if _, ok := p.Find(b.Addr()); ok {
		t.Error("Find finds a deferred buffer")
	}
	// The drain (at the next Allocate) frees it once: it is handed out
	// again once, and freeing that is not a double free.
	b2, b3 := mustAlloc(t, h, 64), mustAlloc(t, h, 64)
	if b2.Addr() != b.Addr() || b3.Addr() == b.Addr() {
		t.Errorf("after the drain: %#x, %#x; want %#x once", b2.Addr(), b3.Addr(), b.Addr())
	}
	mustFree(t, h, b2)
	mustFree(t, h, b3)
	var goBuf [32]byte
	for name, x := range map[string]Buf{"zero Buf": {}, "Go memory": {addr: uintptr(unsafe.Pointer(&goBuf)), n: 32}} {
		if err := h.Deallocate(x); !errors.Is(err, ErrNotOwned) {
			t.Errorf("Deallocate(%s) = %v, want ErrNotOwned", name, err)
		}
	}
	if (Buf{}).Bytes() != nil || !(Buf{}).IsZero() {
		t.Error("zero Buf")
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Heap.Close = %v", err)
	}
	other.Close()
	closeClean(t, p, pd)
}

func TestRegistrationFailure(t *testing.T) {
	p, pd := newPool(t, Config{})
	h := p.NewHeap()
	pd.setFailRegs(true)
	for _, size := range []int{64, 1 << 20, 2 * tB} {
		if _, err := h.Allocate(size); !errors.Is(err, errFake) {
			t.Fatalf("Allocate(%d) with failing RegMR = %v", size, err)
		}
	}
	if st := p.Stats(); st.Footprint != 0 || st.RegErrors != 3 || st.BlocksLive != 0 {
		t.Fatalf("after failed registrations: %+v", st)
	}
	pd.setFailRegs(false)
	b := mustAlloc(t, h, 64)
	mustFree(t, h, b)
	h.Close()
	closeClean(t, p, pd)

	pd = newFakePD()
	pd.failRegs = true
	if _, err := New(pd, Config{InitialBlocks: 2}); !errors.Is(err, errFake) {
		t.Fatalf("New with failing RegMR = %v", err)
	}
}

func TestDeregistrationFailure(t *testing.T) {
	p, pd := newPool(t, Config{RetainBlocks: -1, HeapCacheBytes: -1})
	h := p.NewHeap()
	b := mustAlloc(t, h, tB)
	pd.mu.Lock()
	pd.failDereg = true
	pd.mu.Unlock()
	mustFree(t, h, b) // releases the block; the failure is recorded
	if st := p.Stats(); st.DeregErrors != 1 {
		t.Fatalf("DeregErrors = %d", st.DeregErrors)
	}
	if err := p.Close(); err == nil {
		t.Fatal("Close does not report the failed deregistration")
	}
}

func TestInitialBlocks(t *testing.T) {
	p, pd := newPool(t, Config{InitialBlocks: 3})
	if r, _, _ := pd.counts(); r != 3 || p.Stats().Footprint != 3*tB {
		t.Fatalf("InitialBlocks: %d registrations", r)
	}
	h := p.NewHeap()
	b := mustAlloc(t, h, 4096)
	if r, _, _ := pd.counts(); r != 3 {
		t.Fatal("first allocation registered although blocks were pre-registered")
	}
	mustFree(t, h, b)
	h.Close()
	closeClean(t, p, pd)
}

// TestHeapAdoption: a closed heap with live buffers is reused by the next
// NewHeap, which collects the frees that arrived meanwhile.
func TestHeapAdoption(t *testing.T) {
	p, pd := newPool(t, Config{})
	h1 := p.NewHeap()
	var bufs []Buf
	for range 100 {
		bufs = append(bufs, mustAlloc(t, h1, 512))
	}
	h1.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, b := range bufs[:50] {
			if err := p.Deallocate(b); err != nil {
				t.Error(err)
			}
		}
	}()
	wg.Wait()
	if n := p.InUse(); n != 50 {
		t.Fatalf("InUse = %d, want 50", n)
	}
	h2 := p.NewHeap()
	if h2 != h1 {
		t.Fatal("closed heap not reused")
	}
	x := mustAlloc(t, h2, 512) // drains the 50 deferred frees
	if h2.deferred.Load() != 0 {
		t.Fatal("deferred list not drained")
	}
	mustFree(t, h2, x)
	for _, b := range bufs[50:] {
		mustFree(t, h2, b)
	}
	h2.Close()
	closeClean(t, p, pd)
}

func TestConfig(t *testing.T) {
	pd := newFakePD()
	bad := []Config{
		{BlockSize: 3 << 20},
		{BlockSize: 32 << 10},
		{BlockSize: 2 << 30},
		{SpanSize: 8 << 20},
		{SpanSize: 1 << 10},
		{SpanSize: 48 << 10},
		{MaxAlloc: 4 << 30},
		{MaxAlloc: -5},
		{InitialBlocks: -1},
	}
	for _, c := range bad {
		if _, err := New(pd, c); err == nil {
			t.Errorf("New(%+v) accepted", c)
		}
	}
	if _, err := New(nil, Config{}); err == nil {
		t.Error("New(nil PD) accepted")
	}
	p, err := New(pd, Config{BlockSize: 1 << 20, SpanSize: 16 << 10, Access: verbs.AccessLocalWrite})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Config()
	if c.MaxAlloc != DefaultMaxAlloc || c.RetainBlocks != DefaultRetainBlocks || c.HeapCacheBytes != DefaultHeapCacheBlocks<<20 {
		t.Fatalf("defaults not filled: %+v", c)
	}
	h := p.NewHeap()
	for _, size := range []int{8 << 10, 8<<10 + 1, 1 << 20, 1<<20 + 1} {
		b := mustAlloc(t, h, size)
		if mr := p.GetMR(b); !mrCovers(mr, b.Addr(), size) || mr.Access() != verbs.AccessLocalWrite {
			t.Fatalf("1 MiB blocks, size %d: MR %v", size, mr)
		}
		mustFree(t, h, b)
	}
	h.Close()
	closeClean(t, p, pd)
}

func TestFindRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	slow := func(bm []uint64, n, k int) int {
		run := 0
		for i := 0; i < n; i++ {
			if bm[i>>6]>>(i&63)&1 != 0 {
				if run++; run == k {
					return i - k + 1
				}
			} else {
				run = 0
			}
		}
		return -1
	}
	for range 20000 {
		n := []int{64, 128, 256}[rng.IntN(3)]
		bm := make([]uint64, n/64)
		for i := range bm {
			bm[i] = rng.Uint64() | rng.Uint64() | rng.Uint64()
		}
		k := 1 + rng.IntN(12)
		if got, want := findRun(bm, n, k), slow(bm, n, k); got != want {
			t.Fatalf("findRun(%x, %d, %d) = %d, want %d", bm, n, k, got, want)
		}
	}
}

// A span gets its allocation bitmap when it first serves a size class,
// sized by that class's slot count (at least a cache line), and keeps it:
// a block that only serves large runs holds none.
func TestSpanBitmapsOnDemand(t *testing.T) {
	p, pd := newPool(t, Config{})
	h := p.NewHeap()
	spanOf := func(b Buf) *span {
		blk := p.radix.lookup(b.Addr())
		return blk.heads[(b.Addr()-blk.base)>>p.spanShift].Load()
	}
	large := mustAlloc(t, h, 3*tS)
	blk := p.radix.lookup(large.Addr())
	for i := range blk.spans {
		if blk.spans[i].bits != nil {
			t.Fatalf("span %d of a block serving one large run has a bitmap", i)
		}
	}
	tiny := mustAlloc(t, h, 16)
	page := mustAlloc(t, h, 4096)
	if n := spanOf(tiny).nbits; n != tS/16/64 {
		t.Errorf("16-byte class span: %d bitmap words, want %d", n, tS/16/64)
	}
	if n := spanOf(page).nbits; n != 8 {
		t.Errorf("4 KiB class span (%d slots): %d bitmap words, want the 8-word minimum", tS/4096, n)
	}
	s := spanOf(tiny)
	mustFree(t, h, tiny)
	if err := h.Deallocate(tiny); err != ErrDoubleFree {
		t.Fatalf("double free: %v, want ErrDoubleFree", err)
	}
	mustFree(t, h, page)
	mustFree(t, h, large)
	if s.bits == nil {
		t.Fatal("a freed span lost its bitmap")
	}
	closeClean(t, p, pd)
}

// TestPoolFragmentsGoToHeapCache: short free runs given back to the pool
// (here by a heap's Flush) are taken into the cache of the next heap that
// visits the pool for a longer run, and serve its short requests from
// there, instead of staying at pool level while that heap goes back to the
// pool (and onto fresh blocks) for every short run.
// TestCoalesceStopsAtOtherHeapsRuns: a heap coalesces only the runs in its
// own cache. Heap a's two free runs are separated by a free run in heap b's
// cache; a request of a that needs them merged must go to the pool, and b's
// run must stay b's (exact fit, disjoint from what a got). A coalesce that
// merged every free neighbour would hand a a run overlapping b's.
func TestCoalesceStopsAtOtherHeapsRuns(t *testing.T) {
	p, pd := newPool(t, Config{})
	a, b := p.NewHeap(), p.NewHeap()
	a0 := mustAlloc(t, a, 2*tS)
	b0 := mustAlloc(t, b, 2*tS)
	a1 := mustAlloc(t, a, 2*tS)
	if b0.Addr() != a0.Addr()+2*tS || a1.Addr() != b0.Addr()+2*tS {
		t.Fatalf("layout %#x %#x %#x: want three adjacent 2-span runs a, b, a", a0.Addr(), b0.Addr(), a1.Addr())
	}
	mustFree(t, a, a0)
	mustFree(t, a, a1)
	mustFree(t, b, b0)
	x := mustAlloc(t, a, 3*tS) // a holds 4 spans in two runs, none of 3
	if x.Addr() >= a0.Addr() && x.Addr() < a1.Addr()+2*tS {
		t.Fatalf("3-span buffer at %#x inside [%#x,%#x): merged across heap b's run", x.Addr(), a0.Addr(), a1.Addr()+2*tS)
	}
	y := mustAlloc(t, b, 2*tS)
	if y.Addr() != b0.Addr() {
		t.Errorf("heap b's cached run not reused: %#x, want %#x", y.Addr(), b0.Addr())
	}
	for _, z := range []Buf{mustAlloc(t, a, 2*tS), mustAlloc(t, a, 2*tS)} {
		if z.Addr() != a0.Addr() && z.Addr() != a1.Addr() {
			t.Errorf("heap a's cached runs not reused: %#x, want %#x or %#x", z.Addr(), a0.Addr(), a1.Addr())
		}
		mustFree(t, a, z)
	}
	mustFree(t, a, x)
	mustFree(t, b, y)
	a.Close()
	b.Close()
	closeClean(t, p, pd)
}

func TestPoolFragmentsGoToHeapCache(t *testing.T) {
	p, pd := newPool(t, Config{})
	span := p.cfg.SpanSize
	a, b := p.NewHeap(), p.NewHeap()
	// Fill one block with runs of 2 spans on heap a, free every other one
	// and flush: the pool holds 16 free 2-span runs, none adjacent.
	var held, freed []Buf
	for i := range p.nspans / 2 {
		x, err := a.Allocate(2 * span)
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			freed = append(freed, x)
		} else {
			held = append(held, x)
		}
	}
	for _, x := range freed {
		if err := a.Deallocate(x); err != nil {
			t.Fatal(err)
		}
	}
	a.Flush()
	first := p.radix.lookup(held[0].addr)
	p.mu.Lock()
	got := first.nfree
	p.mu.Unlock()
	if got != p.nspans/2 {
		t.Fatalf("after Flush the first block has %d free spans at pool level, want %d", got, p.nspans/2)
	}
	// Heap b needs 4 spans: no run that long in the pool, so a new block.
	big, err := b.Allocate(4 * span)
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Stats().Registrations; r != 2 {
		t.Fatalf("%d registrations after the 4-span run, want 2", r)
	}
	// Its 2-span requests are then served from the fragments it took.
	visits := p.heapVisits.Load()
	var small []Buf
	for range len(freed) {
		x, err := b.Allocate(2 * span)
		if err != nil {
			t.Fatal(err)
		}
		if p.radix.lookup(x.addr) != first {
			t.Errorf("2-span run at %#x is not in the block whose fragments were at pool level", x.addr)
		}
		small = append(small, x)
	}
	if v := p.heapVisits.Load() - visits; v != 0 {
		t.Errorf("%d pool visits for %d 2-span runs while the pool's fragments could serve them, want 0", v, len(small))
	}
	p.mu.Lock()
	got = first.nfree
	p.mu.Unlock()
	if got != 0 {
		t.Errorf("%d spans of the first block still free at pool level, want 0", got)
	}
	for _, x := range append(append(held, small...), big) {
		if err := p.Deallocate(x); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	b.Close()
	closeClean(t, p, pd)
}
