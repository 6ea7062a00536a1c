package fabric

import "testing"

// TestLossMatchHits: which frames a lossy link's rates hit. No mask: every
// frame; a priority mask: that priority's data, ACKs and CNPs, never PFC;
// DataOnly: data frames alone.
func TestLossMatchHits(t *testing.T) {
	kinds := []Kind{KindData, KindAck, KindCNP, KindPause}
	for _, c := range []struct {
		m    LossMatch
		prio uint8
		want [4]bool // data, ack, cnp, pause
	}{
		{LossMatch{}, 3, [4]bool{true, true, true, true}},
		{LossMatch{Prios: 1 << 3}, 3, [4]bool{true, true, true, false}},
		{LossMatch{Prios: 1 << 3}, 6, [4]bool{false, false, false, false}},
		{LossMatch{DataOnly: true}, 3, [4]bool{true, false, false, false}},
		{LossMatch{Prios: 1 << 3, DataOnly: true}, 3, [4]bool{true, false, false, false}},
		{LossMatch{Prios: 1 << 3, DataOnly: true}, 0, [4]bool{false, false, false, false}},
	} {
		for i, k := range kinds {
			p := &Packet{Kind: k, Prio: c.prio}
			if got := c.m.Hits(p); got != c.want[i] {
				t.Errorf("%+v on kind %d prio %d: hits %v, want %v", c.m, k, c.prio, got, c.want[i])
			}
		}
	}
}
