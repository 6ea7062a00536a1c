package simhost

import (
	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/sim"
)

// bulkSender keeps window messages of size bytes outstanding on each of its
// sockets: it sends one more whenever the receiver's response arrives (the
// paper's §5.5 throughput setup: 1 MB messages, a 32-byte response each,
// enough concurrency to fill the path). Other messages (small-flow traffic
// the same host also sends) are not its business.
type bulkSender struct {
	size   int
	window int
	socks  []*byteexpress.Socket
	sent   uint64
	resps  uint64
	err    error
	stop   bool // send no more
	next   App  // events on sockets that are not bulk sockets
}

func (s *bulkSender) start(h *Host) {
	for _, sk := range s.socks {
		for range s.window {
			s.send(h, sk)
		}
	}
}

func (s *bulkSender) send(h *Host, sk *byteexpress.Socket) {
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

func (s *bulkSender) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

func (s *bulkSender) isBulk(sk *byteexpress.Socket) bool {
	for _, b := range s.socks {
		if b == sk {
			return true
		}
	}
	return false
}

func (s *bulkSender) OnEvent(h *Host, ev byteexpress.Event) {
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

// bulkReceiver answers every message of at least min bytes with a
// respSize-byte response on the same socket and counts the bytes that
// arrive inside [from, to). Smaller messages go to next.
type bulkReceiver struct {
	min      int
	respSize int
	from, to sim.Time
	bytes    int64
	msgs     int
	err      error
	next     App
}

func (r *bulkReceiver) OnEvent(h *Host, ev byteexpress.Event) {
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

func (r *bulkReceiver) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}
