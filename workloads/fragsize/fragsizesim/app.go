package fragsizesim

import (
	"slices"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/fragsize"
)

// SenderApp drives a fragsize.Sender on a simulated host: it sends
// size-byte messages on its sockets as the machine asks. Events on other
// sockets go to Next (nil: freed).
type SenderApp struct {
	M     *fragsize.Sender
	Next  simhost.App
	size  int
	socks []*byteexpress.Socket
	err   error
}

// NewSenderApp returns the app of m sending size-byte messages on socks
// (AddSocket adds more before Start).
func NewSenderApp(m *fragsize.Sender, size int, socks ...*byteexpress.Socket) *SenderApp {
	return &SenderApp{M: m, size: size, socks: socks}
}

// AddSocket adds a bulk socket (before Start).
func (s *SenderApp) AddSocket(sk *byteexpress.Socket) { s.socks = append(s.socks, sk) }

// Err is the first error the sender met.
func (s *SenderApp) Err() error { return s.err }

// Start starts every flow.
func (s *SenderApp) Start(h *simhost.Host) {
	for _, sk := range s.socks {
		s.send(h, sk, s.M.Start())
	}
}

func (s *SenderApp) send(h *simhost.Host, sk *byteexpress.Socket, n int) {
	for range n {
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
	}
}

func (s *SenderApp) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}

// OnEvent implements simhost.App.
func (s *SenderApp) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	if ev.Socket == nil || !slices.Contains(s.socks, ev.Socket) {
		if s.Next != nil {
			s.Next.OnEvent(h, ev)
		} else {
			simhost.FreeApp{}.OnEvent(h, ev)
		}
		return
	}
	switch ev.Kind {
	case byteexpress.EvMessage:
		_ = h.Free(ev.Buf)
		s.send(h, ev.Socket, s.M.Response())
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		_ = h.Free(ev.Buf)
		s.fail(ev.Err)
	case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		s.fail(ev.Err)
	}
}

// ReceiverApp drives a fragsize.Receiver on a simulated host: it answers
// the machine's messages on their socket; other events go to Next (nil:
// freed).
type ReceiverApp struct {
	M    *fragsize.Receiver
	Next simhost.App
	err  error
}

// NewReceiverApp returns the app of m; next takes the other events.
func NewReceiverApp(m *fragsize.Receiver, next simhost.App) *ReceiverApp {
	return &ReceiverApp{M: m, Next: next}
}

// Err is the first error the receiver met.
func (r *ReceiverApp) Err() error { return r.err }

// OnEvent implements simhost.App.
func (r *ReceiverApp) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	if ev.Kind != byteexpress.EvMessage || !r.M.Bulk(ev.Len) {
		if r.Next != nil {
			r.Next.OnEvent(h, ev)
		} else {
			simhost.FreeApp{}.OnEvent(h, ev)
		}
		return
	}
	n := r.M.Message(h.Now(), ev.Len)
	_ = h.Free(ev.Buf)
	buf, err := h.Allocate(n)
	if err != nil {
		r.fail(err)
		return
	}
	if err := ev.Socket.Send(buf, n); err != nil {
		_ = h.Free(buf)
		r.fail(err)
	}
}

func (r *ReceiverApp) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}
