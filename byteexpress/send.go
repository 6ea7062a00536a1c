package byteexpress

import (
	"fmt"

	"github.com/besim/besim/verbs"
)

// The engine's send path: preparing WRs at the ring's tail under the
// credit, ring and window limits, posting them with one doorbell, and
// freeing them on completion.

func (e *engine) ringFull() bool { return e.ring.full() }

// openSend starts a new SEND at the tail of the ring. A SEND that carries a
// credit return may take the last credit; any other needs two, so one
// credit is always kept for credit updates (see the package doc for why
// this cannot deadlock).
func (e *engine) openSend(need int) bool {
	st := &e.th.stats
	if e.ring.full() {
		st.RingStalls++
		return false
	}
	if !e.cred.canSend() {
		st.CreditStalls++
		return false
	}
	if !e.win.fits(hdrSize + need) {
		st.WindowStalls++
		return false
	}
	i := e.ring.push()
	if e.cred.on {
		if c := e.cred.take(); c < st.MinCredits {
			st.MinCredits = c
		}
	}
	sl := &e.ring.slots[i]
	sl.kind, sl.bytes, sl.msg = slotSend, hdrSize, nil
	stage, ok := e.ring.takeStage(i)
	if !ok {
		e.fail(fmt.Errorf("byteexpress: engine %d: no free staging slot with %d WRs in the ring (core bug)", e.id, e.ring.occupancy()))
		return false
	}
	off := int(stage) * e.sendBuf
	ret := e.cred.claimReturn()
	putHeader(e.stagingBytes[off:off+hdrSize], uint32(ret))
	st.CreditsReturned += ret
	sl.op, sl.imm, sl.raddr, sl.rkey, sl.msgOff = verbs.OpSend, 0, 0, 0, 0
	sl.sge = verbs.SGE{Addr: e.staging.Addr() + uintptr(off), LKey: e.staging.LKey()}
	e.win.add(hdrSize)
	e.curOpen, e.curFill = true, hdrSize
	return true
}

// record returns n bytes of room in the open SEND (opening one if needed),
// or nil if the ring, the credits or the window do not allow it.
func (e *engine) record(n int) []byte {
	if !e.curOpen || e.curFill+n > e.sendCap {
		if !e.openSend(n) {
			return nil
		}
	} else if !e.win.fits(n) {
		e.th.stats.WindowStalls++
		return nil
	}
	i := e.ring.lastPos()
	off := int(e.ring.slots[i].stage)*e.sendBuf + e.curFill
	b := e.stagingBytes[off : off+n : off+n]
	e.curFill += n
	e.ring.slots[i].bytes += n
	e.win.add(n)
	e.th.ops.RecordsOut++
	return b
}

// openWrite prepares one WRITE (or, for the last fragment, WRITE_WITH_IMM)
// of m's next n bytes.
func (e *engine) openWrite(m *outMsg, n int, last bool) bool {
	st := &e.th.stats
	if e.ring.full() {
		st.RingStalls++
		return false
	}
	if last && !e.cred.canWriteImm() {
		st.CreditStalls++
		return false
	}
	if !e.win.fits(n) {
		st.WindowStalls++
		return false
	}
	i := e.ring.push()
	sl := &e.ring.slots[i]
	sl.kind, sl.bytes, sl.msg = slotWrite, n, nil
	sl.op, sl.imm = verbs.OpWrite, 0
	sl.raddr, sl.rkey = m.raddr+uint64(m.off), m.rkey
	sl.msgOff = uint64(m.off) // a simulated NIC moves only a message's head (rnic.Config.RDMAHead)
	sl.sge = verbs.SGE{Addr: m.buf.Addr() + uintptr(m.off), Length: uint32(n), LKey: m.buf.LKey()}
	if last {
		sl.op, sl.imm = verbs.OpWriteImm, m.imm
		sl.msg = m
		if e.cred.on {
			if c := e.cred.take(); c < st.MinCredits {
				st.MinCredits = c
			}
		}
	}
	e.win.add(n)
	e.curOpen = false
	m.off += n
	return true
}

// post rings one doorbell for all pending WRs; only the last is signalled.
func (e *engine) post() {
	if e.state != engUp {
		return
	}
	first, n := e.ring.chain(&e.th.wrs)
	if n == 0 {
		return
	}
	t := e.th
	inflight := e.win.post()
	e.curOpen = false
	t.ops.PostSends++
	t.ops.SendWRs += n
	t.ops.Signalled++
	st := &t.stats
	if occ := e.ring.occupancy(); occ > st.MaxRingOccupancy {
		st.MaxRingOccupancy = occ
	}
	if inflight > st.MaxInflightBytes {
		st.MaxInflightBytes = inflight
	}
	if tr := t.cfg.Trace; tr != nil {
		tr(TraceEvent{Kind: TracePost, Engine: e.id, WRs: n})
	}
	if _, err := e.qp.PostSend(first); err != nil {
		e.fail(fmt.Errorf("byteexpress: post_send: %w", err))
	}
}

// completeTo frees ring entries up to and including idx (a signalled WR
// completed, so all earlier unsignalled ones did too: RC completes in order).
func (e *engine) completeTo(idx uint64) {
	if err := e.ring.checkCompletion(idx); err != nil {
		e.fail(err)
		return
	}
	t := e.th
	for e.ring.head <= idx {
		sl := e.ring.popHead()
		e.win.complete(sl.bytes)
		if m := sl.msg; m != nil {
			if m.failErr != nil {
				t.emit(Event{Kind: EvSendFailed, Socket: m.sock, Remote: e.remote, Buf: m.buf, Len: m.n, Err: m.failErr})
			} else {
				t.dealloc(m.buf)
				t.stats.MessagesSent++
			}
			t.freeMsg(m)
		}
	}
	e.markDirty()
}
