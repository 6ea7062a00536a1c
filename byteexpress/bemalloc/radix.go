package bemalloc

import "sync/atomic"

// addrBits bounds the user virtual addresses the radix covers: 48 bits is the
// user half of x86-64 4-level paging and arm64's 48-bit VA. mmap does not hand
// out addresses above 2^47 unless asked to, and newBlock refuses any that it
// cannot index.
const addrBits = 48

// radix maps a block index (addr >> log2(BlockSize)) to its block in O(1)
// with two array loads and no lock: a root array allocated up front and
// leaves allocated on first use. With 4 MiB blocks the index has 26 bits,
// split 13/13: a 64 KiB root and 64 KiB leaves, each leaf covering 32 GiB of
// address space. Writers (block map and release) hold Pool.mu; readers are
// lock-free through atomic pointers, so GetMR and Deallocate from any
// goroutine see a consistent entry.
type radix struct {
	shift    uint // log2(BlockSize)
	leafBits uint
	root     []atomic.Pointer[radixLeaf]
}

type radixLeaf struct {
	slot []atomic.Pointer[block]
}

func newRadix(shift uint) radix {
	idx := addrBits - shift
	leaf := (idx + 1) / 2
	return radix{shift: shift, leafBits: leaf, root: make([]atomic.Pointer[radixLeaf], 1<<(idx-leaf))}
}

// lookup returns the block containing addr, or nil.
func (r *radix) lookup(addr uintptr) *block {
	i := addr >> r.shift
	hi := i >> r.leafBits
	if hi >= uintptr(len(r.root)) {
		return nil
	}
	l := r.root[hi].Load()
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
		hi := i >> r.leafBits
		l := r.root[hi].Load()
		if l == nil {
			if b == nil {
				continue
			}
			l = &radixLeaf{slot: make([]atomic.Pointer[block], 1<<r.leafBits)}
			r.root[hi].Store(l)
		}
		l.slot[i&(1<<r.leafBits-1)].Store(b)
	}
}
