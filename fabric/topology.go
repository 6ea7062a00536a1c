package fabric

import (
	"encoding/binary"
	"fmt"
)

type edge struct {
	a, b NodeID // a < b; a may be a host, b is a switch
	link LinkConfig
}

type graph struct {
	hosts, switches int
	names           []string
	miniPod         []int
	edges           []edge
}

// buildGraph lays out the nodes and cables of a validated topology. Port
// numbering at a switch follows edge order: host ports first, then uplinks.
func buildGraph(c *Config) graph {
	t := c.Topology
	var g graph
	host := func(sw NodeID, pod int) {
		id := NodeID(len(g.miniPod))
		g.miniPod = append(g.miniPod, pod)
		g.edges = append(g.edges, edge{a: id, b: sw, link: c.HostLink})
	}
	fab := func(a, b NodeID) { g.edges = append(g.edges, edge{a: a, b: b, link: c.FabricLink}) }
	switch t.Kind {
	case Star:
		g.hosts, g.switches = t.Hosts, 1
		sw := NodeID(g.hosts)
		for i := 0; i < t.Hosts; i++ {
			host(sw, 0)
		}
		g.names = hostNames(g.hosts)
		g.names = append(g.names, "sw0")
	case LeafSpine:
		g.hosts, g.switches = t.Leaves*t.HostsPerLeaf, t.Leaves+t.Spines
		leaf := func(l int) NodeID { return NodeID(g.hosts + l) }
		spine := func(s int) NodeID { return NodeID(g.hosts + t.Leaves + s) }
		for l := 0; l < t.Leaves; l++ {
			for i := 0; i < t.HostsPerLeaf; i++ {
				host(leaf(l), l)
			}
		}
		for l := 0; l < t.Leaves; l++ {
			for s := 0; s < t.Spines; s++ {
				fab(leaf(l), spine(s))
			}
		}
		g.names = hostNames(g.hosts)
		for l := 0; l < t.Leaves; l++ {
			g.names = append(g.names, fmt.Sprintf("leaf%d", l))
		}
		for s := 0; s < t.Spines; s++ {
			g.names = append(g.names, fmt.Sprintf("spine%d", s))
		}
	case FatTree:
		k, h := t.K, t.K/2
		g.hosts = k * k * k / 4
		g.switches = k*k + h*h
		edgeSw := func(pod, e int) NodeID { return NodeID(g.hosts + pod*h + e) }
		aggSw := func(pod, a int) NodeID { return NodeID(g.hosts + k*h + pod*h + a) }
		core := func(c int) NodeID { return NodeID(g.hosts + k*k + c) }
		for pod := 0; pod < k; pod++ {
			for e := 0; e < h; e++ {
				for i := 0; i < h; i++ {
					host(edgeSw(pod, e), pod*h+e)
				}
			}
		}
		for pod := 0; pod < k; pod++ {
			for e := 0; e < h; e++ {
				for a := 0; a < h; a++ {
					fab(edgeSw(pod, e), aggSw(pod, a))
				}
			}
		}
		for pod := 0; pod < k; pod++ {
			for a := 0; a < h; a++ {
				for c := 0; c < h; c++ {
					fab(aggSw(pod, a), core(a*h+c))
				}
			}
		}
		g.names = hostNames(g.hosts)
		for pod := 0; pod < k; pod++ {
			for e := 0; e < h; e++ {
				g.names = append(g.names, fmt.Sprintf("edge%d.%d", pod, e))
			}
		}
		for pod := 0; pod < k; pod++ {
			for a := 0; a < h; a++ {
				g.names = append(g.names, fmt.Sprintf("agg%d.%d", pod, a))
			}
		}
		for c := 0; c < h*h; c++ {
			g.names = append(g.names, fmt.Sprintf("core%d", c))
		}
	}
	return g
}

func hostNames(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = fmt.Sprintf("h%d", i)
	}
	return s
}

// routes fills every switch's table by breadth-first search from each
// destination host: a switch's equal-cost next hops toward d are its ports
// whose peer is one hop closer to d. Hosts never forward. Identical next-hop
// sets are shared within a switch to keep tables small.
//
// Each search walks only the switch graph (a host other than d is never a
// next hop, so its distance is never needed): d's uplink reaches its switch,
// whose only next hop toward d is that port, and from there the search
// follows switch-to-switch links. So one destination costs the switch
// graph's size, not the number of hosts, and a star of N hosts builds in
// O(N) instead of O(N^2).
func (n *Network) routes(g graph) {
	nh := len(n.Hosts)
	type nb struct {
		node NodeID
		port int32
	}
	adj := make([][]nb, len(n.Switches)) // switch-to-switch links, in port order
	for si, sw := range n.Switches {
		for _, p := range sw.Ports {
			if int(p.Peer) >= nh {
				adj[si] = append(adj[si], nb{p.Peer, int32(p.Index)})
			}
		}
		sw.route = make([]uint32, nh)
		sw.sets = [][]int32{nil}
	}
	intern := make([]map[string]uint32, len(n.Switches)) // hop list -> index in sets
	for i := range intern {
		intern[i] = map[string]uint32{}
	}
	dist := make([]int32, len(n.Switches)) // by switch index; -1: not reached
	for i := range dist {
		dist[i] = -1
	}
	queue := make([]int, 0, len(n.Switches)) // switch indices in search order
	var hops []int32
	var key []byte
	// Hosts on one switch have the same routes everywhere but there: the
	// routes of the last host's switch are kept (hosts are numbered switch
	// by switch), and a host on the same switch takes them, interning only
	// its own hop at its switch, which assigns every set the index the full
	// search would (the other keys were interned by the first such host).
	type row struct {
		si int
		r  uint32
	}
	var same []row
	lastFirst := -1
	for d := 0; d < nh; d++ {
		h := n.Hosts[d]
		if h.out == nil || int(h.peer) < nh {
			continue // not connected to a switch
		}
		first := int(h.peer) - nh
		if first == lastFirst {
			for _, x := range same {
				n.Switches[x.si].route[d] = x.r
			}
			sw := n.Switches[first]
			key = binary.LittleEndian.AppendUint32(key[:0], uint32(h.peerPort))
			r, ok := intern[first][string(key)]
			if !ok {
				r = uint32(len(sw.sets))
				sw.sets = append(sw.sets, []int32{int32(h.peerPort)})
				intern[first][string(key)] = r
			}
			sw.route[d] = r
			continue
		}
		lastFirst, same = first, same[:0]
		dist[first] = 1
		queue = append(queue[:0], first)
		for head := 0; head < len(queue); head++ {
			u := queue[head]
			for _, v := range adj[u] {
				if vi := int(v.node) - nh; dist[vi] < 0 {
					dist[vi] = dist[u] + 1
					queue = append(queue, vi)
				}
			}
		}
		for _, si := range queue {
			ds := dist[si]
			hops = hops[:0]
			if ds == 1 {
				hops = append(hops, int32(h.peerPort))
			} else {
				for _, v := range adj[si] {
					if dist[int(v.node)-nh] == ds-1 {
						hops = append(hops, v.port)
					}
				}
			}
			key = key[:0]
			for _, hp := range hops {
				key = binary.LittleEndian.AppendUint32(key, uint32(hp))
			}
			if len(hops) == 0 {
				continue // route stays 0: none
			}
			sw := n.Switches[si]
			r, ok := intern[si][string(key)]
			if !ok {
				r = uint32(len(sw.sets))
				sw.sets = append(sw.sets, append([]int32(nil), hops...))
				intern[si][string(key)] = r
			}
			sw.route[d] = r
			if ds > 1 {
				same = append(same, row{si, r})
			}
		}
		for _, si := range queue {
			dist[si] = -1
		}
	}
}
