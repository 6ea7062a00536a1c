package rpc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// HeaderSize is the RPC header every request and response starts with:
// call id (8) | attempt (4) | shard (4) | op (1) | pad (7). A server echoes
// it in its response, which is how the client matches responses to calls
// and recognises a late answer to an earlier attempt.
const HeaderSize = 24

// Header is the decoded RPC header.
type Header struct {
	Call    CallID
	Attempt uint32
	Shard   uint32
	Op      byte
}

// Put writes h into b (at least HeaderSize bytes).
func (h Header) Put(b []byte) {
	binary.LittleEndian.PutUint64(b[0:], uint64(h.Call))
	binary.LittleEndian.PutUint32(b[8:], h.Attempt)
	binary.LittleEndian.PutUint32(b[12:], h.Shard)
	b[16] = h.Op
	clear(b[17:HeaderSize])
}

// ParseHeader reads a header; it fails on a message shorter than one.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, fmt.Errorf("rpc: message of %d bytes, shorter than the %d-byte header", len(b), HeaderSize)
	}
	return Header{Call: CallID(binary.LittleEndian.Uint64(b[0:])), Attempt: binary.LittleEndian.Uint32(b[8:]),
		Shard: binary.LittleEndian.Uint32(b[12:]), Op: b[16]}, nil
}

// Conn is one connection a Transport opened: it sends a message of n bytes
// (n >= HeaderSize) that starts with hdr.
type Conn interface {
	Send(hdr []byte, n int) error
	Close()
}

// Dialer opens connections to service nodes over one transport: RDMA
// (ByteExpress sockets) or the TCP fallback. The owner of a Client routes what
// its transports receive back to the client: responses to OnResponse,
// failures to OnConnFailed / OnEngineError.
type Dialer interface {
	Dial(node NodeID, path int) (Conn, error)
}

// Completion is a finished call.
type Completion struct {
	ID       CallID
	Shard    int
	Attempts int
	// Sends counts every time the call went out: retried attempts, and
	// re-sends after an engine error (which start no new attempt).
	Sends     int
	Transport Transport // the transport of the last attempt
	Err       error     // nil: answered
}

// ErrNoReplica is a call that found no usable replica (Decision Fail).
var ErrNoReplica = errors.New("rpc: no usable replica")

type connKey struct {
	node NodeID
	path int
	tcp  bool
}

type pending struct {
	req   Request
	op    byte
	size  int
	to    Target // where the latest attempt went
	sends int
}

// Client is the Archon-like request/response layer (paper §7.2) bound to
// transports: Call picks a replica with the Selector, sends over RDMA (or
// TCP when the Selector says fallback) and tracks the attempt's Tr
// deadline; Tick retries timed-out idempotent calls wherever the Selector
// now points (path change, then another replica, then TCP); an engine error
// (keepalive, QP error) on a node re-sends the idempotent calls it had at
// once. Like the rest of the package it is driven and thread-unsafe: the
// owner calls Tick at NextDeadline and feeds events; time is explicit.
//
// Retrying Push: a call with Request.Idempotent false is never re-sent, so
// a Push reaches its server at most once unless the application marks it
// idempotent (it deduplicates by call id) — the paper leaves Push safety to
// the application and so does this API.
type Client struct {
	Policy *Policy
	rdma   Dialer
	tcp    Dialer
	conns  map[connKey]Conn
	calls  map[CallID]*pending
	hdr    [HeaderSize]byte
	done   []Completion
	// Stats
	Resent, TCPSends, Stale int
}

// NewClient binds a policy to an RDMA transport and an optional TCP
// fallback (nil: a TCPFallback decision fails the call).
func NewClient(p *Policy, rdma, tcp Dialer) *Client {
	return &Client{Policy: p, rdma: rdma, tcp: tcp, conns: map[connKey]Conn{}, calls: map[CallID]*pending{}}
}

// Outstanding is the number of calls not finished.
func (c *Client) Outstanding() int { return len(c.calls) }

// Call starts a request of size bytes (at least HeaderSize) for shard; op
// is the application's opcode, echoed in the response.
func (c *Client) Call(req Request, op byte, size int, now time.Duration) (CallID, error) {
	if size < HeaderSize {
		return 0, fmt.Errorf("rpc: request of %d bytes, at least %d", size, HeaderSize)
	}
	id := c.Policy.Tracker.Start(req, now)
	p := &pending{req: req, op: op, size: size}
	c.calls[id] = p
	if err := c.send(id, p, c.Policy.Selector.Pick(req.Shard, now), now); err != nil {
		delete(c.calls, id)
		c.Policy.Tracker.Complete(id)
		return id, err
	}
	return id, nil
}

// send sends attempt id along d. A dial that fails is a connection
// failure: the Selector is told and its next decision is tried, a bounded
// number of times (the ladder is finite: paths x replicas, then TCP).
func (c *Client) send(id CallID, p *pending, d Decision, now time.Duration) error {
	limit := (c.Policy.Selector.cfg.PathTries+1)*len(c.Policy.Selector.svc.Shards[p.req.Shard])*2 + 2
	for try := 0; ; try++ {
		if d.Action == Fail {
			return fmt.Errorf("%w for shard %d: %s", ErrNoReplica, d.Shard, d.Reason)
		}
		var t Dialer = c.rdma
		tcp := d.Transport == TCP
		if tcp {
			if c.tcp == nil {
				return fmt.Errorf("%w for shard %d: RDMA unavailable and no TCP fallback", ErrNoReplica, d.Shard)
			}
			t = c.tcp
		}
		k := connKey{d.Node, d.Path, tcp}
		conn := c.conns[k]
		if conn == nil {
			var err error
			if conn, err = t.Dial(d.Node, d.Path); err != nil {
				if try >= limit {
					return fmt.Errorf("rpc: shard %d: %d connection attempts failed, last to node %d: %w", p.req.Shard, try+1, d.Node, err)
				}
				d = c.Policy.Selector.OnConnectFailed(p.req.Shard, d.Target(), now)
				continue
			}
			c.conns[k] = conn
		}
		if tcp {
			c.TCPSends++
		}
		att, _ := c.Policy.Tracker.Attempts(id)
		Header{Call: id, Attempt: uint32(att), Shard: uint32(p.req.Shard), Op: p.op}.Put(c.hdr[:])
		p.to = d.Target()
		p.sends++
		return conn.Send(c.hdr[:], p.size)
	}
}

func (c *Client) finish(id CallID, err error) {
	p := c.calls[id]
	if p == nil {
		return
	}
	att, _ := c.Policy.Tracker.Attempts(id)
	delete(c.calls, id)
	c.done = append(c.done, Completion{ID: id, Shard: p.req.Shard, Attempts: max(att, 1), Sends: p.sends, Transport: p.to.Transport, Err: err})
}

// OnResponse handles a response header; it returns the completion, or ok
// false for a late answer to a call already finished.
func (c *Client) OnResponse(h Header, now time.Duration) (Completion, bool) {
	p := c.calls[h.Call]
	if p == nil {
		c.Stale++
		return Completion{}, false
	}
	att, _ := c.Policy.Tracker.Attempts(h.Call)
	c.Policy.Tracker.Complete(h.Call)
	c.Policy.Selector.OnSuccess(p.to.Node, now)
	delete(c.calls, h.Call)
	return Completion{ID: h.Call, Shard: p.req.Shard, Attempts: att, Sends: p.sends, Transport: p.to.Transport}, true
}

// OnEngineError reports that the RDMA connection(s) to node failed
// (keepalive timeout, QP error): its connections are dropped, the Selector
// walks the ladder for each shard that was using it, and the idempotent
// calls outstanding there are re-sent at once; the others are left to
// their deadline (they fail with ErrNotRetried).
func (c *Client) OnEngineError(node NodeID, now time.Duration) []Completion {
	return c.onNodeFailure(node, now, false)
}

// OnConnFailed reports a connection attempt to node that failed.
func (c *Client) OnConnFailed(node NodeID, now time.Duration) []Completion {
	return c.onNodeFailure(node, now, true)
}

func (c *Client) onNodeFailure(node NodeID, now time.Duration, connect bool) []Completion {
	for k, conn := range c.conns {
		if k.node == node && !k.tcp {
			conn.Close()
			delete(c.conns, k)
		}
	}
	c.done = c.done[:0]
	// One report per shard and connection (path): a node's engine error
	// takes down every path to it at once.
	type key struct {
		shard int
		to    Target
	}
	told := map[key]Decision{}
	for _, id := range c.sortedCalls() {
		p := c.calls[id]
		if p.to.Node != node || p.to.Transport != RDMA {
			continue
		}
		k := key{p.req.Shard, p.to}
		d, ok := told[k]
		if !ok {
			if connect {
				d = c.Policy.Selector.OnConnectFailed(p.req.Shard, p.to, now)
			} else {
				d = c.Policy.Selector.OnEngineError(p.req.Shard, p.to, now)
			}
			told[k] = d
		}
		if !p.req.Idempotent || c.Policy.Tracker.cfg.AtMostOnce {
			continue
		}
		c.Resent++
		if err := c.send(id, p, d, now); err != nil {
			c.Policy.Tracker.Complete(id)
			c.finish(id, err)
		}
	}
	return c.done
}

// sortedCalls lists outstanding call ids in order, so re-sends are
// deterministic (map order is not).
func (c *Client) sortedCalls() []CallID {
	ids := make([]CallID, 0, len(c.calls))
	for id := range c.calls {
		ids = append(ids, id)
	}
	for i := 1; i < len(ids); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
		}
	}
	return ids
}

// NextDeadline is when Tick must run next (byteexpress.Never: nothing due).
func (c *Client) NextDeadline() time.Duration { return c.Policy.NextDeadline() }

// Tick runs the policy at now: timed-out idempotent calls are re-sent where
// the Selector now points, the others finish with their error. It returns
// the calls that finished (valid until the next call into the client).
func (c *Client) Tick(now time.Duration) []Completion {
	c.done = c.done[:0]
	r := c.Policy.Tick(now)
	for _, o := range r.Calls {
		p := c.calls[o.ID]
		if p == nil {
			continue
		}
		c.Policy.Selector.OnRequestTimeout(p.req.Shard, p.to, now)
		if o.Kind == Failed {
			c.finish(o.ID, o.Err)
			continue
		}
		c.Resent++
		if err := c.send(o.ID, p, c.Policy.Selector.Pick(p.req.Shard, now), now); err != nil {
			c.Policy.Tracker.Complete(o.ID)
			c.finish(o.ID, err)
		}
	}
	for _, d := range r.Probes {
		// A probe is an RDMA dial; success returns the node to RDMA.
		conn, err := c.rdma.Dial(d.Node, d.Path)
		if err == nil {
			c.conns[connKey{d.Node, d.Path, false}] = conn
		}
		c.Policy.Selector.OnProbe(d.Node, err == nil, now)
	}
	return c.done
}
