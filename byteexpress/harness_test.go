package byteexpress_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
	"github.com/besim/besim/byteexpress/internal/testalloc"
	"github.com/besim/besim/verbs"
	"github.com/besim/besim/verbs/fakeverbs"
)

// cluster drives endpoints over a fakeverbs network in virtual time (ns).
type cluster struct {
	t        testing.TB
	net      *fakeverbs.Network
	nodes    map[byteexpress.Addr]*node
	order    []*node
	now      int64
	later    []timed
	seq      int
	oobDelay int64
	woken    bool
	checkInv bool
	polls    int
}

type timed struct {
	at  int64
	seq int
	fn  func()
}

type node struct {
	c      *cluster
	name   byteexpress.Addr
	ctx    *fakeverbs.Context
	pd     verbs.PD
	pool   *testalloc.Pool
	ep     *byteexpress.Endpoint
	paused bool
	closed bool
	// onEvent handles events; the default frees received buffers.
	onEvent func(n *node, ev byteexpress.Event)
	events  map[byteexpress.EventKind]int
	errs    []byteexpress.Event
}

func newCluster(t testing.TB, ncfg fakeverbs.Config) *cluster {
	return &cluster{t: t, net: fakeverbs.New(ncfg), nodes: map[byteexpress.Addr]*node{},
		oobDelay: 5000, checkInv: true}
}

func (c *cluster) addNode(name string, cfg byteexpress.Config) *node {
	c.t.Helper()
	n := c.addQuietNode(name, cfg)
	n.ep.Listen()
	return n
}

// addQuietNode adds an endpoint that does not listen.
func (c *cluster) addQuietNode(name string, cfg byteexpress.Config) *node {
	c.t.Helper()
	ctx := c.net.NewContext(name)
	pd, err := ctx.AllocPD()
	if err != nil {
		c.t.Fatal(err)
	}
	pool := testalloc.New(pd, true)
	n := &node{c: c, name: byteexpress.Addr(name), ctx: ctx, pd: pd, pool: pool,
		events: map[byteexpress.EventKind]int{}}
	ep, err := byteexpress.NewEndpoint(byteexpress.Params{Context: ctx, PD: pd, Allocator: pool,
		Connector: c, Local: n.name}, cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	n.ep = ep
	for _, th := range ep.Threads() {
		th.SetWakeup(func() { c.woken = true })
	}
	c.nodes[n.name] = n
	c.order = append(c.order, n)
	return n
}

func (c *cluster) after(d int64, fn func()) {
	c.seq++
	c.later = append(c.later, timed{at: c.now + d, seq: c.seq, fn: fn})
}

var errNoHost = errors.New("no such host")

// Connect implements byteexpress.Connector with a modelled side channel.
func (c *cluster) Connect(from, remote byteexpress.Addr, local byteexpress.ConnInfo, done func(byteexpress.ConnInfo, error)) {
	// Go through the wire encoding, as a real side channel would.
	wire := local.Marshal()
	c.after(c.oobDelay, func() {
		n := c.nodes[remote]
		if n == nil || n.closed {
			c.after(c.oobDelay, func() { done(byteexpress.ConnInfo{}, errNoHost) })
			return
		}
		info, err := byteexpress.UnmarshalConnInfo(wire)
		if err != nil {
			c.t.Errorf("conn info: %v", err)
		}
		n.ep.HandleConnect(from, info, func(ri byteexpress.ConnInfo, err error) {
			back := ri.Marshal()
			c.after(c.oobDelay, func() {
				if err != nil {
					done(byteexpress.ConnInfo{}, err)
					return
				}
				info, err := byteexpress.UnmarshalConnInfo(back)
				done(info, err)
			})
		})
	})
}

func (n *node) handle(ev byteexpress.Event) {
	n.events[ev.Kind]++
	switch ev.Kind {
	case byteexpress.EvSocketFailed, byteexpress.EvEngineError:
		n.errs = append(n.errs, ev)
	}
	if n.onEvent != nil {
		n.onEvent(n, ev)
		return
	}
	switch ev.Kind {
	case byteexpress.EvMessage, byteexpress.EvSendFailed, byteexpress.EvBufferReturned:
		n.ep.Free(ev.Buf)
	}
}

// pollAll polls every live node once at the current time.
func (c *cluster) pollAll() int64 {
	next := int64(math.MaxInt64)
	for _, n := range c.order {
		if n.paused || n.closed {
			continue
		}
		for _, th := range n.ep.Threads() {
			r := th.Poll(time.Duration(c.now))
			c.polls++
			for _, ev := range r.Events {
				n.handle(ev)
			}
			if c.checkInv {
				if err := th.CheckInvariants(); err != nil {
					c.t.Fatalf("t=%dns %s: %v", c.now, n.name, err)
				}
			}
			next = min(next, int64(r.Next))
		}
	}
	return next
}

// run advances virtual time until done() holds, failing after limit.
func (c *cluster) run(done func() bool, limit time.Duration) {
	c.t.Helper()
	deadline := c.now + int64(limit)
	same := 0
	for {
		c.woken = false
		next := c.pollAll()
		if done() {
			return
		}
		if c.woken {
			next = c.now
		}
		if t, ok := c.net.Next(); ok {
			next = min(next, t)
		}
		for _, l := range c.later {
			next = min(next, l.at)
		}
		if next == math.MaxInt64 {
			c.t.Fatalf("stalled at t=%dns with nothing pending", c.now)
		}
		if next > deadline {
			c.t.Fatalf("not done by t=%dns (next event at %d)", deadline, next)
		}
		if next <= c.now {
			same++
			if same > 100000 {
				c.t.Fatalf("livelock at t=%dns", c.now)
			}
			next = c.now
		} else {
			same = 0
		}
		c.now = next
		c.net.Advance(c.now)
		c.runLater()
	}
}

func (c *cluster) runLater() {
	sort.Slice(c.later, func(i, j int) bool {
		if c.later[i].at != c.later[j].at {
			return c.later[i].at < c.later[j].at
		}
		return c.later[i].seq < c.later[j].seq
	})
	k := 0
	for k < len(c.later) && c.later[k].at <= c.now {
		k++
	}
	due := append([]timed(nil), c.later[:k]...)
	c.later = append(c.later[:0], c.later[k:]...)
	for _, l := range due {
		l.fn()
	}
}

// runFor advances time by d regardless of activity.
func (c *cluster) runFor(d time.Duration) {
	end := c.now + int64(d)
	c.after(int64(d), func() {})
	c.run(func() bool { return c.now >= end }, d+time.Second)
}

// shutdown closes every endpoint and checks that no buffer leaked.
func (c *cluster) shutdown() {
	c.t.Helper()
	for _, n := range c.order {
		if !n.closed {
			if err := n.ep.Close(); err != nil {
				c.t.Errorf("%s: close: %v", n.name, err)
			}
			n.closed = true
		}
		if k := n.pool.Outstanding(); k != 0 {
			c.t.Errorf("%s: %d buffers not returned to the allocator", n.name, k)
		}
	}
	for _, n := range c.order {
		if err := n.pool.Close(); err != nil {
			c.t.Errorf("%s: %v", n.name, err)
		}
	}
	if q := c.net.OpenQPs(); q != 0 {
		c.t.Errorf("%d QPs not destroyed", q)
	}
}

// ---- payloads ----

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// fillPayload writes message k of flow f: position-dependent, so a fragment
// at the wrong offset or a stale buffer is caught.
func fillPayload(b []byte, flow, k uint64) {
	seed := splitmix(flow<<32 ^ k)
	var w [8]byte
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(w[:], splitmix(seed^uint64(i)))
		copy(b[i:], w[:])
	}
}

func checkPayload(b []byte, flow, k uint64) error {
	seed := splitmix(flow<<32 ^ k)
	var w [8]byte
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(w[:], splitmix(seed^uint64(i)))
		end := min(i+8, len(b))
		for j := i; j < end; j++ {
			if b[j] != w[j-i] {
				return fmt.Errorf("byte %d of %d is %#x, want %#x", j, len(b), b[j], w[j-i])
			}
		}
	}
	return nil
}

func fakeverbsCfg() fakeverbs.Config {
	return fakeverbs.Config{Latency: 1000, BytesPerNs: 12.5}
}
