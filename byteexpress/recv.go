package byteexpress

import (
	"fmt"

	"github.com/besim/besim/verbs"
)

// The engine's receive path: re-posting receives and owing credits
// (§5.4.2), the records of incoming SENDs, and the arrival of large
// messages (WRITE_WITH_IMM, §5.3.2).

// repost re-posts consumed dedicated receives in batches of k = d/2, one
// post call per batch, and adds them to the credits to return (§5.4.2).
func (e *engine) repost() {
	t := e.th
	for {
		first, k, ok := e.cred.batch()
		if !ok {
			return
		}
		d := uint64(e.cred.rqDepth)
		wrs := e.drq.wrs
		for j := range uint64(k) {
			i := (first + j) % d
			if j+1 < uint64(k) {
				wrs[i].Next = &wrs[(i+1)%d]
			} else {
				wrs[i].Next = nil
			}
		}
		e.cred.reposted(k)
		t.ops.PostRecvs++
		t.ops.RecvWRs += k
		if _, err := e.qp.PostRecv(&wrs[first]); err != nil {
			e.fail(fmt.Errorf("byteexpress: post_recv: %w", err))
			return
		}
		e.cred.owe(k)
	}
}

// onRecv handles a successful receive completion: a SEND's records, or the
// arrival of a large message (WRITE_WITH_IMM).
func (e *engine) onRecv(wc *verbs.WC, data []byte) {
	e.cred.consume()
	if wc.Opcode == verbs.WCRecvRDMAImm {
		e.onWriteImm(wc.Imm, int(wc.ByteLen))
	} else {
		e.onSend(data)
	}
	e.markDirty()
}

func (e *engine) protoErr(what string) {
	e.fail(fmt.Errorf("byteexpress: protocol error from %s: %s", e.remote, what))
}

func (e *engine) onSend(p []byte) {
	t := e.th
	if len(p) < hdrSize || le.Uint32(p[4:]) != wireMagic {
		e.protoErr("bad SEND header")
		return
	}
	if err := e.cred.onReturn(le.Uint32(p)); err != nil {
		e.protoErr(err.Error())
		return
	}
	p = p[hdrSize:]
	for len(p) > 0 && e.state != engFailed {
		t.ops.RecordsIn++
		switch p[0] {
		case recHello:
			p = p[sizeHello:]
			if e.state == engWaitHello {
				e.up()
			}
		case recOpen, recClose, recSlotFree:
			if len(p) < sizeOpen {
				e.protoErr("short record")
				return
			}
			kind, ref := p[0], le.Uint32(p[1:])
			p = p[sizeOpen:]
			switch kind {
			case recOpen:
				e.onOpen(ref)
			case recClose:
				if s := e.lookup(ref); s != nil {
					e.dropSocket(s, EvClosed, nil)
				}
			case recSlotFree:
				e.freeSlot(ref, true)
			}
		case recData:
			if len(p) < sizeDataHdr {
				e.protoErr("short record")
				return
			}
			ref, n := le.Uint32(p[1:]), int(le.Uint32(p[5:]))
			if len(p) < sizeDataHdr+n {
				e.protoErr("short data record")
				return
			}
			e.onData(ref, p[sizeDataHdr:sizeDataHdr+n])
			p = p[sizeDataHdr+n:]
		case recMetaReq:
			if len(p) < sizeMetaReq {
				e.protoErr("short record")
				return
			}
			e.onMetaReq(le.Uint32(p[1:]), le.Uint32(p[5:]), le.Uint64(p[9:]))
			p = p[sizeMetaReq:]
		case recMetaResp:
			if len(p) < sizeMetaResp {
				e.protoErr("short record")
				return
			}
			e.onMetaResp(le.Uint32(p[1:]), p[5], le.Uint32(p[6:]), le.Uint64(p[10:]), le.Uint32(p[18:]))
			p = p[sizeMetaResp:]
		case recKeepalive:
			if len(p) < sizeKeepalive {
				e.protoErr("short record")
				return
			}
			if e.ka.heard(le.Uint64(p[1:])) && e.state == engUp && e.ka.on() {
				e.ka.extend(t.now)
				e.updateTimer()
			}
			t.stats.KeepalivesRecv++
			p = p[sizeKeepalive:]
		default:
			e.protoErr(fmt.Sprintf("unknown record kind %d", p[0]))
			return
		}
	}
}

func (e *engine) onOpen(ref uint32) {
	if ref&sockOpener == 0 {
		e.protoErr("OPEN for a socket opened here")
		return
	}
	id := ref &^ sockOpener
	if e.theirs[id] != nil {
		return
	}
	if !e.ep.listening.Load() {
		e.ctrl = append(e.ctrl, ctrlRec{kind: recClose, ref: id})
		return
	}
	s := &Socket{id: id, eng: e, uid: e.ep.sockUID.Add(1), state: sockOpen}
	e.theirs[id] = s
	e.th.emit(Event{Kind: EvAccepted, Socket: s, Remote: e.remote})
}

func (e *engine) onData(ref uint32, payload []byte) {
	t := e.th
	s := e.lookup(ref)
	if s == nil || s.state != sockOpen {
		t.stats.Dropped++
		return
	}
	buf, err := t.allocate(len(payload))
	if err != nil {
		t.stats.Dropped++
		return
	}
	copy(buf.Bytes(), payload)
	t.ops.BytesCopied += int64(len(payload))
	t.deliver(s, buf, len(payload))
}

func (e *engine) onMetaReq(ref, tok uint32, n uint64) {
	t := e.th
	s := e.lookup(ref)
	rec := ctrlRec{kind: recMetaResp, tok: tok}
	switch {
	case s == nil || s.state != sockOpen:
		rec.status = metaNoSock
	case n == 0 || n > uint64(maxInt):
		rec.status = metaNoMem
	default:
		buf, err := t.allocate(int(n))
		if err != nil {
			rec.status = metaNoMem
			break
		}
		slot, ok := e.in.alloc(inSlot{buf: buf, n: int(n), sock: s})
		if !ok {
			t.dealloc(buf)
			rec.status = metaNoMem
			break
		}
		rec.slot, rec.addr, rec.rkey = slot, uint64(buf.Addr()), buf.RKey()
	}
	e.ctrl = append(e.ctrl, rec)
}

const maxInt = int(^uint(0) >> 1)

func (e *engine) onMetaResp(tok uint32, status uint8, slot uint32, addr uint64, rkey uint32) {
	t := e.th
	m := e.toks.take(tok)
	if m == nil {
		e.protoErr("metadata response for an unknown token")
		return
	}
	if m.sock == nil { // orphaned: its socket went away while we waited
		if status == metaOK {
			e.ctrl = append(e.ctrl, ctrlRec{kind: recSlotFree, ref: slot})
		}
		t.freeMsg(m)
		return
	}
	s := m.sock
	if status != metaOK {
		s.lookahead--
		s.remove(m)
		err := ErrNoMemory
		if status == metaNoSock {
			err = ErrClosed
		}
		t.emit(Event{Kind: EvSendFailed, Socket: s, Remote: e.remote, Buf: m.buf, Len: m.n, Err: err})
		t.freeMsg(m)
		e.rrUpdate(s)
		return
	}
	if slot&immPrebuilt != 0 {
		e.protoErr("slot number out of range")
		return
	}
	m.state = msgReady
	m.raddr, m.rkey, m.imm, m.slot, m.hasSlot = addr, rkey, slot, slot, true
	e.rrUpdate(s)
}

// onWriteImm: the last fragment of a large message arrived; the completion
// guarantees that all earlier fragments are visible (§5.3.2).
func (e *engine) onWriteImm(imm uint32, byteLen int) {
	t := e.th
	if imm&immPrebuilt != 0 {
		tok := (imm >> 16) & (maxExposeTokens - 1)
		n := int(imm&(maxPrebuiltFrag-1))*e.peerFrag + byteLen
		ex, ok := e.exp.take(tok)
		if !ok {
			e.protoErr("write into an unexposed buffer")
			return
		}
		if n > ex.buf.Len() {
			e.protoErr("write beyond an exposed buffer")
			return
		}
		if ex.sock.state != sockOpen {
			t.emit(Event{Kind: EvBufferReturned, Socket: ex.sock, Remote: e.remote, Buf: ex.buf})
			return
		}
		t.deliver(ex.sock, ex.buf, n)
		return
	}
	sl, ok := e.in.take(imm)
	if !ok {
		e.protoErr("write for an unknown slot")
		return
	}
	if sl.sock.state != sockOpen {
		t.dealloc(sl.buf)
		t.stats.Dropped++
		return
	}
	t.deliver(sl.sock, sl.buf, sl.n)
}

// freeSlot releases a receiver slot the sender abandoned.
func (e *engine) freeSlot(slot uint32, fromPeer bool) {
	sl, ok := e.in.take(slot)
	if !ok {
		if fromPeer {
			e.protoErr("SLOT_FREE for an unknown slot")
		}
		return
	}
	e.th.dealloc(sl.buf)
}
