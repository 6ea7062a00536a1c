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
	t.srqDepth = d
	// The first post takes all d buffers in one call, from arrays dropped
	// after it; re-posts take d/2 (repostSRQ), from t.srqPost. A provider
	// copies receive WRs when they are posted, so the thread keeps no WR
	// per buffer (56 bytes each: 28 KiB less per 1,024-deep SRQ).
	wrs := make([]verbs.RecvWR, d)
	sges := make([]verbs.SGE, d)
	for i := range wrs {
		t.srqWR(wrs, sges, i, uint32(i))
		if i+1 < d {
			wrs[i].Next = &wrs[i+1]
		}
	}
	t.ops.PostRecvs++
	t.ops.RecvWRs += d
	if _, err := srq.PostRecv(&wrs[0]); err != nil {
		return fmt.Errorf("byteexpress: thread %d: post SRQ: %w", t.idx, err)
	}
	t.srqPost = make([]verbs.RecvWR, d/2)
	t.srqPostSGEs = make([]verbs.SGE, d/2)
	t.srqReturn = make([]uint32, 0, d)
	return nil
}

// srqWR makes wrs[j] the receive WR of SRQ buffer i, its one SGE in
// sges[j].
func (t *IOThread) srqWR(wrs []verbs.RecvWR, sges []verbs.SGE, j int, i uint32) {
	size := t.cfg.RecvBufSize
	sges[j] = verbs.SGE{Addr: t.srqMem.Addr() + uintptr(int(i)*size), Length: uint32(size), LKey: t.srqMem.LKey()}
	wrs[j] = verbs.RecvWR{ID: wrRecv | wrSRQ | uint64(i), SGL: sges[j : j+1 : j+1]}
}

// repostSRQ re-posts consumed SRQ buffers with one post call.
func (t *IOThread) repostSRQ() {
	r := t.srqReturn
	if len(t.srqPost) < len(r) {
		t.srqPost = make([]verbs.RecvWR, len(r))
		t.srqPostSGEs = make([]verbs.SGE, len(r))
	}
	for j, i := range r {
		t.srqWR(t.srqPost, t.srqPostSGEs, j, i)
		if j+1 < len(r) {
			t.srqPost[j].Next = &t.srqPost[j+1]
		}
	}
	t.ops.PostRecvs++
	t.ops.RecvWRs += len(r)
	_, _ = t.srq.PostRecv(&t.srqPost[0])
	t.srqReturn = r[:0]
}
