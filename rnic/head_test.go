package rnic

import (
	"bytes"
	"testing"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
	"github.com/besim/besim/verbs"
)

// headRun WRITEs n bytes (two WRs: the first 3 KiB, then the rest, the
// second marked as a fragment at message offset 3 KiB, and a third WR,
// a message of its own, of the last KiB again) and
// READs them back into a third region; it returns the target and read
// regions, the source, the completion instants and the receiver's stats.
func headRun(t *testing.T, cfg Config, n int, ro bool) (src, dst, rd *region, at []sim.Time, st Stats) {
	t.Helper()
	p := newPair(t, cfg, 25*units.Gbps, sim.Microsecond)
	a, b := p.rc(t, defaultOpts())
	acc := allAccess
	if ro {
		acc |= verbs.AccessRelaxedOrdering
	}
	src = newRegion(t, a.pd, n, allAccess)
	rd = newRegion(t, a.pd, n, allAccess)
	dst = newRegion(t, b.pd, n, acc)
	fill(src.buf, 3)
	fill(dst.buf, 4) // what the target held before
	fill(rd.buf, 5)
	const first = 3 << 10
	w3 := &verbs.SendWR{ID: 3, Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(n-1024, 1024)},
		RemoteAddr: uint64(dst.addr(n - 1024)), RKey: dst.mr.RKey()}
	w2 := &verbs.SendWR{ID: 2, Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(first, n-first)},
		RemoteAddr: uint64(dst.addr(first)), RKey: dst.mr.RKey(), MsgOffset: first, Next: w3}
	w1 := &verbs.SendWR{ID: 1, Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(0, first)},
		RemoteAddr: uint64(dst.addr(0)), RKey: dst.mr.RKey(), Next: w2}
	_, err := a.qp.PostSend(w1)
	must(t, err)
	for _, wc := range p.waitCQ(t, a.cq, 3, sim.Millisecond) {
		if wc.Status != verbs.WCSuccess {
			t.Fatalf("write completion %+v", wc)
		}
		at = append(at, p.k.Now())
	}
	_, err = a.qp.PostSend(&verbs.SendWR{ID: 4, Opcode: verbs.OpRead, SGL: []verbs.SGE{rd.sge(0, n)},
		RemoteAddr: uint64(dst.addr(0)), RKey: dst.mr.RKey()})
	must(t, err)
	if wc := p.waitCQ(t, a.cq, 1, sim.Millisecond); wc[0].Status != verbs.WCSuccess {
		t.Fatalf("read completion %+v", wc[0])
	}
	at = append(at, p.k.Now())
	return src, dst, rd, at, p.b.Stats()
}

// TestRDMAHead: with RDMAHead set, a WRITE or READ moves only the first
// RDMAHead bytes of each message (a WR with a MsgOffset continues one); the rest of the target keeps what it
// held, while timing and payload counters are those of a full move.
func TestRDMAHead(t *testing.T) {
	const n, head = 10 << 10, 200
	for _, ro := range []bool{false, true} {
		full := DefaultConfig()
		_, fdst, frd, fat, fst := headRun(t, full, n, ro)
		cfg := DefaultConfig()
		cfg.RDMAHead = head
		src, dst, rd, at, st := headRun(t, cfg, n, ro)
		if !bytes.Equal(fdst.buf, src.buf) || !bytes.Equal(frd.buf, src.buf) {
			t.Fatalf("relaxed=%v: without RDMAHead the data did not move in full", ro)
		}
		before := make([]byte, n)
		fill(before, 4)
		const first = 3 << 10
		for _, r := range [][2]int{{0, head}, {n - 1024, n - 1024 + head}} { // each message's head moved
			if !bytes.Equal(dst.buf[r[0]:r[1]], src.buf[r[0]:r[1]]) {
				t.Fatalf("relaxed=%v: WRITE head [%d,%d) not moved", ro, r[0], r[1])
			}
		}
		for _, r := range [][2]int{{head, n - 1024}, {n - 1024 + head, n}} { // the rest untouched
			if !bytes.Equal(dst.buf[r[0]:r[1]], before[r[0]:r[1]]) {
				t.Fatalf("relaxed=%v: WRITE bytes [%d,%d) beyond the head changed the target", ro, r[0], r[1])
			}
		}
		if !bytes.Equal(rd.buf[:head], src.buf[:head]) {
			t.Fatalf("relaxed=%v: READ head not moved", ro)
		}
		rdBefore := make([]byte, n)
		fill(rdBefore, 5)
		if !bytes.Equal(rd.buf[head:], rdBefore[head:]) {
			t.Fatalf("relaxed=%v: READ bytes beyond the head changed the target", ro)
		}
		for i := range at {
			if at[i] != fat[i] {
				t.Fatalf("relaxed=%v: completion %d at %v with RDMAHead, %v without", ro, i, at[i], fat[i])
			}
		}
		if st.RxPayload != fst.RxPayload || st.RxPayload < n {
			t.Fatalf("relaxed=%v: RxPayload %d with RDMAHead, %d without (moved %d)", ro, st.RxPayload, fst.RxPayload, n)
		}
	}
}

// viewRun SENDs msgs (two QPs' worth, dedicated receives or an SRQ) and
// polls every receive completion, keeping a copy of what each delivered
// (WC.Data when set, else the receive buffer) and when.
func viewRun(t *testing.T, cfg Config, msgs [][]byte) (got [][]byte, at []sim.Time, bufs *region, st Stats) {
	t.Helper()
	p := newPair(t, cfg, 25*units.Gbps, sim.Microsecond)
	a, b := p.rc(t, defaultOpts())
	const slot = 8 << 10
	src := newRegion(t, a.pd, slot*len(msgs), allAccess)
	bufs = newRegion(t, b.pd, slot*len(msgs), allAccess)
	for i := range msgs {
		_, err := b.qp.PostRecv(&verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{bufs.sge(i*slot, slot)}})
		must(t, err)
	}
	for i, m := range msgs {
		copy(src.buf[i*slot:], m)
		_, err := a.qp.PostSend(&verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, SGL: []verbs.SGE{src.sge(i*slot, len(m))}})
		must(t, err)
	}
	wcs := make([]verbs.WC, 3)
	end := p.k.Now() + sim.Millisecond
	for len(got) < len(msgs) {
		k := b.cq.Poll(wcs)
		for _, wc := range wcs[:k] {
			if wc.Status != verbs.WCSuccess || wc.Opcode != verbs.WCRecv {
				t.Fatalf("receive completion %+v", wc)
			}
			d := wc.Data
			if d == nil {
				d = bufs.buf[int(wc.WRID)*slot : int(wc.WRID)*slot+int(wc.ByteLen)]
			}
			if len(d) != int(wc.ByteLen) {
				t.Fatalf("completion of %d bytes delivered %d", wc.ByteLen, len(d))
			}
			got = append(got, append([]byte(nil), d...))
			at = append(at, p.k.Now())
		}
		if p.k.Now() >= end {
			t.Fatalf("%d of %d receives after 1 ms", len(got), len(msgs))
		}
		p.k.RunUntil(p.k.Now() + sim.Microsecond)
	}
	return got, at, bufs, p.b.Stats()
}

// TestRecvView: with RecvView a SEND's bytes come with its completion and
// the receive buffers are never written; the bytes, their order, the
// completion instants and the counters equal those of placement.
func TestRecvView(t *testing.T) {
	var msgs [][]byte
	for i, n := range []int{1, 100, 1024, 1025, 3000, 8 << 10, 5000, 64} {
		m := make([]byte, n)
		fill(m, 10+i)
		msgs = append(msgs, m)
	}
	pgot, pat, _, pst := viewRun(t, DefaultConfig(), msgs)
	cfg := DefaultConfig()
	cfg.RecvView = true
	got, at, bufs, st := viewRun(t, cfg, msgs)
	for i := range msgs {
		if !bytes.Equal(pgot[i], msgs[i]) || !bytes.Equal(got[i], msgs[i]) {
			t.Fatalf("message %d (%d bytes) delivered wrong: placed %v, view %v", i, len(msgs[i]),
				bytes.Equal(pgot[i], msgs[i]), bytes.Equal(got[i], msgs[i]))
		}
		if at[i] != pat[i] {
			t.Fatalf("message %d polled at %v with RecvView, %v placed", i, at[i], pat[i])
		}
	}
	if bytes.ContainsFunc(bufs.buf, func(r rune) bool { return r != 0 }) {
		t.Fatal("RecvView wrote into the receive buffers")
	}
	if st.RxPayload != pst.RxPayload {
		t.Fatalf("RxPayload %d with RecvView, %d placed", st.RxPayload, pst.RxPayload)
	}
}
