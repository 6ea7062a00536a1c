package byteexpress

import "fmt"

// sendWindow is an engine's send window Cwnd (paper §6.3): bytes of posted,
// uncompleted WRs plus those prepared and not yet posted may not exceed
// cwnd. A cwnd of 0 means no window (the paper's baseline).
type sendWindow struct {
	cwnd     int
	inflight int // bytes of posted, uncompleted WRs (the Cwnd quantity)
	pending  int // bytes of prepared, unposted WRs
}

// fits reports whether n more bytes may be prepared.
func (w *sendWindow) fits(n int) bool {
	return w.cwnd == 0 || w.inflight+w.pending+n <= w.cwnd
}

// add accounts n prepared bytes.
func (w *sendWindow) add(n int) { w.pending += n }

// post moves the prepared bytes in flight and returns the bytes in flight.
func (w *sendWindow) post() int {
	w.inflight += w.pending
	w.pending = 0
	return w.inflight
}

// complete releases n bytes whose WR completed.
func (w *sendWindow) complete(n int) { w.inflight -= n }

func (w *sendWindow) reset() { w.inflight, w.pending = 0, 0 }

// check verifies the bound and that the ring holds what was accounted.
func (w *sendWindow) check(ringInflight, ringPending int) error {
	if w.cwnd > 0 && w.inflight+w.pending > w.cwnd {
		return fmt.Errorf("%d bytes in flight + %d pending exceed Cwnd %d", w.inflight, w.pending, w.cwnd)
	}
	if ringInflight != w.inflight || ringPending != w.pending {
		return fmt.Errorf("ring holds %d/%d bytes, accounted %d/%d", ringInflight, ringPending, w.inflight, w.pending)
	}
	return nil
}
