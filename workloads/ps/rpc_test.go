package ps

import (
	"container/heap"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/sim"
)

// RPCService: group g's replicas are ReplicaSet's, the primary in
// mini-pod 0 and each further replica one farther.
func TestRPCService(t *testing.T) {
	svc := RPCService(3, 5)
	if err := svc.Validate(); err != nil {
		t.Fatal(err)
	}
	for g, reps := range svc.Shards {
		want := ReplicaSet(g, 3, 5)
		if len(reps) != len(want) {
			t.Fatalf("group %d: %v, want nodes %v", g, reps, want)
		}
		for k, r := range reps {
			if int(r.Node) != want[k] || r.MiniPod != k {
				t.Errorf("group %d replica %d: %+v, want node %d mini-pod %d", g, k, r, want[k], k)
			}
		}
	}
	if !Idempotent(OpFetch) || Idempotent(OpPush) {
		t.Error("fetches are retried, pushes are not")
	}
}

// rpcToy drives clients through their RPC layers in virtual time: every
// attempt reaches its server lat later and, unless the server is dead,
// is answered lat after that (Server.RPCReply's size, the head echoed).
type rpcToy struct {
	t       *testing.T
	cfg     *Config
	lat     sim.Time
	dead    map[int]bool
	servers []*Server
	clients []*Client
	calls   []*RPCCalls
	q       toyQueue
	msgs    map[int]*rpcMsg // event seq -> its message (toyEvent has no payload)
	seq     int
	now     sim.Time
	fails   [][]Header // per client: failures due at now + 1
	armed   []sim.Time // per client: the layer's tick queued
	sent    []int64    // attempts per server
}

type rpcMsg struct {
	client, server int
	p              []byte
}

// toyConn is one client's connection to a server.
type toyConn struct {
	y              *rpcToy
	client, server int
}

type toyDialer struct {
	y      *rpcToy
	client int
}

func (d toyDialer) Dial(node rpc.NodeID, _ int) (rpc.Conn, error) {
	return &toyConn{y: d.y, client: d.client, server: int(node)}, nil
}

func (c *toyConn) Send(hdr []byte, n int) error {
	y := c.y
	p := make([]byte, n)
	PutRPCMessage(p, hdr, y.calls[c.client].Message(hdr).Header)
	y.sent[c.server]++
	y.push(toyEvent{at: y.now + y.lat, client: c.client, server: c.server, n: n}, &rpcMsg{c.client, c.server, p})
	return nil
}

func (c *toyConn) Close() {}

func (y *rpcToy) push(e toyEvent, m *rpcMsg) {
	y.seq++
	e.seq = y.seq
	if m != nil {
		y.msgs[e.seq] = m
	}
	heap.Push(&y.q, e)
}

func core(t sim.Time) time.Duration { return time.Duration(t / sim.Nanosecond) }

func (y *rpcToy) do(i int, out *Out) {
	for _, s := range out.Sends {
		failed, err := y.calls[i].Call(s, core(y.now))
		if err != nil {
			y.t.Fatal(err)
		}
		if failed {
			y.fails[i] = append(y.fails[i], s.Header)
			y.push(toyEvent{at: y.now + 1, client: i, tick: true}, nil)
		}
	}
	if out.SetTimer {
		y.push(toyEvent{at: out.Timer, client: i, tick: true, h: Header{Slot: 1}}, nil)
	}
	y.arm(i)
}

// arm queues a tick of client i's layer for its next deadline.
func (y *rpcToy) arm(i int) {
	if d := y.calls[i].Client().NextDeadline(); d != byteexpress.Never {
		at := max(sim.Time(d)*sim.Nanosecond, y.now+1)
		if at != y.armed[i] {
			y.armed[i] = at
			y.push(toyEvent{at: at, client: i, tick: true}, nil)
		}
	}
}

// idle reports whether every machine is idle with nothing outstanding.
func (y *rpcToy) idle() bool {
	for i, c := range y.clients {
		if !c.Idle() || y.calls[i].Client().Outstanding() > 0 || len(y.fails[i]) > 0 {
			return false
		}
	}
	return true
}

func (y *rpcToy) failed(i int, hs []Header) {
	for _, h := range hs {
		out, err := y.clients[i].Failed(y.now, h)
		if err != nil {
			y.t.Fatal(err)
		}
		y.do(i, out)
	}
}

// run runs the clients from 0 to end, then until every call has its
// outcome.
func (y *rpcToy) run(end sim.Time) {
	for i, c := range y.clients {
		y.do(i, c.Start(0))
	}
	stopped := false
	for y.q.Len() > 0 && !(stopped && y.idle()) {
		e := heap.Pop(&y.q).(toyEvent)
		y.now = e.at
		if !stopped && e.at >= end {
			stopped = true
			for _, c := range y.clients {
				c.Stop(end)
			}
		}
		i, c := e.client, y.clients[e.client]
		m := y.msgs[e.seq]
		delete(y.msgs, e.seq)
		switch {
		case e.tick:
			if e.h.Slot == 1 {
				y.do(i, c.Tick(e.at))
			}
			if q := y.fails[i]; len(q) > 0 {
				y.fails[i] = nil
				y.failed(i, q)
			}
			hs, err := y.calls[i].Finished(y.calls[i].Tick(core(e.at)))
			if err != nil {
				y.t.Fatal(err)
			}
			y.failed(i, hs)
			y.arm(i)
		case m != nil && !e.answer:
			if y.dead[m.server] {
				continue
			}
			n, err := y.servers[m.server].RPCReply(m.p)
			if err != nil {
				y.t.Fatal(err)
			}
			a := make([]byte, n)
			copy(a, m.p[:RPCEcho])
			y.push(toyEvent{at: e.at + y.lat, client: i, server: m.server, answer: true}, &rpcMsg{i, m.server, a})
		case m != nil:
			rh, ph, err := ParseRPCMessage(m.p)
			if err != nil {
				y.t.Fatal(err)
			}
			if !y.calls[i].Answer(rh, ph, m.server, e.at) {
				y.arm(i)
				continue
			}
			out, err := c.Response(e.at, ph, len(m.p)-rpc.HeaderSize)
			if err != nil {
				y.t.Fatal(err)
			}
			y.do(i, out)
		}
	}
}

// With server 1 dead from the start, a cluster with 2 replicas per shard
// group gets its group-1 fetches answered by server 2 once the ladder
// gives server 1 up (retried, each at least Tr after its first send);
// with 1 replica its fetches and pushes fail when the ladder ends (no TCP
// fallback). Either way every request the machines sent gets exactly one
// outcome: the RPC books, the machines' stats and the servers' counts
// agree.
func TestRPCCallsReplicaAndConservation(t *testing.T) {
	for _, replicas := range []int{1, 2} {
		cfg := Config{Servers: 4, Shards: 32, Rankers: 2, Trainers: 2, Replicas: replicas, Compute: 10 * sim.Microsecond}
		if err := cfg.Prepare(); err != nil {
			t.Fatal(err)
		}
		rc := rpc.DefaultConfig()
		rc.RequestTimeout, rc.RetryProb, rc.MaxAttempts = 100*time.Microsecond, 1, 4
		st := NewStats()
		y := &rpcToy{t: t, cfg: &cfg, lat: 5 * sim.Microsecond, dead: map[int]bool{1: true}, msgs: map[int]*rpcMsg{}, sent: make([]int64, cfg.Servers)}
		shardOf := ShardServers(cfg.Shards, cfg.Servers)
		for i := range cfg.Servers {
			y.servers = append(y.servers, NewServer(&cfg, i))
		}
		for i := range cfg.Rankers + cfg.Trainers {
			y.clients = append(y.clients, NewClient(&cfg, i, shardOf, st))
			pol, err := NewRPCPolicy(&cfg, rc, i)
			if err != nil {
				t.Fatal(err)
			}
			y.calls = append(y.calls, NewRPCCalls(rpc.NewClient(pol, toyDialer{y, i}, nil)))
			y.fails = append(y.fails, nil)
			y.armed = append(y.armed, -1)
		}
		y.run(2 * sim.Millisecond)
		var q RPCStats
		for _, k := range y.calls {
			r := k.Result(rc.Paths)
			q.Add(&r)
		}
		calls, answered, failed, _, byReplica := q.Sum()
		t.Logf("replicas %d: %d calls, %d answered (%d by a replica, %d+%d retried), %d failed, %d timeouts; shortest retried wait %v",
			replicas, calls, answered, byReplica, q.Retried[0], q.Retried[1], failed, q.Timeouts, q.RetriedWait[0])
		if calls == 0 || calls != answered+failed || q.Outstanding != 0 {
			t.Errorf("replicas %d: %d calls, %d answered, %d failed, %d outstanding", replicas, calls, answered, failed, q.Outstanding)
		}
		if st.Sent != calls || st.Answered != answered || st.Failed != failed {
			t.Errorf("replicas %d: machines sent %d, answered %d, failed %d; RPC %d, %d, %d", replicas, st.Sent, st.Answered, st.Failed, calls, answered, failed)
		}
		var took, sent int64
		for i, s := range y.servers {
			took += s.Fetches + s.Pushes
			sent += y.sent[i]
		}
		if dead := y.servers[1].Fetches + y.servers[1].Pushes; dead != 0 || took != answered {
			t.Errorf("replicas %d: live servers answered %d, RPC answered %d (dead server counted %d)", replicas, took, answered, dead)
		}
		if q.Timeouts == 0 {
			t.Errorf("replicas %d: no timeout, yet server 1 is dead", replicas)
		}
		switch replicas {
		case 1:
			if byReplica != 0 || q.Failed[0] == 0 || q.Failed[1] == 0 {
				t.Errorf("one replica: %d answered by a replica, %d fetches and %d pushes failed", byReplica, q.Failed[0], q.Failed[1])
			}
		case 2:
			if byReplica == 0 || q.Retried[0] == 0 {
				t.Errorf("two replicas: %d answered by a replica, %d retried", byReplica, q.Retried[0])
			}
			if w := q.RetriedWait[0]; w < sim.Time(rc.RequestTimeout)*sim.Nanosecond {
				t.Errorf("a retried fetch answered %v after its first send, less than Tr %v", w, rc.RequestTimeout)
			}
			if answered <= failed {
				t.Errorf("two replicas: %d answered, %d failed", answered, failed)
			}
		}
	}
}
