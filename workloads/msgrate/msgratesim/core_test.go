package msgratesim

import (
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/msgrate"
)

// TestCoreThreadDomains: through the ByteExpress core (byteexpress
// Config.NoThreadDomains), eight I/O threads sending 512 B messages keep
// their rate from 64 to 512 QPs with thread domains; without them, the
// QPs beyond the 64 lock-free doorbell registers share 12 locked ones, the
// client threads spend time in doorbell locks and the rate falls.
func TestCoreThreadDomains(t *testing.T) {
	run := func(q int, td bool) CoreResult {
		r, err := RunCore(CoreConfig{Config: msgrate.Config{QPs: q, ThreadDomains: td,
			Warmup: 200 * sim.Microsecond, Duration: 500 * sim.Microsecond}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("TD %-5v %3d QPs: %6.2f Mmsg/s, %3d shared-doorbell QPs, %4.1f%% client CPU in doorbell locks, %d doorbells",
			td, q, r.Mmps, r.SharedQPs, 100*r.LockShare, r.Doorbells)
		return r
	}
	td64, td512 := run(64, true), run(512, true)
	no64, no512 := run(64, false), run(512, false)
	if td512.SharedQPs != 0 || no64.SharedQPs != 0 || no512.SharedQPs != 512-64 {
		t.Errorf("shared-doorbell QPs: TD 512 %d, no TD 64 %d, no TD 512 %d (want 0, 0, 448)", td512.SharedQPs, no64.SharedQPs, no512.SharedQPs)
	}
	if td512.Mmps < 0.97*td64.Mmps {
		t.Errorf("with TDs the rate falls from %.2f (64 QPs) to %.2f Mmsg/s (512)", td64.Mmps, td512.Mmps)
	}
	if no512.Mmps > 0.95*no64.Mmps {
		t.Errorf("without TDs 512 QPs keep %.2f of %.2f Mmsg/s at 64 (want < 95%%)", no512.Mmps, no64.Mmps)
	}
	if no512.LockShare < 0.05 || td512.LockShare != 0 {
		t.Errorf("doorbell-lock CPU share: no TD %.3f, TD %.3f", no512.LockShare, td512.LockShare)
	}
	if no64.Mmps < 0.97*td64.Mmps {
		t.Errorf("at 64 QPs (all on lock-free registers) no TD %.2f vs TD %.2f Mmsg/s", no64.Mmps, td64.Mmps)
	}
}
