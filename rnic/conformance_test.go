package rnic

import (
	"github.com/besim/besim/units"
	"testing"
	"time"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/verbstest"
)

func TestConformance(t *testing.T) {
	verbstest.Run(t, verbstest.Backend{
		Name: "rnic",
		Open: func(t testing.TB) (a, b verbs.Context, env verbstest.Env) {
			p := newPair(t, DefaultConfig(), 25*units.Gbps, sim.Microsecond)
			return p.ca, p.cb, verbstest.Env{Progress: p.runFor}
		},
	})
}

// TestConformanceStar runs the suite through the fabric's star switch
// (lossless priority 3, ECN, DCQCN on).
func TestConformanceStar(t *testing.T) {
	verbstest.Run(t, verbstest.Backend{
		Name: "rnic-star",
		Open: func(t testing.TB) (a, b verbs.Context, env verbstest.Env) {
			cfg := DefaultConfig()
			cfg.CC = CCDCQCN
			s := newStar(t, 2, 25*units.Gbps, cfg, nil)
			return s.ctx[0], s.ctx[1], verbstest.Env{Progress: func(d time.Duration) {
				s.k.RunUntil(s.k.Now() + sim.Time(d.Nanoseconds())*sim.Nanosecond)
			}}
		},
	})
}
