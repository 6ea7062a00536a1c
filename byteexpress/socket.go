package byteexpress

import (
	"sync/atomic"
)

// Socket is a logical connection (paper §4, §6.1), such as one RPC channel.
// Sockets to the same remote address share one engine (one RC QP); each
// keeps its own FIFO of outgoing messages, and the engine's round-robin
// scheduler takes at most one fragment from a socket per turn.
//
// Ownership: a Socket is created by Dial (or arrives in an EvAccepted
// event) and is owned by the I/O thread of its engine. The methods below
// queue a command that the owning thread carries out in its next Poll
// (call Poll, or let the thread's wakeup hook do so); from goroutines other
// than the polling one they need the thread's Mailbox (realtime.Attach).
// Expose's table and the closed flag that makes calls on a dead socket fail
// at once are shared with the thread under their own lock and atomic, since
// those calls answer synchronously. Messages on one socket are delivered in Send order,
// exactly once, or reported in EvSendFailed.
type Socket struct {
	// User is for the application (e.g. the RPC channel); the core never
	// touches it.
	User any

	id    uint32 // opener-assigned id on the engine
	local bool   // opened here by Dial (else accepted)
	uid   uint64 // endpoint-unique
	eng   *engine
	dead  atomic.Bool // closed or failed: API calls fail fast

	// Owned by the engine's I/O thread.
	state     sockState
	qhead     *outMsg
	qtail     *outMsg
	metaCur   *outMsg // first queued message still needing a metadata request
	lookahead int     // large messages holding a receiver buffer, not yet fully posted
	closing   bool    // Close called: send CLOSE once the queue drains
	rrNext    *Socket
	rrPrev    *Socket
	inRR      bool
}

type sockState uint8

const (
	sockWaiting sockState = iota // engine not yet up
	sockOpen
	sockGone // closed or failed
)

// ID is unique among the sockets of an Endpoint.
func (s *Socket) ID() uint64 { return s.uid }

// Remote is the address of the peer endpoint.
func (s *Socket) Remote() Addr { return s.eng.remote }

// Dialed reports whether this side opened the socket.
func (s *Socket) Dialed() bool { return s.local }

// Send queues the first n bytes of buf as one message and gives buf to the
// core: it is returned to the Allocator after the NIC has read it (or comes
// back in EvSendFailed). Messages up to the engine's small-message size are
// copied into a SEND; larger ones are written zero-copy (§5.3.2) into a
// buffer the receiver allocates. n must be in [1, buf.Len()].
func (s *Socket) Send(buf Buffer, n int) error {
	if n < 1 || n > buf.Len() {
		return ErrBadLength
	}
	if s.dead.Load() {
		return ErrClosed
	}
	if !s.eng.th.push(cmd{kind: cmdSend, e: s.eng, s: s, buf: buf, n: n}) {
		return ErrClosed
	}
	return nil
}

// RemoteBuffer names a buffer the peer exposed in advance (Expose): writing
// into it skips the metadata round trip (§5.3.2, "pre-known remote buffer").
// It is valid on the peer socket of the socket that exposed it, for one
// message.
type RemoteBuffer struct {
	Addr  uint64
	RKey  uint32
	Len   int
	Token uint32
}

// SendTo is Send into a buffer the peer exposed: no metadata exchange, the
// fragments go straight to dst and the last one carries dst's token. n must
// not exceed dst.Len; buf ownership is as for Send.
func (s *Socket) SendTo(buf Buffer, n int, dst RemoteBuffer) error {
	if n < 1 || n > buf.Len() {
		return ErrBadLength
	}
	if n > dst.Len || dst.Token >= maxExposeTokens || dst.Addr == 0 {
		return ErrBadRemote
	}
	if (n-1)/s.eng.th.fragSize() >= maxPrebuiltFrag {
		return ErrTooLarge
	}
	if s.dead.Load() {
		return ErrClosed
	}
	if !s.eng.th.push(cmd{kind: cmdSendTo, e: s.eng, s: s, buf: buf, n: n, dst: dst}) {
		return ErrClosed
	}
	return nil
}

// Expose offers buf, which must be registered for remote write, as the
// destination of one message from the peer socket (for example a tensor
// buffer allocated once). The application passes the returned RemoteBuffer
// to the peer by any means; the peer's SendTo writes into buf and the
// message is delivered here as an EvMessage whose Buf is buf. Until then buf
// belongs to the core; if the socket goes away first it comes back in
// EvBufferReturned. The exposure takes effect immediately.
func (s *Socket) Expose(buf Buffer) (RemoteBuffer, error) {
	if buf.Len() < 1 {
		return RemoteBuffer{}, ErrBadLength
	}
	if s.dead.Load() {
		return RemoteBuffer{}, ErrClosed
	}
	tok, ok := s.eng.expose(buf, s)
	if !ok {
		return RemoteBuffer{}, ErrTooLarge
	}
	return RemoteBuffer{Addr: uint64(buf.Addr()), RKey: buf.RKey(), Len: buf.Len(), Token: tok}, nil
}

// Close sends the messages already queued, then tells the peer the socket is
// closed; an EvClosed event follows. Messages the peer had not yet sent are
// failed on its side.
func (s *Socket) Close() error {
	if !s.dead.CompareAndSwap(false, true) {
		return ErrClosed
	}
	if !s.eng.th.push(cmd{kind: cmdClose, e: s.eng, s: s}) {
		return ErrClosed
	}
	return nil
}

// ---- thread-owned helpers ----

type msgState uint8

const (
	msgNew      msgState = iota // engine not up yet: not classified
	msgSmall                    // goes inline in a SEND
	msgNeedMeta                 // large: metadata request not yet sent
	msgMetaSent                 // large: waiting for the receiver's buffer
	msgReady                    // large: destination known, fragments to write
)

// outMsg is a queued outgoing message. Pooled per I/O thread.
type outMsg struct {
	next     *outMsg
	sock     *Socket
	buf      Buffer
	n        int
	off      int // bytes already prepared
	state    msgState
	prebuilt bool
	raddr    uint64
	rkey     uint32
	imm      uint32
	slot     uint32 // receiver slot (non-prebuilt, once ready)
	tok      uint32 // metadata token while msgMetaSent
	hasSlot  bool   // the receiver holds a slot for it (SLOT_FREE if abandoned)
	failErr  error  // abandoned: report EvSendFailed when its last WR completes
	dst      RemoteBuffer
}

func (s *Socket) enqueue(m *outMsg) {
	m.next = nil
	if s.qtail == nil {
		s.qhead, s.qtail = m, m
	} else {
		s.qtail.next = m
		s.qtail = m
	}
}

func (s *Socket) pop() *outMsg {
	m := s.qhead
	s.qhead = m.next
	if s.qhead == nil {
		s.qtail = nil
	}
	m.next = nil
	return m
}

// remove unlinks m from anywhere in the queue.
func (s *Socket) remove(m *outMsg) {
	var prev *outMsg
	for c := s.qhead; c != nil; prev, c = c, c.next {
		if c != m {
			continue
		}
		if prev == nil {
			s.qhead = c.next
		} else {
			prev.next = c.next
		}
		if s.qtail == c {
			s.qtail = prev
		}
		if s.metaCur == c {
			s.advanceMeta()
		}
		c.next = nil
		return
	}
}

// advanceMeta moves metaCur to the next message that needs a request.
func (s *Socket) advanceMeta() {
	m := s.metaCur
	if m != nil {
		m = m.next
	}
	for m != nil && m.state != msgNeedMeta {
		m = m.next
	}
	s.metaCur = m
}
