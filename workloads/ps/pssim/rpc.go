package pssim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/ps"
)

// The RPC layer on the stack path (Config.RPC; the paper's applications
// reach ByteExpress through Archon, §4 and §7.2). Each client owns an
// rpc.Client; every message the client's machine (ps.Client) asks for goes
// out as one call:
//
//   - the wire message is the 24-byte RPC header, then the ps header and
//     the rest of the machine's message (Send.Size), so it is
//     rpc.HeaderSize bytes longer than without the RPC layer; a server
//     answers with the RPC header echoed, the ps header echoed after it and
//     the reply size the machine (ps.Server) draws after that;
//   - the call's shard is the ps server the message goes to: a ps shard
//     group is the shards one server holds (ps.ShardServers), and its
//     replica set is that one server. The ps-cluster has no replicas (each
//     shard lives on exactly one server, as in the paper's Figure 1), so
//     there is no other replica to switch to; the ladder's steps are a
//     path change (a new socket to the same server: the core multiplexes it
//     onto the same engine, see rpc.SocketDialer) and then TCP fallback,
//     which is not given here, so a call whose ladder reaches it fails;
//   - fetches are idempotent and retried with the layer's policy (after Tr,
//     with probability RetryProb, at most MaxAttempts attempts); pushes are
//     not (the ps server does not deduplicate updates), so a push that
//     times out fails after Tr with rpc.ErrNotRetried (package rpc's doc);
//   - with one replica the ladder ends quickly: PathTries timeouts of a
//     server in a row change the path, the next one marks RDMA to it down
//     and moves to TCP fallback, which is not given, so from then on every
//     call to that server fails at once (rpc.ErrNoReplica) until a probe
//     (every ProbeInterval, 30 s by default) brings it back; a replicated service would switch
//     replicas instead (workloads/failover);
//   - the machine sees exactly one outcome per request: the first answer
//     (a late answer to an earlier attempt is dropped and counted as
//     stale), or, when the layer gives up, ps.Client.Failed.
//
// A call that the layer refuses at once (no usable replica: the server is
// quarantined) is handed to the machine as failed rpcErrorDelay later, one
// turn of the application's event loop, so a closed loop whose every call
// fails advances in time instead of spinning at one instant.
const rpcErrorDelay = sim.Microsecond

// RPCStats is what the clients' RPC layers did over the whole run (setup
// and warmup included), per operation ([0] fetch, [1] push) where it has
// an operation.
type RPCStats struct {
	Calls, Answered, Failed, Stale [2]int64
	// Retried counts the calls answered after more than one attempt.
	Retried [2]int64
	// Retries are the new attempts after a timeout, Resent every message
	// sent again (retries and re-sends after an engine error), Timeouts
	// the attempts whose Tr expired (retried or failed), summed over the
	// clients.
	Retries, Resent, Timeouts int64
	Outstanding               int64 // calls unfinished at the end
}

func opIndex(op byte) int {
	if op == ps.OpPush {
		return 1
	}
	return 0
}

// psDialer is the RDMA transport of one client's rpc.Client: node n is ps
// server n. The first dial of a server uses the socket connected during
// setup; a later one (after the layer closed it, or a path change) dials a
// new socket.
type psDialer struct{ pc *psClient }

type psConn struct {
	pc *psClient
	s  *byteexpress.Socket
}

func (d psDialer) Dial(node rpc.NodeID, _ int) (rpc.Conn, error) {
	pc := d.pc
	n := int(node)
	if n < 0 || n >= len(pc.socks) {
		return nil, fmt.Errorf("pssim: rpc: no server %d", n)
	}
	if s := pc.socks[n]; s != nil {
		pc.socks[n] = nil
		return &psConn{pc: pc, s: s}, nil
	}
	s, err := pc.h.Dial(pc.run.servers[n])
	if err != nil {
		return nil, err
	}
	return &psConn{pc: pc, s: s}, nil
}

// Send sends one attempt: hdr is the RPC header, the ps message follows.
func (c *psConn) Send(hdr []byte, n int) error {
	pc := c.pc
	s, ok := pc.calls[rpc.CallID(binary.LittleEndian.Uint64(hdr))]
	if !ok {
		s = pc.cur // the first attempt: Call has not returned its id yet
	}
	buf, err := pc.h.Allocate(n)
	if err != nil {
		return err
	}
	b := buf.Bytes()
	copy(b, hdr[:rpc.HeaderSize])
	s.Header.Put(b[rpc.HeaderSize:])
	if err := c.s.Send(buf, n); err != nil {
		_ = pc.h.Free(buf)
		return err
	}
	return nil
}

func (c *psConn) Close() { _ = c.s.Close() }

// rpcTick is a client's RPC timer: the layer's deadlines, and failures to
// hand to the machine.
type rpcTick struct{ c *psClient }

func (t rpcTick) OnEvent(now sim.Time, _ uint64) {
	pc := t.c
	if pc.run.stopped {
		return
	}
	if len(pc.failq) > 0 && now >= pc.failAt {
		q := pc.failq
		pc.failq = nil
		for _, h := range q {
			pc.failed(now, h)
		}
	}
	st := &pc.rpc.Policy.Tracker.Stats
	before := st.Retries + st.Failed
	pc.finished(now, pc.rpc.Tick(simhost.CoreTime(now)))
	pc.run.rpcTimeouts += int64(st.Retries + st.Failed - before)
	pc.arm()
}

func (pc *psClient) rpcNow() time.Duration { return simhost.CoreTime(pc.now()) }

// call sends one of the machine's messages as an RPC.
func (pc *psClient) call(s ps.Send) {
	r := pc.run
	op := opIndex(s.Header.Op)
	r.rpcStats.Calls[op]++
	pc.cur = s
	id, err := pc.rpc.Call(rpc.Request{Shard: s.Server, Idempotent: s.Header.Op == ps.OpFetch}, s.Header.Op, rpc.HeaderSize+s.Size, pc.rpcNow())
	if err != nil {
		if !errors.Is(err, rpc.ErrNoReplica) {
			r.Fail(fmt.Errorf("client rpc call: %w", err))
		}
		r.rpcStats.Failed[op]++
		if len(pc.failq) == 0 {
			pc.failAt = pc.now() + rpcErrorDelay
		}
		pc.failq = append(pc.failq, s.Header)
		pc.arm()
		return
	}
	pc.calls[id] = s
	pc.arm()
}

// arm sets the RPC timer for the layer's next deadline or a pending
// failure.
func (pc *psClient) arm() {
	at := sim.Never
	if d := pc.rpc.NextDeadline(); d != byteexpress.Never {
		at = simhost.SimTime(d)
	}
	if len(pc.failq) > 0 {
		at = min(at, pc.failAt)
	}
	if at != sim.Never {
		pc.rtimer.Set(max(at, pc.now()+1))
	}
}

// finished hands the calls the layer gave up on to the machine.
func (pc *psClient) finished(now sim.Time, done []rpc.Completion) {
	if len(done) == 0 {
		return
	}
	done = slices.Clone(done) // valid until the next call into the layer
	for _, c := range done {
		s, ok := pc.calls[c.ID]
		if !ok {
			continue
		}
		delete(pc.calls, c.ID)
		op := opIndex(s.Header.Op)
		if c.Err == nil { // not produced by Tick or an engine error; kept for safety
			pc.run.Fail(fmt.Errorf("client rpc: call %d finished without an answer or an error", c.ID))
			continue
		}
		pc.run.rpcStats.Failed[op]++
		pc.failed(now, s.Header)
	}
}

// failed tells the machine that the request with header h failed.
func (pc *psClient) failed(now sim.Time, h ps.Header) {
	out, err := pc.m.Failed(now, h)
	if err != nil {
		pc.run.Fail(fmt.Errorf("client rpc failure: %w", err))
		return
	}
	if !pc.run.stopped {
		pc.do(out)
	}
}

// rpcMessage is an answer through the RPC layer: the first answer to a
// call goes to the machine, a late one to an earlier attempt is dropped.
func (pc *psClient) rpcMessage(h *simhost.Host, ev byteexpress.Event) {
	p := ev.Buf.Bytes()[:ev.Len]
	rh, err := rpc.ParseHeader(p)
	var ph ps.Header
	if err == nil {
		ph, err = ps.ParseHeader(p[rpc.HeaderSize:])
	}
	_ = h.Free(ev.Buf)
	now := h.Now()
	if err != nil {
		pc.run.Fail(fmt.Errorf("client rpc response: %w", err))
		return
	}
	op := opIndex(rh.Op)
	c, ok := pc.rpc.OnResponse(rh, simhost.CoreTime(now))
	if !ok {
		pc.run.rpcStats.Stale[op]++
		pc.arm()
		return
	}
	delete(pc.calls, rh.Call)
	pc.run.rpcStats.Answered[op]++
	if c.Attempts > 1 {
		pc.run.rpcStats.Retried[op]++
	}
	pc.response(now, ph, ev.Len-rpc.HeaderSize, nil)
	pc.arm()
}

// rpcEvent handles a client's ByteExpress event with the RPC layer on.
func (pc *psClient) rpcEvent(h *simhost.Host, ev byteexpress.Event) {
	r := pc.run
	switch ev.Kind {
	case byteexpress.EvConnected:
		r.connected++
	case byteexpress.EvMessage:
		pc.rpcMessage(h, ev)
	case byteexpress.EvEngineError:
		// One per engine: the layer drops its connections to the server,
		// walks the ladder and re-sends the idempotent calls at once (the
		// sockets' EvSocketFailed would repeat it per socket).
		if n := r.be.Lookup(ev.Remote); n != nil && n.Index() >= r.firstServer {
			pc.finished(h.Now(), pc.rpc.OnEngineError(rpc.NodeID(n.Index()-r.firstServer), simhost.CoreTime(h.Now())))
		}
		pc.arm()
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		_ = h.Free(ev.Buf)
	}
}

// newRPC gives client pc its RPC layer (buildRDMA, after its sockets).
func (r *psRun) newRPC(pc *psClient, i int) error {
	svc := rpc.Service{Shards: make([][]rpc.Replica, r.cfg.Servers)}
	for s := range svc.Shards {
		svc.Shards[s] = []rpc.Replica{{Node: rpc.NodeID(s)}}
	}
	p, err := rpc.NewPolicy(*r.cfg.RPC, svc, 0, sim.Stream(r.cfg.Seed, fmt.Sprintf("ps/rpc%d", i)))
	if err != nil {
		return err
	}
	pc.rpc = rpc.NewClient(p, psDialer{pc}, nil)
	pc.calls = map[rpc.CallID]ps.Send{}
	pc.rtimer.Init(r.k, rpcTick{pc}, 0)
	return nil
}

// rpcServer answers a request that came through the RPC layer: the RPC
// header and the ps header echoed, then the reply.
func (s *psServer) rpcAnswer(h *simhost.Host, ev byteexpress.Event) {
	r := s.run
	p := ev.Buf.Bytes()[:ev.Len]
	_, err := rpc.ParseHeader(p)
	var hd ps.Header
	if err == nil {
		hd, err = ps.ParseHeader(p[rpc.HeaderSize:])
	}
	n := 0
	if err == nil {
		n, err = s.m.Reply(hd, ev.Len-rpc.HeaderSize)
	}
	const echo = rpc.HeaderSize + ps.HeaderSize
	var buf byteexpress.Buffer
	if err == nil {
		buf, err = h.Allocate(rpc.HeaderSize + n)
	}
	if err != nil {
		_ = h.Free(ev.Buf)
		r.Fail(fmt.Errorf("server rpc: %w", err))
		return
	}
	copy(buf.Bytes()[:echo], p[:echo])
	_ = h.Free(ev.Buf)
	if err := ev.Socket.Send(buf, rpc.HeaderSize+n); err != nil {
		_ = h.Free(buf)
		r.Fail(err)
	}
}

// rpcResult sums the clients' RPC layers.
func (r *psRun) rpcResult() *RPCStats {
	st := r.rpcStats
	st.Timeouts = r.rpcTimeouts
	for _, pc := range r.clients {
		st.Retries += int64(pc.rpc.Policy.Tracker.Stats.Retries)
		st.Resent += int64(pc.rpc.Resent)
		st.Outstanding += int64(pc.rpc.Outstanding())
	}
	return &st
}
