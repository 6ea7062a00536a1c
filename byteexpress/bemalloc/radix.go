package bemalloc

import "sync/atomic"

// addrBits bounds the user virtual addresses the radix covers: 48 bits is the
// user half of x86-64 4-level paging and arm64's 48-bit VA. mmap does not hand
// out addresses above 2^47 unless asked to, and newBlock refuses any that it
// cannot index.
const addrBits = 48

// radix maps a block index (addr >> log2(BlockSize)) to its block in O(1)
// with three array loads and no lock: a root array allocated up front and
// middle nodes and leaves allocated on first use. The index bits are split
// about evenly: with 4 MiB blocks, 26 bits as 10/8/8, an 8 KiB root and
// 2 KiB nodes, each leaf covering 1 GiB of address space. (Two levels,
// 13/13, took a 64 KiB root and 64 KiB leaves: 128 KiB or more per pool,
// 60 MB for the 470 hosts of the training scenario, each with its pool.)
// Writers (block map and release) hold Pool.mu; readers are lock-free
// through atomic pointers, so GetMR and Deallocate from any goroutine see a
// consistent entry.
type radix struct {
	shift    uint // log2(BlockSize)
	midBits  uint
	leafBits uint
	root     []atomic.Pointer[radixMid]
}

type radixMid struct {
	leaf []atomic.Pointer[radixLeaf]
}

type radixLeaf struct {
	slot []atomic.Pointer[block]
}

func newRadix(shift uint) radix {
	idx := addrBits - shift
	node := idx / 3
	return radix{shift: shift, midBits: node, leafBits: node, root: make([]atomic.Pointer[radixMid], 1<<(idx-2*node))}
}

// lookup returns the block containing addr, or nil.
func (r *radix) lookup(addr uintptr) *block {
	i := addr >> r.shift
	hi := i >> (r.leafBits + r.midBits)
	if hi >= uintptr(len(r.root)) {
		return nil
	}
	m := r.root[hi].Load()
	if m == nil {
		return nil
	}
	l := m.leaf[(i>>r.leafBits)&(1<<r.midBits-1)].Load()
	if l == nil {
		return nil
	}
	return l.slot[i&(1<<r.leafBits-1)].Load()
}

// set points every block index of [addr, addr+size) at b (nil clears).
// The caller holds Pool.mu.
func (r *radix) set(addr, size uintptr, b *block) {
	for a := addr; a < addr+size; a += 1 << r.shift {
		i := a >> r.shift
		hi := i >> (r.leafBits + r.midBits)
		m := r.root[hi].Load()
		if m == nil {
			if b == nil {
				continue
			}
			m = &radixMid{leaf: make([]atomic.Pointer[radixLeaf], 1<<r.midBits)}
			r.root[hi].Store(m)
		}
		mi := (i >> r.leafBits) & (1<<r.midBits - 1)
		l := m.leaf[mi].Load()
		if l == nil {
			if b == nil {
				continue
			}
			l = &radixLeaf{slot: make([]atomic.Pointer[block], 1<<r.leafBits)}
			m.leaf[mi].Store(l)
		}
		l.slot[i&(1<<r.leafBits-1)].Store(b)
	}
}
