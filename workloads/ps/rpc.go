package ps

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// The RPC layer (scenario key workload.rpc; the paper's applications reach
// ByteExpress through Archon, §4 and §7.2) as both runners use it: besim's
// (package pssim, rpc.go, which says how the simulation wires it) and
// berun's ps roles (over the core on verbs). What is here is the part that
// does not depend on the runner: the policy and its replica sets, the wire
// message, which operations are retried, the bookkeeping of one client's
// calls (RPCCalls) and the reduction of what the layers did to the rpc/*
// metrics (ReduceRPC).
//
//   - The wire message of a call is the 24-byte RPC header, then the ps
//     header and the rest of the machine's message (Send.Size), so it is
//     rpc.HeaderSize bytes longer than without the RPC layer; a server
//     answers with the RPC header echoed, the ps header echoed after it
//     and the reply size Server.Reply draws after that (RPCReply).
//   - A call's shard is the ps shard group its message is for: the shards
//     ShardServers places on server g form group g, and its replica set is
//     ReplicaSet(g, Replicas, Servers), the primary first; the replica of
//     rank k is given mini-pod k, so every client prefers the primary and
//     moves on only when the ladder or the quarantine says so (RPCService).
//   - Fetches are idempotent and retried with the layer's policy; pushes
//     are not (the server does not deduplicate updates), so a push that
//     times out fails with rpc.ErrNotRetried (Idempotent).
//   - The machine sees exactly one outcome per request: the first answer
//     (a late answer to an earlier attempt is dropped and counted stale),
//     or, when the layer gives up, Client.Failed.

// RPCConfig is the RPC layer's policy for the scenario's workload.rpc
// (nil: rpc off).
func RPCConfig(w *scenarios.Workload) *rpc.Config {
	if !w.RPCOn() {
		return nil
	}
	rp := w.RPC
	rc := rpc.DefaultConfig()
	rc.ConnTimeout, rc.RequestTimeout = coreTime(rp.ConnectTimeout.Time()), coreTime(rp.RequestTimeout.Time())
	rc.RetryProb, rc.MaxAttempts = rp.RetryProb.Float64(), rp.MaxAttempts
	rc.Window, rc.ProbeInterval = coreTime(rp.QuarantineWindow.Time()), coreTime(rp.ProbeInterval.Time())
	rc.MaxConnFailures, rc.MaxReqFailures = rp.MaxConnFailures, rp.MaxReqFailures
	return &rc
}

func coreTime(t sim.Time) time.Duration { return time.Duration(t / sim.Nanosecond) }

// RPCService is the layer's service: one shard per shard group g (server
// g's shards), served by ReplicaSet(g, replicas, servers), the replica of
// rank k in mini-pod k (nodes are server indices).
func RPCService(replicas, servers int) rpc.Service {
	svc := rpc.Service{Shards: make([][]rpc.Replica, servers)}
	for g := range svc.Shards {
		for k, n := range ReplicaSet(g, replicas, servers) {
			svc.Shards[g] = append(svc.Shards[g], rpc.Replica{Node: rpc.NodeID(n), MiniPod: k})
		}
	}
	return svc
}

// RPCStream names the random stream of client i's RPC layer (its retry
// draws).
func RPCStream(i int) string { return fmt.Sprintf("ps/rpc%d", i) }

// NewRPCPolicy is client i's RPC policy under rc for cfg (prepared).
func NewRPCPolicy(cfg *Config, rc rpc.Config, i int) (*rpc.Policy, error) {
	return rpc.NewPolicy(rc, RPCService(cfg.Replicas, cfg.Servers), 0, sim.Stream(cfg.Seed, RPCStream(i)))
}

// Idempotent reports whether requests of op are retried by the layer:
// fetches are, pushes are not.
func Idempotent(op byte) bool { return op == OpFetch }

// RPCEcho is what a server's answer through the RPC layer echoes of the
// request: the RPC header and the ps header.
const RPCEcho = rpc.HeaderSize + HeaderSize

// PutRPCMessage writes a call's message head into b (at least RPCEcho
// bytes): the RPC header hdr, then h.
func PutRPCMessage(b []byte, hdr []byte, h Header) {
	copy(b[:rpc.HeaderSize], hdr[:rpc.HeaderSize])
	h.Put(b[rpc.HeaderSize:])
}

// ParseRPCMessage reads the RPC header and the ps header of a message
// through the RPC layer (a request or its answer).
func ParseRPCMessage(p []byte) (rpc.Header, Header, error) {
	rh, err := rpc.ParseHeader(p)
	if err != nil {
		return rh, Header{}, err
	}
	h, err := ParseHeader(p[rpc.HeaderSize:])
	return rh, h, err
}

// RPCReply accounts request p received through the RPC layer and returns
// the size of its answer: the RPC header, then what Reply answers the ps
// message (the answer starts with p's first RPCEcho bytes).
func (s *Server) RPCReply(p []byte) (int, error) {
	_, h, err := ParseRPCMessage(p)
	if err != nil {
		return 0, err
	}
	size, err := s.Reply(h, len(p)-rpc.HeaderSize)
	if err != nil {
		return 0, err
	}
	return rpc.HeaderSize + size, nil
}

// RPCStats is what clients' RPC layers did over a whole run (setup and
// warmup included), per operation ([0] fetch, [1] push) where it has an
// operation. Stats of several clients add up (Add).
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
	// path.
	PathChanges, PathSkips int64
	// Paths is the paths per server the layer had (its Config.Paths,
	// capped at what the runner offers).
	Paths       int
	Outstanding int64 // calls unfinished at the end
}

// OpIndex is op's index in RPCStats' per-operation counts.
func OpIndex(op byte) int {
	if op == OpPush {
		return 1
	}
	return 0
}

// Add adds o's counts to q (RetriedWait: the shorter; Paths: the larger).
func (q *RPCStats) Add(o *RPCStats) {
	for i := range 2 {
		q.Calls[i] += o.Calls[i]
		q.Answered[i] += o.Answered[i]
		q.Failed[i] += o.Failed[i]
		q.Stale[i] += o.Stale[i]
		q.Retried[i] += o.Retried[i]
		q.ByReplica[i] += o.ByReplica[i]
		if w := o.RetriedWait[i]; w > 0 && (q.RetriedWait[i] == 0 || w < q.RetriedWait[i]) {
			q.RetriedWait[i] = w
		}
	}
	q.Retries += o.Retries
	q.Resent += o.Resent
	q.Timeouts += o.Timeouts
	q.PathChanges += o.PathChanges
	q.PathSkips += o.PathSkips
	q.Paths = max(q.Paths, o.Paths)
	q.Outstanding += o.Outstanding
}

// Sum is the counts over both operations: calls, answered, failed,
// stale, answered by a replica.
func (q *RPCStats) Sum() (calls, answered, failed, stale, byReplica int64) {
	for i := range 2 {
		calls += q.Calls[i]
		answered += q.Answered[i]
		failed += q.Failed[i]
		stale += q.Stale[i]
		byReplica += q.ByReplica[i]
	}
	return
}

// RPCCalls is one client's bookkeeping of its calls through its
// rpc.Client: which machine message each call carries, and the counts of
// RPCStats. Its owner (a runner) sends the machine's messages with Call,
// gives the layer's transport the ps header of each attempt (Message),
// hands answers to Answer, the layer's timer to Tick and the calls the
// layer gave up on (Tick's, or rpc.Client.OnEngineError's) to Finished,
// and tells the machine what they return. Not safe for concurrent use.
type RPCCalls struct {
	Stats RPCStats
	c     *rpc.Client
	calls map[rpc.CallID]Send
	cur   Send
}

// NewRPCCalls keeps the books of c's calls.
func NewRPCCalls(c *rpc.Client) *RPCCalls {
	return &RPCCalls{c: c, calls: map[rpc.CallID]Send{}}
}

// Client is the layer whose calls k tracks.
func (k *RPCCalls) Client() *rpc.Client { return k.c }

// Call sends the machine's message s as a call at now. failed true: the
// layer refused it at once (no usable replica: rpc.ErrNoReplica, or err,
// a fault of the layer itself), and the machine must be told
// (Client.Failed) that the request failed.
func (k *RPCCalls) Call(s Send, now time.Duration) (failed bool, err error) {
	op := OpIndex(s.Header.Op)
	k.Stats.Calls[op]++
	k.cur = s
	id, err := k.c.Call(rpc.Request{Shard: s.Server, Idempotent: Idempotent(s.Header.Op)}, s.Header.Op, rpc.HeaderSize+s.Size, now)
	if err != nil {
		k.Stats.Failed[op]++
		if errors.Is(err, rpc.ErrNoReplica) {
			err = nil
		}
		return true, err
	}
	k.calls[id] = s
	return false, nil
}

// Message is the machine message an attempt with RPC header hdr carries
// (the first attempt's call has no id yet while rpc.Client.Call sends it:
// the message Call is sending).
func (k *RPCCalls) Message(hdr []byte) Send {
	if s, ok := k.calls[rpc.CallID(binary.LittleEndian.Uint64(hdr))]; ok {
		return s
	}
	return k.cur
}

// Tick runs the layer's timer at now (rpc.Client.Tick), counting the
// attempts that timed out; it returns the calls the layer gave up on
// (for Finished).
func (k *RPCCalls) Tick(now time.Duration) []rpc.Completion {
	st := &k.c.Policy.Tracker.Stats
	before := st.Retries + st.Failed
	done := k.c.Tick(now)
	k.Stats.Timeouts += int64(st.Retries + st.Failed - before)
	return done
}

// Finished takes the calls the layer gave up on and returns the headers
// of their requests, in order, for Client.Failed. A completion without an
// error (the layer reports answers through OnResponse, never here) is
// a fault, returned as err.
func (k *RPCCalls) Finished(done []rpc.Completion) (failed []Header, err error) {
	for _, c := range done {
		s, ok := k.calls[c.ID]
		if !ok {
			continue
		}
		delete(k.calls, c.ID)
		if c.Err == nil {
			err = errors.Join(err, fmt.Errorf("rpc: call %d finished without an answer or an error", c.ID))
			continue
		}
		k.Stats.Failed[OpIndex(s.Header.Op)]++
		failed = append(failed, s.Header)
	}
	return failed, err
}

// Answer takes an answer with RPC header rh and ps header h from server
// (-1: unknown) at now (the machine's clock) and reports whether it is
// the call's first (then the machine gets it: Client.Response); a late
// answer to an earlier attempt is counted stale.
func (k *RPCCalls) Answer(rh rpc.Header, h Header, server int, now sim.Time) bool {
	op := OpIndex(rh.Op)
	c, ok := k.c.OnResponse(rh, coreTime(now))
	if !ok {
		k.Stats.Stale[op]++
		return false
	}
	st := &k.Stats
	if s, ok := k.calls[rh.Call]; ok && server >= 0 && server != s.Server {
		st.ByReplica[op]++
	}
	delete(k.calls, rh.Call)
	st.Answered[op]++
	if c.Attempts > 1 {
		st.Retried[op]++
		if w := now - h.Sent; st.RetriedWait[op] == 0 || w < st.RetriedWait[op] {
			st.RetriedWait[op] = w
		}
	}
	return true
}

// Result is the client's RPCStats at the end: the counts, and its layer's
// retries, re-sends, path steps and outstanding calls; paths is the paths
// per server its layer had.
func (k *RPCCalls) Result(paths int) RPCStats {
	st := k.Stats
	c := k.c
	st.Paths = paths
	st.Retries = int64(c.Policy.Tracker.Stats.Retries)
	st.PathChanges = int64(c.Policy.Selector.Stats.PathChanges)
	st.PathSkips = int64(c.Policy.Selector.Stats.PathSkips)
	st.Resent = int64(c.Resent)
	st.Outstanding = int64(c.Outstanding())
	return st
}

// ReduceRPC adds the RPC layer's table, rpc/* metrics, user/failed and a
// note to r: q summed over the clients, rc their policy, replicas the
// scenario's, usersFailed the user requests completed with a failed fetch.
func ReduceRPC(r *report.Result, q *RPCStats, rc rpc.Config, replicas int, usersFailed int64) {
	rt := report.Table{Name: "rpc", Title: fmt.Sprintf("RPC layer (byteexpress/rpc, paper §7.2; Tr %v, retry probability %g, at most %d attempts; fetches idempotent, pushes not; %d replicas per shard group), whole run per client call", rc.RequestTimeout, rc.RetryProb, rc.MaxAttempts, max(replicas, 1)),
		KeyName: "op", Columns: []report.Column{{Name: "calls"}, {Name: "answered"}, {Name: "failed"}, {Name: "retried"}, {Name: "stale answers"}, {Name: "answered by a replica"}}}
	for i, op := range []string{"fetch", "push"} {
		rt.AddRow(op, float64(q.Calls[i]), float64(q.Answered[i]), float64(q.Failed[i]), float64(q.Retried[i]), float64(q.Stale[i]), float64(q.ByReplica[i]))
	}
	calls, _, failed, stale, byReplica := q.Sum()
	r.Add("rpc/calls", float64(calls), "")
	r.Add("rpc/retries", float64(q.Retries), "")
	r.Add("rpc/resent", float64(q.Resent), "")
	r.Add("rpc/timeouts", float64(q.Timeouts), "")
	r.Add("rpc/failed", float64(failed), "")
	r.Add("rpc/stale", float64(stale), "")
	r.Add("rpc/outstanding", float64(q.Outstanding), "")
	r.Add("rpc/path_changes", float64(q.PathChanges), "")
	r.Add("rpc/path_skips", float64(q.PathSkips), "")
	r.Add("rpc/replica_answers", float64(byReplica), "")
	r.Add("user/failed", float64(usersFailed), "")
	r.Tables = append(r.Tables, rt)
	r.Notes = append(r.Notes, fmt.Sprintf("RPC layer on: every fetch and push is a call (24-byte RPC header before the ps message; %d replicas per shard group, the primary first; %d paths per server); %d timeouts, %d retries, %d re-sends, %d path changes (%d skipped: one path), %d calls failed, %d answered by a replica other than the primary (%d user requests completed with a failed fetch: user/failed, not in user's completions)", max(replicas, 1), q.Paths, q.Timeouts, q.Retries, q.Resent, q.PathChanges, q.PathSkips, failed, byReplica, usersFailed))
}
