package byteexpress

import (
	"cmp"
	"slices"

	"github.com/besim/besim/verbs"
)

// The engine's exposures, socket teardown and failure (§7.2): what goes
// back to the application or the allocator when a socket or the whole
// engine goes away.

// ---- exposures ----

func (e *engine) expose(buf Buffer, s *Socket) (uint32, bool) { return e.exp.add(buf, s) }

// returnExposures hands back every buffer exposed on s (all if s is nil).
func (e *engine) returnExposures(s *Socket, shutdown bool) {
	for _, ex := range e.exp.takeAll(s) {
		if shutdown {
			e.th.dealloc(ex.buf)
		} else {
			e.th.emit(Event{Kind: EvBufferReturned, Socket: ex.sock, Remote: e.remote, Buf: ex.buf})
		}
	}
}

// ---- socket teardown ----

// dropSocket removes s from the engine, failing what it still had queued.
// kind is EvClosed or EvSocketFailed.
func (e *engine) dropSocket(s *Socket, kind EventKind, err error) {
	if s.state == sockGone {
		return
	}
	t := e.th
	e.failQueue(s, ErrClosed, false)
	s.state = sockGone
	s.dead.Store(true)
	e.rrUpdate(s)
	if s.local {
		delete(e.mine, s.id)
	} else {
		delete(e.theirs, s.id)
	}
	e.returnExposures(s, false)
	t.emit(Event{Kind: kind, Socket: s, Remote: e.remote, Err: err})
}

// failQueue fails the messages queued on s. With the engine alive, a
// receiver slot already granted is released with SLOT_FREE (posted after any
// fragments already in flight, so RC ordering keeps the release behind
// them), a message whose metadata request is outstanding stays in the token
// table until its response arrives (then its slot is released), and a
// message with fragments in flight is reported when its last posted WR
// completes, so the buffer goes back only when the NIC no longer reads it.
func (e *engine) failQueue(s *Socket, err error, shutdown bool) {
	t := e.th
	alive := e.state == engUp
	for s.qhead != nil {
		m := s.pop()
		if m.hasSlot && alive {
			e.ctrl = append(e.ctrl, ctrlRec{kind: recSlotFree, ref: m.slot})
		}
		if m.off > 0 && alive {
			if sl := e.lastWriteSlot(m); sl != nil {
				m.failErr = err
				sl.msg = m
				continue
			}
		}
		if shutdown {
			t.dealloc(m.buf)
		} else {
			t.emit(Event{Kind: EvSendFailed, Socket: s, Remote: e.remote, Buf: m.buf, Len: m.n, Err: err})
		}
		if m.state == msgMetaSent {
			// Still referenced by e.toks: onMetaResp or teardown frees it.
			m.sock, m.buf = nil, Buffer{}
			continue
		}
		t.freeMsg(m)
	}
	s.metaCur = nil
	s.lookahead = 0
}

// lastWriteSlot finds the most recent uncompleted WRITE of m's buffer.
func (e *engine) lastWriteSlot(m *outMsg) *wrSlot {
	return e.ring.lastWrite(m.buf.Addr(), m.buf.Addr()+uintptr(m.n))
}

// ---- engine failure and reclamation ----

// fail puts the engine in the error state, tells the upper layer and
// reclaims everything (§7.2): the QP is destroyed first so the NIC no longer
// touches any buffer, then buffers go back to the allocator and sockets
// fail.
func (e *engine) fail(err error) { e.teardown(err, false) }

func (e *engine) teardown(err error, shutdown bool) {
	if e.state == engFailed {
		return
	}
	t := e.th
	e.state, e.err = engFailed, err
	e.ep.forget(e)
	t.timers.remove(e)
	t.removeEngine(e)
	if e.qp != nil {
		_ = e.qp.Modify(&verbs.QPAttr{State: verbs.StateErr}, verbs.AttrState)
		_ = e.qp.Destroy()
		t.byQPN.remove(e.qpn)
		t.cqUsed -= t.cfg.perEngineCQEs()
		e.qp = nil
	}
	if e.reply != nil {
		r := e.reply
		e.reply = nil
		r(ConnInfo{}, err)
	}
	// Messages whose last WR was posted but not completed.
	for i := e.ring.head; i < e.ring.tail; i++ {
		sl := &e.ring.slots[i%e.ring.depth]
		if m := sl.msg; m != nil {
			sl.msg = nil
			if shutdown {
				t.dealloc(m.buf)
			} else {
				ferr := err
				if m.failErr != nil {
					ferr = m.failErr
				}
				t.emit(Event{Kind: EvSendFailed, Socket: m.sock, Remote: e.remote, Buf: m.buf, Len: m.n, Err: ferr})
			}
			t.freeMsg(m)
		}
	}
	e.ring.reset()
	e.win.reset()
	socks := make([]*Socket, 0, len(e.mine)+len(e.theirs)+len(e.waiting))
	for _, s := range e.mine {
		socks = append(socks, s)
	}
	for _, s := range e.theirs {
		socks = append(socks, s)
	}
	socks = append(socks, e.waiting...)
	sortSockets(socks)
	for _, s := range socks {
		if s.state == sockGone {
			continue
		}
		e.failQueue(s, err, shutdown)
		s.state = sockGone
		s.dead.Store(true)
		e.returnExposures(s, shutdown)
		if !shutdown {
			t.emit(Event{Kind: EvSocketFailed, Socket: s, Remote: e.remote, Err: err})
		}
	}
	e.returnExposures(nil, shutdown)
	clear(e.mine)
	clear(e.theirs)
	e.waiting = nil
	e.rr, e.nactive = nil, 0
	for i, m := range e.toks.toks {
		if m != nil {
			if m.sock != nil {
				if shutdown {
					t.dealloc(m.buf)
				} else {
					t.emit(Event{Kind: EvSendFailed, Socket: m.sock, Remote: e.remote, Buf: m.buf, Len: m.n, Err: err})
				}
			}
			t.freeMsg(m)
			e.toks.toks[i] = nil
		}
	}
	for i := range e.in.in {
		if e.in.in[i].used {
			t.dealloc(e.in.in[i].buf)
			e.in.in[i] = inSlot{}
		}
	}
	e.ctrl = nil
	if r := e.drq; r != nil && !r.mem.IsZero() {
		t.dealloc(r.mem)
		r.mem, r.bytes = Buffer{}, nil
	}
	if !e.staging.IsZero() {
		t.dealloc(e.staging)
		e.staging, e.stagingBytes = Buffer{}, nil
	}
	if !shutdown {
		t.stats.EngineErrors++
		t.emit(Event{Kind: EvEngineError, Remote: e.remote, Err: err})
	}
}

func sortSockets(s []*Socket) {
	slices.SortFunc(s, func(a, b *Socket) int { return cmp.Compare(a.uid, b.uid) })
}
