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
		Name:    "tcp-bulk",
		Summary: "bulk transfer over kernel TCP: senders push fixed-size messages to sinks as fast as the stack allows; sinks acknowledge the count at the end",
		Params: []Param{
			{Name: "mode", Doc: "send or sink (required)"},
			{Name: "message_size", Default: "1MiB", Doc: "bytes per message (send; 8B..64MiB)"},
			{Name: "connections", Default: "1", Doc: "connections to each peer (send; 1..64)"},
			{Name: "max_message", Default: "64MiB", Doc: "largest message accepted (sink)"},
		},
		New: newBulk,
	})
}

type bulk struct {
	sink    bool
	size    int
	conns   int
	maxMsg  int
	in      *inbound
	spec    Spec
	started time.Time
}

func newBulk(spec Spec) (Role, error) {
	info, _ := Lookup("tcp-bulk")
	p := ReadParams(info, spec)
	b := &bulk{sink: p.Enum("mode", "send", "sink") == "sink"}
	b.size = int(p.Size("message_size", 8, 64<<20))
	b.conns = p.Int("connections", 1, 64)
	b.maxMsg = int(p.Size("max_message", 8, 1<<30))
	if err := p.Err(); err != nil {
		return nil, err
	}
	if b.sink && len(spec.Peers) > 0 {
		return nil, fmt.Errorf("a sink connects to nobody; remove its peers %v", spec.Peers)
	}
	if !b.sink && len(spec.Peers) == 0 {
		return nil, fmt.Errorf("a sender needs at least one peer (a tcp-bulk sink)")
	}
	return b, nil
}

func (b *bulk) Prepare(ctx context.Context, spec Spec) (string, error) {
	b.spec = spec
	if !b.sink {
		return "", nil
	}
	ln, err := listen(ctx, spec.Bind)
	if err != nil {
		return "", err
	}
	b.in = &inbound{ln: ln, opts: tcpx.Options{MaxMessage: b.maxMsg}}
	return ln.Addr().String(), nil
}

func (b *bulk) Close() error {
	if b.in != nil {
		return b.in.ln.Close()
	}
	return nil
}

// sinkConn is what a sink saw on one connection.
type sinkConn struct {
	Messages int64     `json:"messages"`
	Bytes    int64     `json:"bytes"`
	Clean    bool      `json:"clean"` // ended with the end marker and was acknowledged
	first    time.Time // first message
	last     time.Time // last message
}

// sendConn is what a sender did on one connection.
type sendConn struct {
	Messages int64   `json:"messages"`
	Bytes    int64   `json:"bytes"`
	Acked    int64   `json:"acked_messages"` // as counted by the sink
	Seconds  float64 `json:"seconds"`        // first write to acknowledgement
	Gbps     float64 `json:"gbps"`
	start    time.Time
	acked    time.Time
}

func (b *bulk) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	if b.sink {
		return b.runSink(ctx, spec)
	}
	return b.runSend(ctx, spec, peers)
}

func (b *bulk) runSink(ctx context.Context, spec Spec) (Result, error) {
	outs, notes, err := b.in.serve(ctx, spec, func(c *tcpx.Conn, h dataHello) (any, error) {
		s := &sinkConn{}
		buf := make([]byte, 0, 1<<20)
		for {
			m, err := c.ReadMsg(buf)
			if err != nil {
				if err == io.EOF {
					err = fmt.Errorf("connection closed without the end marker after %d messages", s.Messages)
				}
				return s, err
			}
			buf = m[:0]
			if len(m) == 0 {
				s.Clean = true
				return s, writeJSON(c, summary{Messages: s.Messages, Bytes: s.Bytes})
			}
			if seq := binary.BigEndian.Uint64(m); seq != uint64(s.Messages) {
				return s, fmt.Errorf("message %d carries sequence number %d", s.Messages, seq)
			}
			now := time.Now()
			if s.Messages == 0 {
				s.first = now
			}
			s.last = now
			s.Messages++
			s.Bytes += int64(len(m))
		}
	})
	res := Result{Metrics: map[string]float64{}, Notes: notes}
	per := map[string]*sinkConn{}
	var first, last time.Time
	var msgs, bytes, unclean int64
	for _, o := range outs {
		s, _ := o.res.(*sinkConn)
		if s == nil {
			continue
		}
		agg := per[o.from]
		if agg == nil {
			agg = &sinkConn{Clean: true}
			per[o.from] = agg
		}
		agg.Messages += s.Messages
		agg.Bytes += s.Bytes
		agg.Clean = agg.Clean && s.Clean
		if !s.Clean {
			unclean++
		}
		msgs += s.Messages
		bytes += s.Bytes
		if s.Messages > 0 {
			if first.IsZero() || s.first.Before(first) {
				first = s.first
			}
			if s.last.After(last) {
				last = s.last
			}
		}
	}
	res.Metrics["messages"] = float64(msgs)
	res.Metrics["bytes"] = float64(bytes)
	res.Metrics["senders_expected"] = float64(len(spec.From))
	res.Metrics["senders_seen"] = float64(len(per))
	res.Metrics["connections_unclean"] = float64(unclean)
	res.Metrics["receive_seconds"] = last.Sub(first).Seconds()
	res.Metrics["throughput_gbps"] = gbps(bytes, last.Sub(first))
	res.Detail = map[string]any{"from": per}
	if err == nil {
		err = joinErrs(outs)
	}
	return res, err
}

func (b *bulk) runSend(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	end := spec.End()
	outs := outbound(ctx, spec, peers, b.conns, dataHello{From: spec.ID, Role: "tcp-bulk"}, func(c *tcpx.Conn, p Peer, idx int) (any, error) {
		s := &sendConn{start: time.Now()}
		buf := make([]byte, b.size)
		for i := range buf {
			buf[i] = byte(i)
		}
		for time.Now().Before(end) {
			binary.BigEndian.PutUint64(buf, uint64(s.Messages))
			if err := c.WriteMsg(buf); err != nil {
				return s, fmt.Errorf("after %d messages: %w", s.Messages, err)
			}
			s.Messages++
			s.Bytes += int64(len(buf))
		}
		if err := c.WriteMsg(nil); err != nil {
			return s, fmt.Errorf("end marker: %w", err)
		}
		var sum summary
		if err := readJSON(c, &sum, 0); err != nil {
			return s, fmt.Errorf("waiting for the sink's count: %w", err)
		}
		s.acked = time.Now()
		s.Acked = sum.Messages
		s.Seconds = s.acked.Sub(s.start).Seconds()
		s.Gbps = gbps(s.Bytes, s.acked.Sub(s.start))
		if sum.Messages != s.Messages || sum.Bytes != s.Bytes {
			return s, fmt.Errorf("sent %d messages (%d bytes), the sink counted %d (%d bytes)", s.Messages, s.Bytes, sum.Messages, sum.Bytes)
		}
		return s, nil
	}, tcpx.Options{MaxMessage: max(b.size, maxHello)})
	res := Result{Metrics: map[string]float64{}}
	var msgs, bytes, acked, ackedBytes int64
	var start, last time.Time
	detail := map[string][]*sendConn{}
	for _, o := range outs {
		s, _ := o.res.(*sendConn)
		if s == nil {
			continue
		}
		detail[o.from] = append(detail[o.from], s)
		msgs += s.Messages
		bytes += s.Bytes
		acked += s.Acked
		if start.IsZero() || s.start.Before(start) {
			start = s.start
		}
		if !s.acked.IsZero() {
			ackedBytes += s.Bytes
			if s.acked.After(last) {
				last = s.acked
			}
		}
	}
	res.Metrics["messages"] = float64(msgs)
	res.Metrics["bytes"] = float64(bytes)
	res.Metrics["acked_messages"] = float64(acked)
	res.Metrics["message_bytes"] = float64(b.size)
	res.Metrics["connections"] = float64(len(outs))
	if !last.IsZero() {
		// Delivered and acknowledged bytes over first write to last
		// acknowledgement: what sat in socket buffers is not counted as
		// sent until the sink has it.
		res.Metrics["throughput_gbps"] = gbps(ackedBytes, last.Sub(start))
		res.Metrics["send_seconds"] = last.Sub(start).Seconds()
	}
	res.Detail = map[string]any{"peers": detail}
	return res, joinErrs(outs)
}
