package rnic

import (
	"github.com/besim/besim/units"
	"testing"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// TestPSNWrapRecovery is the corner of issue 20: a 256 B MTU, 16 MiB WRITEs
// posted 256 deep (2^24 PSNs, the whole PSN space), a 268 ms ACK timeout
// (exponent 16) and one packet dropped twice (the original and its
// NAK-triggered retransmission). The requester keeps at most 2^23 PSNs
// unacknowledged, and the timeout's rewind resends and re-arms near the
// 24-bit wrap: every WRITE completes. Before the window bound the QP sent
// past half the PSN space while it waited for the timeout, the rewind then
// saw nothing to resend, and the QP hung forever without a completion.
func TestPSNWrapRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 2^24 packets plus 2^23 retransmissions (several seconds)")
	}
	cfg := DefaultConfig()
	cfg.SizesOnly = true
	p := newPair(t, cfg, 100*units.Gbps, sim.Microsecond)
	o := defaultOpts()
	o.depth, o.timeout, o.mtu = 256, 16, 256
	a, b := p.rc(t, o)
	const msg = 16 << 20
	src := newRegion(t, a.pd, msg, allAccess)
	dst := newRegion(t, b.pd, msg, allAccess)
	const lost = 100 + 1000 // SQPSN is 100
	drops, maxOut := 0, uint32(0)
	p.w.Drop = func(from int, f *fabric.Packet) bool {
		if from != 0 || f.Kind != fabric.KindData {
			return false
		}
		maxOut = max(maxOut, (a.qp.maxPSN-a.qp.unaPSN)&psnMask)
		if f.PSN == lost && drops < 2 {
			drops++
			return true
		}
		return false
	}
	wrs := make([]verbs.SendWR, o.depth)
	for i := range wrs {
		wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(0, msg)},
			RemoteAddr: uint64(dst.addr(0)), RKey: dst.mr.RKey()}
		if i > 0 {
			wrs[i-1].Next = &wrs[i]
		}
	}
	_, err := a.qp.PostSend(&wrs[0])
	must(t, err)
	wcs := p.waitCQ(t, a.cq, len(wrs), 5*sim.Second)
	for i, wc := range wcs {
		if wc.Status != verbs.WCSuccess || wc.WRID != uint64(i) {
			t.Fatalf("completion %d: %+v", i, wc)
		}
	}
	st := a.qp.Stats()
	t.Logf("drops %d, timeouts %d, seq NAKs %d, retransmits %d, most unacknowledged PSNs %d",
		drops, st.Timeouts, st.SeqNAKs, st.Retransmits, maxOut)
	if drops != 2 || st.Timeouts == 0 {
		t.Fatalf("%d drops and %d timeouts: the case needs the packet lost twice and a timeout", drops, st.Timeouts)
	}
	if maxOut > maxUnacked || maxOut <= maxUnacked-msg/256 {
		t.Fatalf("most unacknowledged PSNs %d, want the window filled to within one WQE of %d and never past it",
			maxOut, maxUnacked)
	}
}

// TestPSNWindowBound: READs of 2^21 PSNs each (512 MiB at a 256 B MTU), eight
// of them (the whole PSN space), into a link that loses every request. The
// requester assigns PSNs to four READs (exactly 2^23 unacknowledged), the
// other four wait for the window, the timeout resends the four and re-arms,
// and after retry_cnt retries the first READ fails with WCRetryExcErr and
// the rest are flushed: an error completion, not a silent stall (before the
// bound all eight were sent, the PSN window wrapped onto itself and the
// first timeout's rewind found nothing to resend and never re-armed).
func TestPSNWindowBound(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SizesOnly = true
	p := newPair(t, cfg, 100*units.Gbps, sim.Microsecond)
	o := defaultOpts()
	o.depth, o.timeout, o.retry, o.mtu = 8, 8, 3, 256 // 1 ms timeout
	a, b := p.rc(t, o)
	const msg = 512 << 20 // 2^21 packets of 256 B
	local := newRegion(t, a.pd, msg, allAccess)
	remote := newRegion(t, b.pd, msg, allAccess)
	sent := map[uint32]int{}
	maxOut := uint32(0)
	p.w.Drop = func(from int, f *fabric.Packet) bool {
		if from == 0 && f.Kind == fabric.KindData {
			sent[f.PSN]++
			maxOut = max(maxOut, (a.qp.maxPSN-a.qp.unaPSN)&psnMask)
			return true
		}
		return false
	}
	wrs := make([]verbs.SendWR, o.depth)
	for i := range wrs {
		wrs[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRead, SGL: []verbs.SGE{local.sge(0, msg)},
			RemoteAddr: uint64(remote.addr(0)), RKey: remote.mr.RKey()}
		if i > 0 {
			wrs[i-1].Next = &wrs[i]
		}
	}
	_, err := a.qp.PostSend(&wrs[0])
	must(t, err)
	wcs := p.waitCQ(t, a.cq, len(wrs), sim.Second)
	for i, wc := range wcs {
		want := verbs.WCWRFlushErr
		if i == 0 {
			want = verbs.WCRetryExcErr
		}
		if wc.Status != want || wc.WRID != uint64(i) {
			t.Fatalf("completion %d: %v (wr %d), want %v (wr %d)", i, wc.Status, wc.WRID, want, i)
		}
	}
	if maxOut != maxUnacked {
		t.Fatalf("most unacknowledged PSNs %d, want exactly the bound %d", maxOut, maxUnacked)
	}
	// Four READ requests, each sent once and retried retry_cnt (3) times.
	if len(sent) != 4 {
		t.Fatalf("requests at %d PSNs %v, want the four READs inside the window", len(sent), sent)
	}
	for psn, k := range sent {
		if k != 4 {
			t.Fatalf("READ at PSN %d sent %d times, want 4 (first try + 3 retries)", psn, k)
		}
	}
	if st := a.qp.Stats(); st.Timeouts != 4 {
		t.Fatalf("%d timeouts, want 4", st.Timeouts)
	}
}
