package pingpong

import (
	"testing"

	"github.com/besim/besim/sim"
)

// TestPinger: one message outstanding; samples only for messages sent in
// [From, To); nothing is sent after To.
func TestPinger(t *testing.T) {
	us := sim.Microsecond
	p := &Pinger{Size: 64, From: 10 * us, To: 30 * us}
	if !p.Send(0) || p.Send(1*us) {
		t.Fatal("a second message went out while one was outstanding")
	}
	p.Arrived(2 * us)
	p.Answered(4 * us) // sent before From: not counted
	for _, at := range []sim.Time{10, 20} {
		if !p.Send(at * us) {
			t.Fatalf("Send(%v) refused", at)
		}
		p.Arrived((at + 1) * us)
		p.Answered((at + 3) * us)
	}
	if p.Send(30 * us) {
		t.Fatal("sent after To")
	}
	if len(p.RTT) != 2 || p.RTT[0] != 3*us || len(p.OneWay) != 2 || p.OneWay[1] != us {
		t.Fatalf("RTT %v, one-way %v", p.RTT, p.OneWay)
	}
	st := Summarize(p)
	if st.RTTMean != 3 || st.RTTP99 != 3 || st.OneWayMean != 1 || st.Samples != 2 {
		t.Fatalf("%+v", st)
	}
	if e := Summarize(&Pinger{}); e.RTTMean != -1 || e.Samples != 0 {
		t.Fatalf("empty: %+v", e)
	}
}

// TestSummary: nearest-rank quantiles.
func TestSummary(t *testing.T) {
	var v []sim.Time
	for i := 100; i >= 1; i-- {
		v = append(v, sim.Time(i)*sim.Microsecond)
	}
	mean, p50, p99, mx := summary(v)
	if mean != 50.5 || p50 != 50 || p99 != 99 || mx != 100 {
		t.Fatalf("mean %v p50 %v p99 %v max %v", mean, p50, p99, mx)
	}
}
