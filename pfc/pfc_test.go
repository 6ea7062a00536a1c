package pfc

import (
	"slices"
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

func TestQuantaConversion(t *testing.T) {
	tests := []struct {
		q    uint16
		rate units.Rate
		want sim.Time
	}{
		{1, 25 * units.Gbps, 20480},           // 512 bits at 25G = 20.48 ns
		{1, 100 * units.Gbps, 5120},           // 5.12 ns
		{1, 400 * units.Gbps, 1280},           // 1.28 ns
		{0xFFFF, 25 * units.Gbps, 1342156800}, // 65535 x 20.48 ns = 1.342 ms
		{0xFFFF, 100 * units.Gbps, 335539200}, // 335.5 us
		{0xFFFF, 10 * units.Gbps, 3355392000}, // 3.355 ms
		{0, 25 * units.Gbps, 0},
		{3, 3, 512 * sim.Second}, // 1536 bits at 3 bit/s
	}
	for _, tc := range tests {
		if got := QuantaToTime(tc.q, tc.rate); got != tc.want {
			t.Errorf("QuantaToTime(%d, %d) = %d, want %d", tc.q, tc.rate, got, tc.want)
		}
	}
	back := []struct {
		d    sim.Time
		rate units.Rate
		want uint16
	}{
		{20480, 25 * units.Gbps, 1},
		{20481, 25 * units.Gbps, 2}, // rounds up: never pause shorter than asked
		{1, 25 * units.Gbps, 1},     // positive time never becomes "resume"
		{0, 25 * units.Gbps, 0},
		{sim.Second, 25 * units.Gbps, MaxQuanta}, // capped
		{1342156800, 25 * units.Gbps, 0xFFFF},
		{10 * sim.Microsecond, 100 * units.Gbps, 1954}, // 10us / 5.12ns = 1953.1
	}
	for _, tc := range back {
		if got := TimeToQuanta(tc.d, tc.rate); got != tc.want {
			t.Errorf("TimeToQuanta(%v, %d) = %d, want %d", tc.d, tc.rate, got, tc.want)
		}
	}
	for q := uint16(1); q < 2000; q += 37 {
		if got := TimeToQuanta(QuantaToTime(q, 25*units.Gbps), 25*units.Gbps); got != q {
			t.Fatalf("round trip %d -> %d", q, got)
		}
	}
}

func TestHeadroomFormula(t *testing.T) {
	// 2*MTU + 84 + rate*(2*prop+response)/8, MTU as wire bytes.
	tests := []struct {
		name     string
		rate     units.Rate
		prop     sim.Time
		mtu      units.Size
		response sim.Time
		want     units.Size
	}{
		// 25G, 1us cable, 1106 B wire frames: 2212 + 84 + 6250 = 8546.
		{"25G 1us no response", 25 * units.Gbps, sim.Microsecond, 1106, 0, 8546},
		// + 3.84us response at 25G = 12000 B.
		{"25G 1us 3.84us", 25 * units.Gbps, sim.Microsecond, 1106, 3840 * sim.Nanosecond, 20546},
		// 100G, 100m fiber (~500 ns), 4178 B frames: 8356 + 84 + 12500 = 20940.
		{"100G 500ns", 100 * units.Gbps, 500 * sim.Nanosecond, 4178, 0, 20940},
		// 400G, 1us, 9216 B jumbo + 20: 18472 + 84 + 100000.
		{"400G jumbo", 400 * units.Gbps, sim.Microsecond, 9236, 0, 118556},
		// Zero cable: only frames.
		{"zero cable", 25 * units.Gbps, 0, 1106, 0, 2296},
		// Rounding up: 1 ps at 25G is 0.003 B -> 1 B.
		{"round up", 25 * units.Gbps, 1, 1106, 0, 2297},
	}
	for _, tc := range tests {
		if got := Headroom(tc.rate, tc.prop, tc.mtu, tc.response); got != tc.want {
			t.Errorf("%s: Headroom = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func newPG(t Thresholds, size units.Size) (*Ingress, *Buffer) {
	b := &Buffer{}
	b.Init(size)
	if t.Lossless {
		if err := b.Reserve(t.Headroom); err != nil {
			panic(err)
		}
	}
	g := &Ingress{}
	g.Init(t, b)
	return g, b
}

func TestStaticThresholds(t *testing.T) {
	g, b := newPG(Thresholds{Lossless: true, XOFF: 10000, XON: 5000, Headroom: 3000}, 1<<20)
	now := sim.Time(0)
	// 9 frames of 1000: below XOFF.
	for i := 0; i < 9; i++ {
		if a := g.Admit(now, 1000); a != None {
			t.Fatalf("frame %d: %v", i, a)
		}
	}
	// 10th reaches XOFF exactly: pause, still in shared.
	if a := g.Admit(now, 1000); a != Pause {
		t.Fatalf("at XOFF: %v", a)
	}
	if g.Shared != 10000 || g.Hdrm != 0 || !g.Asserted() {
		t.Fatalf("shared %d hdrm %d", g.Shared, g.Hdrm)
	}
	// In flight after the pause lands in headroom, no second pause.
	for i := 0; i < 3; i++ {
		if a := g.Admit(now, 1000); a != None {
			t.Fatalf("headroom frame %d: %v", i, a)
		}
	}
	if g.Hdrm != 3000 || b.HeadroomUsed != 3000 {
		t.Fatalf("hdrm %d pool %d", g.Hdrm, b.HeadroomUsed)
	}
	// Headroom full: overflow drop, counted.
	if a := g.Admit(now, 1000); a != Drop || g.Stats.HeadroomDrops != 1 {
		t.Fatalf("overflow: %v %+v", a, g.Stats)
	}
	// Drain: headroom first, then shared; XON only at Hdrm 0 and Shared <= 5000.
	for i := 0; i < 3; i++ {
		if a := g.Release(now, 1000); a != None {
			t.Fatalf("release hdrm %d: %v", i, a)
		}
	}
	for i := 0; i < 4; i++ {
		if a := g.Release(now, 1000); a != None {
			t.Fatalf("release shared %d: %v (shared %d)", i, a, g.Shared)
		}
	}
	if a := g.Release(now, 1000); a != Resume { // shared 10000 -> 5000
		t.Fatalf("at XON: %v shared %d", a, g.Shared)
	}
	if g.Asserted() || g.Stats.XOFF != 1 || g.Stats.XON != 1 || g.Stats.MaxBytes != 13000 {
		t.Fatalf("%+v", g.Stats)
	}
	// Crossing XOFF mid-frame admits the whole frame to shared.
	g.Admit(now, 4000) // 9000
	if a := g.Admit(now, 1500); a != Pause || g.Shared != 10500 || g.Hdrm != 0 {
		t.Fatalf("crossing: %v shared %d hdrm %d", a, g.Shared, g.Hdrm)
	}
}

func TestDynamicThresholds(t *testing.T) {
	const size = 1 << 20
	g, b := newPG(Thresholds{Lossless: true, Alpha: 0.125, XONOffset: 3072, Headroom: 20000}, size)
	free := int64(size - 20000)
	if g.XOFF() != free/8 {
		t.Fatalf("XOFF %d want %d", g.XOFF(), free/8)
	}
	// Fill until pause: with alpha a, one PG alone stops at S = a(B-S),
	// S = aB/(1+a) = B/9.
	var n int
	for g.Admit(0, 1000) != Pause {
		n++
		if n > 1000 {
			t.Fatal("never paused")
		}
	}
	want := float64(free) / 9
	if s := float64(g.Shared); s < want-1000 || s > want+1000 {
		t.Fatalf("paused at %v shared, want ~%v", s, want)
	}
	// Another PG filling the shared pool lowers this one's XOFF.
	other := &Ingress{}
	other.Init(Thresholds{Lossless: false}, b)
	before := g.XOFF()
	for i := 0; i < 100; i++ {
		other.Admit(0, 1000)
	}
	if g.XOFF() >= before || g.XOFF() != int64(0.125*float64(b.Free())) {
		t.Fatalf("XOFF %d before %d", g.XOFF(), before)
	}
	// XON = XOFF - offset.
	if g.XON() != g.XOFF()-3072 {
		t.Fatalf("XON %d XOFF %d", g.XON(), g.XOFF())
	}
	// Drain everything: resumes at the latest when empty.
	resumed := false
	for g.Bytes() > 0 {
		if g.Release(0, 1000) == Resume {
			resumed = true
		}
	}
	if !resumed || b.SharedUsed != 100000 || b.HeadroomUsed != 0 {
		t.Fatalf("resumed %v shared %d hdrm %d", resumed, b.SharedUsed, b.HeadroomUsed)
	}
}

func TestLossyGroupDropsWhenFull(t *testing.T) {
	g, b := newPG(Thresholds{}, 10000)
	for i := 0; i < 10; i++ {
		if a := g.Admit(0, 1000); a != None {
			t.Fatalf("%d: %v", i, a)
		}
	}
	if a := g.Admit(0, 1); a != Drop || g.Stats.BufferDrops != 1 || b.SharedUsed != 10000 {
		t.Fatalf("%v %+v", a, g.Stats)
	}
}

func TestThresholdValidation(t *testing.T) {
	bad := []Thresholds{
		{Lossless: true, XOFF: 0, Headroom: 1},
		{Lossless: true, XOFF: 100, XON: 200, Headroom: 1},
		{Lossless: true, Alpha: -1, Headroom: 1},
		{Lossless: true, XOFF: 100, Headroom: 0},
		{Lossless: true, Alpha: 0.5, XONOffset: -1, Headroom: 1},
	}
	for _, th := range bad {
		if th.Validate() == nil {
			t.Errorf("%+v accepted", th)
		}
	}
	if (Thresholds{Lossless: true, Alpha: 1, Headroom: 1}).Validate() != nil || (Thresholds{}).Validate() != nil {
		t.Error("good thresholds rejected")
	}
	var b Buffer
	b.Init(1000)
	if b.Reserve(600) != nil || b.Reserve(600) == nil {
		t.Error("reservation beyond buffer accepted")
	}
}

func TestTxRefresh(t *testing.T) {
	var x Tx
	x.Init(25*units.Gbps, 0, 0)
	pause := QuantaToTime(MaxQuanta, 25*units.Gbps)
	if x.RefreshInterval() != pause/2 || x.Quanta() != MaxQuanta {
		t.Fatalf("refresh %v quanta %d", x.RefreshInterval(), x.Quanta())
	}
	if x.Pending() || x.NextRefresh() != sim.Never {
		t.Fatal("idle Tx owes a frame")
	}
	if !x.Assert(100, 3) || x.Assert(100, 3) {
		t.Fatal("assert should owe exactly one frame")
	}
	mask, q := x.Build(200)
	if mask != 1<<3 || q[3] != MaxQuanta || x.Pending() {
		t.Fatalf("mask %b q %v", mask, q)
	}
	if x.NextRefresh() != 200+pause/2 {
		t.Fatalf("next refresh %v", x.NextRefresh())
	}
	if x.Refresh(200 + pause/2 - 1) {
		t.Fatal("refresh before due")
	}
	// Another priority asserted meanwhile: one frame carries both.
	x.Assert(300, 5)
	mask, q = x.Build(300)
	if mask != 1<<3|1<<5 || q[3] != MaxQuanta || q[5] != MaxQuanta {
		t.Fatalf("mask %b q %v", mask, q)
	}
	if !x.Refresh(300+pause/2) || !x.Pending() {
		t.Fatal("refresh not owed when due")
	}
	mask, _ = x.Build(300 + pause/2)
	if mask != 1<<3|1<<5 || x.Stats().Pauses[3] != 3 || x.Stats().XOFF[3] != 1 {
		t.Fatalf("refresh frame %b, stats %+v", mask, x.Stats())
	}
	// Release 3: XON entry with quanta 0, 5 restated.
	x.Deassert(1000, 3)
	mask, q = x.Build(1000)
	if mask != 1<<3|1<<5 || q[3] != 0 || q[5] != MaxQuanta || x.Stats().Resumes[3] != 1 {
		t.Fatalf("xon frame %b %v", mask, q)
	}
	if x.AssertedTime(2000, 3) != 900 || x.AssertedTime(2000, 5) != 1700 {
		t.Fatalf("asserted time %v %v", x.AssertedTime(2000, 3), x.AssertedTime(2000, 5))
	}
	x.Deassert(2000, 5)
	x.Build(2000)
	if x.NextRefresh() != sim.Never || x.Refresh(sim.Second) {
		t.Fatal("refresh with nothing asserted")
	}
	// Injection: arbitrary quanta once.
	x.Inject(1<<1, 7)
	mask, q = x.Build(3000)
	if mask != 1<<1 || q[1] != 7 || x.Pending() {
		t.Fatalf("inject %b %v", mask, q)
	}
}

func frame(mask uint8, q uint16) (uint8, *[NumPrio]uint16) {
	var a [NumPrio]uint16
	for i := range a {
		if mask&(1<<i) != 0 {
			a[i] = q
		}
	}
	return mask, &a
}

func TestRxQuantaExpiryAndResume(t *testing.T) {
	var r Rx
	r.Init(25*units.Gbps, 0xFF&^1, Watchdog{}) // priority 0 without PFC
	q100 := QuantaToTime(100, 25*units.Gbps)   // 2.048 us
	m, q := frame(1<<3|1<<0, 100)
	r.OnFrame(1000, m, q)
	if r.Paused(1000) != 1<<3 || r.Stats().Ignored[0] != 1 {
		t.Fatalf("paused %b ignored %v", r.Paused(1000), r.Stats().Ignored)
	}
	if r.NextDeadline() != 1000+q100 {
		t.Fatalf("deadline %v", r.NextDeadline())
	}
	if r.Paused(1000+q100-1) != 1<<3 || r.Paused(1000+q100) != 0 {
		t.Fatal("expiry not honoured at quanta")
	}
	// Refresh before expiry extends, and the interval is continuous.
	m, q = frame(1<<3, 100)
	r.OnFrame(1000+q100/2, m, q)
	if r.Paused(1000+q100) != 1<<3 {
		t.Fatal("refresh did not extend")
	}
	// Quanta 0 resumes immediately.
	m, q = frame(1<<3, 0)
	r.OnFrame(2000+q100, m, q)
	if r.Paused(2000+q100) != 0 || r.Stats().Resumes[3] != 1 || r.Stats().Pauses[3] != 2 {
		t.Fatalf("resume: %b %+v", r.Paused(2000+q100), r.Stats())
	}
	if d := r.PausedTime(sim.Second, 3); d != 1000+q100 {
		t.Fatalf("paused time %v want %v", d, 1000+q100)
	}
	// Expiry closes the interval lazily: pause, let it lapse, pause again.
	m, q = frame(1<<3, 100)
	r.OnFrame(10*q100, m, q)
	r.OnFrame(20*q100, m, q) // after expiry: new interval
	r.Advance(30 * q100)
	if d := r.PausedTime(sim.Second, 3); d != 1000+q100+2*q100 {
		t.Fatalf("paused time %v", d)
	}
	if r.NextDeadline() != sim.Never {
		t.Fatalf("deadline %v", r.NextDeadline())
	}
	// The refreshed first pause is the longest interval; the lapsed ones last
	// q100 each.
	if l := r.LongestPause(sim.Second, 3); l != 1000+q100 {
		t.Fatalf("longest pause %v want %v", l, 1000+q100)
	}
	// An interval still open counts up to now, and only up to its expiry.
	m, q = frame(1<<3, MaxQuanta)
	r.OnFrame(sim.Second, m, q)
	open := QuantaToTime(MaxQuanta, 25*units.Gbps)
	if l := r.LongestPause(sim.Second+open/2, 3); l != open/2 {
		t.Fatalf("open interval: longest %v want %v", l, open/2)
	}
	if l := r.LongestPause(2*sim.Second, 3); l != open {
		t.Fatalf("lapsed interval: longest %v want %v", l, open)
	}
}

func TestWatchdogTripsAndRestores(t *testing.T) {
	var r Rx
	wd := Watchdog{Enabled: true, Detection: 100 * sim.Microsecond, Restore: 50 * sim.Microsecond, Action: ActionDrop}
	r.Init(25*units.Gbps, 1<<3, wd)
	pause := QuantaToTime(1000, 25*units.Gbps) // 20.48 us
	m, q := frame(1<<3, 1000)
	// A storm: refreshes every 10 us, forever.
	var tripped, restored []sim.Time
	now := sim.Time(0)
	next := sim.Time(0)
	for now <= 400*sim.Microsecond {
		if now == next {
			r.OnFrame(now, m, q)
			next += 10 * sim.Microsecond
		}
		d := min(r.NextDeadline(), next)
		now = d
		if d == r.NextDeadline() {
			tr, rs := r.Advance(now)
			if tr != 0 {
				tripped = append(tripped, now)
				if r.Paused(now) != 0 {
					t.Fatal("stormed priority still honoured")
				}
			}
			if rs != 0 {
				restored = append(restored, now)
				if r.Paused(now) != 1<<3 {
					t.Fatal("restored priority not paused by the ongoing storm")
				}
			}
		}
	}
	// Trip at 100us, restore at 150, trip again at 250, restore at 300, trip at 400.
	wantTrip := []sim.Time{100 * sim.Microsecond, 250 * sim.Microsecond, 400 * sim.Microsecond}
	wantRest := []sim.Time{150 * sim.Microsecond, 300 * sim.Microsecond}
	if len(tripped) != 3 || len(restored) != 2 {
		t.Fatalf("tripped %v restored %v", tripped, restored)
	}
	for i := range wantTrip {
		if tripped[i] != wantTrip[i] {
			t.Fatalf("tripped %v want %v", tripped, wantTrip)
		}
	}
	for i := range wantRest {
		if restored[i] != wantRest[i] {
			t.Fatalf("restored %v want %v", restored, wantRest)
		}
	}
	if r.Stats().StormTrips[3] != 3 || r.Stats().StormRestores[3] != 2 {
		t.Fatalf("%+v", r.Stats())
	}
	_ = pause
}

func TestWatchdogIgnoresShortPauses(t *testing.T) {
	var r Rx
	r.Init(25*units.Gbps, 1<<3, Watchdog{Enabled: true, Detection: 100 * sim.Microsecond, Restore: sim.Millisecond})
	// Pause/resume cycles of 60 us each: never continuous for 100 us.
	for c := sim.Time(0); c < 10; c++ {
		base := c * 100 * sim.Microsecond
		m, q := frame(1<<3, MaxQuanta)
		r.OnFrame(base, m, q)
		r.Advance(base + 50*sim.Microsecond)
		m, q = frame(1<<3, 0)
		r.OnFrame(base+60*sim.Microsecond, m, q)
		r.Advance(base + 99*sim.Microsecond)
	}
	if r.Stats().StormTrips[3] != 0 {
		t.Fatalf("tripped on normal PFC: %+v", r.Stats())
	}
	if d := r.PausedTime(sim.Second, 3); d != 600*sim.Microsecond {
		t.Fatalf("paused %v", d)
	}
	if l := r.LongestPause(sim.Second, 3); l != 60*sim.Microsecond {
		t.Fatalf("longest pause %v, want one 60 us cycle", l)
	}
	if (Watchdog{Enabled: true}).Validate() == nil {
		t.Fatal("zero detection accepted")
	}
}

func TestSeriesBounded(t *testing.T) {
	s := NewSeries(8)
	for i := 0; i < 100; i++ {
		s.Sample(sim.Time(i), int64(i))
	}
	if s.Len() > 8 || cap(s.T) != 8 {
		t.Fatalf("len %d cap %d", s.Len(), cap(s.T))
	}
	// Kept points stay on a regular grid of the current stride.
	for i := range s.T {
		if int(s.T[i]) != i*s.Stride() || s.V[i] != int64(s.T[i]) {
			t.Fatalf("point %d = (%v, %d), stride %d", i, s.T[i], s.V[i], s.Stride())
		}
	}
	if n := testing.AllocsPerRun(1000, func() { s.Sample(1, 1) }); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}

// SampleN leaves the series n calls of Sample would, across downsampling
// steps, for runs of every length, and allocates nothing.
func TestSeriesSampleN(t *testing.T) {
	a, b := NewSeries(16), NewSeries(16)
	tm := sim.Time(5)
	for i, n := range []int64{1, 0, 3, 7, 1, 40, 2, 100, 1, 1, 513, 6, 2000} {
		v := int64(i * 10)
		for j := int64(0); j < n; j++ {
			a.Sample(tm+sim.Time(j)*3, v)
		}
		b.SampleN(tm, 3, n, v)
		tm += sim.Time(n) * 3
		if a.Stride() != b.Stride() || a.skip != b.skip || !slices.Equal(a.T, b.T) || !slices.Equal(a.V, b.V) {
			t.Fatalf("after run %d (%d samples): Sample x n gives %v %v stride %d, SampleN %v %v stride %d",
				i, n, a.T, a.V, a.Stride(), b.T, b.V, b.Stride())
		}
	}
	if n := testing.AllocsPerRun(1000, func() { b.SampleN(tm, 3, 50, 1) }); n != 0 {
		t.Fatalf("SampleN: %v allocs", n)
	}
}

type rec struct {
	t []sim.Time
	v []int64
}

func (r *rec) Sample(t sim.Time, v int64) { r.t, r.v = append(r.t, t), append(r.v, v) }

func TestTraceHooks(t *testing.T) {
	g, _ := newPG(Thresholds{Lossless: true, XOFF: 2000, XON: 1000, Headroom: 5000}, 1<<20)
	tr := &rec{}
	g.Trace = tr
	g.Admit(10, 1000)
	g.Admit(20, 1000) // XOFF at 2000 B
	g.Admit(30, 1000) // headroom
	g.Release(40, 1000)
	g.Release(50, 1000) // XON at 1000 B
	if len(tr.t) != 2 || tr.t[0] != 20 || tr.v[0] != 2000 || tr.t[1] != 50 || tr.v[1] != 1000 {
		t.Fatalf("ingress trace %v %v", tr.t, tr.v)
	}
	var r Rx
	r.Init(25*units.Gbps, 0xFF, Watchdog{})
	rt := &rec{}
	r.Trace = rt
	m, q := frame(1<<3, 10)
	r.OnFrame(100, m, q)
	r.OnFrame(200, m, q) // refresh: no change
	r.Advance(200 + QuantaToTime(10, 25*units.Gbps))
	if len(rt.t) != 2 || rt.v[0] != 1<<3 || rt.v[1] != 0 {
		t.Fatalf("rx trace %v %v", rt.t, rt.v)
	}
}

// Rx and Tx hold no per-priority state until the port first receives a
// PFC frame or pauses its peer, and read as idle until then; the first
// frame or assertion allocates it and is counted in it.
func TestPauseStateOnFirstUse(t *testing.T) {
	var r Rx
	r.Init(25*units.Gbps, 1<<3, DefaultWatchdog())
	var x Tx
	x.Init(25*units.Gbps, 0, 0)
	if r.s != nil || x.s != nil {
		t.Fatal("fresh pause state allocated its per-priority part")
	}
	if tr, rs := r.Advance(sim.Second); tr|rs != 0 || r.NextDeadline() != sim.Never || r.Paused(0) != 0 ||
		r.PausedTime(sim.Second, 3) != 0 || r.LongestPause(sim.Second, 3) != 0 || r.Stats() != (RxStats{}) {
		t.Fatal("a port without PFC frames reads as paused or counted")
	}
	if x.AssertedTime(sim.Second, 3) != 0 || x.Stats() != (TxStats{}) || x.Pending() || r.s != nil {
		t.Fatal("a port that never paused reads as pausing")
	}
	r.OnFrame(10, 1<<3, &[NumPrio]uint16{3: 100})
	if r.s == nil || r.Stats().Frames != 1 || r.Stats().Pauses[3] != 1 || r.Paused(10) != 1<<3 {
		t.Fatalf("first frame: %+v paused %b", r.Stats(), r.Paused(10))
	}
	if !x.Assert(10, 3) || x.s == nil || x.Stats().XOFF[3] != 1 || !x.Deassert(30, 3) || x.AssertedTime(40, 3) != 20 {
		t.Fatalf("first assertion: %+v asserted %v", x.Stats(), x.AssertedTime(40, 3))
	}
	var y Tx // injection alone allocates too
	y.Init(25*units.Gbps, 0, 0)
	y.Inject(1<<2, 7)
	if m, q := y.Build(0); m != 1<<2 || q[2] != 7 || y.Stats().Frames != 1 || y.Stats().Pauses[2] != 1 {
		t.Fatalf("injected frame: mask %b quanta %v stats %+v", m, q, y.Stats())
	}
}
