package role

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/workloads/ps"
)

// A ps-client with the scenario's workload.rpc on sends every fetch and
// push as a call of the RPC layer (byteexpress/rpc), as besim's pssim does
// (its rpc.go): the client's machine (ps.Client) is driven by one
// goroutine as in the fan-out runner, and each message it asks for goes
// through an rpc.Client with package ps's bookkeeping (ps.RPCCalls): the
// RPC header, then the ps header, on a ByteExpress socket of the core on
// verbs; shard group g's replica set is ps.ReplicaSet over the client's
// peers, which the plan gives in server order (peer i is server i); fetches
// are retried after Tr, pushes are not; a call the layer gives up on
// reaches the machine as ps.Client.Failed. The layer's transport is the
// failover roles' (a socket per node and path, Endpoint.DialPath: path p
// is its own engine, an RC QP whose flow label is the path's, so on a
// fabric with ECMP a path change may take another uplink; Paths is the
// scenario's, not capped as besim caps it at the spine count). The
// sockets dialled on path 0 before the start are the layer's first
// connections (as in besim). Only over verbs: over kernel TCP the role
// refuses rpc (newFan).
//
// At the end the client stops its machine, waits until every call has its
// outcome (an answer or a failure), then sends each server the fan-out
// runner's end marker on a new socket and checks the server's count of
// its requests against the attempts it sent there: exactly when no
// attempt timed out and no engine failed (otherwise a message can still
// be on its way on another path, or lost with its engine, and a
// difference is noted, not an error).

// psRPC is a ps-cluster's RPC layer for its roles.
type psRPC struct {
	cfg     *ps.Config
	rc      rpc.Config
	shardOf []int
}

// psrEv is what the I/O threads hand the client's loop.
type psrEv struct {
	srv   int
	rh    rpc.Header
	ph    ps.Header
	n     int
	at    time.Time
	err   error // an engine failure of server srv
	bad   error // a malformed message
	end   bool  // an end-marker answer: count is the server's
	count int64
}

// psrDialer is the RPC layer's transport: node i is peer (server) i.
type psrDialer struct {
	n     *beNode
	addr  []byteexpress.Addr
	first []*byteexpress.Socket // dialled on path 0 before the start
	calls *ps.RPCCalls
	sent  []int64 // attempts sent to each server
}

type psrConn struct {
	d   *psrDialer
	srv int
	s   *byteexpress.Socket
}

func (d *psrDialer) Dial(node rpc.NodeID, path int) (rpc.Conn, error) {
	i := int(node)
	if i < 0 || i >= len(d.addr) {
		return nil, fmt.Errorf("rpc: no server %d", i)
	}
	if s := d.first[i]; s != nil && path == 0 {
		d.first[i] = nil
		return &psrConn{d: d, srv: i, s: s}, nil
	}
	s, err := d.n.ep.DialPath(d.addr[i], path)
	if err != nil {
		return nil, err
	}
	return &psrConn{d: d, srv: i, s: s}, nil
}

// Send sends one attempt: the RPC header hdr, then the ps message the
// call carries, n bytes in all, from registered memory. A socket the core
// closed because its engine failed (the loop hears of it a moment later)
// takes the attempt as a dead connection would, as in the failover roles
// (foBEDialer): the engine error re-sends it, or Tr does.
func (c *psrConn) Send(hdr []byte, n int) error {
	d := c.d
	buf, err := d.n.ep.Allocate(n)
	if err != nil {
		return err
	}
	ps.PutRPCMessage(buf.Bytes(), hdr, d.calls.Message(hdr).Header)
	if err := c.s.Send(buf, n); err != nil {
		_ = d.n.ep.Free(buf)
		if errors.Is(err, byteexpress.ErrClosed) {
			return nil
		}
		return err
	}
	d.sent[c.srv]++
	return nil
}

func (c *psrConn) Close() { _ = c.s.Close() }

// rpcFailDelay is how long after a call the layer refused at once the
// machine hears of it (besim's rpcErrorDelay: one turn of the loop), so a
// loop whose every call fails does not spin.
const rpcFailDelay = 10 * time.Microsecond

func (r *fanRole) runPSRPC(ctx context.Context, spec Spec, peers PeerMap) (Result, error) {
	pw := r.w.rpc
	n := r.node
	res := Result{Metrics: map[string]float64{}}
	d := &psrDialer{n: n, addr: make([]byteexpress.Addr, len(spec.Peers)), first: make([]*byteexpress.Socket, len(spec.Peers)),
		sent: make([]int64, len(spec.Peers))}
	index := map[byteexpress.Addr]int{}
	for i, id := range spec.Peers {
		p, ok := peers[id]
		if !ok || p.Addr == "" {
			return res, fmt.Errorf("peer %s has no exchange address", id)
		}
		n.mu.Lock()
		n.peers[byteexpress.Addr(id)] = p.Addr
		n.mu.Unlock()
		d.addr[i] = byteexpress.Addr(id)
		index[byteexpress.Addr(id)] = i
	}
	hl := r.w.headLen
	in := make(chan psrEv, 4096)
	quit := make(chan struct{})
	defer close(quit)
	n.setHandler(func(ev byteexpress.Event) {
		i, known := index[ev.Remote]
		e := psrEv{srv: i, at: time.Now()}
		switch ev.Kind {
		case byteexpress.EvMessage:
			p := ev.Buf.Bytes()[:ev.Len]
			e.n = ev.Len
			if fanEnd(p) {
				e.end = true
				if len(p) >= hl+fanEndLen {
					e.count = int64(binary.LittleEndian.Uint64(p[hl:]))
				} else {
					e.bad = fmt.Errorf("an end-marker answer of %d bytes", len(p))
				}
			} else {
				e.rh, e.ph, e.bad = ps.ParseRPCMessage(p)
			}
			_ = n.ep.Free(ev.Buf)
		case byteexpress.EvEngineError:
			// One per engine; the sockets' EvSocketFailed would walk
			// the ladder again for the same failure.
			e.err = fmt.Errorf("%v: %v", ev.Kind, ev.Err)
		case byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
			_ = n.ep.Free(ev.Buf)
			return
		default:
			return
		}
		if !known {
			return
		}
		select {
		case in <- e:
		case <-quit:
		}
	})
	for i, a := range d.addr {
		s, err := n.ep.DialPath(a, 0)
		if err != nil {
			return res, fmt.Errorf("dial %s: %w", a, err)
		}
		d.first[i] = s
	}
	pol, err := ps.NewRPCPolicy(pw.cfg, pw.rc, r.idx)
	if err != nil {
		return res, err
	}
	calls := ps.NewRPCCalls(rpc.NewClient(pol, d, nil))
	d.calls = calls
	st := ps.NewStats()
	m := ps.NewClient(pw.cfg, r.idx, pw.shardOf, st)
	cm := &psClientM{m: m, st: st}
	l := &psrLoop{m: m, calls: calls, base: spec.Start}
	if l.base.IsZero() {
		l.base = time.Now()
	}
	st.SetInterval(r.w.warmup, sim.Time(spec.Duration.Nanoseconds())*sim.Nanosecond)
	runErr := l.run(ctx, spec, in)
	engineErrs := l.engineErrs
	if runErr == nil {
		runErr = l.finish(ctx, d, in, hl)
	}
	q := calls.Result(pw.rc.Paths)
	c, answered, failed, stale, byReplica := q.Sum()
	res.Metrics["requests"] = float64(c)
	res.Metrics["responses"] = float64(answered)
	res.Metrics["failed"] = float64(failed)
	res.Metrics["lost"] = float64(c - answered - failed)
	res.Metrics["rpc_calls"], res.Metrics["rpc_answered"], res.Metrics["rpc_failed"] = float64(c), float64(answered), float64(failed)
	res.Metrics["rpc_outstanding"], res.Metrics["rpc_stale"] = float64(q.Outstanding), float64(stale)
	res.Metrics["rpc_retries"], res.Metrics["rpc_timeouts"], res.Metrics["rpc_resent"] = float64(q.Retries), float64(q.Timeouts), float64(q.Resent)
	res.Metrics["rpc_retried"] = float64(q.Retried[0] + q.Retried[1])
	res.Metrics["rpc_replica_answers"] = float64(byReplica)
	res.Metrics["rpc_path_changes"], res.Metrics["engine_errors"] = float64(q.PathChanges), float64(engineErrs)
	var sent int64
	for _, s := range d.sent {
		sent += s
	}
	res.Metrics["sent"] = float64(sent)
	cm.result(&res)
	det := res.Detail.(*PSDetail)
	det.RPC, det.RPCConfig, det.Replicas, det.UsersFailed = &q, &pw.rc, pw.cfg.Replicas, st.UsersFailed
	res.Notes = append(res.Notes, l.notes...)
	return res, errors.Join(append(l.errs, runErr)...)
}

// psrLoop is a ps-client's loop with the RPC layer.
type psrLoop struct {
	m          *ps.Client
	calls      *ps.RPCCalls
	base       time.Time
	tick       *time.Timer // the machine's timer
	rtick      *time.Timer // the layer's deadline, or failq
	failq      []ps.Header
	failAt     time.Time
	engineErrs int64
	errs       []error // faults of the layer or the machine (the first few)
	notes      []string
}

func (l *psrLoop) now(t time.Time) sim.Time {
	return sim.Time(t.Sub(l.base).Nanoseconds()) * sim.Nanosecond
}

func coreNow(t sim.Time) time.Duration { return time.Duration(t / sim.Nanosecond) }

func (l *psrLoop) fail(err error) {
	if len(l.errs) < 8 {
		l.errs = append(l.errs, err)
	}
}

// do performs what the machine asked for: each message as a call, then
// its timer.
func (l *psrLoop) do(out *ps.Out, now sim.Time) {
	for _, s := range out.Sends {
		failed, err := l.calls.Call(s, coreNow(now))
		if err != nil {
			l.fail(fmt.Errorf("rpc call: %w", err))
		}
		if failed {
			if len(l.failq) == 0 {
				l.failAt = time.Now().Add(rpcFailDelay)
			}
			l.failq = append(l.failq, s.Header)
		}
	}
	if out.SetTimer {
		l.tick.Reset(time.Until(l.base.Add(time.Duration(out.Timer / sim.Nanosecond))))
	}
}

// failed tells the machine of the calls that failed.
func (l *psrLoop) failed(hs []ps.Header, now sim.Time) {
	for _, h := range hs {
		out, err := l.m.Failed(now, h)
		if err != nil {
			l.fail(fmt.Errorf("rpc failure: %w", err))
			continue
		}
		l.do(out, now)
	}
}

// finished hands the calls the layer gave up on to the machine.
func (l *psrLoop) finished(done []rpc.Completion, now sim.Time) {
	if len(done) == 0 {
		return
	}
	hs, err := l.calls.Finished(done)
	if err != nil {
		l.fail(err)
	}
	l.failed(hs, now)
}

// arm sets the layer's timer for its next deadline or a pending failure.
func (l *psrLoop) arm() {
	at := time.Time{}
	if dl := l.calls.Client().NextDeadline(); dl != byteexpress.Never {
		at = l.base.Add(dl)
	}
	if len(l.failq) > 0 && (at.IsZero() || l.failAt.Before(at)) {
		at = l.failAt
	}
	if !at.IsZero() {
		l.rtick.Reset(time.Until(at))
	}
}

func (l *psrLoop) run(ctx context.Context, spec Spec, in <-chan psrEv) error {
	end := time.NewTimer(time.Until(l.base.Add(spec.Duration)))
	defer end.Stop()
	l.tick, l.rtick = time.NewTimer(time.Hour), time.NewTimer(time.Hour)
	l.tick.Stop()
	l.rtick.Stop()
	defer l.tick.Stop()
	defer l.rtick.Stop()
	t := l.now(time.Now())
	l.do(l.m.Start(t), t)
	l.arm()
	stopping := false
	for {
		if stopping && l.m.Idle() && len(l.failq) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			_, answered, failed, _, _ := l.calls.Stats.Sum()
			return fmt.Errorf("stopped (%v) with %d calls answered, %d failed, %d outstanding", context.Cause(ctx), answered, failed, l.calls.Client().Outstanding())
		case <-end.C:
			stopping = true
			l.m.Stop(l.now(time.Now()))
		case <-l.tick.C:
			t := l.now(time.Now())
			l.do(l.m.Tick(t), t)
		case <-l.rtick.C:
			t := l.now(time.Now())
			if len(l.failq) > 0 && !time.Now().Before(l.failAt) {
				q := l.failq
				l.failq = nil
				l.failed(q, t)
			}
			l.finished(l.calls.Tick(coreNow(t)), t)
		case e := <-in:
			t := l.now(e.at)
			switch {
			case e.bad != nil:
				l.fail(fmt.Errorf("server %d: %w", e.srv, e.bad))
			case e.end:
				l.fail(fmt.Errorf("server %d: an end-marker answer before the end", e.srv))
			case e.err != nil:
				l.engineErrs++
				l.notes = append(l.notes, fmt.Sprintf("server %d: %v", e.srv, e.err))
				l.finished(l.calls.Client().OnEngineError(rpc.NodeID(e.srv), coreNow(t)), t)
			case l.calls.Answer(e.rh, e.ph, e.srv, t):
				out, err := l.m.Response(t, e.ph, e.n-rpc.HeaderSize)
				if err != nil {
					l.fail(fmt.Errorf("server %d: %w", e.srv, err))
					continue
				}
				l.do(out, t)
			}
		}
		l.arm()
	}
}

// finish sends every server the end marker on a new socket and checks its
// count of this client's requests against the attempts sent to it.
func (l *psrLoop) finish(ctx context.Context, d *psrDialer, in <-chan psrEv, hl int) error {
	exact := l.calls.Stats.Timeouts == 0 && l.engineErrs == 0
	var errs []error
	// ends[i] carries server i's count; closing it once the count is in
	// lets the server close its endpoint (it lingers until then).
	ends := make([]*byteexpress.Socket, len(d.addr))
	defer func() {
		for _, s := range ends {
			if s != nil {
				_ = s.Close()
			}
		}
	}()
	for i, a := range d.addr {
		s, err := d.n.ep.Dial(a)
		if err == nil {
			ends[i] = s
			err = beConn{n: d.n, sock: s}.WriteMsg(endMarker(hl))
		}
		if err != nil {
			return fmt.Errorf("end marker to server %d: %w", i, err)
		}
	}
	wait := time.NewTimer(helloTimeout)
	defer wait.Stop()
	done := make([]bool, len(d.addr))
	for left := len(d.addr); left > 0; {
		select {
		case e := <-in:
			if done[e.srv] {
				// A server that has its count may close its endpoint
				// (its last client ended): the engines to it fail.
				continue
			}
			if e.end && ends[e.srv] != nil {
				_ = ends[e.srv].Close()
				ends[e.srv] = nil
			}
			switch {
			case e.bad != nil:
				errs = append(errs, fmt.Errorf("server %d: %w", e.srv, e.bad))
			case e.err != nil && exact:
				errs = append(errs, fmt.Errorf("server %d before its count: %w", e.srv, e.err))
			case e.err != nil:
				l.notes = append(l.notes, fmt.Sprintf("server %d before its count: %v", e.srv, e.err))
			case !e.end:
				continue // a late answer to an earlier attempt
			case e.count != d.sent[e.srv] && exact:
				errs = append(errs, fmt.Errorf("server %d counted %d requests, %d were sent", e.srv, e.count, d.sent[e.srv]))
			case e.count != d.sent[e.srv]:
				l.notes = append(l.notes, fmt.Sprintf("server %d counted %d requests, %d attempts were sent (attempts timed out or engines failed: some can be lost or still on their way)", e.srv, e.count, d.sent[e.srv]))
			}
			done[e.srv] = true
			left--
		case <-wait.C:
			return errors.Join(append(errs, fmt.Errorf("%d servers did not answer the end marker within %v", left, helloTimeout))...)
		case <-ctx.Done():
			return errors.Join(append(errs, fmt.Errorf("stopped (%v) waiting for the servers' counts", context.Cause(ctx)))...)
		}
	}
	return errors.Join(errs...)
}

// endMarker is the fan-out runner's end marker for a header of hl bytes.
func endMarker(hl int) []byte {
	p := make([]byte, hl)
	binary.LittleEndian.PutUint64(p, ^uint64(0))
	return p
}
