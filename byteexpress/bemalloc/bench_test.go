package bemalloc

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Figure 4 of the paper: allocator operation rate and peak memory versus
// thread count, for large (64 KB-1 MB, exponential size distribution) and
// small (16 B-16 KB, uniform) allocations with about 10% cross-thread
// frees. Each goroutine plays a thread: it owns a Heap and a working set of
// slots; every iteration frees the buffer in a random slot (one in ten is
// handed to the next goroutine, which frees it) and allocates a new one.
//
//	BenchmarkAlloc/{small,large}/{bemalloc,bemalloc-thp,bemalloc-cache,gomake,syncpool}/threads={1,2,4,8}
//
// bemalloc-thp is bemalloc with Config.HugePages (blocks advised
// MADV_HUGEPAGE), bemalloc-cache with larger caches (bigCache). ops/s counts allocations plus frees per wall-clock second
// over all goroutines. peak-MB is bemalloc's peak registered footprint, and
// for the Go baselines the peak of the Go heap in use (runtime HeapInuse,
// sampled every millisecond) above the level before the run. regs is the
// RegMR calls bemalloc made in the timed phase (0 in a steady state), and
// allocs/op the Go heap allocations per operation (b.ReportAllocs; 0 for
// bemalloc, TestFigure4ZeroAllocs proves it without timing).
// pool-locks/1k-ops is, for bemalloc, how many times per 1000 operations
// a heap took the pool's mutex in the timed phase (Pool.heapVisits: runs
// taken from the pool, caches flushed into it): the contention the heap
// caches exist to avoid, a count that does not need as many cores as
// goroutines to show (it depends on the interleaving, not on the speed).
// bench/alloc.sh runs them and writes results/fig4.

type workload struct {
	name     string
	min, max int
	exp      bool // exponential falloff, else uniform
	live     int  // working-set slots per goroutine
	// warm is the untimed warm-up, in iterations per goroutine: enough
	// for every contender to reach its steady size. Ten working sets (20K
	// iterations) do for small buffers; for large ones ten working sets
	// are only 640 iterations, after which both sync.Pool (Go heap
	// allocations and a higher cost per operation in the timed phase)
	// and bemalloc (registrations in the timed phase, its footprint
	// still growing to its cache bound) were still filling; 1000 working
	// sets (64K iterations) get both within a few blocks or buffers of it.
	warm int
}

var workloads = []workload{
	{name: "small", min: 16, max: 16 << 10, live: 2048, warm: 10 * 2048},
	{name: "large", min: 64 << 10, max: 1 << 20, exp: true, live: 64, warm: 1000 * 64},
}

const (
	sizeTable = 1 << 13
	crossPct  = 10
	inboxDiv  = 4 // a receiver's backlog is at most a quarter of a working set
)

// sizes draws the size sequence of one goroutine (fixed seed).
func (w workload) sizes(seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 99))
	out := make([]int, sizeTable)
	span := float64(w.max - w.min)
	lambda := 4 / span // density at max is e^-4 of the density at min
	for i := range out {
		if !w.exp {
			out[i] = w.min + rng.IntN(w.max-w.min+1)
			continue
		}
		u := rng.Float64()
		x := -math.Log(1-u*(1-math.Exp(-lambda*span))) / lambda
		out[i] = min(w.min+int(x), w.max)
	}
	return out
}

// inbox receives buffers handed over by another goroutine for freeing.
type inbox[T any] struct {
	mu    sync.Mutex
	items []T
	spare []T
	_     [64]byte
}

// put hands x over unless the receiver's backlog already holds a quarter
// of a working set (it is descheduled, or done with its share of b.N); then
// the caller frees x itself, so the backlog and the live memory stay bounded.
func (in *inbox[T]) put(x T) bool {
	in.mu.Lock()
	ok := len(in.items) < cap(in.items)
	if ok {
		in.items = append(in.items, x)
	}
	in.mu.Unlock()
	return ok
}

func (in *inbox[T]) take() []T {
	in.mu.Lock()
	got := in.items
	in.items = in.spare[:0]
	in.mu.Unlock()
	in.spare = got
	return got
}

// allocator is one contender, instantiated per benchmark run.
type allocator[T any] struct {
	newWorker func() (alloc func(int) T, free func(T))
	teardown  func() (peakBytes int64, ok bool) // bemalloc reports its footprint
	regs      func() int64                      // bemalloc: RegMR calls so far; nil for the Go baselines
	locks     func() int64                      // bemalloc: heap visits to Pool.mu so far; nil for the Go baselines
	valid     func(T) bool
}

func runFigure4[T any](b *testing.B, w workload, threads int, mk func() allocator[T]) {
	a := mk()
	inboxes := make([]inbox[T], threads)
	for i := range inboxes {
		inboxes[i].items = make([]T, 0, w.live/inboxDiv)
		inboxes[i].spare = make([]T, 0, w.live/inboxDiv)
	}
	type worker struct {
		alloc func(int) T
		free  func(T)
		slots []T
		sizes []int
		rng   uint64
	}
	ws := make([]*worker, threads)
	for i := range ws {
		alloc, free := a.newWorker()
		ws[i] = &worker{alloc: alloc, free: free, slots: make([]T, w.live), sizes: w.sizes(uint64(i + 1)), rng: uint64(i)*0x9e3779b97f4a7c15 + 1}
	}
	runtime.GC()
	base := heapInuse()
	var peak atomic.Int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := heapInuse() - base; v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	// Prefill the working sets, warm up (every goroutine churns its working
	// set for w.warm iterations, untimed, so that pools and heaps reach
	// their steady size), then run b.N iterations split over the goroutines.
	for _, wk := range ws {
		for j := range wk.slots {
			wk.slots[j] = wk.alloc(wk.sizes[j%sizeTable])
		}
	}
	run := func(i, n int) {
		wk := ws[i]
		own, next := &inboxes[i], &inboxes[(i+1)%threads]
		live := uint64(len(wk.slots))
		for it := range n {
			wk.rng ^= wk.rng << 13
			wk.rng ^= wk.rng >> 7
			wk.rng ^= wk.rng << 17
			r := wk.rng
			j := r % live
			if old := wk.slots[j]; a.valid(old) {
				if (r>>32)%100 >= crossPct || !next.put(old) {
					wk.free(old)
				}
			}
			wk.slots[j] = wk.alloc(wk.sizes[it&(sizeTable-1)])
			if it&31 == 0 {
				for _, x := range own.take() {
					wk.free(x)
				}
			}
		}
	}
	phase := func(share func(i int) int) {
		var start, done sync.WaitGroup
		start.Add(1)
		for i := range ws {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				run(i, share(i))
			}()
		}
		start.Done()
		done.Wait()
	}
	phase(func(int) int { return w.warm })
	var regs0, locks0 int64
	if a.regs != nil {
		regs0, locks0 = a.regs(), a.locks()
	}
	b.ResetTimer()
	cpu0 := cpuTime()
	t0 := time.Now()
	phase(func(i int) int {
		n := b.N / threads
		if i < b.N%threads {
			n++
		}
		return n
	})
	elapsed := time.Since(t0)
	cpu := cpuTime() - cpu0
	b.StopTimer()
	if a.regs != nil {
		b.ReportMetric(float64(a.regs()-regs0), "regs")
		b.ReportMetric(float64(a.locks()-locks0)*1000/float64(2*b.N), "pool-locks/1k-ops")
	}
	close(stop)
	sampler.Wait()
	if v := heapInuse() - base; v > peak.Load() {
		peak.Store(v)
	}
	for i, wk := range ws {
		for _, x := range inboxes[i].take() {
			wk.free(x)
		}
		for _, x := range wk.slots {
			if a.valid(x) {
				wk.free(x)
			}
		}
	}
	peakBytes := peak.Load()
	if pb, ok := a.teardown(); ok {
		peakBytes = pb
	}
	b.ReportMetric(float64(2*b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(peakBytes)/(1<<20), "peak-MB")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(2*b.N), "cpu-ns/op")
}

// cpuTime is the process's user plus system CPU time (getrusage). On a
// machine shared with other work the wall-clock rate measures the share of
// the cores the benchmark got as much as the allocator; cpu-ns/op, the CPU
// time of the whole process per allocation or free (every goroutine, the
// 1 ms heap sampler, the GC), does not depend on that share. 0 where
// getrusage is unavailable.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var heapSamples = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}

// heapInuse is runtime.MemStats.HeapInuse, read without stopping the world.
func heapInuse() int64 {
	s := [2]metrics.Sample{heapSamples[0], heapSamples[1]}
	metrics.Read(s[:])
	return int64(s[0].Value.Uint64() + s[1].Value.Uint64())
}

// bigCache is the bemalloc-cache contender: heap caches of 16 blocks
// (64 MiB, above a goroutine's large working set of 64 buffers of 300 KB
// mean) instead of DefaultHeapCacheBlocks (8; 2 before heaps coalesced
// their caches), and 64 retained blocks instead of 16. A diagnostic, not a
// tuned default: it shows how much of the large-allocation gap to
// sync.Pool the cache sizes explain.
var bigCache = Config{HeapCacheBytes: 16 * DefaultBlockSize, RetainBlocks: 64}

func bemallocAllocator(b *testing.B, cfg Config) allocator[Buf] {
	p, err := New(newFakePD(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return allocator[Buf]{
		newWorker: func() (func(int) Buf, func(Buf)) {
			h := p.NewHeap()
			return func(n int) Buf {
					x, err := h.Allocate(n)
					if err != nil {
						panic(err)
					}
					bs := x.Bytes()
					bs[0], bs[n-1] = 1, 1
					return x
				}, func(x Buf) {
					if err := h.Deallocate(x); err != nil {
						panic(err)
					}
				}
		},
		teardown: func() (int64, bool) {
			pk := p.Stats().PeakFootprint
			if err := p.Close(); err != nil {
				b.Fatal(err)
			}
			return pk, true
		},
		regs:  func() int64 { return p.Stats().Registrations },
		locks: func() int64 { return p.heapVisits.Load() },
		valid: func(x Buf) bool { return !x.IsZero() },
	}
}

func goMakeAllocator(*testing.B) allocator[[]byte] {
	return allocator[[]byte]{
		newWorker: func() (func(int) []byte, func([]byte)) {
			return func(n int) []byte {
				bs := make([]byte, n)
				bs[0], bs[n-1] = 1, 1
				return bs
			}, func([]byte) {} // the GC frees it
		},
		teardown: func() (int64, bool) { return 0, false },
		valid:    func(x []byte) bool { return x != nil },
	}
}

// syncPoolAllocator keeps one sync.Pool per power-of-two size class.
func syncPoolAllocator(*testing.B) allocator[*[]byte] {
	var pools [21]sync.Pool
	class := func(n int) int { return bits.Len(uint(n - 1)) }
	return allocator[*[]byte]{
		newWorker: func() (func(int) *[]byte, func(*[]byte)) {
			return func(n int) *[]byte {
					c := class(n)
					p, _ := pools[c].Get().(*[]byte)
					if p == nil {
						bs := make([]byte, 1<<c)
						p = &bs
					}
					bs := *p
					bs[0], bs[n-1] = 1, 1
					return p
				}, func(p *[]byte) {
					pools[class(cap(*p))].Put(p)
				}
		},
		teardown: func() (int64, bool) { return 0, false },
		valid:    func(x *[]byte) bool { return x != nil },
	}
}

func BenchmarkAlloc(b *testing.B) {
	for _, w := range workloads {
		b.Run(w.name, func(b *testing.B) {
			for _, name := range []string{"bemalloc", "bemalloc-thp", "bemalloc-cache", "gomake", "syncpool"} {
				b.Run(name, func(b *testing.B) {
					for _, threads := range []int{1, 2, 4, 8} {
						b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
							b.ReportAllocs()
							switch name {
							case "bemalloc":
								runFigure4(b, w, threads, func() allocator[Buf] { return bemallocAllocator(b, Config{}) })
							case "bemalloc-thp":
								runFigure4(b, w, threads, func() allocator[Buf] { return bemallocAllocator(b, Config{HugePages: true}) })
							case "bemalloc-cache":
								runFigure4(b, w, threads, func() allocator[Buf] { return bemallocAllocator(b, bigCache) })
							case "gomake":
								runFigure4(b, w, threads, func() allocator[[]byte] { return goMakeAllocator(b) })
							case "syncpool":
								runFigure4(b, w, threads, func() allocator[*[]byte] { return syncPoolAllocator(b) })
							}
						})
					}
				})
			}
		})
	}
}

// BenchmarkHeapFastPath is one allocate/free pair on the owner's heap.
func BenchmarkHeapFastPath(b *testing.B) {
	for _, size := range []int{64, 4096, 256 << 10} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			p, _ := New(newFakePD(), Config{})
			h := p.NewHeap()
			x, _ := h.Allocate(size)
			h.Deallocate(x)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				x, _ = h.Allocate(size)
				h.Deallocate(x)
			}
			b.StopTimer()
			p.Close()
		})
	}
}

// BenchmarkCrossHeapFree allocates on one heap and frees on another (the
// deferred push), the owner draining on its next allocation.
func BenchmarkCrossHeapFree(b *testing.B) {
	p, _ := New(newFakePD(), Config{})
	a, o := p.NewHeap(), p.NewHeap()
	b.ReportAllocs()
	for range b.N {
		x, _ := a.Allocate(256)
		o.Deallocate(x)
	}
	b.StopTimer()
	p.Close()
}

func BenchmarkGetMR(b *testing.B) {
	p, _ := New(newFakePD(), Config{})
	h := p.NewHeap()
	x, _ := h.Allocate(1000)
	b.ReportAllocs()
	for range b.N {
		if p.GetMR(x) == nil {
			b.Fatal("no MR")
		}
	}
	b.StopTimer()
	h.Deallocate(x)
	p.Close()
}

// TestFigure4LargeStaysInHeapCaches runs Figure 4's large workload (64
// KB-1 MB, exponential) on 1, 2 and 4 heaps, interleaved on one goroutine,
// about one free in ten handed to the next heap, and checks that after the
// warm-up the heaps serve it from their caches: fewer than one visit to the
// pool (Pool.mu) per 1000 operations with the default configuration, and
// many more with the heap cache's coalescing left without room (a cache of
// two blocks, the default before, where runs overflow into the pool and
// come back), so that the check can fail. The footprint stays within
// twice the live bytes plus one cache per heap.
func TestFigure4LargeStaysInHeapCaches(t *testing.T) {
	if testing.Short() {
		t.Skip("about a second of allocation")
	}
	w := workloads[1]
	visits := func(heaps int, cfg Config) (perK float64, st Stats) {
		p, pd := newPool(t, cfg)
		type worker struct {
			h     *Heap
			slots []Buf
			sizes []int
			rng   uint64
			it    int
			inbox []Buf
		}
		ws := make([]*worker, heaps)
		for i := range ws {
			ws[i] = &worker{h: p.NewHeap(), slots: make([]Buf, w.live), sizes: w.sizes(uint64(i + 1)), rng: uint64(i)*0x9e3779b97f4a7c15 + 1}
		}
		step := func(i int) {
			wk := ws[i]
			wk.rng ^= wk.rng << 13
			wk.rng ^= wk.rng >> 7
			wk.rng ^= wk.rng << 17
			j := wk.rng % uint64(len(wk.slots))
			if old := wk.slots[j]; !old.IsZero() {
				if next := ws[(i+1)%heaps]; (wk.rng>>32)%100 < crossPct {
					next.inbox = append(next.inbox, old)
				} else if err := wk.h.Deallocate(old); err != nil {
					t.Fatal(err)
				}
			}
			x, err := wk.h.Allocate(wk.sizes[wk.it&(sizeTable-1)])
			if err != nil {
				t.Fatal(err)
			}
			wk.slots[j], wk.it = x, wk.it+1
			if wk.it&31 == 0 {
				for _, y := range wk.inbox {
					if err := wk.h.Deallocate(y); err != nil {
						t.Fatal(err)
					}
				}
				wk.inbox = wk.inbox[:0]
			}
		}
		const warm, n = 10000, 40000
		for it := range warm * heaps {
			step(it % heaps)
		}
		v0 := p.heapVisits.Load()
		for it := range n * heaps {
			step(it % heaps)
		}
		perK = float64(p.heapVisits.Load()-v0) * 1000 / float64(2*n*heaps)
		st = p.Stats()
		for _, wk := range ws {
			closeHeap(t, wk.h, wk.slots, wk.inbox)
		}
		closeClean(t, p, pd)
		return perK, st
	}
	for _, heaps := range []int{1, 2, 4} {
		def, st := visits(heaps, Config{})
		small, _ := visits(heaps, Config{HeapCacheBytes: 2 * DefaultBlockSize})
		t.Logf("%d heaps: %.2f pool visits per 1000 operations (2-block caches: %.1f); footprint %d MiB, live %d MiB",
			heaps, def, small, st.Footprint>>20, st.InUseBytes>>20)
		if def >= 1 {
			t.Errorf("%d heaps: %.2f pool visits per 1000 operations in the steady state, want < 1", heaps, def)
		}
		if small < 10*max(def, 0.1) {
			t.Errorf("%d heaps: 2-block caches visit the pool %.2f times per 1000 operations, default %.2f: the check cannot tell them apart", heaps, small, def)
		}
		if limit := 2*st.InUseBytes + int64(heaps*DefaultHeapCacheBlocks*DefaultBlockSize); st.Footprint > limit {
			t.Errorf("%d heaps: footprint %d MiB above twice the live bytes plus one cache per heap (%d MiB)", heaps, st.Footprint>>20, limit>>20)
		}
	}
}

// TestFigure4ZeroAllocs runs Figure 4's iteration (free the buffer in a
// random slot, about one in ten through another heap, the cross-thread
// free; allocate one of the workload's next size) on one goroutine, after
// the benchmark's warm-up, and checks with testing.AllocsPerRun that
// bemalloc makes no Go heap allocation in that steady state, for both size
// ranges and with and without HugePages. It is BenchmarkAlloc's allocs/op
// without the timing.
func TestFigure4ZeroAllocs(t *testing.T) {
	for _, w := range workloads {
		for _, huge := range []bool{false, true} {
			p, pd := newPool(t, Config{HugePages: huge})
			own, other := p.NewHeap(), p.NewHeap()
			sizes := w.sizes(1)
			slots := make([]Buf, w.live)
			rng, it := uint64(1), 0
			step := func() {
				rng ^= rng << 13
				rng ^= rng >> 7
				rng ^= rng << 17
				j := rng % uint64(len(slots))
				if old := slots[j]; !old.IsZero() {
					h := own
					if (rng>>32)%100 < crossPct {
						h = other
					}
					if err := h.Deallocate(old); err != nil {
						t.Fatal(err)
					}
				}
				x, err := own.Allocate(sizes[it&(sizeTable-1)])
				if err != nil {
					t.Fatal(err)
				}
				x.Bytes()[0] = 1
				slots[j], it = x, it+1
			}
			for range w.warm {
				step()
			}
			regs := p.Stats().Registrations
			if n := testing.AllocsPerRun(20*w.live, step); n != 0 {
				t.Errorf("%s (huge pages %v): %v Go heap allocations per iteration, want 0", w.name, huge, n)
			}
			if r := p.Stats().Registrations - regs; r != 0 {
				t.Logf("%s (huge pages %v): %d registrations after the warm-up", w.name, huge, r)
			}
			for _, x := range slots {
				if !x.IsZero() {
					if err := own.Deallocate(x); err != nil {
						t.Fatal(err)
					}
				}
			}
			own.Close()
			other.Close()
			closeClean(t, p, pd)
		}
	}
}

// closeHeap frees through h every buffer of lists still held (not zero)
// and closes h.
func closeHeap(t testing.TB, h *Heap, lists ...[]Buf) {
	t.Helper()
	for _, l := range lists {
		for _, x := range l {
			if !x.IsZero() {
				if err := h.Deallocate(x); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	h.Close()
}
