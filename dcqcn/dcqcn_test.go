package dcqcn

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

const (
	us   = sim.Microsecond
	mbps = units.Rate(units.Mbps)
	gbps = units.Rate(units.Gbps)
)

func newRP(t testing.TB, cfg Config) *ReactionPoint {
	t.Helper()
	r, err := NewReactionPoint(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig(100 * gbps).Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	if err := ConnectXConfig(100 * gbps).Validate(); err != nil {
		t.Fatalf("ConnectX config: %v", err)
	}
	if got := DefaultConfig(10 * mbps).MinRate; got != 10*mbps {
		t.Errorf("DefaultConfig(10 Mb/s).MinRate = %d, want capped at line rate", got)
	}
	nan := 0.0
	nan /= nan
	cases := []struct {
		field string
		mut   func(*Config)
	}{
		{"LineRate", func(c *Config) { c.LineRate = 0 }},
		{"LineRate", func(c *Config) { c.LineRate = maxRate + 1 }},
		{"MinRate", func(c *Config) { c.MinRate = 0 }},
		{"MinRate", func(c *Config) { c.MinRate = c.LineRate + 1 }},
		{"G", func(c *Config) { c.G = 0 }},
		{"G", func(c *Config) { c.G = 1.5 }},
		{"G", func(c *Config) { c.G = nan }},
		{"InitialAlpha", func(c *Config) { c.InitialAlpha = -0.1 }},
		{"InitialAlpha", func(c *Config) { c.InitialAlpha = nan }},
		{"AlphaTimer", func(c *Config) { c.AlphaTimer = 0 }},
		{"RateTimer", func(c *Config) { c.RateTimer = -1 }},
		{"ByteCounter", func(c *Config) { c.ByteCounter = 0 }},
		{"FastRecoveryStages", func(c *Config) { c.FastRecoveryStages = -1 }},
		{"AdditiveIncrease", func(c *Config) { c.AdditiveIncrease = -1 }},
		{"HyperIncrease", func(c *Config) { c.HyperIncrease = -1 }},
		{"TargetClamp", func(c *Config) { c.TargetClamp = ClampNever + 1 }},
	}
	for _, tc := range cases {
		c := DefaultConfig(100 * gbps)
		tc.mut(&c)
		err := c.Validate()
		if err == nil {
			t.Errorf("%s: invalid config accepted", tc.field)
			continue
		}
		if !strings.Contains(err.Error(), "Config."+tc.field+" ") {
			t.Errorf("%s: error %q does not name the field", tc.field, err)
		}
		if _, err := NewReactionPoint(c); err == nil {
			t.Errorf("%s: NewReactionPoint accepted invalid config", tc.field)
		}
	}
}

func TestNone(t *testing.T) {
	var c Controller = None{LineRate: 25 * gbps}
	c.OnCNP(0)
	c.OnPacketSent(1, 1<<20)
	c.OnTimer(2)
	if c.Rate() != 25*gbps || c.NextTimer() != Never || c.Name() != "none" {
		t.Errorf("None: rate %d, next %d, name %q", c.Rate(), c.NextTimer(), c.Name())
	}
}

func TestInitialState(t *testing.T) {
	r := newRP(t, DefaultConfig(100*gbps))
	if r.Rate() != 100*gbps || r.TargetRate() != 100*gbps || r.Alpha() != 1 {
		t.Errorf("initial Rc %d Rt %d alpha %v", r.Rate(), r.TargetRate(), r.Alpha())
	}
	if r.NextTimer() != Never || r.Name() != "dcqcn" {
		t.Errorf("initial NextTimer %d name %q", r.NextTimer(), r.Name())
	}
	// Without congestion nothing changes, however long the flow runs.
	r.OnPacketSent(1e12, 1<<40)
	r.OnTimer(10e12)
	if r.Rate() != 100*gbps || r.Alpha() != 1 || r.Stats() != (Stats{}) {
		t.Errorf("uncongested flow changed: Rc %d alpha %v stats %+v", r.Rate(), r.Alpha(), r.Stats())
	}
}

func TestCNPDecrease(t *testing.T) {
	cases := []struct {
		name   string
		line   units.Rate
		alpha0 float64
		want   units.Rate // Rc after one CNP
	}{
		{"10G alpha 1 halves", 10 * gbps, 1, 5 * gbps},
		{"100G alpha 1 halves", 100 * gbps, 1, 50 * gbps},
		{"400G alpha 1 halves", 400 * gbps, 1, 200 * gbps},
		{"100G alpha 0.5", 100 * gbps, 0.5, 75 * gbps},
		{"100G alpha 0", 100 * gbps, 0, 100 * gbps},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(tc.line)
			cfg.InitialAlpha = tc.alpha0
			r := newRP(t, cfg)
			r.OnCNP(7 * us)
			if r.Rate() != tc.want || r.TargetRate() != tc.line {
				t.Errorf("Rc %d Rt %d, want Rc %d Rt %d", r.Rate(), r.TargetRate(), tc.want, tc.line)
			}
			wantAlpha := float64((1-DefaultG)*tc.alpha0) + DefaultG
			if r.Alpha() != wantAlpha {
				t.Errorf("alpha %v, want %v", r.Alpha(), wantAlpha)
			}
		})
	}
	// With alpha 1 it stays 1, so back-to-back CNPs halve each time.
	r := newRP(t, DefaultConfig(100*gbps))
	for i := range 4 {
		r.OnCNP(sim.Time(i) * us)
	}
	if r.Rate() != 100*gbps/16 || r.TargetRate() != 100*gbps/8 || r.Alpha() != 1 {
		t.Errorf("after 4 CNPs: Rc %d Rt %d alpha %v", r.Rate(), r.TargetRate(), r.Alpha())
	}
}

func TestAlphaDecay(t *testing.T) {
	const k = DefaultAlphaTimer
	g := DefaultG
	decayed := func(a float64, n int) float64 {
		for range n {
			a *= 1 - g
		}
		return a
	}
	cases := []struct {
		name string
		cnps []sim.Time // CNP times
		at   sim.Time   // time alpha is read
		want float64
	}{
		{"just before K", []sim.Time{0}, k - 1, 1},
		{"at K", []sim.Time{0}, k, 1 - g},
		{"3K later", []sim.Time{0}, 3*k + k/2, decayed(1, 3)},
		{"1000K later", []sim.Time{0}, 1000 * k, decayed(1, 1000)},
		// A CNP restarts the quiet period: none has been K long at 1.4K.
		{"CNP resets timer", []sim.Time{0, k / 2}, k + 2*k/5, 1},
		{"decay after second CNP", []sim.Time{0, k / 2}, k/2 + k, 1 - g},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRP(t, DefaultConfig(100*gbps))
			for _, c := range tc.cnps {
				r.OnCNP(c)
			}
			r.OnTimer(tc.at)
			if r.Alpha() != tc.want {
				t.Errorf("alpha %v, want %v", r.Alpha(), tc.want)
			}
		})
	}
	// A decayed alpha gives a gentler cut on the next CNP.
	r := newRP(t, DefaultConfig(100*gbps))
	r.OnCNP(0)
	r.OnTimer(100 * k)
	rc, a := r.Rate(), r.Alpha()
	r.OnCNP(100 * k)
	if want := units.Rate(float64(rc) * (1 - a/2)); r.Rate() != want || a >= 1 {
		t.Errorf("Rc after decayed CNP %d, want %d (alpha %v)", r.Rate(), want, a)
	}
	// A quiet spell long enough to reach alpha's fixed point terminates.
	r.OnTimer(1e18) // ~1.8e10 periods; stops at the fixed point
	if r.Alpha() > 1e-300 {
		t.Errorf("alpha %v after a very long quiet spell", r.Alpha())
	}
}

func TestRepeatedCNPsFloorAtMinRate(t *testing.T) {
	for _, line := range []units.Rate{10 * gbps, 100 * gbps, 400 * gbps} {
		cfg := DefaultConfig(line)
		r := newRP(t, cfg)
		prev := r.Rate()
		for i := range 200 {
			r.OnCNP(sim.Time(i) * us) // faster than T: no increase in between
			if r.Rate() < cfg.MinRate || r.Rate() > prev {
				t.Fatalf("line %d: CNP %d: Rc %d (prev %d, min %d)", line, i, r.Rate(), prev, cfg.MinRate)
			}
			prev = r.Rate()
		}
		st := r.Stats()
		if r.Rate() != cfg.MinRate || st.MinRateClamps == 0 || st.CNPs != 200 || st.RateDecreases >= 200 {
			t.Errorf("line %d: Rc %d, stats %+v", line, r.Rate(), st)
		}
	}
	// MinRate == LineRate: CNPs cannot lower the rate and start no timer.
	cfg := DefaultConfig(100 * gbps)
	cfg.MinRate = cfg.LineRate
	r := newRP(t, cfg)
	r.OnCNP(0)
	if r.Rate() != cfg.LineRate || r.NextTimer() != Never {
		t.Errorf("MinRate == LineRate: Rc %d next %d", r.Rate(), r.NextTimer())
	}
}

func TestFastRecoveryThenAdditive(t *testing.T) {
	cfg := DefaultConfig(100 * gbps)
	r := newRP(t, cfg)
	for i := range 3 { // Rc = 12.5G, Rt = 25G
		r.OnCNP(sim.Time(i))
	}
	cnp := sim.Time(2)
	rt, rc := r.TargetRate(), r.Rate()
	// No bytes sent: only the timer drives increases.
	for stage := int64(1); stage <= int64(cfg.FastRecoveryStages)+3; stage++ {
		at := cnp + sim.Time(stage)*cfg.RateTimer
		if r.NextTimer() != at {
			t.Fatalf("stage %d: NextTimer %d, want %d", stage, r.NextTimer(), at)
		}
		r.OnTimer(at)
		if stage > int64(cfg.FastRecoveryStages) {
			rt += cfg.AdditiveIncrease
		}
		rc += (rt - rc + 1) / 2
		if r.TargetRate() != rt || r.Rate() != rc {
			t.Fatalf("stage %d: Rt %d Rc %d, want %d %d", stage, r.TargetRate(), r.Rate(), rt, rc)
		}
		// Fast recovery halves the gap to Rt at each of its F stages.
		if gap := 12500 * mbps; stage == int64(cfg.FastRecoveryStages) && rt-rc > gap>>stage {
			t.Errorf("after fast recovery Rc %d is more than %d below Rt %d", rc, gap>>stage, rt)
		}
	}
	st := r.Stats()
	if st.FastRecovery != uint64(cfg.FastRecoveryStages) || st.AdditiveIncrease != 3 || st.HyperIncrease != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestRecoveryToLineRate sends back-to-back 4 KB packets at Rc after a burst
// of CNPs and checks the rate climbs monotonically through all three stages
// back to line rate, where the timer stops.
func TestRecoveryToLineRate(t *testing.T) {
	for _, line := range []units.Rate{25 * gbps, 100 * gbps} {
		cfg := DefaultConfig(line)
		r := newRP(t, cfg)
		for range 6 {
			r.OnCNP(0) // Rc = line/64
		}
		const pkt = 4096
		now, nextPkt := sim.Time(0), sim.Time(0)
		prev := r.Rate()
		var firstAI, firstHAI sim.Time = -1, -1
		for r.Rate() < line && now < 2e12 {
			now = min(r.NextTimer(), nextPkt)
			if now == nextPkt {
				r.OnPacketSent(now, pkt)
				nextPkt = now + sim.Time(pkt*8*1e12/r.Rate().BitsPerSecond())
			} else {
				r.OnTimer(now)
			}
			if r.Rate() < prev || r.TargetRate() < r.Rate() || r.TargetRate() > line {
				t.Fatalf("line %d at %d: Rc %d (prev %d) Rt %d", line, now, r.Rate(), prev, r.TargetRate())
			}
			prev = r.Rate()
			st := r.Stats()
			if firstAI < 0 && st.AdditiveIncrease > 0 {
				firstAI = now
			}
			if firstHAI < 0 && st.HyperIncrease > 0 {
				firstHAI = now
			}
		}
		st := r.Stats()
		t.Logf("line %d Gb/s: line rate at %.1f ms; first AI %.2f ms, first HAI %.2f ms; %+v",
			line/gbps, float64(now)/1e9, float64(firstAI)/1e9, float64(firstHAI)/1e9, st)
		if r.Rate() != line || r.TargetRate() != line {
			t.Fatalf("line %d: not back at line rate by %d ps: Rc %d", line, now, r.Rate())
		}
		if st.FastRecovery == 0 || firstAI <= 0 || firstHAI <= firstAI {
			t.Errorf("line %d: stages out of order: first AI %d, first HAI %d, stats %+v", line, firstAI, firstHAI, st)
		}
		if r.NextTimer() != Never {
			t.Errorf("line %d: timer still armed at line rate: %d", line, r.NextTimer())
		}
		before := r.Stats()
		r.OnPacketSent(now+1, 1<<30)
		r.OnTimer(now + 1e12)
		if r.Rate() != line || r.Stats().ByteCounterExpiries != before.ByteCounterExpiries {
			t.Errorf("line %d: state changed at line rate", line)
		}
	}
}

func TestHyperIncreaseStep(t *testing.T) {
	cfg := DefaultConfig(100 * gbps)
	cfg.ByteCounter = 1000
	cfg.FastRecoveryStages = 1
	r := newRP(t, cfg)
	for range 5 {
		r.OnCNP(0)
	}
	// Timer stage 2 with byte stage 0: additive.
	r.OnTimer(2 * cfg.RateTimer)
	rt := r.TargetRate()
	r.OnPacketSent(2*cfg.RateTimer, 1000) // BC=1: max 2 > F, min 1 = F: additive
	if rt += cfg.AdditiveIncrease; r.TargetRate() != rt {
		t.Fatalf("Rt %d want %d (additive)", r.TargetRate(), rt)
	}
	r.OnPacketSent(2*cfg.RateTimer, 1000) // BC=2, T=2: hyper, i = 1
	if rt += cfg.HyperIncrease; r.TargetRate() != rt {
		t.Fatalf("Rt %d want %d (hyper i=1)", r.TargetRate(), rt)
	}
	r.OnTimer(3 * cfg.RateTimer)          // T=3, BC=2: i = 1
	r.OnPacketSent(3*cfg.RateTimer, 1000) // T=3, BC=3: i = 2
	if rt += 3 * cfg.HyperIncrease; r.TargetRate() != rt {
		t.Fatalf("Rt %d want %d (hyper i=1 then i=2)", r.TargetRate(), rt)
	}
	// One large send covers several byte-counter expiries.
	r.OnPacketSent(3*cfg.RateTimer, 2500) // BC 4, 5 with T=3: i = 2, 2; 500 B left
	if rt += 4 * cfg.HyperIncrease; r.TargetRate() != rt {
		t.Fatalf("Rt %d want %d (two expiries in one send)", r.TargetRate(), rt)
	}
	// A CNP restarts both stage counts: the next expiry is fast recovery
	// again, which leaves Rt at the rate the CNP found.
	r.OnCNP(3 * cfg.RateTimer)
	rt = r.TargetRate()
	r.OnPacketSent(3*cfg.RateTimer, 1000)
	if r.TargetRate() != rt || r.Stats().FastRecovery != 2 {
		t.Fatalf("after CNP: Rt %d want %d, stats %+v", r.TargetRate(), rt, r.Stats())
	}
}

func TestNextTimerOnTimerIdempotent(t *testing.T) {
	cfg := DefaultConfig(100 * gbps)
	r := newRP(t, cfg)
	r.OnCNP(10 * us)
	if want := 10*us + cfg.RateTimer; r.NextTimer() != want {
		t.Fatalf("NextTimer %d, want %d", r.NextTimer(), want)
	}
	// Early calls change nothing.
	snap := *r
	r.OnTimer(r.NextTimer() - 1)
	r.OnTimer(0)
	if snap.rc != r.rc || snap.rt != r.rt || snap.stats != r.stats || snap.rateDeadline != r.rateDeadline {
		t.Fatalf("early OnTimer changed state")
	}
	// Repeated calls at the same time act once.
	at := r.NextTimer()
	r.OnTimer(at)
	once := *r
	r.OnTimer(at)
	r.OnTimer(at - 5) // earlier time counts as the latest seen
	if *r != once {
		t.Fatalf("repeated OnTimer changed state")
	}
	if r.NextTimer() != at+cfg.RateTimer {
		t.Fatalf("NextTimer %d, want %d", r.NextTimer(), at+cfg.RateTimer)
	}
	// A late call catches up on every expiry it missed.
	late := newRP(t, cfg)
	late.OnCNP(10 * us)
	step := newRP(t, cfg)
	step.OnCNP(10 * us)
	end := 10*us + 20*cfg.RateTimer + cfg.RateTimer/3
	for step.NextTimer() <= end {
		step.OnTimer(step.NextTimer())
	}
	step.OnTimer(end)
	late.OnTimer(end)
	if *late != *step {
		t.Errorf("late OnTimer differs from stepping every expiry:\n late %+v\n step %+v", *late, *step)
	}
}

// TestLazyEqualsEager drives two reaction points with the same random CNPs
// and sends. One is woken at every NextTimer and every microsecond (so alpha
// decays one period at a time); the other only sees the events. They must
// end bit-identical.
func TestLazyEqualsEager(t *testing.T) {
	cfg := DefaultConfig(100 * gbps)
	cfg.ByteCounter = 200_000 // exercise byte-counter stages
	rng := rand.New(rand.NewPCG(7, 11))
	eager, lazy := newRP(t, cfg), newRP(t, cfg)
	now := sim.Time(0)
	for range 20_000 {
		next := now + sim.Time(rng.Int64N(int64(20*us)))
		for tick := now + us; tick < next; tick += us {
			for eager.NextTimer() <= tick {
				eager.OnTimer(eager.NextTimer())
			}
			eager.OnTimer(tick)
		}
		for eager.NextTimer() <= next {
			eager.OnTimer(eager.NextTimer())
		}
		now = next
		if rng.IntN(40) == 0 {
			eager.OnCNP(now)
			lazy.OnCNP(now)
		} else {
			n := units.Size(rng.Int64N(9000) + 64)
			eager.OnPacketSent(now, n)
			lazy.OnPacketSent(now, n)
		}
	}
	eager.OnTimer(now + 10*cfg.AlphaTimer)
	lazy.OnTimer(now + 10*cfg.AlphaTimer)
	if *eager != *lazy {
		t.Errorf("eager and lazy differ:\n eager %+v\n lazy  %+v", *eager, *lazy)
	}
	st := lazy.Stats()
	if st.CNPs == 0 || st.AlphaDecays == 0 || st.FastRecovery == 0 || st.AdditiveIncrease == 0 || st.HyperIncrease == 0 {
		t.Errorf("random run did not cover every stage: %+v", st)
	}
}

func TestInitInPlace(t *testing.T) {
	var r ReactionPoint
	if err := r.Init(Config{}); err == nil {
		t.Fatal("Init accepted zero Config")
	}
	if err := r.Init(DefaultConfig(25 * gbps)); err != nil {
		t.Fatal(err)
	}
	r.OnCNP(0)
	if err := r.Init(DefaultConfig(25 * gbps)); err != nil || r.Rate() != 25*gbps || r.Stats().CNPs != 0 {
		t.Errorf("re-Init did not reset: Rc %d stats %+v", r.Rate(), r.Stats())
	}
	if r.Config() != DefaultConfig(25*gbps) {
		t.Errorf("Config() = %+v", r.Config())
	}
}

func TestNotificationPoint(t *testing.T) {
	const n = DefaultCNPInterval
	cases := []struct {
		name     string
		interval sim.Time
		marks    []sim.Time
		want     []bool
	}{
		{"first mark sends", n, []sim.Time{123}, []bool{true}},
		{"paper 50us", n, []sim.Time{0, 10 * us, n - 1, n, n + 10*us, 2 * n, 4 * n},
			[]bool{true, false, false, true, false, true, true}},
		{"interval measured from last CNP, not last mark", n,
			[]sim.Time{0, 40 * us, 80 * us, 100 * us}, []bool{true, false, true, false}},
		{"zero interval answers every mark", 0, []sim.Time{0, 0, 1, 1}, []bool{true, true, true, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			np := NewNotificationPoint(tc.interval)
			var sent uint64
			for i, at := range tc.marks {
				got := np.OnECNMarkedPacket(at)
				if got != tc.want[i] {
					t.Errorf("mark %d at %d ps: got %v, want %v", i, at, got, tc.want[i])
				}
				if got {
					sent++
				}
			}
			st := np.Stats()
			if st.Marked != uint64(len(tc.marks)) || st.CNPs != sent || st.Suppressed != st.Marked-sent {
				t.Errorf("stats %+v", st)
			}
		})
	}
	// Zero value with MinInterval set works.
	np := NotificationPoint{MinInterval: n}
	if !np.OnECNMarkedPacket(0) || np.OnECNMarkedPacket(1) {
		t.Error("zero-value NotificationPoint misbehaves")
	}
}

func TestZeroAllocs(t *testing.T) {
	r := newRP(t, DefaultConfig(100*gbps))
	var c Controller = r
	now := sim.Time(0)
	np := NewNotificationPoint(DefaultCNPInterval)
	cases := []struct {
		name string
		fn   func()
	}{
		{"OnPacketSent", func() { now += 100_000; c.OnPacketSent(now, 4096) }},
		{"OnCNP", func() { now += 100_000; c.OnCNP(now) }},
		{"OnTimer", func() { now += 100_000; c.OnTimer(now); _ = c.NextTimer(); _ = c.Rate() }},
		{"OnECNMarkedPacket", func() { now += 100_000; np.OnECNMarkedPacket(now) }},
		{"Stats", func() { _ = r.Stats() }},
	}
	for _, tc := range cases {
		if a := testing.AllocsPerRun(1000, tc.fn); a != 0 {
			t.Errorf("%s: %v allocs per call", tc.name, a)
		}
	}
}

// benchCycle is one CNP followed by recovery with 4 KB sends at Rc for 1 ms,
// the reaction point's steady-state mix of events.
func BenchmarkReactionPointCycle(b *testing.B) {
	r := newRP(b, DefaultConfig(100*gbps))
	now := sim.Time(0)
	b.ReportAllocs()
	events := 0
	for b.Loop() {
		r.OnCNP(now)
		end := now + 1000*us
		for now < end {
			if next := r.NextTimer(); next <= now {
				r.OnTimer(next)
			}
			r.OnPacketSent(now, 4096)
			now += sim.Time(4096 * 8 * 1e12 / r.Rate().BitsPerSecond())
			events++
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
}

func BenchmarkOnPacketSent(b *testing.B) {
	r := newRP(b, DefaultConfig(100*gbps))
	r.OnCNP(0)
	now := sim.Time(0)
	b.ReportAllocs()
	for b.Loop() {
		now += 300_000
		r.OnPacketSent(now, 4096)
		if r.Rate() == r.cfg.LineRate {
			r.OnCNP(now)
		}
	}
}

func BenchmarkOnCNP(b *testing.B) {
	r := newRP(b, DefaultConfig(100*gbps))
	now := sim.Time(0)
	b.ReportAllocs()
	for b.Loop() {
		now += 60 * us
		r.OnCNP(now)
	}
}

func BenchmarkNotificationPoint(b *testing.B) {
	np := NewNotificationPoint(DefaultCNPInterval)
	now := sim.Time(0)
	b.ReportAllocs()
	for b.Loop() {
		now += 1000
		np.OnECNMarkedPacket(now)
	}
}

// DecreasePeriod: a CNP inside the period after a decrease changes neither
// the rate nor alpha at once; it is deferred to one decrease at the
// period's end (NextTimer asks for it). With 0 (the paper) every CNP
// decreases.
func TestDecreasePeriod(t *testing.T) {
	for _, period := range []sim.Time{0, 4 * us} {
		cfg := DefaultConfig(25 * gbps)
		cfg.DecreasePeriod = period
		r, err := NewReactionPoint(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r.OnCNP(10 * us)
		rc1, a1 := r.Rate(), r.Alpha()
		r.OnCNP(12 * us) // inside a 4 us period
		rc2, a2 := r.Rate(), r.Alpha()
		if period > 0 {
			if r.NextTimer() != 14*us {
				t.Errorf("deferred decrease: NextTimer %d, want 14 us", r.NextTimer())
			}
			r.OnTimer(14*us - 1)
			if r.Rate() != rc1 {
				t.Error("deferred decrease applied before the period's end")
			}
			r.OnTimer(14 * us)
			if r.Rate() >= rc1 || r.Stats().DeferredDecreases != 1 {
				t.Errorf("deferred decrease at the period's end: rate %d -> %d, %d deferred", rc1, r.Rate(), r.Stats().DeferredDecreases)
			}
			rc2 = r.Rate()
		}
		r.OnCNP(19 * us) // after the next period
		rc3 := r.Rate()
		switch {
		case period == 0 && (rc2 >= rc1 || rc3 >= rc2):
			t.Errorf("period 0: rates %d %d %d should fall on every CNP", rc1, rc2, rc3)
		case period > 0 && a2 != a1:
			t.Errorf("period 4us: a CNP 2 us after a decrease changed rate %d -> %d, alpha %g -> %g", rc1, rc2, a1, a2)
		case period > 0 && rc3 >= rc2:
			t.Errorf("period 4us: the CNP after the period did not decrease (%d -> %d)", rc2, rc3)
		}
		if got := r.Stats().RateDecreases; got != 3 {
			t.Errorf("period %d: %d decreases", period, got)
		}
	}
	bad := DefaultConfig(1 * gbps)
	bad.DecreasePeriod = -1
	if bad.Validate() == nil {
		t.Error("a negative decrease period validated")
	}
}
