package byteexpress_test

import (
	"fmt"
	"hash/fnv"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
)

// TestCloseMidFlight closes endpoints while messages of every kind are
// queued, being written and in flight: every buffer the core held goes back
// to the allocator and every QP is destroyed.
func TestCloseMidFlight(t *testing.T) {
	for _, cfg := range []byteexpress.Config{{}, {UseSRQ: true, SRQDepth: 32}, {Cwnd: 8 << 10}} {
		c := newCluster(t, fakeverbsCfg())
		a := c.addNode("a", cfg)
		b := c.addNode("b", cfg)
		w := newWorkload(c)
		w.allowFail = true
		rng := rngFor(11)
		for range 4 {
			w.addFlow(a, b, logUniformSizes(rng, 30, 1, 2<<20))
			w.addFlow(b, a, logUniformSizes(rng, 30, 1, 2<<20))
		}
		// Expose a few buffers that will never be written.
		var exposed int
		b.onEvent = func(n *node, ev byteexpress.Event) {
			if ev.Kind == byteexpress.EvAccepted && exposed < 3 {
				buf, _ := n.ep.Allocate(1000)
				if _, err := ev.Socket.Expose(buf); err != nil {
					t.Fatal(err)
				}
				exposed++
			}
			w.onEvent(n, ev)
		}
		w.scheduleRandom(rng, 1e5)
		c.run(func() bool { return w.delivered > w.expected/3 }, time.Second)
		c.shutdown() // checks pools and QPs
		if w.delivered == w.expected {
			t.Errorf("everything was delivered before the close: the test closes too late")
		}
	}
}

// TestDeterminism: the same scenario and seed give the same schedule,
// event for event (docs/ARCHITECTURE.md "Determinism and outputs").
func TestDeterminism(t *testing.T) {
	run := func() (uint64, int) {
		h := fnv.New64a()
		var c *cluster
		cfg := byteexpress.Config{Threads: 2, RQDepth: 8, Cwnd: 32 << 10, Trace: func(ev byteexpress.TraceEvent) {
			fmt.Fprintf(h, "%d %d %d %d %d %d\n", c.now, ev.Kind, ev.Engine, ev.Socket, ev.Bytes, ev.WRs)
		}}
		c = newCluster(t, fakeverbsCfg())
		var nodes []*node
		for k := range 3 {
			nodes = append(nodes, c.addNode(fmt.Sprintf("n%d", k), cfg))
		}
		w := newWorkload(c)
		rng := rngFor(5)
		for _, x := range nodes {
			for _, y := range nodes {
				if x != y {
					w.addFlow(x, y, logUniformSizes(rng, 15, 1, 512<<10))
					w.addFlow(x, y, logUniformSizes(rng, 15, 1, 512<<10))
				}
			}
		}
		w.scheduleRandom(rng, 5e5)
		c.run(w.done, 10*time.Second)
		for _, n := range nodes {
			fmt.Fprintf(h, "%+v\n", n.ep.Stats())
		}
		c.shutdown()
		return h.Sum64(), c.polls
	}
	h1, p1 := run()
	h2, p2 := run()
	if h1 != h2 || p1 != p2 {
		t.Errorf("two runs of the same scenario differ: %x/%d vs %x/%d", h1, p1, h2, p2)
	}
}
