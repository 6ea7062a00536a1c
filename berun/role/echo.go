package role

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"time"

	"github.com/besim/besim/berun/internal/tcpx"
)

func init() {
	Register(Info{
		Name:    "tcp-echo",
		Summary: "request/response over kernel TCP: clients keep a window of requests outstanding to servers and report latency percentiles",
		Params: []Param{
			{Name: "mode", Doc: "client or server (required)"},
			{Name: "message_size", Default: "64B", Doc: "request bytes (client; 8B..1MiB)"},
			{Name: "response_size", Default: "", Doc: "response bytes (client; 8B..1MiB; default: message_size)"},
			{Name: "outstanding", Default: "1", Doc: "requests in flight per connection (client; 1..1024, outstanding x size <= 256KiB)"},
			{Name: "connections", Default: "1", Doc: "connections to each peer (client; 1..64)"},
		},
		New: newEcho,
	})
}

// maxInFlight bounds outstanding x message size so that requests and
// responses in flight fit the socket buffers and neither side can block the
// other's writes forever.
const maxInFlight = 256 << 10

type echo struct {
	server    bool
	reqSize   int
	respSize  int
	window    int
	conns     int
	in        *inbound
	sampleCap int
}

func newEcho(spec Spec) (Role, error) {
	info, _ := Lookup("tcp-echo")
	p := ReadParams(info, spec)
	e := &echo{server: p.Enum("mode", "client", "server") == "server"}
	e.reqSize = int(p.Size("message_size", 8, 1<<20))
	e.respSize = e.reqSize
	if v, ok := spec.Params["response_size"]; ok && v != "" {
		e.respSize = int(p.Size("response_size", 8, 1<<20))
	}
	e.window = p.Int("outstanding", 1, 1024)
	e.conns = p.Int("connections", 1, 64)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if e.window*max(e.reqSize, e.respSize) > maxInFlight {
		return nil, fmt.Errorf("outstanding %d x %d bytes is over %d bytes in flight per connection", e.window, max(e.reqSize, e.respSize), maxInFlight)
	}
	if e.server && len(spec.Peers) > 0 {
		return nil, fmt.Errorf("a server connects to nobody; remove its peers %v", spec.Peers)
	}
	if !e.server && len(spec.Peers) == 0 {
		return nil, fmt.Errorf("a client needs at least one peer (a tcp-echo server)")
	}
	e.sampleCap = max(1<<20/max(1, e.conns*len(spec.Peers)), 1024)
	return e, nil
}

func (e *echo) Prepare(ctx context.Context, spec Spec) (string, error) {
	if !e.server {
		return "", nil
	}
	ln, err := listen(ctx, spec.Bind)
	if err != nil {
		return "", err
	}
	e.in = &inbound{ln: ln, opts: tcpx.Options{MaxMessage: 1 << 20}}
	return ln.Addr().String(), nil
}

func (e *echo) Close() error {
	if e.in != nil {
		return e.in.ln.Close()
	}
	return nil
}

func (e *echo) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	if e.server {
		return e.runServer(ctx, spec)
	}
	return e.runClient(ctx, spec, peers)
}

type served struct {
	Requests int64 `json:"requests"`
	Clean    bool  `json:"clean"`
}

func (e *echo) runServer(ctx context.Context, spec Spec) (Result, error) {
	outs, notes, err := e.in.serve(ctx, spec, func(c *tcpx.Conn, h dataHello) (any, error) {
		s := &served{}
		if h.ResponseSize < 8 || h.ResponseSize > 1<<20 {
			return s, fmt.Errorf("client asked for %d-byte responses, want 8..1MiB", h.ResponseSize)
		}
		req := make([]byte, 0, 64<<10)
		resp := make([]byte, h.ResponseSize)
		for {
			m, err := c.ReadMsg(req)
			if err != nil {
				if err == io.EOF {
					err = fmt.Errorf("connection closed without the end marker after %d requests", s.Requests)
				}
				return s, err
			}
			req = m[:0]
			if len(m) == 0 {
				s.Clean = true
				return s, writeJSON(c, summary{Messages: s.Requests})
			}
			if len(m) >= 8 {
				copy(resp[:8], m[:8])
			}
			if err := c.WriteMsg(resp); err != nil {
				return s, err
			}
			s.Requests++
		}
	})
	var reqs int64
	per := map[string]int64{}
	for _, o := range outs {
		if s, _ := o.res.(*served); s != nil {
			reqs += s.Requests
			per[o.from] += s.Requests
		}
	}
	res := Result{Metrics: map[string]float64{"requests": float64(reqs), "clients_expected": float64(len(spec.From)),
		"clients_seen": float64(len(per))}, Detail: map[string]any{"requests_from": per}, Notes: notes}
	if err == nil {
		err = joinErrs(outs)
	}
	return res, err
}

type clientConn struct {
	Requests  int64 `json:"requests"`
	Responses int64 `json:"responses"`
	Served    int64 `json:"served"` // as counted by the server
	lat       *latencies
	start     time.Time
	stop      time.Time
}

func (e *echo) runClient(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	end := spec.End()
	hello := dataHello{From: spec.ID, Role: "tcp-echo", ResponseSize: e.respSize}
	outs := outbound(ctx, spec, peers, e.conns, hello, func(c *tcpx.Conn, p Peer, idx int) (any, error) {
		s := &clientConn{lat: newLatencies(e.sampleCap), start: time.Now()}
		req := make([]byte, e.reqSize)
		resp := make([]byte, 0, e.respSize)
		sent := make([]time.Time, e.window) // send times, a ring indexed by sequence number
		send := func() error {
			binary.BigEndian.PutUint64(req, uint64(s.Requests))
			sent[s.Requests%int64(e.window)] = time.Now()
			if err := c.WriteMsg(req); err != nil {
				return fmt.Errorf("request %d: %w", s.Requests, err)
			}
			s.Requests++
			return nil
		}
		for s.Requests < int64(e.window) && time.Now().Before(end) {
			if err := send(); err != nil {
				return s, err
			}
		}
		for s.Responses < s.Requests {
			m, err := c.ReadMsg(resp)
			if err != nil {
				return s, fmt.Errorf("waiting for response %d of %d: %w", s.Responses, s.Requests, err)
			}
			now := time.Now()
			if len(m) != e.respSize {
				return s, fmt.Errorf("response %d has %d bytes, want %d", s.Responses, len(m), e.respSize)
			}
			if seq := binary.BigEndian.Uint64(m); seq != uint64(s.Responses) {
				return s, fmt.Errorf("response %d answers request %d", s.Responses, seq)
			}
			s.lat.add(int64(now.Sub(sent[s.Responses%int64(e.window)])))
			s.Responses++
			if now.Before(end) {
				if err := send(); err != nil {
					return s, err
				}
			}
		}
		s.stop = time.Now()
		if err := c.WriteMsg(nil); err != nil {
			return s, fmt.Errorf("end marker: %w", err)
		}
		var sum summary
		if err := readJSON(c, &sum, 0); err != nil {
			return s, fmt.Errorf("waiting for the server's count: %w", err)
		}
		s.Served = sum.Messages
		if sum.Messages != s.Requests {
			return s, fmt.Errorf("sent %d requests, the server counted %d", s.Requests, sum.Messages)
		}
		return s, nil
	}, tcpx.Options{MaxMessage: max(e.respSize, maxHello)})

	all := newLatencies(0)
	var reqs, resps int64
	var first, last time.Time
	detail := map[string][]*clientConn{}
	for _, o := range outs {
		s, _ := o.res.(*clientConn)
		if s == nil {
			continue
		}
		detail[o.from] = append(detail[o.from], s)
		reqs += s.Requests
		resps += s.Responses
		all.merge(s.lat)
		if first.IsZero() || s.start.Before(first) {
			first = s.start
		}
		if s.stop.After(last) {
			last = s.stop
		}
	}
	res := Result{Metrics: map[string]float64{
		"requests": float64(reqs), "responses": float64(resps), "lost": float64(reqs - resps),
		"message_bytes": float64(e.reqSize), "response_bytes": float64(e.respSize),
		"outstanding": float64(e.window), "connections": float64(len(outs)),
	}, Detail: map[string]any{"peers": detail}}
	if !last.IsZero() && last.After(first) {
		res.Metrics["requests_per_s"] = float64(resps) / last.Sub(first).Seconds()
	}
	if all.metrics(res.Metrics) {
		res.Notes = append(res.Notes, fmt.Sprintf("latency percentiles from a uniform sample of %d of %d responses", len(all.samples), all.n))
	}
	return res, joinErrs(outs)
}
