package pssim

import (
	"fmt"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/ps"
)

// The RPC layer on the stack path (Config.RPC; the paper's applications
// reach ByteExpress through Archon, §4 and §7.2). The runner-free part
// (policy and replica sets, message framing, the op's retry rule, the
// bookkeeping of calls and the rpc/* reduction) is package ps's (its
// rpc.go), which berun's ps roles use too; this file wires it to the
// simulated hosts. Each client owns an
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
// and warmup included): package ps's, which berun's ps roles report too.
type RPCStats = ps.RPCStats

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
	s := pc.calls.Message(hdr)
	buf, err := pc.h.Allocate(n)
	if err != nil {
		return err
	}
	ps.PutRPCMessage(buf.Bytes(), hdr, s.Header)
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
	pc.finished(now, pc.calls.Tick(simhost.CoreTime(now)))
	pc.arm()
}

func (pc *psClient) rpcNow() time.Duration { return simhost.CoreTime(pc.now()) }

// call sends one of the machine's messages as an RPC.
func (pc *psClient) call(s ps.Send) {
	failed, err := pc.calls.Call(s, pc.rpcNow())
	if err != nil {
		pc.run.Fail(fmt.Errorf("client rpc call: %w", err))
	}
	if failed {
		if len(pc.failq) == 0 {
			pc.failAt = pc.now() + rpcErrorDelay
		}
		pc.failq = append(pc.failq, s.Header)
	}
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
	failed, err := pc.calls.Finished(done)
	if err != nil {
		pc.run.Fail(fmt.Errorf("client %w", err))
	}
	for _, h := range failed {
		pc.failed(now, h)
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
	rh, ph, err := ps.ParseRPCMessage(ev.Buf.Bytes()[:ev.Len])
	_ = h.Free(ev.Buf)
	now := h.Now()
	if err != nil {
		pc.run.Fail(fmt.Errorf("client rpc response: %w", err))
		return
	}
	server := -1
	if n := pc.run.be.Lookup(ev.Remote); n != nil {
		server = n.Index() - pc.run.firstServer
	}
	if pc.calls.Answer(rh, ph, server, now) {
		pc.response(now, ph, ev.Len-rpc.HeaderSize, nil)
	}
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
	p, err := ps.NewRPCPolicy(&r.cfg.Config, *r.cfg.RPC, i)
	if err != nil {
		return err
	}
	pc.rpc = rpc.NewClient(p, psDialer{pc}, nil)
	pc.calls = ps.NewRPCCalls(pc.rpc)
	pc.rtimer.Init(r.k, rpcTick{pc}, 0)
	return nil
}

// rpcAnswer answers a request that came through the RPC layer: the RPC
// header and the ps header echoed, then the reply (ps Server.RPCReply).
func (s *psServer) rpcAnswer(h *simhost.Host, ev byteexpress.Event) {
	r := s.run
	p := ev.Buf.Bytes()[:ev.Len]
	n, err := s.m.RPCReply(p)
	var buf byteexpress.Buffer
	if err == nil {
		buf, err = h.Allocate(n)
	}
	if err != nil {
		_ = h.Free(ev.Buf)
		r.Fail(fmt.Errorf("server rpc: %w", err))
		return
	}
	copy(buf.Bytes()[:ps.RPCEcho], p[:ps.RPCEcho])
	_ = h.Free(ev.Buf)
	if err := ev.Socket.Send(buf, n); err != nil {
		_ = h.Free(buf)
		r.Fail(err)
	}
}

// rpcResult sums the clients' RPC layers.
func (r *psRun) rpcResult() *RPCStats {
	var st RPCStats
	for _, pc := range r.clients {
		c := pc.calls.Result(r.cfg.RPC.Paths)
		st.Add(&c)
	}
	st.Paths = r.cfg.RPC.Paths
	return &st
}
