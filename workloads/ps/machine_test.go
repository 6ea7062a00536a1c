package ps

import (
	"container/heap"
	"reflect"
	"testing"

	"github.com/besim/besim/metrics"
	"github.com/besim/besim/sim"
)

// A toy runner: every message takes lat to arrive, servers answer at once.
// It is the smallest driver of the machines, in the times the simulator
// would give them, without the simulator.
type toyEvent struct {
	at     sim.Time
	seq    int
	client int
	tick   bool
	answer bool
	h      Header
	n      int
	server int
}

type toyQueue []toyEvent

func (q toyQueue) Len() int { return len(q) }
func (q toyQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q toyQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *toyQueue) Push(x any)   { *q = append(*q, x.(toyEvent)) }
func (q *toyQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

type toy struct {
	t        *testing.T
	cfg      *Config
	st       *Stats
	clients  []*Client
	servers  []*Server
	q        toyQueue
	seq      int
	timers   []sim.Time // armed timer per client (-1: none)
	inFlight []int      // per client
	lat      sim.Time
}

func newToy(t *testing.T, cfg Config, lat sim.Time) *toy {
	t.Helper()
	if err := cfg.Prepare(); err != nil {
		t.Fatal(err)
	}
	y := &toy{t: t, cfg: &cfg, st: NewStats(), lat: lat}
	shardOf := ShardServers(cfg.Shards, cfg.Servers)
	for i := range cfg.Rankers + cfg.Trainers {
		y.clients = append(y.clients, NewClient(y.cfg, i, shardOf, y.st))
		y.timers = append(y.timers, -1)
		y.inFlight = append(y.inFlight, 0)
	}
	for i := range cfg.Servers {
		y.servers = append(y.servers, NewServer(y.cfg, i))
	}
	return y
}

func (y *toy) push(e toyEvent) {
	y.seq++
	e.seq = y.seq
	heap.Push(&y.q, e)
}

func (y *toy) do(i int, now sim.Time, out *Out) {
	for _, s := range out.Sends {
		if s.Size < HeaderSize || s.Server < 0 || s.Server >= len(y.servers) {
			y.t.Fatalf("client %d: bad send %+v", i, s)
		}
		y.inFlight[i]++
		y.push(toyEvent{at: now + y.lat, client: i, h: s.Header, n: s.Size, server: s.Server})
	}
	if out.SetTimer {
		y.timers[i] = out.Timer
		y.push(toyEvent{at: out.Timer, client: i, tick: true, h: Header{Slot: uint64(out.Timer)}})
	}
}

// run starts every client at 0 and runs until end, stopping the clients
// there and draining the answers.
func (y *toy) run(end sim.Time) {
	for i, c := range y.clients {
		y.do(i, 0, c.Start(0))
	}
	stopped := false
	for y.q.Len() > 0 {
		e := heap.Pop(&y.q).(toyEvent)
		if !stopped && e.at >= end {
			stopped = true
			for _, c := range y.clients {
				c.Stop(end)
			}
		}
		c := y.clients[e.client]
		switch {
		case e.tick:
			if y.timers[e.client] != sim.Time(e.h.Slot) {
				continue // re-armed since
			}
			y.timers[e.client] = -1
			y.do(e.client, e.at, c.Tick(e.at))
		case !e.answer:
			size, err := y.servers[e.server].Reply(e.h, e.n)
			if err != nil {
				y.t.Fatal(err)
			}
			y.push(toyEvent{at: e.at + y.lat, client: e.client, h: e.h, n: size, server: e.server, answer: true})
		default:
			y.inFlight[e.client]--
			out, err := c.Response(e.at, e.h, e.n)
			if err != nil {
				y.t.Fatal(err)
			}
			y.do(e.client, e.at, out)
		}
	}
}

func TestHeaderRoundTrip(t *testing.T) {
	h := Header{Slot: 7, Sent: 123456789 * sim.Nanosecond, Op: OpPush, Shards: 42}
	p := make([]byte, HeaderSize)
	h.Put(p)
	got, err := ParseHeader(p)
	if err != nil || got != h {
		t.Errorf("ParseHeader(Put(%+v)) = %+v, %v", h, got, err)
	}
	if FromWords(h.Words()) != h {
		t.Errorf("FromWords(Words) changed the header")
	}
	if _, err := ParseHeader(p[:HeaderSize-1]); err == nil {
		t.Error("a short header parsed")
	}
	p[16] = 9
	if _, err := ParseHeader(p); err == nil {
		t.Error("an unknown op parsed")
	}
}

// Closed-loop rankers and trainers: every request is answered once, the
// servers count what the clients sent, rankers keep their outstanding
// user requests, and trainers alternate fetch, compute and push.
func TestMachinesConserveRequests(t *testing.T) {
	lat := 10 * sim.Microsecond
	y := newToy(t, Config{Servers: 4, Shards: 32, Rankers: 2, Trainers: 2, Warmup: 100 * sim.Microsecond,
		Measure: 2 * sim.Millisecond, Compute: 50 * sim.Microsecond, Seed: 3}, lat)
	y.st.SetInterval(100*sim.Microsecond, 2100*sim.Microsecond)
	y.run(2100 * sim.Microsecond)
	var served int64
	for _, s := range y.servers {
		served += s.Fetches + s.Pushes
	}
	st := y.st
	if st.Sent == 0 || st.Sent != st.Answered || served != st.Sent {
		t.Fatalf("sent %d, answered %d, served %d", st.Sent, st.Answered, served)
	}
	for i, c := range y.clients {
		if !c.Idle() || y.inFlight[i] != 0 {
			t.Errorf("client %d not idle after draining", i)
		}
		var per int64
		for _, n := range c.PerServer() {
			per += n
		}
		if per == 0 {
			t.Errorf("client %d sent nothing", i)
		}
	}
	// A fetch takes exactly two one-way latencies here.
	if st.Fetch.Count() == 0 || st.Fetch.Min() != int64(2*lat/sim.Nanosecond) || st.Fetch.Max() != int64(2*lat/sim.Nanosecond) {
		t.Errorf("fetch latency min %d max %d ns, want %d", st.Fetch.Min(), st.Fetch.Max(), 2*lat/sim.Nanosecond)
	}
	// A trainer's iteration is one fetch phase, the compute, one push phase
	// (the shorter ones are those the stop cut, in at their age then).
	want := int64((4*lat + 50*sim.Microsecond) / sim.Nanosecond)
	if got := st.Iteration.P50(); st.Iterations == 0 || got < want*999/1000 || got > want*1001/1000 || st.Iteration.Max() > want*1001/1000 {
		t.Errorf("%d iterations, median %d ns, longest %d, want %d", st.Iterations, got, st.Iteration.Max(), want)
	}
	if st.Users == 0 || st.User.Min() != int64(2*lat/sim.Nanosecond) {
		t.Errorf("%d user requests, shortest %d ns", st.Users, st.User.Min())
	}
	// Closed loop: 2 rankers x 4 outstanding user requests, each 20 us.
	if lo, hi := int64(2*4*2000/20-8), int64(2*4*2000/20+8); st.Users < lo || st.Users > hi {
		t.Errorf("%d user requests completed in 2 ms, want %d..%d", st.Users, lo, hi)
	}
}

// Open loop: arrivals that find every slot busy are dropped and counted;
// the others complete.
func TestOpenLoopDrops(t *testing.T) {
	// 1 outstanding, 100k arrivals/s, 20 us per request: the slot is busy
	// about 2/3 of the time (M/D/1/1 blocking 20/(10+20)).
	y := newToy(t, Config{Servers: 2, Shards: 8, Rankers: 1, RankerOutstanding: 1, RankerRate: 100_000,
		Measure: 10 * sim.Millisecond, Seed: 1}, 10*sim.Microsecond)
	y.st.SetInterval(0, 10*sim.Millisecond)
	y.run(10 * sim.Millisecond)
	st := y.st
	total := st.Users + st.Dropped
	if total < 800 || total > 1200 {
		t.Fatalf("%d arrivals in 10 ms at 100k/s", total)
	}
	if f := float64(st.Dropped) / float64(total); f < 0.55 || f > 0.78 {
		t.Errorf("dropped %d of %d (%.2f), want about 2/3", st.Dropped, total, f)
	}
}

// A slot answered with nothing pending is an error, not a crash.
func TestUnexpectedAnswer(t *testing.T) {
	cfg := Config{Servers: 1, Shards: 8, Rankers: 1}
	if err := cfg.Prepare(); err != nil {
		t.Fatal(err)
	}
	c := NewClient(&cfg, 0, ShardServers(8, 1), NewStats())
	if _, err := c.Response(0, Header{Slot: 0}, HeaderSize); err == nil {
		t.Error("an answer before any request was accepted")
	}
	if _, err := c.Response(0, Header{Slot: 99}, HeaderSize); err == nil {
		t.Error("an answer for slot 99 was accepted")
	}
}

// Censor puts what is open at the end in at its age, and counts it.
func TestCensor(t *testing.T) {
	cfg := Config{Servers: 2, Shards: 8, Rankers: 1, RankerOutstanding: 2}
	if err := cfg.Prepare(); err != nil {
		t.Fatal(err)
	}
	st := NewStats()
	st.SetInterval(0, sim.Millisecond)
	c := NewClient(&cfg, 0, ShardServers(8, 2), st)
	out := c.Start(100 * sim.Microsecond)
	if len(out.Sends) == 0 {
		t.Fatal("no request sent")
	}
	c.Censor(sim.Millisecond)
	if st.FetchOpen != int64(len(out.Sends)) || st.Fetch.Count() != int64(len(out.Sends)) || st.User.Count() != 2 {
		t.Errorf("open %d fetches (in histogram %d), %d user requests; want %d, %d, 2", st.FetchOpen, st.Fetch.Count(), st.User.Count(), len(out.Sends), len(out.Sends))
	}
	if st.User.Max() != int64(900*sim.Microsecond/sim.Nanosecond) {
		t.Errorf("censored user request %d ns, want 900 us", st.User.Max())
	}
}

// The server's reply-size rule: at least a header for a fetch, header + 8
// for a push; sizes come from its own stream, so two servers built alike
// answer alike.
func TestServerReply(t *testing.T) {
	cfg := Config{Servers: 2, Shards: 8, Rankers: 1}
	if err := cfg.Prepare(); err != nil {
		t.Fatal(err)
	}
	a, b := NewServer(&cfg, 0), NewServer(&cfg, 0)
	for i := range 100 {
		h := Header{Op: OpFetch, Shards: 1 + i%4}
		na, _ := a.Reply(h, 64)
		nb, _ := b.Reply(h, 64)
		if na != nb || na < HeaderSize {
			t.Fatalf("reply %d: %d vs %d", i, na, nb)
		}
	}
	if n, _ := a.Reply(Header{Op: OpPush, Shards: 3}, 1000); n != HeaderSize+8 {
		t.Errorf("push ack %d bytes", n)
	}
	if _, err := a.Reply(Header{Op: 7}, 24); err == nil {
		t.Error("unknown op answered")
	}
	if a.Fetches != 100 || a.Pushes != 1 {
		t.Errorf("counted %d fetches, %d pushes", a.Fetches, a.Pushes)
	}
}

// A failed request (Client.Failed: the runner's RPC layer gave up) ends
// it as an answer would: the user request completes, but into UsersFailed,
// and the slot moves on to the next one; a failure for a slot with nothing
// pending is an error.
func TestFailedRequest(t *testing.T) {
	cfg := Config{Servers: 2, Shards: 8, Rankers: 1, RankerOutstanding: 1, FanOut: 1}
	if err := cfg.Prepare(); err != nil {
		t.Fatal(err)
	}
	st := NewStats()
	st.SetInterval(0, sim.Millisecond)
	c := NewClient(&cfg, 0, ShardServers(8, 2), st)
	out := c.Start(0)
	if len(out.Sends) != 1 {
		t.Fatalf("%d sends for one shard", len(out.Sends))
	}
	h := out.Sends[0].Header
	out, err := c.Failed(10*sim.Microsecond, h)
	if err != nil {
		t.Fatal(err)
	}
	if st.Failed != 1 || st.UsersFailed != 1 || st.Users != 0 || st.User.Count() != 1 || st.Answered != 0 {
		t.Errorf("after a failure: failed %d, users failed %d, users %d, user latencies %d, answered %d; want 1, 1, 0, 1, 0", st.Failed, st.UsersFailed, st.Users, st.User.Count(), st.Answered)
	}
	if len(out.Sends) != 1 {
		t.Fatalf("the closed loop did not move on: %d sends", len(out.Sends))
	}
	if _, err := c.Response(20*sim.Microsecond, out.Sends[0].Header, HeaderSize); err != nil {
		t.Fatal(err)
	}
	if st.Users != 1 || st.UsersFailed != 1 {
		t.Errorf("the next user request: users %d, failed %d; want 1, 1", st.Users, st.UsersFailed)
	}
	if _, err := c.Failed(0, Header{Slot: 5}); err == nil {
		t.Error("a failure for slot 5 was accepted")
	}
}

// Latency windows: a request lands in the window of its start, in User or
// Fetch's window as it is recorded there; pushes and out-of-interval
// requests in none; the windows add up to the whole histograms; Merge adds
// them window by window and refuses different windows.
func TestStatsWindows(t *testing.T) {
	us := sim.Microsecond
	st := NewStats()
	if _, err := st.SetWindows(10 * us); err == nil {
		t.Error("SetWindows before SetInterval: no error")
	}
	st.SetInterval(100*us, 125*us) // windows [100,110) [110,120) [120,125)
	if _, err := st.SetWindows(0); err == nil {
		t.Error("SetWindows(0): no error")
	}
	if w, err := st.SetWindows(10 * us); err != nil || w != 10*us {
		t.Fatal(w, err)
	}
	if len(st.UserWin) != 3 || len(st.FetchWin) != 3 {
		t.Fatalf("%d and %d windows, want 3", len(st.UserWin), len(st.FetchWin))
	}
	st.record(st.Fetch, 100*us, 105*us) // window 0
	st.record(st.Fetch, 109*us, 150*us) // window 0 (by its start)
	st.record(st.Fetch, 121*us, 122*us) // window 2
	st.record(st.User, 115*us, 130*us)  // window 1
	st.record(st.Push, 101*us, 102*us)  // no window
	st.record(st.Fetch, 99*us, 101*us)  // before the interval: nowhere
	st.record(st.Fetch, 125*us, 126*us) // after it: nowhere
	counts := func(hs []*metrics.Histogram) (out []int64) {
		for _, h := range hs {
			out = append(out, h.Count())
		}
		return out
	}
	if got := counts(st.FetchWin); !reflect.DeepEqual(got, []int64{2, 0, 1}) {
		t.Errorf("fetch windows %v, want [2 0 1]", got)
	}
	if got := counts(st.UserWin); !reflect.DeepEqual(got, []int64{0, 1, 0}) {
		t.Errorf("user windows %v, want [0 1 0]", got)
	}
	if st.Fetch.Count() != 3 || st.User.Count() != 1 || st.Push.Count() != 1 {
		t.Errorf("whole histograms %d, %d, %d; want 3, 1, 1", st.Fetch.Count(), st.User.Count(), st.Push.Count())
	}
	if m := st.FetchWin[0].Max(); m != 41000 {
		t.Errorf("window 0's max %d ns, want 41000 (the request of 109-150 us)", m)
	}
	o := NewStats()
	o.SetInterval(100*us, 125*us)
	if _, err := o.SetWindows(10 * us); err != nil {
		t.Fatal(err)
	}
	o.record(o.Fetch, 111*us, 112*us)
	if err := st.Merge(o); err != nil {
		t.Fatal(err)
	}
	if got := counts(st.FetchWin); !reflect.DeepEqual(got, []int64{2, 1, 1}) {
		t.Errorf("merged fetch windows %v, want [2 1 1]", got)
	}
	bad := NewStats()
	bad.SetInterval(100*us, 125*us)
	if _, err := bad.SetWindows(5 * us); err != nil {
		t.Fatal(err)
	}
	if err := st.Merge(bad); err == nil {
		t.Error("merging 5 us windows into 10 us ones: no error")
	}
	wide := NewStats()
	wide.SetInterval(0, sim.Second)
	want := (sim.Second + MaxWindows - 1) / MaxWindows
	if w, err := wide.SetWindows(us); err != nil || w != want || len(wide.UserWin) != MaxWindows {
		t.Errorf("1 us windows over 1 s: window %v, %d windows, %v; want %v, %d", w, len(wide.UserWin), err, want, MaxWindows)
	}
}

// ReplicaSet chains a shard group over the servers: the primary first,
// every group on replicas distinct servers, and every server holding
// exactly replicas groups (the load of a failed server spreads over its
// successors, none is left out). Prepare takes 0 as one and refuses more
// replicas than servers or fewer than zero.
func TestReplicaSet(t *testing.T) {
	for _, c := range [][2]int{{1, 1}, {1, 5}, {2, 5}, {3, 5}, {5, 5}} {
		r, n := c[0], c[1]
		held := make([]int, n)
		for g := range n {
			rs := ReplicaSet(g, r, n)
			if len(rs) != r || rs[0] != g {
				t.Fatalf("replicas %d of %d servers: group %d on %v: want %d servers, the primary first", r, n, g, rs, r)
			}
			seen := map[int]bool{}
			for _, s := range rs {
				if s < 0 || s >= n || seen[s] {
					t.Fatalf("replicas %d of %d servers: group %d on %v: a server out of range or twice", r, n, g, rs)
				}
				seen[s] = true
				held[s]++
			}
		}
		for s, h := range held {
			if h != r {
				t.Errorf("replicas %d of %d servers: server %d holds %d groups, want %d", r, n, s, h, r)
			}
		}
	}
	c := Config{Servers: 4, Shards: 8, Rankers: 1}
	if err := c.Prepare(); err != nil || c.Replicas != 1 {
		t.Errorf("replicas unset: %v, %d", err, c.Replicas)
	}
	for _, bad := range []int{-1, 5} {
		c := Config{Servers: 4, Shards: 8, Rankers: 1, Replicas: bad}
		if err := c.Prepare(); err == nil {
			t.Errorf("replicas %d of 4 servers accepted", bad)
		}
	}
}
