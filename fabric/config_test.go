package fabric

import (
	"github.com/besim/besim/units"
	"strings"
	"testing"

	"github.com/besim/besim/pfc"
	"github.com/besim/besim/sim"
)

// Bad configs are errors that name the problem, never panics.
func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"no kind", func(c *Config) { c.Topology.Kind = "" }, "topology.kind is missing"},
		{"unknown kind", func(c *Config) { c.Topology.Kind = "torus" }, `unknown topology kind "torus"`},
		{"star no hosts", func(c *Config) { c.Topology.Hosts = 0 }, "topology.hosts"},
		{"leaf-spine zero", func(c *Config) { c.Topology = Topology{Kind: LeafSpine, Leaves: 2} }, "leaf-spine needs"},
		{"fat-tree odd", func(c *Config) { c.Topology = Topology{Kind: FatTree, K: 5} }, "fat-tree k must be even"},
		{"too big", func(c *Config) { c.Topology = Topology{Kind: FatTree, K: 128} }, "more than the supported"},
		{"zero rate", func(c *Config) { c.HostLink.Rate = 0 }, "host_link.rate"},
		{"negative delay", func(c *Config) { c.HostLink.Delay = -1 }, "host_link.delay"},
		{"fabric rate", func(c *Config) {
			c.Topology = Topology{Kind: LeafSpine, Leaves: 2, HostsPerLeaf: 2, Spines: 1}
			c.FabricLink.Rate = -5
		}, "fabric_link.rate"},
		{"mtu", func(c *Config) { c.MTU = 0 }, "mtu must be"},
		{"buffer", func(c *Config) { c.Switch.Buffer = 0 }, "switch.buffer"},
		{"alpha", func(c *Config) { c.Switch.Alpha = 0 }, "switch.alpha"},
		{"scheduler", func(c *Config) { c.Switch.Scheduler = "fifo" }, "unknown switch.scheduler"},
		{"weight", func(c *Config) { c.Switch.Weights[2] = 0 }, "switch.weights[2]"},
		{"kmin>kmax", func(c *Config) { c.Switch.ECN[3].Kmin = 300_000 }, "switch.ecn[3]"},
		{"pmax", func(c *Config) { c.Switch.ECN[1].Pmax = 1.5 }, "switch.ecn[1].pmax"},
		{"static xon>xoff", func(c *Config) {
			c.Switch.PFC.Alpha = 0
			c.Switch.PFC.XOFF, c.Switch.PFC.XON = 1000, 2000
		}, "static XON"},
		{"static no xoff", func(c *Config) { c.Switch.PFC.Alpha = 0 }, "static thresholds need XOFF"},
		{"headroom", func(c *Config) { c.Switch.PFC.Headroom = -1 }, "switch.pfc.headroom"},
		{"watchdog", func(c *Config) { c.Switch.PFC.Watchdog.Detection = 0 }, "watchdog detection"},
		{"buffer too small for headroom", func(c *Config) { c.Switch.Buffer = 100_000 }, "cannot hold the headroom"},
		{"several at once", func(c *Config) { c.MTU = -1; c.Switch.Buffer = -1 }, "mtu must be"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tc.mod(&cfg)
			_, err := New(sim.NewKernel(), cfg)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
	if _, err := New(nil, DefaultConfig()); err == nil {
		t.Fatal("nil kernel accepted")
	}
	cfg := DefaultConfig()
	cfg.MTU, cfg.Switch.Buffer = -1, -1
	if err := cfg.Validate(); !strings.Contains(err.Error(), "switch.buffer") {
		t.Fatalf("only the first error reported: %v", err)
	}
	// Everything lossy: PFC parameters do not matter.
	cfg = DefaultConfig()
	cfg.Switch.PFC = PFC{}
	if _, err := New(sim.NewKernel(), cfg); err != nil {
		t.Fatal(err)
	}
}

func TestFlowValidation(t *testing.T) {
	n := build(t, func(c *Config) { c.Topology = Topology{Kind: Star, Hosts: 4} })
	bad := []struct {
		f    Flow
		want string
	}{
		{Flow{Src: 9, Dst: 1}, "source 9 is not a host"},
		{Flow{Src: 0, Dst: -1}, "destination -1"},
		{Flow{Src: 4, Dst: 1}, "source 4"}, // the switch
		{Flow{Src: 1, Dst: 1}, "to itself"},
		{Flow{Src: 0, Dst: 1, Prio: 8}, "priority 8"},
		{Flow{Src: 0, Dst: 1, Rate: -1}, "rate"},
		{Flow{Src: 0, Dst: 1, Size: -1}, "size"},
		{Flow{Src: 0, Dst: 1, MTU: 10000}, "mtu"},
	}
	for _, tc := range bad {
		if _, err := n.AddFlow(tc.f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
	n.Run(sim.Microsecond)
	if _, err := n.AddFlow(Flow{Src: 0, Dst: 1, Start: 0}); err == nil {
		t.Error("flow starting in the past accepted")
	}
	if err := n.Attach(7, NewRawHost(n)); err == nil {
		t.Error("attach to a switch accepted")
	}
	if err := n.Attach(1, nil); err == nil {
		t.Error("nil host accepted")
	}
}

func TestTopologies(t *testing.T) {
	tests := []struct {
		topo               Topology
		hosts, switches    int
		links              int // directed
		maxHops            int // links on the longest shortest path
		ecmpFirstHopChoice int // equal-cost choices at the first switch toward a far host
	}{
		{Topology{Kind: Star, Hosts: 5}, 5, 1, 10, 2, 1},
		{Topology{Kind: LeafSpine, Leaves: 3, HostsPerLeaf: 4, Spines: 2}, 12, 5, 2 * (12 + 6), 4, 2},
		{Topology{Kind: FatTree, K: 4}, 16, 20, 2 * (16 + 16 + 16), 6, 2},
		{Topology{Kind: FatTree, K: 6}, 54, 45, 2 * (54 + 54 + 54), 6, 3},
	}
	for _, tc := range tests {
		t.Run(string(tc.topo.Kind), func(t *testing.T) {
			n := build(t, func(c *Config) { c.Topology = tc.topo })
			if n.NumHosts() != tc.hosts || len(n.Switches) != tc.switches || len(n.Links) != tc.links {
				t.Fatalf("hosts %d switches %d links %d", n.NumHosts(), len(n.Switches), len(n.Links))
			}
			// Walk every (src, dst) pair along first choices: reaches dst in
			// at most maxHops links, never revisits a switch.
			for s := 0; s < n.NumHosts(); s++ {
				for d := 0; d < n.NumHosts(); d++ {
					if s == d {
						continue
					}
					node, _ := n.Hosts[s].Peer()
					hops := 1
					for node != NodeID(d) {
						sw := n.Switch(node)
						r := sw.Routes(NodeID(d))
						if len(r) == 0 {
							t.Fatalf("%s has no route to h%d", sw.Name, d)
						}
						node = sw.Ports[r[0]].Peer
						hops++
						if hops > tc.maxHops {
							t.Fatalf("h%d->h%d longer than %d hops", s, d, tc.maxHops)
						}
					}
				}
			}
			last := NodeID(n.NumHosts() - 1)
			first, _ := n.Hosts[0].Peer()
			if got := len(n.Switch(first).Routes(last)); got != tc.ecmpFirstHopChoice {
				t.Fatalf("%d equal-cost ports toward the far host, want %d", got, tc.ecmpFirstHopChoice)
			}
		})
	}
	n := build(t, func(c *Config) { c.Topology = Topology{Kind: LeafSpine, Leaves: 3, HostsPerLeaf: 2, Spines: 2} })
	if n.MiniPod(0) != 0 || n.MiniPod(3) != 1 || n.MiniPod(5) != 2 || n.NodeName(6) != "leaf0" || n.NodeName(10) != "spine1" {
		t.Fatalf("mini-pods / names: %d %d %d %s %s", n.MiniPod(0), n.MiniPod(3), n.MiniPod(5), n.NodeName(6), n.NodeName(10))
	}
}

// ECMP: a flow sticks to one path, and many flows spread over all of them;
// all traffic arrives in a lossless fat-tree all-to-all.
func TestECMPSpreadsFlows(t *testing.T) {
	n := build(t, func(c *Config) { c.Topology = Topology{Kind: FatTree, K: 4} })
	var ids []uint32
	for s := 0; s < 16; s++ {
		for d := 0; d < 16; d++ {
			if s != d {
				ids = append(ids, addFlow(t, n, Flow{Src: NodeID(s), Dst: NodeID(d), Prio: lossless, Size: 20 << 10}))
			}
		}
	}
	n.Run(20 * sim.Millisecond)
	r := n.Report()
	for _, id := range ids {
		if f := r.Flows[id]; f.DeliveredBytes != 20<<10 {
			t.Fatalf("flow %d delivered %d", id, f.DeliveredBytes)
		}
	}
	if r.Totals.Drops+r.Totals.HeadroomDrops != 0 || r.Totals.PoolLive != 0 {
		t.Fatalf("%+v", r.Totals)
	}
	// Every core switch carried traffic.
	for _, sw := range r.Switches {
		if !strings.HasPrefix(sw.Name, "core") {
			continue
		}
		var tx int64
		for _, p := range sw.Ports {
			tx += p.Prio(lossless).TxPackets
		}
		if tx == 0 {
			t.Fatalf("%s idle: ECMP does not spread", sw.Name)
		}
	}
	// Deterministic and per flow.
	if ECMPHash(1, 2, 3, 4) != ECMPHash(1, 2, 3, 4) || ECMPHash(1, 2, 3, 4) == ECMPHash(1, 2, 4, 4) {
		t.Fatal("hash not a function of the flow")
	}
}

func TestQueueDepthSampler(t *testing.T) {
	n := build(t, func(c *Config) {
		c.Topology = Topology{Kind: Star, Hosts: 5}
		c.Sampling = Sampling{Interval: sim.Microsecond, Cap: 64}
	})
	for i := 0; i < 4; i++ {
		addFlow(t, n, Flow{Src: NodeID(i), Dst: 4, Prio: lossless, Size: 1 << 20})
	}
	n.K.Run() // the sampler stops by itself once the fabric is idle
	r := n.Report()
	d := r.Switches[0].Ports[4].Prio(lossless).Depth
	if d == nil {
		t.Fatal("no depth series")
	}
	c := d.Compact()
	if c.Len() == 0 || c.Len() > 64 {
		t.Fatalf("series %+v", c)
	}
	s := c.Series()
	if len(s.T) != c.Len() {
		t.Fatalf("series %+v", s)
	}
	var peak int64
	for _, v := range s.V {
		peak = max(peak, v)
	}
	if peak == 0 || peak > r.Switches[0].Ports[4].Prio(lossless).MaxQueue {
		t.Fatalf("sampled peak %d, max %d", peak, r.Switches[0].Ports[4].Prio(lossless).MaxQueue)
	}
	if r.Switches[0].Ports[0].Prio(lossless).Depth != nil {
		t.Fatal("series for a queue that never held a frame")
	}
	if s.T[len(s.T)-1] < 1*sim.Millisecond {
		t.Fatalf("sampler stopped at %v", s.T[len(s.T)-1])
	}
}

func TestDefaultsDocumented(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	n := build(t, nil)
	p := n.Switches[0].Ports[0]
	// 25G, 1us, 1106 B wire frames, 3.84us response: 8546 + 12000.
	if p.Headroom() != 20546 || p.Headroom() != pfc.Headroom(25*units.Gbps, sim.Microsecond, 1106, pfc.DefaultResponse) {
		t.Fatalf("default headroom %d", p.Headroom())
	}
	b := n.Switches[0].Buffer()
	if b.Reserved != 16*20546 || b.Size != 12<<20 {
		t.Fatalf("reserved %d of %d", b.Reserved, b.Size)
	}
	if in := p.Ingress(lossless); in.XOFF() != int64(float64(b.Free())/8) || in.XON() != in.XOFF()-3072 {
		t.Fatalf("XOFF %d XON %d", in.XOFF(), in.XON())
	}
}

func TestWriteExplain(t *testing.T) {
	n := build(t, func(c *Config) { c.Topology = Topology{Kind: LeafSpine, Leaves: 2, HostsPerLeaf: 2, Spines: 1} })
	var b strings.Builder
	if err := n.WriteExplain(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"leaf0: buffer 12582912 B", "ports at 25 Gbps", "ports at 100 Gbps", "headroom 20546 B = 2x1106 frame + 84 pause + 6250", "prio 3: XOFF"} {
		if !strings.Contains(out, want) {
			t.Errorf("explain lacks %q:\n%s", want, out)
		}
	}
}
