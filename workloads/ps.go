package workloads

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/fabric"
	"github.com/besim/besim/metrics"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/simhost"
)

// PSConfig is the parameter-server cluster of the paper's §2.1 (Figure 1):
// model parameters in Shards shards, placed on Servers parameter servers by
// hashing the shard id; Rankers (inference) and Trainers (training) on
// their own hosts.
//
// A ranker keeps RankerOutstanding user requests in flight (closed loop;
// or Poisson arrivals at RankerRate per second). A user request needs
// FanOut shards, drawn uniformly; it becomes one fetch
// sub-request per distinct server holding them, answered with one
// FetchResponse-sized value per shard; the user request completes when
// every sub-request has. A trainer iterates: fetch TrainerShards shards
// (as a ranker), compute for Compute, push one PushSize update per shard
// to the servers holding them (each acknowledged with 32 bytes), repeat.
//
// Topology: a one-spine leaf-spine of HostsPerLeaf-host leaves, rankers
// then trainers from host 0, the servers from the next leaf on.
type PSConfig struct {
	Cluster           simhost.Config
	HostsPerLeaf      int // default DefaultHostsPerLeaf
	Servers, Shards   int
	Rankers, Trainers int
	Request           int // fetch request size, >= 24; default 64
	FanOut            int // shards per user request; default 8
	RankerOutstanding int // user requests in flight per ranker; default 4
	RankerRate        float64
	FetchResponse     SizeDist // per shard; default lognormal mean 20 KB, P99 50 KB
	TrainerShards     int      // default FanOut
	Compute           sim.Time // trainer compute per iteration; default 100 us
	PushSize          SizeDist // per shard; default = FetchResponse
	Warmup, Measure   sim.Time // defaults 500 us, 2 ms
	Seed              uint64
}

// PSResult is what one PS-cluster run measured.
type PSResult struct {
	UserLatency  *metrics.Histogram // ranker user requests, ns (started in the interval)
	SubLatency   *metrics.Histogram // fetch sub-requests (rankers and trainers), ns
	IterTime     *metrics.Histogram // trainer iterations, ns
	UserRequests int64              // completed in the interval
	Iterations   int64              // trainer iterations completed in the interval
	ClientGbps   float64            // payload received by rankers and trainers
	ServerGbps   float64            // payload received by servers (pushes)
	Report       *fabric.Report
	Events       uint64
	Errors       []error
}

const (
	opFetch = 0
	opPush  = 1
	psHdr   = 24 // slot (8) | send time (8) | op (1) | shard count (4) | pad
)

func (c *PSConfig) defaults() {
	if c.HostsPerLeaf == 0 {
		c.HostsPerLeaf = DefaultHostsPerLeaf
	}
	if c.Request == 0 {
		c.Request = 64
	}
	if c.FanOut == 0 {
		c.FanOut = 8
	}
	if c.RankerOutstanding == 0 {
		c.RankerOutstanding = 4
	}
	if c.FetchResponse.Kind == "" {
		c.FetchResponse = SizeDist{Kind: LogNormal, Mean: 20_000, P99: 50_000}
	}
	if c.TrainerShards == 0 {
		c.TrainerShards = c.FanOut
	}
	if c.Compute == 0 {
		c.Compute = 100 * sim.Microsecond
	}
	if c.PushSize.Kind == "" {
		c.PushSize = c.FetchResponse
	}
	if c.Warmup == 0 {
		c.Warmup = 500 * sim.Microsecond
	}
	if c.Measure == 0 {
		c.Measure = 2 * sim.Millisecond
	}
}

// RunPS builds and runs one parameter-server cluster simulation.
func RunPS(cfg PSConfig) (*PSResult, error) {
	cfg.defaults()
	switch {
	case cfg.Servers < 1 || cfg.Shards < 1 || cfg.Rankers+cfg.Trainers < 1 || cfg.Rankers < 0 || cfg.Trainers < 0:
		return nil, errors.New("workloads: ps needs servers, shards >= 1 and at least one ranker or trainer")
	case cfg.FanOut < 1 || cfg.FanOut > cfg.Shards || cfg.TrainerShards < 1 || cfg.TrainerShards > cfg.Shards:
		return nil, errors.New("workloads: ps fan-out and trainer shards must be in [1, shards]")
	case cfg.Request < psHdr || cfg.RankerOutstanding < 1 || cfg.RankerRate < 0 || cfg.Compute < 0:
		return nil, fmt.Errorf("workloads: ps needs request >= %d, ranker outstanding >= 1, rate and compute >= 0", psHdr)
	}
	for _, d := range []*SizeDist{&cfg.FetchResponse, &cfg.PushSize} {
		if err := d.Prepare(); err != nil {
			return nil, fmt.Errorf("workloads: ps size: %w", err)
		}
		if d.MaxSize == 0 {
			d.MaxSize = 16 << 20
		}
	}
	hpl := cfg.HostsPerLeaf
	clients := cfg.Rankers + cfg.Trainers
	cl := (clients + hpl - 1) / hpl
	leaves := cl + (cfg.Servers+hpl-1)/hpl
	sc := cfg.Cluster
	if sc.Fabric.MTU == 0 {
		sc.Fabric = fabric.DefaultConfig()
	}
	sc.Fabric.Seed = cfg.Seed
	sc.Fabric.Topology = fabric.Topology{Kind: fabric.LeafSpine, Leaves: max(leaves, 2), HostsPerLeaf: hpl, Spines: 1}
	if sc.BE.CQDepth == 0 {
		d := sc.BE.Defaults()
		sc.BE.CQDepth = max(d.CQDepth, (cfg.Servers+clients+8)*(d.SQDepth+d.RQDepth))
	}
	c, err := simhost.New(sc)
	if err != nil {
		return nil, err
	}
	r := &psRun{cfg: &cfg, c: c, user: metrics.New(3), sub: metrics.New(3), iter: metrics.New(3)}
	hs := c.Hosts()
	r.shardServer = ShardServers(cfg.Shards, cfg.Servers)
	for i := range cfg.Servers {
		h := hs[cl*hpl+i]
		h.SetApp(&psServer{run: r, rng: sim.Stream(cfg.Seed, fmt.Sprintf("ps/server%d", i))})
		h.Listen()
		r.servers = append(r.servers, h)
	}
	for i := range clients {
		h := hs[i]
		trainer := i >= cfg.Rankers
		pc := &psClient{run: r, h: h, trainer: trainer, rng: sim.Stream(cfg.Seed, fmt.Sprintf("ps/client%d", i)),
			seen: make([]int, cfg.Servers)}
		n := cfg.RankerOutstanding
		if trainer {
			n = 1
		}
		pc.slots = make([]psSlot, n)
		pc.timer.Init(c.Kernel(), psTick{pc}, 0)
		h.SetApp(pc)
		for _, s := range r.servers {
			sk, err := h.Dial(s)
			if err != nil {
				return nil, err
			}
			pc.socks = append(pc.socks, sk)
		}
		r.clients = append(r.clients, pc)
	}
	want := clients * cfg.Servers
	for r.connected < want && c.Now() < setupLimit {
		c.RunFor(20 * sim.Microsecond)
	}
	if r.connected < want {
		return nil, fmt.Errorf("workloads: ps: only %d of %d sockets connected after %v", r.connected, want, setupLimit)
	}
	for _, pc := range r.clients {
		pc.start()
	}
	r.from, r.to = c.Now()+cfg.Warmup, c.Now()+cfg.Warmup+cfg.Measure
	c.Run(r.from)
	crx0, srx0 := r.rx()
	c.Run(r.to)
	crx1, srx1 := r.rx()
	sec := cfg.Measure.Seconds()
	res := &PSResult{UserLatency: r.user, SubLatency: r.sub, IterTime: r.iter, UserRequests: r.users, Iterations: r.iters,
		ClientGbps: float64(crx1-crx0) * 8 / sec / 1e9, ServerGbps: float64(srx1-srx0) * 8 / sec / 1e9}
	res.Report = c.Network().Report()
	r.stopped = true
	res.Events = c.Kernel().Events()
	res.Errors = r.errs
	_ = c.Close()
	return res, nil
}

type psRun struct {
	cfg             *PSConfig
	c               *simhost.Cluster
	from, to        sim.Time
	user, sub, iter *metrics.Histogram
	users, iters    int64
	shardServer     []int
	servers         []*simhost.Host
	clients         []*psClient
	connected       int
	stopped         bool
	failures
}

func (r *psRun) rx() (clients, servers uint64) {
	for _, pc := range r.clients {
		clients += pc.h.NIC().Stats().RxPayload
	}
	for _, h := range r.servers {
		servers += h.NIC().Stats().RxPayload
	}
	return
}

// psSlot is one user request (ranker) or iteration (trainer) in flight.
type psSlot struct {
	start   sim.Time
	pending int // sub-requests (or pushes) outstanding
	push    bool
	shards  []int // per server index touched: shard count (parallel to servers list)
	servers []int
}

// psClient is a ranker or a trainer.
type psClient struct {
	run     *psRun
	h       *simhost.Host
	trainer bool
	rng     *rand.Rand
	socks   []*byteexpress.Socket
	slots   []psSlot
	seen    []int // scratch: shards per server for the request being built
	timer   sim.Timer
}

// psTick is a client's timer handler: open-loop arrivals (rankers) or
// the end of a compute phase (trainers).
type psTick struct{ c *psClient }

func (t psTick) OnEvent(now sim.Time, _ uint64) {
	pc := t.c
	if pc.run.stopped {
		return
	}
	if pc.trainer {
		pc.push(0, now)
		return
	}
	// Open loop: a new user request in a free slot (or dropped if none).
	pc.timer.Set(now + max(1, sim.Time(pc.rng.ExpFloat64()/pc.run.cfg.RankerRate*float64(sim.Second))))
	for i := range pc.slots {
		if pc.slots[i].pending == 0 {
			pc.fetch(i, now)
			return
		}
	}
}

func (pc *psClient) start() {
	now := pc.h.Now()
	switch {
	case pc.trainer:
		pc.fetch(0, now)
	case pc.run.cfg.RankerRate > 0:
		pc.timer.Set(now + max(1, sim.Time(pc.rng.ExpFloat64()/pc.run.cfg.RankerRate*float64(sim.Second))))
	default:
		for i := range pc.slots {
			pc.fetch(i, now)
		}
	}
}

// fetch starts slot i: draws its shards and sends one sub-request per
// distinct server.
func (pc *psClient) fetch(i int, now sim.Time) {
	r := pc.run
	n := r.cfg.FanOut
	if pc.trainer {
		n = r.cfg.TrainerShards
	}
	sl := &pc.slots[i]
	sl.start, sl.push = now, false
	sl.servers, sl.shards = DrawFetch(pc.rng, n, r.shardServer, sl.servers[:0], sl.shards[:0])
	sl.pending = len(sl.servers)
	for j, srv := range sl.servers {
		pc.send(srv, i, opFetch, sl.shards[j], r.cfg.Request, now)
	}
}

// push sends slot i's updates (trainers), one message per server.
func (pc *psClient) push(i int, now sim.Time) {
	sl := &pc.slots[i]
	sl.push = true
	sl.pending = len(sl.servers)
	for j, srv := range sl.servers {
		n := 0
		for range sl.shards[j] {
			n += pc.run.cfg.PushSize.Sample(pc.rng)
		}
		pc.send(srv, i, opPush, sl.shards[j], max(n, psHdr), now)
	}
}

func (pc *psClient) send(srv, slot int, op byte, shards, size int, now sim.Time) {
	buf, err := pc.h.Allocate(size)
	if err != nil {
		pc.run.fail(err)
		return
	}
	p := buf.Bytes()
	binary.LittleEndian.PutUint64(p[0:], uint64(slot))
	binary.LittleEndian.PutUint64(p[8:], uint64(now))
	p[16] = op
	binary.LittleEndian.PutUint32(p[17:], uint32(shards))
	if err := pc.socks[srv].Send(buf, size); err != nil {
		_ = pc.h.Free(buf)
		pc.run.fail(err)
	}
}

// OnEvent implements simhost.App.
func (pc *psClient) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	r := pc.run
	switch ev.Kind {
	case byteexpress.EvConnected:
		r.connected++
	case byteexpress.EvMessage:
		p := ev.Buf.Bytes()
		slot := int(binary.LittleEndian.Uint64(p[0:]))
		sent := sim.Time(binary.LittleEndian.Uint64(p[8:]))
		op := p[16]
		_ = h.Free(ev.Buf)
		now := h.Now()
		if op == opFetch && sent >= r.from && sent < r.to {
			r.sub.Record(int64((now - sent) / sim.Nanosecond))
		}
		if slot >= len(pc.slots) {
			r.fail(fmt.Errorf("%s: response for slot %d", h.Name(), slot))
			return
		}
		sl := &pc.slots[slot]
		sl.pending--
		if sl.pending > 0 || r.stopped {
			return
		}
		switch {
		case pc.trainer && !sl.push:
			pc.timer.Set(now + r.cfg.Compute)
		case pc.trainer:
			if sl.start >= r.from && sl.start < r.to {
				r.iter.Record(int64((now - sl.start) / sim.Nanosecond))
			}
			if now >= r.from && now < r.to {
				r.iters++
			}
			pc.fetch(slot, now)
		default:
			if sl.start >= r.from && sl.start < r.to {
				r.user.Record(int64((now - sl.start) / sim.Nanosecond))
			}
			if now >= r.from && now < r.to {
				r.users++
			}
			if r.cfg.RankerRate == 0 {
				pc.fetch(slot, now)
			}
		}
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned,
		byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		r.failed(h, ev)
	}
}

// psServer answers fetches with one FetchResponse value per shard asked
// for, and pushes with a 32-byte acknowledgement (header echoed).
type psServer struct {
	run *psRun
	rng *rand.Rand
}

func (s *psServer) OnEvent(h *simhost.Host, ev byteexpress.Event) {
	r := s.run
	switch ev.Kind {
	case byteexpress.EvMessage:
		p := ev.Buf.Bytes()
		n := psHdr + 8
		if p[16] == opFetch {
			n = 0
			for range int(binary.LittleEndian.Uint32(p[17:])) {
				n += r.cfg.FetchResponse.Sample(s.rng)
			}
			n = max(n, psHdr)
		}
		buf, err := h.Allocate(n)
		if err != nil {
			_ = h.Free(ev.Buf)
			r.fail(err)
			return
		}
		copy(buf.Bytes()[:psHdr], p[:psHdr])
		_ = h.Free(ev.Buf)
		if err := ev.Socket.Send(buf, n); err != nil {
			_ = h.Free(buf)
			r.fail(err)
		}
	case byteexpress.EvSendFailed, byteexpress.EvBufferReturned,
		byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		r.failed(h, ev)
	}
}

// ShardServers places shards on servers by hashing the shard id (FNV-1a of
// its little-endian uint64): entry s is the server holding shard s. besim's
// ps-cluster and berun's ps roles both use it, so a shard lives on the same
// server index in simulation and on hardware.
func ShardServers(shards, servers int) []int {
	out := make([]int, shards)
	for s := range out {
		h := fnv.New64a()
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(s))
		h.Write(b[:])
		out[s] = int(h.Sum64() % uint64(servers))
	}
	return out
}

// DrawFetch draws n shards uniformly with replacement (a repeated shard is
// fetched twice, as two models may need it) and groups them by server: it
// appends to servers the distinct servers touched, in first-drawn order,
// and to shards how many draws each got. One fetch sub-request goes to
// each server.
func DrawFetch(rng *rand.Rand, n int, shardServer []int, servers, shards []int) ([]int, []int) {
	for range n {
		srv := shardServer[rng.IntN(len(shardServer))]
		dup := false
		for j, v := range servers {
			if v == srv {
				shards[j]++
				dup = true
				break
			}
		}
		if !dup {
			servers = append(servers, srv)
			shards = append(shards, 1)
		}
	}
	return servers, shards
}
