package byteexpress

import "sync"

// The large-message state of an engine (paper §5.3.2, Figure 6): the
// sender's tokens naming messages whose metadata request is outstanding,
// the receiver's slots naming the buffers it allocated for them, and the
// exposure table of buffers offered in advance (pre-known remote buffers).
// Each is a table of small integers with a free list, so the numbers that
// travel on the wire (token, slot, immediate) stay small and are reused.

// tokenTable maps metadata tokens to the messages waiting for a response.
type tokenTable struct {
	toks []*outMsg
	free []uint32
}

// alloc gives m a token.
func (t *tokenTable) alloc(m *outMsg) uint32 {
	if k := len(t.free); k > 0 {
		tok := t.free[k-1]
		t.free = t.free[:k-1]
		t.toks[tok] = m
		return tok
	}
	t.toks = append(t.toks, m)
	return uint32(len(t.toks) - 1)
}

// take returns and frees the message of tok; nil if tok is unknown.
func (t *tokenTable) take(tok uint32) *outMsg {
	if int(tok) >= len(t.toks) || t.toks[tok] == nil {
		return nil
	}
	m := t.toks[tok]
	t.toks[tok] = nil
	t.free = append(t.free, tok)
	return m
}

// inSlot is a receiver buffer allocated for an announced large message.
type inSlot struct {
	buf  Buffer
	n    int
	sock *Socket
	used bool
}

// slotTable holds the receiver's slots, at most maxSlots.
type slotTable struct {
	in   []inSlot
	free []uint32
}

// alloc stores s and returns its slot number; false when all are taken.
func (t *slotTable) alloc(s inSlot) (uint32, bool) {
	var slot uint32
	if k := len(t.free); k > 0 {
		slot = t.free[k-1]
		t.free = t.free[:k-1]
	} else if len(t.in) < maxSlots {
		slot = uint32(len(t.in))
		t.in = append(t.in, inSlot{})
	} else {
		return 0, false
	}
	s.used = true
	t.in[slot] = s
	return slot, true
}

// take returns and frees slot; false if it is not in use.
func (t *slotTable) take(slot uint32) (inSlot, bool) {
	if int(slot) >= len(t.in) || !t.in[slot].used {
		return inSlot{}, false
	}
	s := t.in[slot]
	t.in[slot] = inSlot{}
	t.free = append(t.free, slot)
	return s, true
}

// exposure is a buffer exposed on a socket, waiting for the peer's SendTo.
type exposure struct {
	buf  Buffer
	sock *Socket
	used bool
}

// exposureTable holds the exposed buffers, at most maxExposeTokens. Socket.
// Expose adds to it from the caller's goroutine (the exposure takes effect
// at once, before the peer can use the token), hence the lock.
type exposureTable struct {
	mu   sync.Mutex
	exp  []exposure
	free []uint32
}

// add exposes buf on s and returns its token; false when the table is full.
func (t *exposureTable) add(buf Buffer, s *Socket) (uint32, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var tok uint32
	if k := len(t.free); k > 0 {
		tok = t.free[k-1]
		t.free = t.free[:k-1]
	} else if len(t.exp) < maxExposeTokens {
		tok = uint32(len(t.exp))
		t.exp = append(t.exp, exposure{})
	} else {
		return 0, false
	}
	t.exp[tok] = exposure{buf: buf, sock: s, used: true}
	return tok, true
}

// take returns and frees the exposure of tok; false if there is none.
func (t *exposureTable) take(tok uint32) (exposure, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if int(tok) >= len(t.exp) || !t.exp[tok].used {
		return exposure{}, false
	}
	ex := t.exp[tok]
	t.exp[tok] = exposure{}
	t.free = append(t.free, tok)
	return ex, true
}

// takeAll removes and returns every exposure on s (all if s is nil), in
// token order.
func (t *exposureTable) takeAll(s *Socket) []exposure {
	t.mu.Lock()
	defer t.mu.Unlock()
	var back []exposure
	for i := range t.exp {
		if ex := t.exp[i]; ex.used && (s == nil || ex.sock == s) {
			back = append(back, ex)
			t.exp[i] = exposure{}
			t.free = append(t.free, uint32(i))
		}
	}
	return back
}
