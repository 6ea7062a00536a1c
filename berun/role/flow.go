package role

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/besim/besim/berun/internal/tcpx"
)

// The flow roles replay one flow of a besim flow scenario (the scenario's
// flows section: src host, dst host, priority, rate, size, start) over
// kernel TCP: flow-sender connects to its flow-receiver at the run's
// start, begins sending at the flow's start (an offset from the run's
// start), paces at the flow's rate (rate 0: as fast as TCP goes, besim's
// rate: line), sends size bytes (size 0: until the run's end) in messages
// of message bytes, then the end marker, and waits for the receiver's
// count: the flow is complete when every byte is acknowledged, and its
// completion time is from the flow's start to that acknowledgement. The
// receiver measures besim's goodput (the bytes after the first message
// over the first to the last message's arrival, as fabric.FlowStats
// does). Kernel TCP is not besim's raw or RDMA flow: it has its own
// congestion control, and rides the scenario's priority only where the
// hosts map TCP to it; the report says so.
func init() {
	params := []Param{
		{Name: "name", Doc: "the flow's name in the scenario (its metrics' name)"},
		{Name: "start", Default: "0s", Doc: "when the flow starts, after the run's start"},
		{Name: "size", Default: "0", Doc: "bytes to send (0: until the run's end)"},
		{Name: "rate", Default: "0", Doc: "pacing rate in bits/s (0: unpaced, as fast as TCP goes)"},
		{Name: "message", Default: "64KiB", Doc: "bytes per message written (8B..64MiB)"},
	}
	Register(Info{Name: "flow-receiver", New: newFlow, Params: params,
		Summary: "receiver of one flow of a besim flow scenario over kernel TCP: counts the bytes and measures the goodput"})
	Register(Info{Name: "flow-sender", New: newFlow, Params: params,
		Summary: "sender of one flow of a besim flow scenario over kernel TCP: the flow's start, rate and size"})
}

type flowRole struct {
	sender bool
	name   string
	start  time.Duration
	size   int64
	rate   int64
	msg    int
	in     *inbound
}

func newFlow(spec Spec) (Role, error) {
	info, _ := Lookup(spec.Role)
	p := ReadParams(info, spec)
	r := &flowRole{sender: spec.Role == "flow-sender"}
	r.name = p.String("name")
	r.start = p.Duration("start", 0, 24*time.Hour)
	r.size = p.Size("size", 0, 1<<50)
	rate := p.String("rate")
	r.msg = int(p.Size("message", 8, 64<<20))
	if err := p.Err(); err != nil {
		return nil, err
	}
	var err error
	if r.rate, err = strconv.ParseInt(rate, 10, 64); err != nil || r.rate < 0 {
		return nil, fmt.Errorf("parameter rate=%q: want bits per second, a whole number >= 0", rate)
	}
	switch {
	case r.name == "":
		return nil, fmt.Errorf("parameter name: the flow's name is required")
	case r.sender && len(spec.Peers) != 1:
		return nil, fmt.Errorf("a flow sender needs one peer, its flow-receiver (has %d)", len(spec.Peers))
	case !r.sender && len(spec.Peers) != 0:
		return nil, fmt.Errorf("a flow receiver connects to nobody; remove its peers %v", spec.Peers)
	}
	return r, nil
}

func (r *flowRole) Prepare(ctx context.Context, spec Spec) (string, error) {
	if r.start >= spec.Duration {
		return "", fmt.Errorf("flow %s starts at %v, not before the run's end %v", r.name, r.start, spec.Duration)
	}
	if r.sender {
		return "", nil
	}
	ln, err := listen(ctx, spec.Bind)
	if err != nil {
		return "", err
	}
	r.in = &inbound{ln: ln, opts: tcpx.Options{MaxMessage: r.msg}}
	return ln.Addr().String(), nil
}

func (r *flowRole) Close() error {
	if r.in != nil {
		return r.in.ln.Close()
	}
	return nil
}

func (r *flowRole) Run(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	if r.sender {
		return r.send(ctx, spec, peers)
	}
	return r.receive(ctx, spec)
}

// flowSink is what a flow receiver saw.
type flowSink struct {
	msgs, bytes, firstLen int64
	first, last           time.Time
	clean                 bool
}

func (r *flowRole) receive(ctx context.Context, spec Spec) (Result, error) {
	outs, notes, err := r.in.serve(ctx, spec, func(c *tcpx.Conn, h dataHello) (any, error) {
		s := &flowSink{}
		buf := make([]byte, 0, r.msg)
		for {
			m, err := c.ReadMsg(buf)
			if err != nil {
				if err == io.EOF {
					err = fmt.Errorf("connection closed without the end marker after %d bytes", s.bytes)
				}
				return s, err
			}
			buf = m[:0]
			if len(m) == 0 {
				s.clean = true
				return s, writeJSON(c, summary{Messages: s.msgs, Bytes: s.bytes})
			}
			now := time.Now()
			if s.msgs == 0 {
				s.first, s.firstLen = now, int64(len(m))
			}
			s.last = now
			s.msgs++
			s.bytes += int64(len(m))
		}
	})
	res := Result{Metrics: map[string]float64{"bytes": 0, "goodput_gbps": 0}, Notes: notes}
	for _, o := range outs {
		if s, _ := o.res.(*flowSink); s != nil && s.msgs > 0 {
			res.Metrics["bytes"] = float64(s.bytes)
			res.Metrics["messages"] = float64(s.msgs)
			// besim's goodput (fabric.FlowStats.Goodput): the first
			// message's bytes arrived at the first instant; count what
			// came after.
			res.Metrics["goodput_gbps"] = gbps(s.bytes-s.firstLen, s.last.Sub(s.first))
			res.Metrics["first_s"] = s.first.Sub(spec.Start).Seconds()
			res.Metrics["last_s"] = s.last.Sub(spec.Start).Seconds()
		}
	}
	if err == nil {
		err = joinErrs(outs)
	}
	return res, err
}

func (r *flowRole) send(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	end := spec.End()
	type sent struct {
		bytes, acked int64
		done         time.Time
	}
	t0 := spec.Start.Add(r.start)
	outs := outbound(ctx, spec, peers, 1, dataHello{From: spec.ID, Role: spec.Role}, func(c *tcpx.Conn, p Peer, idx int) (any, error) {
		s := &sent{}
		select {
		case <-time.After(time.Until(t0)):
		case <-ctx.Done():
			return s, fmt.Errorf("stopped before the flow's start (%v)", context.Cause(ctx))
		}
		buf := make([]byte, r.msg)
		for seq := uint64(0); ; seq++ {
			n := int64(r.msg)
			if r.size > 0 {
				n = min(n, r.size-s.bytes)
				if n <= 0 {
					break
				}
			}
			now := time.Now()
			if !now.Before(end) {
				break
			}
			if r.rate > 0 {
				// Pacing: the bytes sent so far leave at the flow's rate.
				due := t0.Add(time.Duration(float64(s.bytes) * 8 / float64(r.rate) * 1e9))
				if d := due.Sub(now); d > 0 {
					time.Sleep(min(d, end.Sub(now)))
				}
			}
			if n >= 8 {
				binary.BigEndian.PutUint64(buf, seq)
			}
			if err := c.WriteMsg(buf[:n]); err != nil {
				return s, fmt.Errorf("after %d bytes: %w", s.bytes, err)
			}
			s.bytes += n
		}
		if err := c.WriteMsg(nil); err != nil {
			return s, fmt.Errorf("end marker: %w", err)
		}
		var sum summary
		if err := readJSON(c, &sum, 0); err != nil {
			return s, fmt.Errorf("waiting for the receiver's count: %w", err)
		}
		s.done, s.acked = time.Now(), sum.Bytes
		if sum.Bytes != s.bytes {
			return s, fmt.Errorf("sent %d bytes, the receiver counted %d", s.bytes, sum.Bytes)
		}
		return s, nil
	}, tcpx.Options{MaxMessage: max(r.msg, maxHello)})
	res := Result{Metrics: map[string]float64{"size": float64(r.size), "start_s": r.start.Seconds()}, Detail: map[string]string{"flow": r.name}}
	for _, o := range outs {
		s, _ := o.res.(*sent)
		if s == nil {
			continue
		}
		res.Metrics["bytes"] = float64(s.bytes)
		res.Metrics["acked_bytes"] = float64(s.acked)
		complete := o.err == nil && !s.done.IsZero() && (r.size == 0 || s.acked == r.size)
		if complete {
			res.Metrics["completed"] = 1
			res.Metrics["fct_s"] = s.done.Sub(t0).Seconds()
		} else {
			res.Metrics["completed"] = 0
		}
	}
	return res, joinErrs(outs)
}
