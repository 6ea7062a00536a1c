package rnic

import (
	"math/rand"
	"testing"
)

// TestQPCacheLRU checks the context cache's hits, misses and evictions
// against a plain LRU list, with destroys mixed in.
func TestQPCacheLRU(t *testing.T) {
	for _, c := range []struct{ qps, entries int }{{1, 1}, {5, 1}, {10, 3}, {40, 16}, {300, 64}, {50, 1024}} {
		rng := rand.New(rand.NewSource(int64(c.qps*1000 + c.entries)))
		n := &NIC{cfg: Config{QPCacheEntries: c.entries}}
		var qps []*QP
		for i := 0; i < c.qps; i++ {
			q := &QP{nic: n, qpn: uint32(qpnBase + i)}
			n.qps = append(n.qps, q)
			qps = append(qps, q)
		}
		var ref []*QP // most recent first
		find := func(q *QP) int {
			for i, r := range ref {
				if r == q {
					return i
				}
			}
			return -1
		}
		for step := 0; step < 20000; step++ {
			q := qps[rng.Intn(len(qps))]
			if rng.Intn(500) == 0 {
				n.lruUnlink(q)
				if i := find(q); i >= 0 {
					ref = append(ref[:i], ref[i+1:]...)
				}
				continue
			}
			// Skewed: recent QPs again more often.
			if len(ref) > 0 && rng.Intn(3) == 0 {
				q = ref[rng.Intn(min(len(ref), 3))]
			}
			i := find(q)
			want := i >= 0
			if want {
				ref = append(ref[:i], ref[i+1:]...)
			} else if len(ref) >= c.entries {
				ref = ref[:len(ref)-1]
			}
			ref = append([]*QP{q}, ref...)
			if got := n.touch(q); got != want {
				t.Fatalf("%+v step %d: touch(QP %d) hit %v, want %v", c, step, q.qpn, got, want)
			}
			if n.lruN != len(ref) {
				t.Fatalf("%+v step %d: %d cached, want %d", c, step, n.lruN, len(ref))
			}
			if len(n.lruLog) > 2*n.lruN+64 {
				t.Fatalf("%+v step %d: log of %d entries for %d cached QPs", c, step, len(n.lruLog), n.lruN)
			}
		}
	}
}
