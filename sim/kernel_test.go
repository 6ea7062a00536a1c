package sim

import (
	"cmp"
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/besim/besim/units"
)

type recorder struct {
	k   *Kernel
	got []uint64
	at  []Time
}

func (r *recorder) OnEvent(now Time, tag uint64) {
	r.got = append(r.got, tag)
	r.at = append(r.at, now)
}

func TestKernelOrderAndTies(t *testing.T) {
	k := NewKernel()
	r := &recorder{k: k}
	k.At(30, r, 3)
	k.At(10, r, 1)
	k.At(20, r, 2)
	k.At(10, r, 11) // same instant as tag 1, scheduled later: runs after it
	k.At(0, r, 0)
	k.Run()
	want := []uint64{0, 1, 11, 2, 3}
	if !slices.Equal(r.got, want) {
		t.Fatalf("order %v, want %v", r.got, want)
	}
	if k.Now() != 30 || k.Events() != 5 || k.Pending() != 0 {
		t.Fatalf("now=%v events=%d pending=%d", k.Now(), k.Events(), k.Pending())
	}
}

// chain schedules more events from inside handlers, including at "now".
type chain struct {
	k   *Kernel
	rng *rand.Rand
	log []entry
	n   int
}

func (c *chain) OnEvent(now Time, tag uint64) {
	c.log = append(c.log, entry{at: now, tag: tag})
	if c.n > 0 {
		c.n--
		d := Time(c.rng.IntN(5)) // zero delays exercise same-instant FIFO
		c.k.After(d, c, tag*10+1)
	}
}

// TestKernelMatchesReference checks the radix heap against a stable sort of
// (time, insertion order) over random pushes interleaved with pops.
func TestKernelMatchesReference(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		k := NewKernel()
		type ref struct {
			at  Time
			seq int
		}
		var pending []ref
		seq := 0
		r := &recorder{k: k}
		for step := 0; step < 3000; step++ {
			if rng.IntN(3) > 0 || len(pending) == 0 {
				at := k.Now() + Time(rng.IntN(1<<uint(rng.IntN(40))))
				k.At(at, r, uint64(seq))
				pending = append(pending, ref{at, seq})
				seq++
				continue
			}
			slices.SortStableFunc(pending, func(a, b ref) int {
				if a.at != b.at {
					if a.at < b.at {
						return -1
					}
					return 1
				}
				return a.seq - b.seq
			})
			want := pending[0]
			pending = pending[1:]
			if !k.Step() {
				t.Fatal("kernel empty while reference is not")
			}
			got := r.got[len(r.got)-1]
			if got != uint64(want.seq) || k.Now() != want.at {
				t.Fatalf("seed %d step %d: got tag %d at %v, want %d at %v", seed, step, got, k.Now(), want.seq, want.at)
			}
		}
	}
}

func TestRunUntilLeavesClockAndLaterEvents(t *testing.T) {
	k := NewKernel()
	r := &recorder{k: k}
	k.At(5*Microsecond, r, 1)
	k.At(20*Microsecond, r, 2)
	k.RunUntil(10 * Microsecond)
	if !slices.Equal(r.got, []uint64{1}) || k.Now() != 10*Microsecond {
		t.Fatalf("got %v now %v", r.got, k.Now())
	}
	// Scheduling between now and the remaining event must still be ordered.
	k.At(12*Microsecond, r, 3)
	k.Run()
	if !slices.Equal(r.got, []uint64{1, 3, 2}) {
		t.Fatalf("got %v", r.got)
	}
}

func TestStop(t *testing.T) {
	k := NewKernel()
	s := &stopper{k: k}
	for i := 0; i < 5; i++ {
		k.At(Time(i), s, uint64(i))
	}
	k.Run()
	if s.n != 3 || k.Now() != 2 {
		t.Fatalf("ran %d events, now %v", s.n, k.Now())
	}
}

type stopper struct {
	k *Kernel
	n int
}

func (s *stopper) OnEvent(now Time, tag uint64) {
	s.n++
	if tag == 2 {
		s.k.Stop()
	}
}

func TestPastSchedulingPanics(t *testing.T) {
	k := NewKernel()
	k.RunUntil(100)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	k.At(50, &recorder{}, 0)
}

func TestTimer(t *testing.T) {
	tests := []struct {
		name string
		ops  func(k *Kernel, tm *Timer)
		want []Time
	}{
		{"fires once", func(k *Kernel, tm *Timer) { tm.Set(100) }, []Time{100}},
		{"stop", func(k *Kernel, tm *Timer) { tm.Set(100); tm.Stop() }, nil},
		{"later re-arm", func(k *Kernel, tm *Timer) { tm.Set(100); tm.Set(300) }, []Time{300}},
		{"earlier re-arm", func(k *Kernel, tm *Timer) { tm.Set(300); tm.Set(100) }, []Time{100}},
		{"stop then re-arm", func(k *Kernel, tm *Timer) { tm.Set(100); tm.Stop(); tm.Set(200) }, []Time{200}},
		{"re-arm from a callback", func(k *Kernel, tm *Timer) {
			tm.Set(100)
			k.At(50, pusher{tm, 400}, 0)
		}, []Time{400}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := NewKernel()
			r := &recorder{k: k}
			var tm Timer
			tm.Init(k, r, 9)
			tc.ops(k, &tm)
			k.Run()
			if !slices.Equal(r.at, tc.want) {
				t.Fatalf("fired at %v, want %v", r.at, tc.want)
			}
			if tm.Armed() {
				t.Fatal("still armed after firing")
			}
		})
	}
}

type pusher struct {
	tm *Timer
	at Time
}

func (p pusher) OnEvent(Time, uint64) { p.tm.Set(p.at) }

func TestTimeString(t *testing.T) {
	tests := []struct {
		t    Time
		want string
	}{
		{1280, "1.28ns"}, {55 * Microsecond, "55us"}, {10 * Millisecond, "10ms"},
		{2 * Second, "2s"}, {7, "7ps"}, {-3 * Nanosecond, "-3ns"}, {Never, "never"},
	}
	for _, tc := range tests {
		if got := tc.t.String(); got != tc.want {
			t.Errorf("%d: got %q want %q", int64(tc.t), got, tc.want)
		}
	}
}

func TestTxTime(t *testing.T) {
	tests := []struct {
		n    int64
		rate units.Rate
		want Time
	}{
		{64, 400e9, 1280},
		{1500, 25e9, 480 * Nanosecond},
		{1, 3, 2666666666667}, // rounds up
		{65535 * 64, 25e9, 1342156800 * Picosecond},
		{2 << 20, 100e9, 167772160 * Picosecond},
		{1 << 40, 1e9, 8796093022208 * Nanosecond},
	}
	for _, tc := range tests {
		if got := TxTime(tc.n, tc.rate); got != tc.want {
			t.Errorf("TxTime(%d,%d)=%d want %d", tc.n, tc.rate, got, tc.want)
		}
	}
}

func TestStreamDeterministicAndDistinct(t *testing.T) {
	a, b, c := Stream(1, "sw0"), Stream(1, "sw0"), Stream(1, "sw1")
	x, y, z := a.Uint64(), b.Uint64(), c.Uint64()
	if x != y || x == z {
		t.Fatalf("%x %x %x", x, y, z)
	}
	if Stream(2, "sw0").Uint64() == x {
		t.Fatal("seed ignored")
	}
}

// hold is the classic hold-model body: each event schedules one more at
// now + a uniform random increment, so the pending count stays constant.
type hold struct {
	k    *Kernel
	id   HandlerID
	rng  *rand.Rand
	mean int
}

func (h *hold) OnEvent(now Time, tag uint64) {
	h.k.PostAfter(Time(1+h.rng.IntN(2*h.mean)), h.id, tag)
}

func newHold(pending int) *hold {
	k := NewKernel()
	h := &hold{k: k, rng: rand.New(rand.NewPCG(1, 2)), mean: 1000000}
	h.id = k.Register(h)
	for i := 0; i < pending; i++ {
		k.At(Time(h.rng.IntN(2*h.mean)), h, uint64(i))
	}
	for i := 0; i < 20*pending; i++ { // reach steady state and grow buckets
		k.Step()
	}
	return h
}

func TestKernelHoldAllocsNothing(t *testing.T) {
	h := newHold(10000)
	if n := testing.AllocsPerRun(10000, func() { h.k.Step() }); n != 0 {
		t.Fatalf("%v allocs per event", n)
	}
	var tm Timer
	tm.Init(h.k, &recorder{}, 0)
	if n := testing.AllocsPerRun(1000, func() { tm.SetAfter(5); tm.Stop() }); n != 0 {
		t.Fatalf("timer: %v allocs", n)
	}
}

func BenchmarkKernelHold(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("radix/pending=%d", n), func(b *testing.B) {
			h := newHold(n)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.k.Step()
			}
		})
		b.Run(fmt.Sprintf("container-heap/pending=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			q := &refHeap{}
			var seq uint64
			for i := 0; i < n; i++ {
				seq++
				heap.Push(q, refEntry{at: Time(rng.IntN(2000000)), seq: seq})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				e := heap.Pop(q).(refEntry)
				seq++
				heap.Push(q, refEntry{at: e.at + Time(1+rng.IntN(2000000)), seq: seq})
			}
		})
	}
}

// refEntry is what a heap needs per event: the kernel's fields plus an
// insertion sequence for ties.
type refEntry struct {
	at  Time
	seq uint64
	tag uint64
	hid HandlerID
}

// refHeap is the container/heap baseline the design asks us to beat.
type refHeap []refEntry

func (h refHeap) Len() int { return len(h) }
func (h refHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h refHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *refHeap) Push(x any)   { *h = append(*h, x.(refEntry)) }
func (h *refHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

func TestKernelFarFuture(t *testing.T) {
	k := NewKernel()
	r := &recorder{k: k}
	k.At(Never-1, r, 2)
	k.At(1<<62, r, 1)
	k.At(3, r, 0)
	k.Run()
	if !slices.Equal(r.got, []uint64{0, 1, 2}) {
		t.Fatalf("got %v", r.got)
	}
}

// TestKernelRunUntilMatchesReference interleaves RunUntil bounds with pushes
// whose increments span from 0 (ties) to far levels, so sorted runs, cascades
// and the until check inside a run are all exercised.
func TestKernelRunUntilMatchesReference(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		k := NewKernel()
		r := &recorder{k: k}
		type ref struct {
			at  Time
			tag uint64
		}
		var pending, want []ref

		tag := uint64(0)
		for round := 0; round < 300; round++ {
			for range rng.IntN(20) {
				at := k.Now() + Time(rng.IntN(1<<uint(rng.IntN(16))))
				k.At(at, r, tag)
				pending = append(pending, ref{at, tag})
				tag++
			}
			until := k.Now() + Time(rng.IntN(1<<uint(rng.IntN(16))))
			slices.SortStableFunc(pending, func(a, b ref) int { return cmp.Compare(a.at, b.at) })
			n := 0
			for n < len(pending) && pending[n].at <= until {
				n++
			}
			want = append(want, pending[:n]...)
			pending = slices.Clone(pending[n:])

			k.RunUntil(until)
			if k.Now() != until {
				t.Fatalf("seed %d: clock %v after RunUntil(%v)", seed, k.Now(), until)
			}
		}
		if len(r.got) != len(want) {
			t.Fatalf("seed %d: dispatched %d, want %d", seed, len(r.got), len(want))
		}
		for i, w := range want {
			if r.got[i] != w.tag || r.at[i] != w.at {
				t.Fatalf("seed %d event %d: got tag %d at %v, want %d at %v", seed, i, r.got[i], r.at[i], w.tag, w.at)
			}
		}
	}
}

// TestRegisterNew checks that a handler registered with RegisterNew gets
// its events, that Register keeps returning one ID per handler, and that
// RegisterNew adds no lookup entry (a later Register of the same handler
// gets a fresh ID dispatching to it).
func TestRegisterNew(t *testing.T) {
	k := NewKernel()
	var a, b countHandler
	ida := k.RegisterNew(&a)
	if id := k.Register(&b); k.Register(&b) != id {
		t.Fatal("Register returned two IDs for one handler")
	}
	ida2 := k.Register(&a)
	if ida2 == ida {
		t.Fatal("Register found a handler RegisterNew registered: RegisterNew kept a lookup entry")
	}
	k.Post(1, ida, 0)
	k.Post(2, ida2, 0)
	k.At(3, &b, 0)
	k.Run()
	if a.n != 2 || b.n != 1 {
		t.Fatalf("a got %d events (want 2), b %d (want 1)", a.n, b.n)
	}
	if len(k.ids) != 2 {
		t.Fatalf("lookup holds %d handlers, want 2 (b, and a once Register saw it)", len(k.ids))
	}
}

type countHandler struct{ n int }

func (c *countHandler) OnEvent(Time, uint64) { c.n++ }

// burster posts bursts of events that share instants, at every scale, and
// checks each event it receives against a heap ordered by (instant,
// insertion sequence): the order a stable sort would give.
type burster struct {
	t   *testing.T
	k   *Kernel
	id  HandlerID
	rng *rand.Rand
	ref refHeap
	seq uint64
	n   int
}

func (b *burster) post(at Time) {
	b.seq++
	b.k.Post(at, b.id, b.seq)
	heap.Push(&b.ref, refEntry{at: at, seq: b.seq})
}

// burst posts up to 100 events over a few instants within a window of a
// random scale (from 1 ps to about 4 ms) starting after from: slots of
// every level fill past runMax (so they cascade) or stay sparse (so they
// become sorted runs), with ties inside both.
func (b *burster) burst(from Time) {
	scale := b.rng.IntN(32)
	base := from + Time(b.rng.Int64N(1<<scale+1))
	width := int64(1) << b.rng.IntN(scale+1)
	at := make([]Time, 1+b.rng.IntN(8))
	for i := range at {
		at[i] = base + Time(b.rng.Int64N(width))
	}
	for range 1 + b.rng.IntN(100) {
		b.post(at[b.rng.IntN(len(at))])
	}
}

func (b *burster) OnEvent(now Time, tag uint64) {
	want := heap.Pop(&b.ref).(refEntry)
	if tag != want.seq || now != want.at {
		b.t.Fatalf("event %d: got seq %d at %v, want %d at %v", b.n, tag, now, want.seq, want.at)
	}
	b.n++
	// Posts from a handler land in the run being dispatched (at now, a
	// tie with what is queued for now, or just after) or beyond it.
	switch r := b.rng.IntN(64); {
	case r < 8:
		b.post(now)
	case r < 16:
		b.post(now + Time(b.rng.IntN(1<<b.rng.IntN(16))))
	case r < 17 && b.rng.IntN(4) == 0:
		b.burst(now) // about 0.5 events posted per event in all
	}
}

// TestKernelBurstsMatchReference drives bursts, handler posts into the
// current run, Step and RunUntil bounds that fall inside runs, and checks
// every event and every RunUntil against the reference order.
func TestKernelBurstsMatchReference(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		k := NewKernel()
		b := &burster{t: t, k: k, rng: rand.New(rand.NewPCG(seed, 13))}
		b.id = k.Register(b)
		for b.n < 20000 {
			if b.ref.Len() < 100 || b.rng.IntN(16) == 0 {
				b.burst(k.Now())
			}
			if b.rng.IntN(4) == 0 {
				k.Step()
				continue
			}
			until := k.Now() + Time(b.rng.Int64N(1<<b.rng.IntN(32)))
			k.RunUntil(until)
			if k.Now() != until {
				t.Fatalf("seed %d: clock %v after RunUntil(%v)", seed, k.Now(), until)
			}
			if b.ref.Len() > 0 && b.ref[0].at <= until {
				t.Fatalf("seed %d: RunUntil(%v) left an event at %v", seed, until, b.ref[0].at)
			}
			if k.Pending() != b.ref.Len() {
				t.Fatalf("seed %d: %d pending, reference %d", seed, k.Pending(), b.ref.Len())
			}
		}
		k.Run()
		if b.ref.Len() != 0 || k.Pending() != 0 {
			t.Fatalf("seed %d: %d left in the reference, %d pending", seed, b.ref.Len(), k.Pending())
		}
	}
}
