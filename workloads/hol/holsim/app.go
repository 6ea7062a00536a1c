package holsim

import (
	"errors"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/hol"
)

// SmallApp drives a hol.SmallSender on a simulated host: on its timer it
// sends the machine's messages, size bytes each, on one socket.
type SmallApp struct {
	M     *hol.SmallSender
	h     *simhost.Host
	sock  *byteexpress.Socket
	size  int
	timer sim.Timer
	err   error
}

// NewSmallApp returns the app of m sending size-byte messages from h on
// sock, its timer on k.
func NewSmallApp(k *sim.Kernel, h *simhost.Host, sock *byteexpress.Socket, size int, m *hol.SmallSender) *SmallApp {
	g := &SmallApp{M: m, h: h, sock: sock, size: size}
	g.timer.Init(k, g, 0)
	return g
}

// Start fires the first tick at now.
func (g *SmallApp) Start(now sim.Time) { g.timer.Set(now) }

// Err is the first error the sender met.
func (g *SmallApp) Err() error { return g.err }

// OnEvent is the timer.
func (g *SmallApp) OnEvent(now sim.Time, _ uint64) {
	send, hdr, rearm, next := g.M.Tick(now)
	if rearm {
		g.timer.Set(next)
	}
	if !send {
		return
	}
	if crashed, _ := g.h.Crashed(); crashed {
		return
	}
	buf, err := g.h.Allocate(g.size)
	if err != nil {
		g.err = err
		return
	}
	hdr.Put(buf.Bytes())
	if err := g.sock.Send(buf, g.size); err != nil {
		_ = g.h.Free(buf)
		g.err = err
	}
}

// LatencyApp drives a hol.LatencyReceiver on a simulated host; other
// events are freed.
type LatencyApp struct {
	M   *hol.LatencyReceiver
	err error
}

// Err is the first error: a malformed or out-of-order small message.
func (r *LatencyApp) Err() error { return errors.Join(r.err, r.M.Err()) }

// OnEvent implements simhost.App.
func (r *LatencyApp) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	if ev.Kind != byteexpress.EvMessage || !r.M.Small(ev.Len) {
		simhost.FreeApp{}.OnEvent(h, ev)
		return
	}
	hdr, err := hol.ParseHeader(ev.Buf.Bytes())
	_ = h.Free(ev.Buf)
	if err != nil {
		if r.err == nil {
			r.err = err
		}
		return
	}
	r.M.Message(h.Now(), hdr)
}
