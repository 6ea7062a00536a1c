package byteexpress

import (
	"errors"
	"time"
)

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EvConnected: a Dial'ed socket is ready (its engine is set up).
	EvConnected EventKind = iota + 1
	// EvAccepted: the peer opened Socket towards this (listening) endpoint.
	EvAccepted
	// EvMessage: a message arrived on Socket. Buf now belongs to the
	// application; the payload is Buf.Bytes()[:Len]. Free it with the
	// Allocator (any goroutine) when done.
	EvMessage
	// EvSendFailed: a message given to Send could not be delivered (or its
	// delivery is unknown: it may have reached the peer before the engine
	// failed). Buf returns to the application, which retries or frees it.
	EvSendFailed
	// EvClosed: Socket is closed (by Close or by the peer); no more events
	// for it follow.
	EvClosed
	// EvSocketFailed: Socket failed with Err (its engine failed, the connect
	// exchange failed, or the peer refused it); no more events follow.
	EvSocketFailed
	// EvEngineError: the engine to Remote entered the error state (QP error,
	// keepalive timeout §7.2, connect failure) and its resources were
	// reclaimed. The sockets it carried get EvSocketFailed.
	EvEngineError
	// EvBufferReturned: a buffer exposed with Expose comes back unused (its
	// socket or engine went away). Buf belongs to the application again.
	EvBufferReturned
)

var eventNames = [...]string{"", "connected", "accepted", "message", "send-failed", "closed",
	"socket-failed", "engine-error", "buffer-returned"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) && k > 0 {
		return eventNames[k]
	}
	return "EventKind(?)"
}

// Event is one output of a Poll step (the etcd-raft "Ready" idea: plain
// data the caller acts on).
type Event struct {
	Kind   EventKind
	Socket *Socket
	Remote Addr
	Buf    Buffer
	Len    int
	Err    error
}

// Ready is the result of a Poll step.
type Ready struct {
	// Events produced by the step, in order. The slice is reused by the next
	// Poll; copy what must outlive it.
	Events []Event
	// Next is when the thread must be polled again at the latest (its next
	// timer), Never if no timer is pending, or the now passed to Poll if it
	// stopped early with work left. Completions arriving in the CQ and calls
	// into the Endpoint/Socket API are reasons to poll sooner.
	Next time.Duration
	// Ops counts the work done in this step, for CPU-time models.
	Ops Ops
}

// Ops counts the operations of one Poll step (or, in Stats, all steps) so a
// simulator adapter can charge modelled CPU time (§8.1's CPU accounting) and
// tests can check batching. None of these counts allocations of Go memory.
type Ops struct {
	Steps       int   // Poll calls
	CQPolls     int   // ibv_poll_cq calls
	CQEs        int   // completions processed
	PostSends   int   // ibv_post_send calls (doorbells)
	SendWRs     int   // send WRs posted
	Signalled   int   // of which signalled
	PostRecvs   int   // ibv_post_recv / ibv_post_srq_recv calls
	RecvWRs     int   // receive WRs posted
	BytesCopied int64 // payload bytes copied (small messages, both sides)
	Allocs      int   // Allocator.Allocate calls
	Frees       int   // Allocator.Deallocate calls
	RecordsOut  int   // control/data records written into SENDs
	RecordsIn   int   // records parsed from received SENDs
	Messages    int   // messages delivered to the application
	Timers      int   // timers fired (keepalive send/timeout, connect timeout)
	Commands    int   // API commands (Send, Dial, ...) taken from the inbox
}

func (o *Ops) add(p *Ops) {
	o.Steps += p.Steps
	o.CQPolls += p.CQPolls
	o.CQEs += p.CQEs
	o.PostSends += p.PostSends
	o.SendWRs += p.SendWRs
	o.Signalled += p.Signalled
	o.PostRecvs += p.PostRecvs
	o.RecvWRs += p.RecvWRs
	o.BytesCopied += p.BytesCopied
	o.Allocs += p.Allocs
	o.Frees += p.Frees
	o.RecordsOut += p.RecordsOut
	o.RecordsIn += p.RecordsIn
	o.Messages += p.Messages
	o.Timers += p.Timers
	o.Commands += p.Commands
}

// Errors reported in events and by API calls.
var (
	ErrClosed           = errors.New("byteexpress: closed")
	ErrRefused          = errors.New("byteexpress: connection refused (peer not listening)")
	ErrConnectTimeout   = errors.New("byteexpress: connect timed out")
	ErrKeepaliveTimeout = errors.New("byteexpress: keepalive timeout: peer sequence number did not advance")
	ErrThreadFull       = errors.New("byteexpress: I/O thread CQ cannot hold another engine")
	ErrNoMemory         = errors.New("byteexpress: receiver could not allocate the destination buffer")
	ErrTooLarge         = errors.New("byteexpress: message too large")
	ErrBadLength        = errors.New("byteexpress: length must be in [1, buffer length]")
	ErrBadRemote        = errors.New("byteexpress: remote buffer too small or not for this socket")
)
