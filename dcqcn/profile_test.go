package dcqcn

import (
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
)

// profiles are the two parameter sets the scenario key dcqcn.profile
// selects, with their notification-point intervals.
var profiles = []struct {
	name string
	cfg  Config
	cnpN sim.Time
}{
	{"dcqcn-paper", DefaultConfig(25 * gbps), DefaultCNPInterval},
	{"connectx", ConnectXConfig(25 * gbps), ConnectXCNPInterval},
}

// step is one rate-increase event applied to the expected (rc, rt) by the
// formulas of the package comment, from the profile's own parameters.
func step(cfg Config, rc, rt units.Rate, t, b int64) (units.Rate, units.Rate) {
	f := int64(cfg.FastRecoveryStages)
	switch {
	case max(t, b) <= f:
	case min(t, b) > f:
		rt += units.Rate(min(t, b)-f) * cfg.HyperIncrease
	default:
		rt += cfg.AdditiveIncrease
	}
	rt = min(rt, cfg.LineRate)
	rc += (rt - rc + 1) / 2
	return min(max(rc, cfg.MinRate), cfg.LineRate), rt
}

// TestProfileTimeline: for each profile, the first cut, the recovery steps
// of the time reset (one per T, none before) and of the byte reset (one per
// B bytes, none before), the stage changes at F, additive and hyper
// increase, and the alpha estimator that sets the next cut all follow that
// profile's own parameters.
func TestProfileTimeline(t *testing.T) {
	for _, p := range profiles {
		t.Run(p.name, func(t *testing.T) {
			cfg := p.cfg
			line, T, B, f := cfg.LineRate, cfg.RateTimer, cfg.ByteCounter, int64(cfg.FastRecoveryStages)
			const t0 = 100 * us

			// The first cut: Rc·(1 - alpha0/2); Rt stays at line rate.
			r := newRP(t, cfg)
			r.OnCNP(t0)
			rc := units.Rate(float64(line) * (1 - cfg.InitialAlpha/2))
			rt := line
			if r.Rate() != rc || r.TargetRate() != rt {
				t.Fatalf("first cut: Rc %d Rt %d, want %d %d (factor 1-%g/2)", r.Rate(), r.TargetRate(), rc, rt, cfg.InitialAlpha)
			}
			t.Logf("first cut to %.4f of line rate", float64(rc)/float64(line))

			// Time reset: nothing until t0+T, then one step per T: fast
			// recovery for F stages, additive increase after.
			for k := int64(1); k <= f+3; k++ {
				at := t0 + sim.Time(k)*T
				r.OnTimer(at - 1)
				if r.Rate() != rc {
					t.Fatalf("timer stage %d: rate changed before t0+%d·T", k, k)
				}
				r.OnTimer(at)
				rc, rt = step(cfg, rc, rt, k, 0)
				if r.Rate() != rc || r.TargetRate() != rt {
					t.Fatalf("timer stage %d at t0+%d·T: Rc %d Rt %d, want %d %d", k, k, r.Rate(), r.TargetRate(), rc, rt)
				}
			}
			if s := r.Stats(); s.FastRecovery != uint64(f) || s.AdditiveIncrease != 3 {
				t.Fatalf("after %d timer stages: %+v, want %d fast recovery and 3 additive", f+3, s, f)
			}

			// Byte reset: one step per B bytes sent, none before; with the
			// timer stages above F, byte stage F+1 is hyper increase.
			tb := int64(f + 3)
			now := t0 + sim.Time(tb)*T + 1
			for k := int64(1); k <= f+2; k++ {
				r.OnPacketSent(now, B-1)
				if r.Rate() != rc {
					t.Fatalf("byte stage %d: rate changed after B-1 bytes", k)
				}
				r.OnPacketSent(now, 1)
				rc, rt = step(cfg, rc, rt, tb, k)
				if r.Rate() != rc || r.TargetRate() != rt {
					t.Fatalf("byte stage %d: Rc %d Rt %d, want %d %d", k, r.Rate(), r.TargetRate(), rc, rt)
				}
			}
			if s := r.Stats(); s.HyperIncrease != 2 || s.ByteCounterExpiries != uint64(f+2) {
				t.Fatalf("after %d byte stages: %+v, want 2 hyper increases", f+2, s)
			}

			// The estimator and the second cut.
			r = newRP(t, cfg)
			r.OnCNP(t0)
			rc, rt = r.Rate(), r.TargetRate()
			a := cfg.InitialAlpha
			oneMinusG := 1 - cfg.G
			if !cfg.AlphaSampled {
				a = float64(oneMinusG*a) + cfg.G // rises with the first decrease
			}
			// Three whole alpha periods with neither a CNP nor an increase.
			t2 := t0 + 3*cfg.AlphaTimer + cfg.AlphaTimer/2
			timerInc := false
			for k := int64(1); t0+sim.Time(k)*T <= t2; k++ { // rate-timer steps before it
				rc, rt = step(cfg, rc, rt, k, 0)
				timerInc = true
			}
			for range 3 {
				a *= oneMinusG
			}
			r.OnCNP(t2)
			want := units.Rate(float64(rc) * (1 - a/2))
			switch {
			case cfg.DecreasePeriod > t2-t0:
				// The second CNP falls inside the decrease period: the cut
				// waits for its end, with alpha as of then.
				if r.Rate() != rc || T < cfg.DecreasePeriod {
					t.Fatalf("second CNP inside the decrease period cut at once (%d -> %d), or T < the period", rc, r.Rate())
				}
				end := t0 + cfg.DecreasePeriod
				r.OnTimer(end - 1)
				if r.Rate() != rc {
					t.Fatal("deferred decrease before the period's end")
				}
				n := int64((end-t0)/cfg.AlphaTimer) - 3
				if cfg.AlphaSampled {
					// The period that held the second CNP rises first.
					a = float64(oneMinusG*a) + cfg.G
					n--
				}
				for range n {
					a *= oneMinusG
				}
				r.OnTimer(end)
				want = units.Rate(float64(rc) * (1 - a/2))
				if r.Alpha() != a {
					t.Fatalf("alpha at the deferred decrease %v, want %v", r.Alpha(), a)
				}
			case !cfg.AlphaSampled && r.Alpha() != float64(oneMinusG*a)+cfg.G:
				// The cut used alpha before this CNP's rise.
				t.Fatalf("alpha after the second cut %v, want %v", r.Alpha(), float64(oneMinusG*a)+cfg.G)
			}
			if r.Rate() != want {
				t.Fatalf("second cut: Rc %d, want %d (alpha %v)", r.Rate(), want, a)
			}
			// Target clamping: the paper sets Rt = Rc before the cut;
			// ConnectX keeps Rt (no timer increase since the first cut).
			wantRt := rc
			if cfg.TargetClamp == ClampNever || cfg.TargetClamp == ClampAfterTimer && !timerInc {
				wantRt = rt
			}
			if r.TargetRate() != wantRt {
				t.Fatalf("second cut: Rt %d, want %d (clamp %v)", r.TargetRate(), wantRt, cfg.TargetClamp)
			}
		})
	}
}

// TestConnectXAlphaEstimator: with AlphaSampled, alpha moves once per
// AlphaTimer from the first CNP: up by G in a period that saw a CNP, down by
// the factor 1-G in one that did not, whatever the number of CNPs in it.
func TestConnectXAlphaEstimator(t *testing.T) {
	cfg := ConnectXConfig(25 * gbps)
	cfg.DecreasePeriod = 0
	K, g := cfg.AlphaTimer, cfg.G
	r := newRP(t, cfg)
	r.OnCNP(0)
	a := cfg.InitialAlpha
	if r.Alpha() != a {
		t.Fatalf("alpha at the first CNP %v, want the initial %v", r.Alpha(), a)
	}
	// Period [0, K): the first CNP only. Period [K, 2K): three CNPs.
	// Period [2K, 3K): none.
	for _, at := range []sim.Time{K + K/4, K + K/2, K + 3*K/4} {
		r.OnCNP(at)
	}
	r.OnTimer(3*K + K/2)
	a *= 1 - g               // end of period 1: no CNP counted
	a = float64((1-g)*a) + g // end of period 2: CNPs
	a *= 1 - g               // end of period 3: none
	if r.Alpha() != a {
		t.Fatalf("alpha after three periods %v, want %v", r.Alpha(), a)
	}
	if s := r.Stats(); s.AlphaRises != 1 || s.AlphaDecays != 2 {
		t.Fatalf("stats %+v: want 1 rise, 2 decays", s)
	}
}
