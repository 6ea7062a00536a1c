package rnic

import (
	"math/bits"

	"github.com/besim/besim/sim"
	"github.com/besim/besim/verbs"
)

// Memory translation caches (MPT: one entry per MR, its key, bounds and
// access; MTT: one entry per translated page of an MR). The NIC looks an MR
// up in the MPT cache and each page it touches in the MTT cache when it
// gathers a packet's payload (send side) and when it places one (receive
// side: the receive WQE's buffer of a SEND, the target of a WRITE). A miss
// costs the processing unit one PCIe read round trip (DMAReadLatency) to
// fetch the entry from the ICM in host memory; an MPT miss and the MTT
// misses of the same packet are two dependent reads (the MTT's location is
// in the MPT entry), the MTT misses of one packet one read (consecutive
// pages' entries are adjacent). Both caches are set-associative with LRU
// replacement in a set, indexed by entry address (see mttIndex); entries
// of a deregistered MR are invalidated.
// MPTCacheEntries = MTTCacheEntries = 0 (the default) leaves them out.

// xlateCache is a set-associative cache of 64-bit tags (0: empty) with LRU
// replacement within a set. It allocates only in init.
type xlateCache struct {
	ways, sets int
	tag        []uint64
	age        []uint64
	clock      uint64
}

func (c *xlateCache) init(entries, ways int) {
	if entries <= 0 {
		return
	}
	ways = max(1, min(ways, entries))
	c.ways = ways
	c.sets = entries / ways
	c.tag = make([]uint64, c.sets*ways)
	c.age = make([]uint64, c.sets*ways)
}

func (c *xlateCache) on() bool { return c.sets > 0 }

// mix spreads an MR's identity over the sets (splitmix64's finalizer).
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// set returns the first slot of the set that index selects.
func (c *xlateCache) set(index uint64) int { return int(index%uint64(c.sets)) * c.ways }

// lookup reports a hit for tag in the set index selects; on a miss it
// fills that set's least recently used way.
func (c *xlateCache) lookup(tag, index uint64) bool {
	c.clock++
	s := c.set(index)
	victim := s
	for i := s; i < s+c.ways; i++ {
		if c.tag[i] == tag {
			c.age[i] = c.clock
			return true
		}
		if c.age[i] < c.age[victim] {
			victim = i
		}
	}
	c.tag[victim], c.age[victim] = tag, c.clock
	return false
}

// invalidate drops tag (in the set index selects) if cached.
func (c *xlateCache) invalidate(tag, index uint64) {
	s := c.set(index)
	for i := s; i < s+c.ways; i++ {
		if c.tag[i] == tag {
			c.tag[i], c.age[i] = 0, 0
		}
	}
}

// mttTag is the MTT entry of page pg (counted from the MR's first page) of
// the MR with cache identity id.
func mttTag(id uint64, pg uint64) uint64 { return id<<28 ^ pg<<1 | 1 }

// mptTag is the MPT entry of the MR with cache identity id.
func mptTag(id uint64) uint64 { return id << 1 }

// The MPT and MTT are tables in host memory (ICM) and the caches are
// indexed by entry address: an MR's MPT entry lands in a set given by its
// identity, and the MTT entries of its consecutive pages, adjacent in the
// table, in consecutive sets (so one MR's pages never conflict with each
// other until they outnumber the sets).
func mptIndex(id uint64) uint64     { return mix(id) }
func mttIndex(id, pg uint64) uint64 { return mix(id) + pg }

// initMRCache sizes the caches from the configuration.
func (n *NIC) initMRCache() {
	n.mpt.init(n.cfg.MPTCacheEntries, n.cfg.MRCacheWays)
	n.mtt.init(n.cfg.MTTCacheEntries, n.cfg.MRCacheWays)
	if n.cfg.MTTPage > 0 {
		n.mttShift = uint(bits.TrailingZeros64(uint64(n.cfg.MTTPage)))
	}
}

// mrCacheOn reports whether either translation cache is modelled.
func (n *NIC) mrCacheOn() bool { return n.mpt.on() || n.mtt.on() }

// xlateMR looks up mr and the pages of [addr, addr+length) and returns the
// unit time the misses cost.
func (n *NIC) xlateMR(mr *MR, addr uint64, length int64) sim.Time {
	rounds := 0
	if n.mpt.on() {
		if n.mpt.lookup(mptTag(mr.cid), mptIndex(mr.cid)) {
			n.st.MPTCacheHits++
		} else {
			n.st.MPTCacheMisses++
			rounds++
		}
	}
	if n.mtt.on() && length > 0 {
		base := uint64(mr.addr) >> n.mttShift
		first := addr>>n.mttShift - base
		last := (addr+uint64(length)-1)>>n.mttShift - base
		miss := false
		for pg := first; pg <= last; pg++ {
			if n.mtt.lookup(mttTag(mr.cid, pg), mttIndex(mr.cid, pg)) {
				n.st.MTTCacheHits++
			} else {
				n.st.MTTCacheMisses++
				miss = true
			}
		}
		if miss {
			rounds++
		}
	}
	return sim.Time(rounds) * n.cfg.DMAReadLatency
}

// xlateSGL translates the length bytes at byte offset off of sgl (a WQE's
// scatter/gather list) and returns the unit time the misses cost.
func (n *NIC) xlateSGL(sgl []verbs.SGE, off, length int64) sim.Time {
	var d sim.Time
	for _, s := range sgl {
		if length <= 0 {
			break
		}
		l := int64(s.Length)
		if off >= l {
			off -= l
			continue
		}
		k := min(l-off, length)
		if mr := n.mrByKey(s.LKey); mr != nil {
			d += n.xlateMR(mr, uint64(s.Addr)+uint64(off), k)
		}
		length -= k
		off = 0
	}
	return d
}

// forgetMR invalidates mr's cached translations (deregistration).
func (n *NIC) forgetMR(mr *MR) {
	if n.mpt.on() {
		n.mpt.invalidate(mptTag(mr.cid), mptIndex(mr.cid))
	}
	if n.mtt.on() && mr.length > 0 {
		pages := (uint64(mr.addr)+uint64(mr.length)-1)>>n.mttShift - uint64(mr.addr)>>n.mttShift
		for pg := uint64(0); pg <= pages; pg++ {
			n.mtt.invalidate(mttTag(mr.cid, pg), mttIndex(mr.cid, pg))
		}
	}
}
