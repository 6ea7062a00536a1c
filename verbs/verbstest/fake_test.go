package verbstest

// A small reference model of the verbs semantics the suite checks, used only
// to test the suite itself: work executes in Progress, one WR at a time, with
// a virtual clock for RNR back-off. It is not a network model (that is
// package rnic).

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"time"
	"unsafe"

	"github.com/besim/besim/verbs"
)

// fakeBug, when set, plants one named bug in the model so that
// TestSuiteCatchesBugs can check the suite notices it.
var fakeBug = os.Getenv("VERBSTEST_FAKE_BUG")

type fakeWorld struct {
	now     time.Duration
	nextQPN uint32
	nextKey uint32
	qps     map[uint32]*fakeQP
	mrs     map[uint32]*fakeMR
}

func newFakeWorld() *fakeWorld {
	return &fakeWorld{nextQPN: 0x100, nextKey: 0x1000, qps: map[uint32]*fakeQP{}, mrs: map[uint32]*fakeMR{}}
}

// bytesAt views n bytes at addr (memory the test mapped and registered).
func bytesAt(addr uintptr, n int) []byte {
	if n == 0 {
		return nil
	}
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), n)
}

type fakeCtx struct {
	w    *fakeWorld
	name string
	gid  verbs.GID
}

func (c *fakeCtx) Name() string { return c.name }
func (c *fakeCtx) Attr() verbs.DeviceAttr {
	return verbs.DeviceAttr{MaxQPWR: 1024, MaxSGE: 4, MaxCQE: 1 << 16, MaxMR: 1 << 16, MaxSRQWR: 1024,
		PortRate: 100e9, PortMTU: 1024, GID: c.gid}
}
func (c *fakeCtx) AllocPD() (verbs.PD, error) { return &fakePD{c}, nil }
func (c *fakeCtx) AllocTD() (verbs.TD, error) { return fakeTD{}, nil }
func (c *fakeCtx) CreateCQ(depth int, _ verbs.TD) (verbs.CQ, error) {
	return &fakeCQ{depth: depth}, nil
}
func (c *fakeCtx) Close() error { return nil }

type fakeTD struct{}

func (fakeTD) Dealloc() error { return nil }

type fakePD struct{ c *fakeCtx }

type fakeMR struct {
	w      *fakeWorld
	addr   uintptr
	n      int
	key    uint32
	access verbs.Access
}

func (m *fakeMR) Addr() uintptr        { return m.addr }
func (m *fakeMR) Len() int             { return m.n }
func (m *fakeMR) LKey() uint32         { return m.key }
func (m *fakeMR) RKey() uint32         { return m.key }
func (m *fakeMR) Access() verbs.Access { return m.access }
func (m *fakeMR) Dereg() error         { delete(m.w.mrs, m.key); return nil }

func (pd *fakePD) RegMR(addr uintptr, n int, access verbs.Access) (verbs.MR, error) {
	w := pd.c.w
	w.nextKey += 0x101
	m := &fakeMR{w: w, addr: addr, n: n, key: w.nextKey, access: access}
	w.mrs[m.key] = m
	return m, nil
}

// find returns the bytes [addr, addr+n) of the MR named key if it grants acc.
func (w *fakeWorld) find(key uint32, addr uint64, n int, acc verbs.Access) ([]byte, bool) {
	m := w.mrs[key]
	if m == nil || m.access&acc != acc || addr < uint64(m.addr) || addr+uint64(n) > uint64(m.addr)+uint64(m.n) {
		return nil, false
	}
	return bytesAt(uintptr(addr), n), true
}

func (pd *fakePD) CreateQP(a verbs.QPInitAttr) (verbs.QP, error) {
	scq, ok1 := a.SendCQ.(*fakeCQ)
	rcq, ok2 := a.RecvCQ.(*fakeCQ)
	if !ok1 || !ok2 || (a.Type != verbs.RC && a.Type != verbs.UD) {
		return nil, errors.New("fake: bad QP init attributes")
	}
	var srq *fakeSRQ
	if a.SRQ != nil {
		srq = a.SRQ.(*fakeSRQ)
	}
	w := pd.c.w
	w.nextQPN++
	q := &fakeQP{w: w, qpn: w.nextQPN, init: a, scq: scq, rcq: rcq, srq: srq}
	w.qps[q.qpn] = q
	return q, nil
}

func (pd *fakePD) CreateSRQ(a verbs.SRQInitAttr) (verbs.SRQ, error) {
	return &fakeSRQ{max: a.MaxWR}, nil
}

type fakeAH struct{ attr verbs.AHAttr }

func (fakeAH) Destroy() error { return nil }

func (pd *fakePD) CreateAH(a verbs.AHAttr) (verbs.AH, error) { return &fakeAH{a}, nil }
func (pd *fakePD) Dealloc() error                            { return nil }

type fakeCQ struct {
	depth int
	q     []verbs.WC
}

func (c *fakeCQ) push(wc verbs.WC) {
	if len(c.q) >= c.depth {
		panic("fake: CQ overrun")
	}
	c.q = append(c.q, wc)
}
func (c *fakeCQ) Poll(wc []verbs.WC) int {
	n := copy(wc, c.q)
	c.q = c.q[n:]
	return n
}
func (c *fakeCQ) Depth() int     { return c.depth }
func (c *fakeCQ) Destroy() error { return nil }

type fakeSRQ struct {
	max int
	q   []verbs.RecvWR
}

func copyRecvChain(wr *verbs.RecvWR, q *[]verbs.RecvWR, max int) (*verbs.RecvWR, error) {
	for ; wr != nil; wr = wr.Next {
		if len(*q) >= max {
			return wr, errors.New("fake: receive queue full")
		}
		c := *wr
		c.Next, c.SGL = nil, slices.Clone(wr.SGL)
		*q = append(*q, c)
	}
	return nil, nil
}

func (s *fakeSRQ) PostRecv(wr *verbs.RecvWR) (*verbs.RecvWR, error) {
	return copyRecvChain(wr, &s.q, s.max)
}
func (s *fakeSRQ) Destroy() error { return nil }

type fakeQP struct {
	w     *fakeWorld
	qpn   uint32
	init  verbs.QPInitAttr
	state verbs.QPState
	attr  verbs.QPAttr
	scq   *fakeCQ
	rcq   *fakeCQ
	srq   *fakeSRQ
	sq    []verbs.SendWR
	rq    []verbs.RecvWR
	// RNR back-off of the WR at the head of sq.
	inRNR   bool
	rnrLeft int
	nextTry time.Duration
}

func (q *fakeQP) QPN() uint32          { return q.qpn }
func (q *fakeQP) Type() verbs.QPType   { return q.init.Type }
func (q *fakeQP) State() verbs.QPState { return q.state }
func (q *fakeQP) Destroy() error       { delete(q.w.qps, q.qpn); return nil }
func (q *fakeQP) signaled(f verbs.SendFlags) bool {
	return q.init.SigAll || f&verbs.FlagSignaled != 0 || fakeBug == "signal-all"
}

func (q *fakeQP) Modify(attr *verbs.QPAttr, mask verbs.AttrMask) error {
	if err := verbs.CheckModify(q.init.Type, q.state, attr, mask); err != nil && fakeBug != "no-check-modify" {
		return err
	}
	set := func(m verbs.AttrMask, apply func()) {
		if mask&m != 0 {
			apply()
		}
	}
	a := &q.attr
	set(verbs.AttrAccessFlags, func() { a.AccessFlags = attr.AccessFlags })
	set(verbs.AttrQKey, func() { a.QKey = attr.QKey })
	set(verbs.AttrAV, func() { a.AH = attr.AH })
	set(verbs.AttrPathMTU, func() { a.PathMTU = attr.PathMTU })
	set(verbs.AttrRNRRetry, func() { a.RNRRetry = attr.RNRRetry })
	set(verbs.AttrMinRNRTimer, func() { a.MinRNRTimer = attr.MinRNRTimer })
	set(verbs.AttrDestQPN, func() { a.DestQPN = attr.DestQPN })
	if mask&verbs.AttrState != 0 {
		q.state = attr.State
		switch attr.State {
		case verbs.StateErr:
			if fakeBug != "no-flush" {
				q.flush()
			}
		case verbs.StateReset:
			q.sq, q.rq, q.inRNR = nil, nil, false
		}
	}
	return nil
}

// flush completes every outstanding WR with WCWRFlushErr.
func (q *fakeQP) flush() {
	for _, wr := range q.sq {
		q.scq.push(verbs.WC{WRID: wr.ID, Status: verbs.WCWRFlushErr, QPN: q.qpn})
	}
	for _, wr := range q.rq {
		q.rcq.push(verbs.WC{WRID: wr.ID, Status: verbs.WCWRFlushErr, QPN: q.qpn})
	}
	q.sq, q.rq, q.inRNR = nil, nil, false
}

func (q *fakeQP) PostSend(wr *verbs.SendWR) (*verbs.SendWR, error) {
	if q.state != verbs.StateRTS && q.state != verbs.StateErr {
		return wr, fmt.Errorf("fake: post send in %v", q.state)
	}
	for ; wr != nil; wr = wr.Next {
		if (len(q.sq) >= q.init.MaxSendWR && fakeBug != "no-sq-limit") || len(wr.SGL) > q.init.MaxSGE {
			return wr, errors.New("fake: send queue full or too many SGEs")
		}
		c := *wr
		c.Next, c.SGL = nil, slices.Clone(wr.SGL)
		q.sq = append(q.sq, c)
	}
	if q.state == verbs.StateErr {
		q.flush()
	}
	return nil, nil
}

func (q *fakeQP) PostRecv(wr *verbs.RecvWR) (*verbs.RecvWR, error) {
	if q.srq != nil || q.state == verbs.StateReset {
		return wr, errors.New("fake: cannot post receive")
	}
	bad, err := copyRecvChain(wr, &q.rq, q.init.MaxRecvWR)
	if q.state == verbs.StateErr {
		q.flush()
	}
	return bad, err
}

func (q *fakeQP) popRecv() (verbs.RecvWR, bool) {
	rq := &q.rq
	if q.srq != nil {
		rq = &q.srq.q
	}
	if len(*rq) == 0 {
		return verbs.RecvWR{}, false
	}
	r := (*rq)[0]
	*rq = (*rq)[1:]
	return r, true
}

func (w *fakeWorld) gather(sgl []verbs.SGE) ([]byte, bool) {
	var out []byte
	for _, s := range sgl {
		b, ok := w.find(s.LKey, uint64(s.Addr), int(s.Length), 0)
		if !ok {
			return nil, false
		}
		out = append(out, b...)
	}
	return out, true
}

// scatter writes data into sgl (LocalWrite required), false if it does not fit.
func (w *fakeWorld) scatter(sgl []verbs.SGE, data []byte) bool {
	var room int
	for _, s := range sgl {
		if _, ok := w.find(s.LKey, uint64(s.Addr), int(s.Length), verbs.AccessLocalWrite); !ok {
			return false
		}
		room += int(s.Length)
	}
	if room < len(data) {
		return false
	}
	for _, s := range sgl {
		b, _ := w.find(s.LKey, uint64(s.Addr), int(s.Length), verbs.AccessLocalWrite)
		data = data[copy(b, data):]
	}
	return true
}

// fail completes the head WR with st and moves q to ERR.
func (q *fakeQP) fail(st verbs.WCStatus) {
	wr := q.sq[0]
	q.sq = q.sq[1:]
	q.scq.push(verbs.WC{WRID: wr.ID, Status: st, QPN: q.qpn})
	q.state = verbs.StateErr
	q.flush()
}

func (q *fakeQP) done(op verbs.WCOpcode, n int) {
	wr := q.sq[0]
	q.sq = q.sq[1:]
	q.inRNR = false
	if q.signaled(wr.Flags) {
		q.scq.push(verbs.WC{WRID: wr.ID, Status: verbs.WCSuccess, Opcode: op, ByteLen: uint32(n), QPN: q.qpn})
	}
}

// rnr handles a missing receive at the responder; it reports whether the
// WR is still waiting.
func (q *fakeQP) rnr(peer *fakeQP) {
	if !q.inRNR {
		q.inRNR, q.rnrLeft = true, int(q.attr.RNRRetry)
	} else if q.attr.RNRRetry != 7 || fakeBug == "finite-rnr" {
		if q.rnrLeft == 0 {
			q.fail(verbs.WCRNRRetryExcErr)
			return
		}
		q.rnrLeft--
	}
	q.nextTry = q.w.now + time.Duration(verbs.RNRTimerNS(peer.attr.MinRNRTimer))
}

// exec runs the head WR of q; false means it is waiting (RNR).
func (q *fakeQP) exec() bool {
	w, wr := q.w, q.sq[0]
	data, ok := w.gather(wr.SGL)
	if !ok {
		q.fail(verbs.WCLocProtErr)
		return true
	}
	if q.init.Type == verbs.UD {
		if _, ok := wr.AH.(*fakeAH); !ok || len(data) > int(1024) {
			q.fail(verbs.WCLocLenErr)
			return true
		}
		dst := w.qps[wr.RemoteQPN]
		q.done(verbs.WCSend, len(data))
		if dst == nil || dst.init.Type != verbs.UD || dst.attr.QKey != wr.RemoteQKey || dst.state < verbs.StateRTR {
			return true
		}
		r, ok := dst.popRecv()
		if !ok {
			return true
		}
		wc := verbs.WC{WRID: r.ID, Opcode: verbs.WCRecv, ByteLen: uint32(len(data) + grhLen), QPN: dst.qpn, SrcQP: q.qpn}
		if wr.Opcode == verbs.OpSendImm {
			wc.Flags, wc.Imm = verbs.WCWithImm, wr.Imm
		}
		grh := grhLen
		if fakeBug == "no-grh" {
			grh = 0
		}
		if !w.scatter(r.SGL, append(make([]byte, grh), data...)) {
			wc.Status = verbs.WCLocLenErr
		}
		dst.rcq.push(wc)
		return true
	}
	peer := w.qps[q.attr.DestQPN]
	if peer == nil || peer.state < verbs.StateRTR || peer.state > verbs.StateRTS {
		q.fail(verbs.WCRetryExcErr)
		return true
	}
	switch wr.Opcode {
	case verbs.OpSend, verbs.OpSendImm:
		r, ok := peer.popRecv()
		if !ok {
			q.rnr(peer)
			return false
		}
		wc := verbs.WC{WRID: r.ID, Opcode: verbs.WCRecv, ByteLen: uint32(len(data)), QPN: peer.qpn, SrcQP: q.qpn}
		if fakeBug == "recv-qpn-of-sender" {
			wc.QPN = q.qpn
		}
		if wr.Opcode == verbs.OpSendImm {
			wc.Flags, wc.Imm = verbs.WCWithImm, wr.Imm
		}
		if !w.scatter(r.SGL, data) {
			wc.Status = verbs.WCLocLenErr
			peer.rcq.push(wc)
			peer.state = verbs.StateErr
			peer.flush()
			q.fail(verbs.WCRemInvReqErr)
			return true
		}
		peer.rcq.push(wc)
		q.done(verbs.WCSend, len(data))
	case verbs.OpWrite, verbs.OpWriteImm:
		key := wr.RKey
		if fakeBug == "ignore-rkey" {
			for k, m := range w.mrs {
				if uint64(m.addr) <= wr.RemoteAddr && wr.RemoteAddr < uint64(m.addr)+uint64(m.n) {
					key = k
				}
			}
		}
		dst, ok := w.find(key, wr.RemoteAddr, len(data), verbs.AccessRemoteWrite)
		if !ok || peer.attr.AccessFlags&verbs.AccessRemoteWrite == 0 {
			q.fail(verbs.WCRemAccessErr)
			return true
		}
		var r verbs.RecvWR
		if wr.Opcode == verbs.OpWriteImm || fakeBug == "write-consumes-recv" {
			if r, ok = peer.popRecv(); !ok {
				q.rnr(peer)
				return false
			}
		}
		if fakeBug != "write-imm-drops-data" || wr.Opcode != verbs.OpWriteImm {
			copy(dst, data)
		}
		if wr.Opcode == verbs.OpWriteImm {
			peer.rcq.push(verbs.WC{WRID: r.ID, Opcode: verbs.WCRecvRDMAImm, Flags: verbs.WCWithImm, Imm: wr.Imm,
				ByteLen: uint32(len(data)), QPN: peer.qpn, SrcQP: q.qpn})
		}
		q.done(verbs.WCRDMAWrite, len(data))
	case verbs.OpRead:
		n := int(wr.Len())
		src, ok := w.find(wr.RKey, wr.RemoteAddr, n, verbs.AccessRemoteRead)
		if !ok || peer.attr.AccessFlags&verbs.AccessRemoteRead == 0 {
			q.fail(verbs.WCRemAccessErr)
			return true
		}
		if fakeBug == "read-zero" {
			src = make([]byte, n)
		}
		if !w.scatter(wr.SGL, src) {
			q.fail(verbs.WCLocProtErr)
			return true
		}
		q.done(verbs.WCRDMARead, n)
	default:
		q.fail(verbs.WCLocQPOpErr)
	}
	return true
}

// Progress runs work until nothing is runnable before now+d.
func (w *fakeWorld) Progress(d time.Duration) {
	deadline := w.now + d
	for {
		ran := false
		qpns := make([]uint32, 0, len(w.qps))
		for n := range w.qps {
			qpns = append(qpns, n)
		}
		slices.Sort(qpns)
		for _, n := range qpns {
			q := w.qps[n]
			for q.state == verbs.StateRTS && len(q.sq) > 0 && (!q.inRNR || q.nextTry <= w.now) {
				if !q.exec() {
					break
				}
				ran = true
			}
		}
		if ran {
			continue
		}
		next := deadline
		for _, q := range w.qps {
			if q.state == verbs.StateRTS && len(q.sq) > 0 && q.inRNR && q.nextTry < next {
				next = q.nextTry
			}
		}
		if next <= w.now || next >= deadline {
			w.now = deadline
			return
		}
		w.now = next
	}
}
