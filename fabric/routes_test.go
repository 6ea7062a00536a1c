package fabric

import (
	"encoding/binary"
	"slices"
	"testing"
)

// The switch-graph route search gives every switch the same next-hop
// sets, in the same order, as the search over every node it replaced
// (refRoutes, kept here as the oracle).
func TestRoutesMatchFullSearch(t *testing.T) {
	for _, top := range []Topology{
		{Kind: Star, Hosts: 5},
		{Kind: LeafSpine, Leaves: 3, HostsPerLeaf: 4, Spines: 2},
		{Kind: LeafSpine, Leaves: 4, HostsPerLeaf: 2, Spines: 3},
		{Kind: FatTree, K: 4},
		{Kind: FatTree, K: 6},
	} {
		n := build(t, func(c *Config) { c.Topology = top })
		want := n.refRoutes()
		for si, sw := range n.Switches {
			for d := range n.Hosts {
				if got := sw.Routes(NodeID(d)); !slices.Equal(got, want[si][d]) {
					t.Fatalf("%+v: %s toward h%d: next hops %v, full search %v", top, sw.Name, d, got, want[si][d])
				}
			}
		}
	}
}

func (n *Network) refRoutes() [][][]int32 {
	nh := len(n.Hosts)
	total := nh + len(n.Switches)
	type nb struct {
		node NodeID
		port int32
	}
	adj := make([][]nb, total)
	for _, h := range n.Hosts {
		adj[h.id] = append(adj[h.id], nb{h.peer, 0})
	}
	for _, sw := range n.Switches {
		for _, p := range sw.Ports {
			adj[sw.ID] = append(adj[sw.ID], nb{p.Peer, int32(p.Index)})
		}
		_ = sw
	}
	out := make([][][]int32, len(n.Switches))
	for i := range out {
		out[i] = make([][]int32, nh)
	}
	intern := make([]map[string][]int32, len(n.Switches))
	for i := range intern {
		intern[i] = map[string][]int32{}
	}
	dist := make([]int32, total)
	queue := make([]NodeID, 0, total)
	var hops []int32
	var key []byte
	for d := 0; d < nh; d++ {
		for i := range dist {
			dist[i] = -1
		}
		dist[d] = 0
		queue = append(queue[:0], NodeID(d))
		for head := 0; head < len(queue); head++ {
			u := queue[head]
			if int(u) < nh && int(u) != d {
				continue // hosts do not forward
			}
			for _, v := range adj[u] {
				if dist[v.node] < 0 {
					dist[v.node] = dist[u] + 1
					queue = append(queue, v.node)
				}
			}
		}
		for si, sw := range n.Switches {
			ds := dist[sw.ID]
			if ds <= 0 {
				continue
			}
			hops = hops[:0]
			for _, v := range adj[sw.ID] {
				if dist[v.node] == ds-1 && (int(v.node) >= nh || int(v.node) == d) {
					hops = append(hops, v.port)
				}
			}
			if len(hops) == 0 {
				continue
			}
			key = key[:0]
			for _, h := range hops {
				key = binary.LittleEndian.AppendUint32(key, uint32(h))
			}
			r, ok := intern[si][string(key)]
			if !ok {
				r = append([]int32(nil), hops...)
				intern[si][string(key)] = r
			}
			out[si][d] = r
		}
	}
	return out
}
