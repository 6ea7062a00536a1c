package simhost

import (
	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/sim"
)

// DefaultTestbedLinkDelay is the one-way link delay of the Figure 10 and 13
// testbeds: two hosts under one ToR switch. Assumption: a few metres of
// cable (~10 ns) plus a cut-through switch's ~0.5 us port-to-port latency
// split over its two links; the fabric's 1 us default stands for a
// multi-tier data-center path instead.
const DefaultTestbedLinkDelay = 250 * sim.Nanosecond

// AppHead is the most bytes of a message that a simulated application
// reads: the header it writes at the front (incast and hol 16 bytes, ps 24,
// an RPC header 24 more) and echoes back. A workload cluster sets its NICs'
// RDMAHead to it, so the WRITEs of large messages move only these bytes:
// the core never reads a WRITE's data and the application reads only its
// header, so nothing a run reports depends on the rest (issue 19: carry the
// core's bytes, only sizes for application payload). SENDs, which hold the
// core's records and small messages, still move in full.
const AppHead = 256

// BulkSender keeps window messages of size bytes outstanding on each of its
// sockets: it sends one more whenever the receiver's response arrives (the
// paper's §5.5 throughput setup: 1 MB messages, a 32-byte response each,
// enough concurrency to fill the path). Other messages (small-flow traffic
// the same host also sends) are not its business.
type BulkSender struct {
	size   int
	window int
	socks  []*byteexpress.Socket
	sent   uint64
	resps  uint64
	err    error
	stop   bool // send no more
	next   App  // events on sockets that are not bulk sockets
}

// NewBulkSender sends size-byte messages, window outstanding, on each of
// socks (Start begins; AddSocket adds one before).
func NewBulkSender(size, window int, socks ...*byteexpress.Socket) *BulkSender {
	return &BulkSender{size: size, window: window, socks: socks}
}

// AddSocket adds a bulk socket (before Start).
func (s *BulkSender) AddSocket(sk *byteexpress.Socket) { s.socks = append(s.socks, sk) }

// Err is the first error the sender met.
func (s *BulkSender) Err() error { return s.err }

// Start sends the first window of messages on every socket.
func (s *BulkSender) Start(h *Host) { s.start(h) }

func (s *BulkSender) start(h *Host) {
	for _, sk := range s.socks {
		for range s.window {
			s.send(h, sk)
		}
	}
}

func (s *BulkSender) send(h *Host, sk *byteexpress.Socket) {
	if s.stop {
		return
	}
	buf, err := h.Allocate(s.size)
	if err != nil {
		s.fail(err)
		return
	}
	if err := sk.Send(buf, s.size); err != nil {
		_ = h.Free(buf)
		s.fail(err)
		return
	}
	s.sent++
}

func (s *BulkSender) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *BulkSender) isBulk(sk *byteexpress.Socket) bool {
	for _, b := range s.socks {
		if b == sk {
			return true
		}
	}
	return false
}

func (s *BulkSender) OnEvent(h *Host, ev byteexpress.Event) {
	if ev.Socket == nil || !s.isBulk(ev.Socket) {
		if s.next != nil {
			s.next.OnEvent(h, ev)
		} else {
			FreeApp{}.OnEvent(h, ev)
		}
		return
	}
	switch ev.Kind {
	case byteexpress.EvMessage:
		_ = h.Free(ev.Buf)
		s.resps++
		s.send(h, ev.Socket)
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		_ = h.Free(ev.Buf)
		s.fail(ev.Err)
	case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		s.fail(ev.Err)
	}
}

// BulkReceiver answers every message of at least min bytes with a
// respSize-byte response on the same socket and counts the bytes that
// arrive inside [from, to). Smaller messages go to next.
type BulkReceiver struct {
	min      int
	respSize int
	from, to sim.Time
	bytes    int64
	msgs     int
	err      error
	next     App
}

// NewBulkReceiver answers messages of at least min bytes with respSize
// bytes and counts those arriving in [from, to); smaller ones go to next
// (nil: freed).
func NewBulkReceiver(min, respSize int, from, to sim.Time, next App) *BulkReceiver {
	return &BulkReceiver{min: min, respSize: respSize, from: from, to: to, next: next}
}

// Bytes and Msgs are what arrived in the window; Err is the first error.
func (r *BulkReceiver) Bytes() int64 { return r.bytes }

// Msgs is the bulk messages that arrived in the window.
func (r *BulkReceiver) Msgs() int { return r.msgs }

// Err is the first error the receiver met.
func (r *BulkReceiver) Err() error { return r.err }

func (r *BulkReceiver) OnEvent(h *Host, ev byteexpress.Event) {
	if ev.Kind != byteexpress.EvMessage || ev.Len < r.min {
		if r.next != nil {
			r.next.OnEvent(h, ev)
		} else {
			FreeApp{}.OnEvent(h, ev)
		}
		return
	}
	now := h.Now()
	if now >= r.from && now < r.to {
		r.bytes += int64(ev.Len)
		r.msgs++
	}
	_ = h.Free(ev.Buf)
	buf, err := h.Allocate(r.respSize)
	if err != nil {
		r.fail(err)
		return
	}
	if err := ev.Socket.Send(buf, r.respSize); err != nil {
		_ = h.Free(buf)
		r.fail(err)
	}
}

func (r *BulkReceiver) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}
