package bemalloc

import (
	"sync"
	"sync/atomic"
)

// addrBits bounds the user virtual addresses the radix covers: 48 bits is the
// user half of x86-64 4-level paging and arm64's 48-bit VA. mmap does not hand
// out addresses above 2^47 unless asked to, and newBlock refuses any that it
// cannot index.
const addrBits = 48

// radix maps a block index (addr >> log2(BlockSize)) to its block in O(1)
// with three array loads and no lock: a root array allocated up front, and
// middle nodes and leaves allocated on first use. With 4 MiB blocks the
// index has 26 bits, split 8/9/9: a 2 KiB root, 4 KiB middle nodes (each
// covering 1 TiB of address space) and 4 KiB leaves (each covering 2 GiB),
// so a pool of one block holds 10 KiB of index. (It was two levels, 13/13,
// of 64 KiB each: 128 KiB of GC-scanned pointers per pool, 131 MB for the
// 1,025 hosts of a 1,024-server Table 4 probe.) Writers (block map and
// release) hold Pool.mu; readers are lock-free through atomic pointers, so
// GetMR and Deallocate from any goroutine see a consistent entry.
//
// Entries not yet allocated point to an empty middle node and an empty
// leaf (all nil), shared by every pool with the same split, instead of
// being nil: lookup then has no nil check to make and is small enough for
// the compiler to inline it into Deallocate (issue 18: the call and the two
// checks were about 20 of the ~100 instructions of a large free). The
// shared nodes are never written: set replaces them before it stores.
type radix struct {
	shift    uint // log2(BlockSize)
	midBits  uint
	leafBits uint
	hiShift  uint    // leafBits + midBits
	midMask  uintptr // 1<<midBits - 1
	leafMask uintptr // 1<<leafBits - 1
	root     []atomic.Pointer[radixMid]
	empty    *radixMid // the shared empty middle node (its leaves: emptyLeaf)
}

type radixMid struct {
	leaf []atomic.Pointer[radixLeaf]
}

type radixLeaf struct {
	slot []atomic.Pointer[block]
}

// emptyNodes holds the shared empty middle node of each split (midBits,
// leafBits): at most one per BlockSize.
var emptyNodes struct {
	sync.Mutex
	mid map[[2]uint]*radixMid
}

func emptyMid(midBits, leafBits uint) *radixMid {
	emptyNodes.Lock()
	defer emptyNodes.Unlock()
	key := [2]uint{midBits, leafBits}
	m := emptyNodes.mid[key]
	if m == nil {
		if emptyNodes.mid == nil {
			emptyNodes.mid = make(map[[2]uint]*radixMid)
		}
		m = newRadixMid(midBits, &radixLeaf{slot: make([]atomic.Pointer[block], 1<<leafBits)})
		emptyNodes.mid[key] = m
	}
	return m
}

// newRadixMid returns a middle node whose leaves are all l.
func newRadixMid(midBits uint, l *radixLeaf) *radixMid {
	m := &radixMid{leaf: make([]atomic.Pointer[radixLeaf], 1<<midBits)}
	for i := range m.leaf {
		m.leaf[i].Store(l)
	}
	return m
}

func newRadix(shift uint) radix {
	idx := addrBits - shift
	leaf := (idx + 2) / 3
	mid := (idx - leaf + 1) / 2
	r := radix{shift: shift, midBits: mid, leafBits: leaf, hiShift: leaf + mid, midMask: 1<<mid - 1, leafMask: 1<<leaf - 1,
		root: make([]atomic.Pointer[radixMid], 1<<(idx-leaf-mid)), empty: emptyMid(mid, leaf)}
	for i := range r.root {
		r.root[i].Store(r.empty)
	}
	return r
}

// lookup returns the block containing addr, or nil.
func (r *radix) lookup(addr uintptr) *block {
	// The shift counts are below 64; masking them spares the compiler's
	// code for larger ones (about half the instructions of a lookup).
	i := addr >> (r.shift & 63)
	hi := i >> (r.hiShift & 63)
	if hi >= uintptr(len(r.root)) {
		return nil
	}
	return r.root[hi].Load().leaf[(i>>(r.leafBits&63))&r.midMask].Load().slot[i&r.leafMask].Load()
}

// set points every block index of [addr, addr+size) at b (nil clears).
// The caller holds Pool.mu.
func (r *radix) set(addr, size uintptr, b *block) {
	emptyLeaf := r.empty.leaf[0].Load()
	for a := addr; a < addr+size; a += 1 << r.shift {
		i := a >> r.shift
		hi := i >> (r.leafBits + r.midBits)
		m := r.root[hi].Load()
		if m == r.empty {
			if b == nil {
				continue
			}
			m = newRadixMid(r.midBits, emptyLeaf)
			r.root[hi].Store(m)
		}
		mi := (i >> r.leafBits) & (1<<r.midBits - 1)
		l := m.leaf[mi].Load()
		if l == emptyLeaf {
			if b == nil {
				continue
			}
			l = &radixLeaf{slot: make([]atomic.Pointer[block], 1<<r.leafBits)}
			m.leaf[mi].Store(l)
		}
		l.slot[i&(1<<r.leafBits-1)].Store(b)
	}
}
