package byteexpress

import (
	"fmt"

	"github.com/besim/besim/verbs"
)

// SRQ mode (§6.2.2): one shared receive queue per I/O thread, its buffers
// re-posted in batches of half its depth.

func (t *IOThread) setupSRQ() error {
	d, size := t.cfg.SRQDepth, t.cfg.RecvBufSize
	srq, err := t.ep.p.PD.CreateSRQ(verbs.SRQInitAttr{MaxWR: d, MaxSGE: 1, TD: t.td})
	if err != nil {
		return fmt.Errorf("byteexpress: thread %d: create SRQ: %w", t.idx, err)
	}
	t.srq = srq
	if t.srqMem, err = t.allocate(d * size); err != nil {
		return err
	}
	t.srqBytes = t.srqMem.Bytes()
	t.srqWRs = make([]verbs.RecvWR, d)
	t.srqSGEs = make([]verbs.SGE, d)
	for i := range t.srqWRs {
		t.srqSGEs[i] = verbs.SGE{Addr: t.srqMem.Addr() + uintptr(i*size), Length: uint32(size), LKey: t.srqMem.LKey()}
		t.srqWRs[i].SGL = t.srqSGEs[i : i+1 : i+1]
		t.srqWRs[i].ID = wrRecv | wrSRQ | uint64(i)
		if i+1 < d {
			t.srqWRs[i].Next = &t.srqWRs[i+1]
		}
	}
	t.ops.PostRecvs++
	t.ops.RecvWRs += d
	if _, err := srq.PostRecv(&t.srqWRs[0]); err != nil {
		return fmt.Errorf("byteexpress: thread %d: post SRQ: %w", t.idx, err)
	}
	t.srqWRs[d-1].Next = nil
	t.srqReturn = make([]uint32, 0, d)
	return nil
}

// repostSRQ re-posts consumed SRQ buffers with one post call.
func (t *IOThread) repostSRQ() {
	r := t.srqReturn
	for j, i := range r {
		if j+1 < len(r) {
			t.srqWRs[i].Next = &t.srqWRs[r[j+1]]
		} else {
			t.srqWRs[i].Next = nil
		}
	}
	t.ops.PostRecvs++
	t.ops.RecvWRs += len(r)
	_, _ = t.srq.PostRecv(&t.srqWRs[r[0]])
	t.srqReturn = r[:0]
}
