// Package pingpongsim drives the latency workload (package pingpong, the
// paper's Figure 8, §5.5: ByteExpress latency with one message
// outstanding) on the ByteExpress core over simhost: two hosts under one
// switch, one socket (Run, on the Go API; scenario kind pingpong and the
// embedded scenario fig8, through the experiment registry).
//
// # What the model produces
//
// The latency is the sum of modelled costs and nothing else: the core's
// CPU costs per step, command, record, copy and message (simhost
// CPUCost), the provider's post and poll costs and the doorbell's MMIO
// latency, the NIC's WQE and DMA costs, serialisation at both links and
// the switch, and the cable delays. Messages up to the core's
// small-message limit (4 KiB) travel in one SEND, copied at both ends, so
// the latency grows with the copy and the serialisation; larger ones take
// the zero-copy path (a metadata request and response over SEND, then the
// WRITEs), one more round trip, so the curve steps up past 4 KiB. The
// model has no OS noise, interrupts or cache misses: P99 stays within a
// few percent of the mean, where a real host's tail is wider.
package pingpongsim

import (
	"errors"
	"fmt"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/units"
	"github.com/besim/besim/workloads/internal/simrun"
	"github.com/besim/besim/workloads/pingpong"
)

// Config is one point of the Figure 8 workload (pingpong.Config) on two
// simulated hosts under one switch. Zero Testbed fields take its
// defaults.
type Config struct {
	pingpong.Config
	simrun.Testbed
}

// Run measures every message size of cfg, in order.
func Run(cfg Config) ([]pingpong.Stats, error) {
	cfg.Testbed.Defaults()
	if cfg.Rate <= 0 || cfg.MTU < 256 || cfg.Response < 1 || cfg.Measure <= 0 {
		return nil, errors.New("pingpong: needs a rate, an MTU of at least 256, a response of at least 1 byte and a measured interval")
	}
	var out []pingpong.Stats
	for _, m := range cfg.Messages {
		st, err := point(&cfg, m)
		if err != nil {
			return out, fmt.Errorf("pingpong: %d B messages: %w", m, err)
		}
		out = append(out, st)
	}
	return out, nil
}

// client sends the Pinger's messages on one socket and takes the answers.
type client struct {
	p          *pingpong.Pinger
	sock       *byteexpress.Socket
	warm, meas sim.Time
	up         bool
	err        error
}

func (c *client) fail(err error) {
	if c.err == nil && err != nil {
		c.err = err
	}
}

func (c *client) send(h *simhost.Host) {
	if !c.p.Send(h.Now()) {
		return
	}
	buf, err := h.Allocate(c.p.Size)
	if err == nil {
		if err = c.sock.Send(buf, c.p.Size); err != nil {
			_ = h.Free(buf)
		}
	}
	c.fail(err)
}

func (c *client) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	switch ev.Kind {
	case byteexpress.EvConnected:
		// Engine set-up (the connection exchange, registering the staging
		// and receive buffers) takes the threads a few hundred
		// microseconds; the warm-up starts when the socket is up.
		c.up = true
		c.p.From = h.Now() + c.warm
		c.p.To = c.p.From + c.meas
		c.send(h)
	case byteexpress.EvMessage:
		_ = h.Free(ev.Buf)
		c.p.Answered(h.Now())
		c.send(h)
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		_ = h.Free(ev.Buf)
		c.fail(ev.Err)
	case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		c.fail(ev.Err)
	}
}

// server answers every message with a response-byte message.
type server struct {
	p        *pingpong.Pinger
	response int
	err      error
}

func (s *server) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	if ev.Kind != byteexpress.EvMessage {
		simhost.FreeApp{}.OnEvent(h, ev)
		return
	}
	s.p.Arrived(h.Now())
	_ = h.Free(ev.Buf)
	buf, err := h.Allocate(s.response)
	if err == nil {
		if err = ev.Socket.Send(buf, s.response); err != nil {
			_ = h.Free(buf)
		}
	}
	if err != nil && s.err == nil {
		s.err = err
	}
}

func point(cfg *Config, size int) (pingpong.Stats, error) {
	sc := simhost.DefaultConfig(2)
	sc.Fabric.HostLink = fabric.LinkConfig{Rate: units.Rate(cfg.Rate), Delay: cfg.LinkDelay}
	sc.Fabric.MTU = units.Size(cfg.MTU)
	sc.NIC = cfg.NIC
	sc.CPU = cfg.CPU
	sc.BE = cfg.BE
	c, err := simhost.New(sc)
	if err != nil {
		return pingpong.Stats{}, err
	}
	a, b := c.Host(0), c.Host(1)
	p := &pingpong.Pinger{Size: size}
	srv := &server{p: p, response: cfg.Response}
	b.SetApp(srv)
	b.Listen()
	sk, err := a.Dial(b)
	if err != nil {
		return pingpong.Stats{}, err
	}
	cl := &client{p: p, sock: sk, warm: cfg.Warmup, meas: cfg.Measure}
	a.SetApp(cl)
	const setupLimit = 100 * sim.Millisecond
	for !cl.up && cl.err == nil && c.Now() < setupLimit {
		c.RunFor(10 * sim.Microsecond)
	}
	if !cl.up {
		err := fmt.Errorf("socket not connected after %v: %w", c.Now(), cl.err)
		return pingpong.Stats{}, errors.Join(err, c.Close())
	}
	c.Run(p.To)
	// The message in flight at the end was sent inside the interval: let
	// it finish (at most a few round trips) so it is not lost.
	c.RunFor(cfg.Measure / 10)
	err = errors.Join(cl.err, srv.err, c.Err())
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	return pingpong.Summarize(p), err
}
