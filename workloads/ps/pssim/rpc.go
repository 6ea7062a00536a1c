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
//   - the call's shard is the ps shard group the message is for: the
//     shards ps.ShardServers places on server g form group g, and its
//     replica set is ps.ReplicaSet(g, Replicas, Servers): server g (the
//     primary) and, with Replicas R > 1, servers g+1..g+R-1 mod Servers.
//     The replica of rank k is given mini-pod k (the ps-cluster's fabric
//     has none; the rank stands in for the distance the selector orders
//     by), so every client prefers the primary and moves on only when the
//     ladder or the quarantine says so. With R 1 (the default, the paper's
//     Figure 1) the group has no other replica and the ladder ends at TCP
//     fallback, which is not given, so a call whose ladder reaches it
//     fails;
//   - fetches and pushes alike go to the replica the selector currently
//     chooses for the group: the paper's Archon selects "a nearby replica
//     in another mini-pod" when reconnecting does not help and lets "other
//     replicas serve requests" while a node is excluded (§7.2), without
//     singling out updates; how replicas keep each other's parameters
//     consistent is not in the paper and not modelled (no server-to-server
//     traffic), so a push answered by a replica counts as applied;
//   - fetches are idempotent and retried with the layer's policy (after Tr,
//     with probability RetryProb, at most MaxAttempts attempts), each
//     retry going where the selector then points; pushes are not (the ps
//     server does not deduplicate updates), so a push that times out fails
//     after Tr with rpc.ErrNotRetried (package rpc's doc), and the
//     timeout still walks the ladder for the pushes after it;
//   - the ladder's first step, a path change, is real: path p of a server
//     is its own engine (byteexpress Endpoint.DialPath: an RC QP whose
//     flow label pins its frames to the p-th equal-cost uplink, see
//     fabric.Packet.Path), so it leaves the client's leaf on another spine.
//     The sockets connected during setup are path 0's. A client and a
//     server are on different leaves, joined by one path per spine, so
//     the layer's Paths is capped at the spine count (as in
//     workloads/failover): with one spine there is no other path and the
//     ladder skips the step (rpc Selector.Stats.PathSkips). A path change
//     cannot help when the server itself is unreachable (a black-holed
//     host port): every path ends at the same port;
//   - when PathTries path changes have not helped (the next timeout of
//     the same server in a row), RDMA to it is marked down and the group
//     moves to its next replica over RDMA (R > 1), or,
//     with none, to TCP fallback, which is not given, so from then on
//     every call to that group fails at once (rpc.ErrNoReplica) until a
//     probe (every ProbeInterval, 30 s by default) brings the server back;
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
	// ByReplica counts the calls answered by a server other than their
	// shard group's primary (Config.Replicas > 1).
	ByReplica [2]int64
	// RetriedWait is the shortest time from a call's first send to its
	// answer among the calls answered after more than one attempt (0:
	// none): at least Tr, the first attempt's timeout.
	RetriedWait [2]sim.Time
	// Retries are the new attempts after a timeout, Resent every message
	// sent again (retries and re-sends after an engine error), Timeouts
	// the attempts whose Tr expired (retried or failed), summed over the
	// clients.
	Retries, Resent, Timeouts int64
	// PathChanges and PathSkips are the ladder's first step, summed over
	// the clients: path changes made, and skipped for want of a second
	// path (one spine).
	PathChanges, PathSkips int64
	// Paths is the paths per server the layer had (its Config.Paths,
	// capped at the spine count).
	Paths       int
	Outstanding int64 // calls unfinished at the end
}

func opIndex(op byte) int {
	if op == ps.OpPush {
		return 1
	}
	return 0
}

// psDialer is the RDMA transport of one client's rpc.Client: node n is ps
// server n, and path p its p-th path (Endpoint.DialPath, flow label
// byteexpress.PathLabel(p)). The first dial of a server on path 0 uses the
// socket connected during setup (on path 0); every other dial opens a new
// socket on that path's engine (created if there is none: a new RC QP,
// so a path change is a new connection).
type psDialer struct{ pc *psClient }

type psConn struct {
	pc *psClient
	s  *byteexpress.Socket
}

func (d psDialer) Dial(node rpc.NodeID, path int) (rpc.Conn, error) {
	pc := d.pc
	n := int(node)
	if n < 0 || n >= len(pc.socks) {
		return nil, fmt.Errorf("pssim: rpc: no server %d", n)
	}
	if s := pc.socks[n]; s != nil && path == 0 {
		pc.socks[n] = nil
		return &psConn{pc: pc, s: s}, nil
	}
	s, err := pc.h.Endpoint().DialPath(pc.run.servers[n].Addr(), path)
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
	st := &pc.run.rpcStats
	if s, ok := pc.calls[rh.Call]; ok {
		if n := pc.run.be.Lookup(ev.Remote); n != nil && n.Index()-pc.run.firstServer != s.Server {
			st.ByReplica[op]++
		}
	}
	delete(pc.calls, rh.Call)
	st.Answered[op]++
	if c.Attempts > 1 {
		st.Retried[op]++
		if w := now - ph.Sent; st.RetriedWait[op] == 0 || w < st.RetriedWait[op] {
			st.RetriedWait[op] = w
		}
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
	for g := range svc.Shards {
		for k, n := range ps.ReplicaSet(g, r.cfg.Replicas, r.cfg.Servers) {
			svc.Shards[g] = append(svc.Shards[g], rpc.Replica{Node: rpc.NodeID(n), MiniPod: k})
		}
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
	st.Paths = r.cfg.RPC.Paths
	for _, pc := range r.clients {
		st.Retries += int64(pc.rpc.Policy.Tracker.Stats.Retries)
		st.PathChanges += int64(pc.rpc.Policy.Selector.Stats.PathChanges)
		st.PathSkips += int64(pc.rpc.Policy.Selector.Stats.PathSkips)
		st.Resent += int64(pc.rpc.Resent)
		st.Outstanding += int64(pc.rpc.Outstanding())
	}
	return &st
}
