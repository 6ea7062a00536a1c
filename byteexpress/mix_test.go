package byteexpress_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/besim/besim/byteexpress"
)

// TestRandomMix: several endpoints, many sockets sharing engines, message
// sizes log-uniform in 1 B..4 MiB sent at random instants in both
// directions. Every message must arrive exactly once, intact and in
// per-socket order; credits never negative, no RNR with dedicated receive
// queues, bytes in flight within Cwnd, ring occupancy within the SQ depth,
// exactly one signalled WR (the last) per doorbell, and every buffer back in
// its allocator at shutdown.
func TestRandomMix(t *testing.T) {
	cases := []struct {
		name    string
		cfg     byteexpress.Config
		nodes   int
		socks   int // per ordered pair of nodes
		msgs    int // per socket
		maxSize int
		spread  int64
		srq     bool
	}{
		{name: "default", cfg: byteexpress.Config{}, nodes: 3, socks: 4, msgs: 25, maxSize: 4 << 20, spread: 2e6},
		{name: "cwnd16k", cfg: byteexpress.Config{Cwnd: 16 << 10}, nodes: 3, socks: 3, msgs: 20, maxSize: 1 << 20, spread: 2e6},
		{name: "cwnd4k-frag4k", cfg: byteexpress.Config{Cwnd: 4 << 10, FragSize: 4 << 10}, nodes: 2, socks: 4, msgs: 20, maxSize: 256 << 10, spread: 1e6},
		{name: "tiny-queues", cfg: byteexpress.Config{SQDepth: 4, RQDepth: 4, RecvBufSize: 512, SmallMsgMax: 256, FragSize: 1024},
			nodes: 3, socks: 5, msgs: 30, maxSize: 64 << 10, spread: 1e5},
		{name: "threads-frag16k", cfg: byteexpress.Config{Threads: 3, FragSize: 16 << 10}, nodes: 4, socks: 3, msgs: 15, maxSize: 4 << 20, spread: 2e6},
		{name: "burst-small", cfg: byteexpress.Config{RQDepth: 8}, nodes: 2, socks: 8, msgs: 60, maxSize: 8 << 10, spread: 0},
		{name: "srq", cfg: byteexpress.Config{UseSRQ: true, SRQDepth: 64, Threads: 2}, nodes: 3, socks: 4, msgs: 25, maxSize: 1 << 20, spread: 1e6, srq: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(i)+1, 42))
			if testing.Short() {
				tc.msgs = max(tc.msgs/4, 3)
			}
			c := newCluster(t, fakeverbsCfg())
			var nodes []*node
			for k := range tc.nodes {
				nodes = append(nodes, c.addNode(fmt.Sprintf("n%d", k), tc.cfg))
			}
			w := newWorkload(c)
			w.freeAsync = i%2 == 0
			for _, a := range nodes {
				for _, b := range nodes {
					if a == b {
						continue
					}
					for range tc.socks {
						w.addFlow(a, b, logUniformSizes(rng, tc.msgs, 1, tc.maxSize))
					}
				}
			}
			w.scheduleRandom(rng, tc.spread)
			c.run(w.done, 10*time.Second)
			w.finish()

			ns := c.net.Stats()
			if !tc.srq && ns.RNRNaks != 0 {
				t.Errorf("%d RNR NAKs with dedicated receive queues and credits", ns.RNRNaks)
			}
			if ns.BadSignalChains != 0 {
				t.Errorf("%d doorbells without exactly one signalled WR at the end", ns.BadSignalChains)
			}
			if ns.CQOverflows != 0 {
				t.Errorf("%d CQ overflows", ns.CQOverflows)
			}
			if ns.Errors != 0 {
				t.Errorf("%d error completions", ns.Errors)
			}
			cfg := tc.cfg.Defaults()
			var posts, wrs int
			for _, n := range nodes {
				st := n.ep.Stats()
				posts += st.PostSends
				wrs += st.SendWRs
				if st.Signalled != st.PostSends {
					t.Errorf("%s: %d signalled WRs for %d doorbells", n.name, st.Signalled, st.PostSends)
				}
				if !tc.srq && st.MinCredits < 0 {
					t.Errorf("%s: credits went to %d", n.name, st.MinCredits)
				}
				if st.MaxRingOccupancy > cfg.SQDepth {
					t.Errorf("%s: ring occupancy %d above SQ depth %d", n.name, st.MaxRingOccupancy, cfg.SQDepth)
				}
				if cfg.Cwnd > 0 && st.MaxInflightBytes > cfg.Cwnd {
					t.Errorf("%s: %d bytes in flight above Cwnd %d", n.name, st.MaxInflightBytes, cfg.Cwnd)
				}
				if st.EngineErrors != 0 || st.Dropped != 0 {
					t.Errorf("%s: %d engine errors, %d dropped", n.name, st.EngineErrors, st.Dropped)
				}
				if st.Engines != tc.nodes-1 && st.Engines != 2*(tc.nodes-1) {
					t.Errorf("%s: %d engines for %d peers", n.name, st.Engines, tc.nodes-1)
				}
			}
			if ns.PostSendCalls != posts || ns.SendWRs != wrs {
				t.Errorf("device saw %d posts/%d WRs, core counted %d/%d", ns.PostSendCalls, ns.SendWRs, posts, wrs)
			}
			for _, n := range nodes {
				st := n.ep.Stats()
				t.Logf("%s: engines %d meta %d/%d creditUpd %d returned %d stalls credit %d window %d ring %d minCredits %d maxRing %d maxInflight %d small %d large %d ka %d/%d",
					n.name, st.Engines, st.MetaRequests, st.MetaResponses, st.CreditUpdates, st.CreditsReturned, st.CreditStalls, st.WindowStalls, st.RingStalls,
					st.MinCredits, st.MaxRingOccupancy, st.MaxInflightBytes, st.SmallSent, st.LargeSent, st.KeepalivesSent, st.KeepalivesRecv)
				break
			}
			t.Logf("%d msgs, t=%.2fms, %d polls, %d doorbells, %.1f WRs/doorbell, RNR %d",
				w.delivered, float64(c.now)/1e6, c.polls, posts, float64(wrs)/float64(posts), ns.RNRNaks)
			c.shutdown()
		})
	}
}
