package byteexpress

// The engine's scheduler (§5.4, §6.1): each round re-posts receives, writes
// control records and keepalives, then gives every sendable socket in
// round-robin order a turn of at most one fragment, and posts the batch.

// fill runs one scheduling round: re-post receives, control records, then
// one turn per sendable socket while the ring has room, then posts.
func (e *engine) fill() {
	if e.state != engUp {
		return
	}
	e.repost()
	if e.helloPending {
		b := e.record(sizeHello)
		if b == nil {
			e.post()
			return
		}
		b[0] = recHello
		e.helloPending = false
	}
	if !e.flushCtrl() {
		e.post()
		return
	}
	if e.ka.due {
		if b := e.record(sizeKeepalive); b != nil {
			b[0] = recKeepalive
			le.PutUint64(b[1:], e.ka.nextSeq())
			e.th.stats.KeepalivesSent++
		}
	}
	e.schedule()
	if e.cred.toReturn > 0 && e.state == engUp && e.openSend(0) {
		e.th.stats.CreditUpdates++
	}
	e.post()
}

// flushCtrl writes queued control records; false if some remain.
func (e *engine) flushCtrl() bool {
	k := 0
	for ; k < len(e.ctrl); k++ {
		c := &e.ctrl[k]
		var b []byte
		switch c.kind {
		case recOpen, recClose, recSlotFree:
			if b = e.record(sizeOpen); b == nil {
				break
			}
			b[0] = c.kind
			le.PutUint32(b[1:], c.ref)
		case recMetaResp:
			if b = e.record(sizeMetaResp); b == nil {
				break
			}
			b[0] = recMetaResp
			le.PutUint32(b[1:], c.tok)
			b[5] = c.status
			le.PutUint32(b[6:], c.slot)
			le.PutUint64(b[10:], c.addr)
			le.PutUint32(b[18:], c.rkey)
			e.th.stats.MetaResponses++
		}
		if b == nil {
			break
		}
	}
	n := copy(e.ctrl, e.ctrl[k:])
	clear(e.ctrl[n:])
	e.ctrl = e.ctrl[:n]
	return n == 0
}

// schedule gives each sendable socket, in round-robin order, a turn of at
// most one fragment, until a whole pass makes no progress.
func (e *engine) schedule() {
	idle := 0
	for e.rr != nil && idle < e.nactive && e.state == engUp {
		if e.ringFull() && !e.curOpen {
			e.th.stats.RingStalls++
			return
		}
		s := e.rr
		next := s.rrNext // only s can leave the ring during its turn
		progressed := e.turn(s)
		e.rrUpdate(s)
		if e.nactive == 0 {
			e.rr = nil
		} else {
			e.rr = next
		}
		if progressed {
			idle = 0
		} else {
			idle++
		}
	}
}

// turn lets s prepare at most one metadata request and one fragment.
func (e *engine) turn(s *Socket) bool {
	t := e.th
	progressed := false
	if m := s.metaCur; m != nil && s.lookahead < t.cfg.MetaLookahead {
		if b := e.record(sizeMetaReq); b != nil {
			tok := e.toks.alloc(m)
			b[0] = recMetaReq
			le.PutUint32(b[1:], e.ref(s))
			le.PutUint32(b[5:], tok)
			le.PutUint64(b[9:], uint64(m.n))
			m.state, m.tok = msgMetaSent, tok
			s.lookahead++
			s.advanceMeta()
			t.stats.MetaRequests++
			progressed = true
		}
	}
	h := s.qhead
	if h == nil {
		if s.closing {
			if b := e.record(sizeClose); b != nil {
				b[0] = recClose
				le.PutUint32(b[1:], e.ref(s))
				e.dropSocket(s, EvClosed, nil)
				return true
			}
		}
		return progressed
	}
	switch h.state {
	case msgSmall:
		b := e.record(sizeDataHdr + h.n)
		if b == nil {
			return progressed
		}
		b[0] = recData
		le.PutUint32(b[1:], e.ref(s))
		le.PutUint32(b[5:], uint32(h.n))
		copy(b[sizeDataHdr:], h.buf.Bytes()[:h.n])
		t.ops.BytesCopied += int64(h.n)
		s.pop()
		if tr := t.cfg.Trace; tr != nil {
			tr(TraceEvent{Kind: TraceSmall, Engine: e.id, Socket: s.uid, Bytes: h.n})
		}
		t.dealloc(h.buf)
		t.freeMsg(h)
		t.stats.MessagesSent++
		t.stats.SmallSent++
		return true
	case msgReady:
		n := min(e.frag, h.n-h.off)
		last := h.off+n == h.n
		if !e.openWrite(h, n, last) {
			return progressed
		}
		if tr := t.cfg.Trace; tr != nil {
			tr(TraceEvent{Kind: TraceFragment, Engine: e.id, Socket: s.uid, Bytes: n})
		}
		if last {
			s.pop()
			if h.prebuilt {
				t.stats.PrebuiltSent++
			} else {
				s.lookahead--
				t.stats.LargeSent++
			}
		}
		return true
	}
	return progressed
}

// sendable reports whether a turn could do something for s now.
func (e *engine) sendable(s *Socket) bool {
	if s.state != sockOpen {
		return false
	}
	if s.metaCur != nil && s.lookahead < e.th.cfg.MetaLookahead {
		return true
	}
	h := s.qhead
	if h == nil {
		return s.closing
	}
	return h.state == msgSmall || h.state == msgReady
}

// rrUpdate puts s on or takes it off the round-robin ring.
func (e *engine) rrUpdate(s *Socket) {
	want := e.sendable(s)
	switch {
	case want && !s.inRR:
		s.inRR = true
		e.nactive++
		if e.rr == nil {
			s.rrNext, s.rrPrev = s, s
			e.rr = s
		} else {
			// Insert just before the cursor: s gets a turn after the others.
			p := e.rr.rrPrev
			s.rrPrev, s.rrNext = p, e.rr
			p.rrNext = s
			e.rr.rrPrev = s
		}
		e.markDirty()
	case !want && s.inRR:
		s.inRR = false
		e.nactive--
		if s.rrNext == s {
			e.rr = nil
		} else {
			s.rrPrev.rrNext = s.rrNext
			s.rrNext.rrPrev = s.rrPrev
			if e.rr == s {
				e.rr = s.rrNext
			}
		}
		s.rrNext, s.rrPrev = nil, nil
	}
}

// classify decides how a queued message travels, once the peer's sizes are
// known.
func (e *engine) classify(s *Socket, m *outMsg) {
	switch {
	case m.prebuilt:
		m.state = msgReady
		m.raddr, m.rkey = m.dst.Addr, m.dst.RKey
		last := (m.n - 1) / e.frag
		m.imm = immPrebuilt | m.dst.Token<<16 | uint32(last)
	case m.n <= e.smallMax:
		m.state = msgSmall
	default:
		m.state = msgNeedMeta
		if s.metaCur == nil {
			s.metaCur = m
		}
	}
}

// enqueue adds a message from the API to s.
func (e *engine) enqueue(s *Socket, m *outMsg) {
	s.enqueue(m)
	if e.state == engUp {
		e.classify(s, m)
		e.rrUpdate(s)
		e.markDirty()
	}
}
