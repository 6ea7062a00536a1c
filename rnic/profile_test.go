package rnic

import (
	"github.com/besim/besim/units"
	"testing"

	"github.com/besim/besim/dcqcn"
	"github.com/besim/besim/sim"
)

// TestDCQCNProfilesTwoFlows: two WRITE streams into one 25G receiver (the
// star with ECN) under each DCQCN profile. On that bottleneck every QP's
// reaction point follows its own profile: the first CNP cuts line rate by
// exactly 1 - alpha0/2; the rate timer fires at most once per T between
// decreases and the byte counter once per B bytes sent; ConnectX decreases
// at most once per 4 us (deferring CNPs inside the period) and samples
// alpha per period, the paper decreases on every CNP.
func TestDCQCNProfilesTwoFlows(t *testing.T) {
	const line = 25 * units.Gbps
	for _, p := range []struct {
		name string
		dc   dcqcn.Config
		cnp  sim.Time
	}{
		{"dcqcn-paper", dcqcn.DefaultConfig(line), dcqcn.DefaultCNPInterval},
		{"connectx", dcqcn.ConnectXConfig(line), dcqcn.ConnectXCNPInterval},
	} {
		t.Run(p.name, func(t *testing.T) {
			cfg := ccConfig(CCDCQCN)
			cfg.DCQCN, cfg.CNPInterval = p.dc, p.cnp
			s := newStar(t, 3, line, cfg, nil)
			var snd []*ep
			for i := range 2 {
				a, b := rcConnect(t, s.ctx[i], s.ctx[2], streamOpts())
				stream(t, a, b, 64<<10)
				snd = append(snd, a)
			}
			// The first cut, observed within 100 ns of the first CNP.
			q := snd[0].qp
			for now := sim.Time(0); q.Stats().CNPsHandled == 0; now += 100 * sim.Nanosecond {
				if now > 10*sim.Millisecond {
					t.Fatal("no CNP in 10 ms")
				}
				s.k.RunUntil(now)
				// Until its first CNP a QP holds no reaction point
				// (one is allocated with the CNP) and sends at line rate.
				if q.Stats().CNPsHandled == 0 && (q.cc != nil || q.Rate() != line) {
					t.Fatalf("%v, before the first CNP (%d packets sent): reaction point %v, rate %d; want none and line rate",
						now, q.Stats().TxPackets, q.cc, q.Rate())
				}
			}
			want := units.Rate(float64(line) * (1 - p.dc.InitialAlpha/2))
			if q.Rate() != want || q.cc.(*dcqcn.ReactionPoint).Stats().Decreases != 1 {
				t.Fatalf("first CNP: rate %d, %d decreases; want %d (1 - %v/2 of line rate)", q.Rate(), q.cc.(*dcqcn.ReactionPoint).Stats().Decreases, want, p.dc.InitialAlpha)
			}
			const end = 30 * sim.Millisecond
			s.k.RunUntil(end)
			for i, a := range snd {
				st, tx := a.qp.cc.(*dcqcn.ReactionPoint).Stats(), a.qp.Stats().TxBytes
				t.Logf("flow %d: %+v, %d bytes sent, rate now %.2f Gb/s", i, st, tx, float64(a.qp.Rate())/1e9)
				if st.Decreases == 0 || st.TimerExpiries > uint64(end/p.dc.RateTimer)+st.Decreases ||
					st.ByteCounterExpiries > tx/uint64(p.dc.ByteCounter) {
					t.Errorf("flow %d: %d decreases, %d timer expiries (T %v), %d byte-counter expiries of %d bytes (B %d)",
						i, st.Decreases, st.TimerExpiries, p.dc.RateTimer, st.ByteCounterExpiries, tx, p.dc.ByteCounter)
				}
				switch p.name {
				case "connectx":
					if st.Decreases > uint64(end/p.dc.DecreasePeriod)+1 || st.DeferredDecreases == 0 || st.AlphaRises == 0 {
						t.Errorf("flow %d: %d decreases in %v (at most one per 4 us), %d deferred, %d alpha rises", i, st.Decreases, end, st.DeferredDecreases, st.AlphaRises)
					}
				default:
					if st.Decreases != st.CNPs || st.DeferredDecreases != 0 || st.AlphaRises != 0 {
						t.Errorf("flow %d: %d decreases for %d CNPs, %d deferred, %d alpha rises; the paper decreases on every CNP", i, st.Decreases, st.CNPs, st.DeferredDecreases, st.AlphaRises)
					}
				}
			}
		})
	}
}
