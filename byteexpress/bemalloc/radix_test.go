package bemalloc

import "testing"

// The radix maps every block index of a run to its block, across leaf and
// middle-node boundaries, forgets cleared ones, and answers nil for
// addresses never set or beyond the indexed address space.
func TestRadixLookup(t *testing.T) {
	const shift = 22 // 4 MiB blocks: 26 index bits, 8/9/9
	r := newRadix(shift)
	if r.midBits != 9 || r.leafBits != 9 || len(r.root) != 1<<8 {
		t.Fatalf("split %d/%d/%d, want 1<<8 roots, 9/9", len(r.root), r.midBits, r.leafBits)
	}
	a, b, c := &block{}, &block{}, &block{}
	const B = uintptr(1) << shift
	// a: 3 blocks ending at a leaf boundary and crossing into the next leaf;
	// b: across a middle-node boundary; c: the last index of the space.
	aAt := (uintptr(1)<<r.leafBits - 2) * B
	bAt := (uintptr(1)<<(r.leafBits+r.midBits) - 1) * B
	cAt := uintptr(1)<<addrBits - B
	r.set(aAt, 3*B, a)
	r.set(bAt, 2*B, b)
	r.set(cAt, B, c)
	for _, tc := range []struct {
		addr uintptr
		want *block
	}{
		{aAt, a}, {aAt + B + 17, a}, {aAt + 3*B - 1, a}, {aAt + 3*B, nil}, {aAt - 1, nil},
		{bAt, b}, {bAt + 2*B - 1, b}, {bAt + 2*B, nil},
		{cAt + B - 1, c}, {0, nil}, {uintptr(1) << addrBits, nil}, {^uintptr(0), nil},
	} {
		if got := r.lookup(tc.addr); got != tc.want {
			t.Errorf("lookup(%#x) = %p, want %p", tc.addr, got, tc.want)
		}
	}
	r.set(aAt, 3*B, nil)
	r.set(1<<44, B, nil) // clearing where nothing was set allocates nothing
	if r.lookup(aAt+B) != nil || r.lookup(bAt) != b {
		t.Fatalf("after clearing a: lookup(a) %p, lookup(b) %p", r.lookup(aAt+B), r.lookup(bAt))
	}
	if r.root[(1<<44)>>(shift+r.leafBits+r.midBits)].Load() != r.empty {
		t.Fatal("clearing an unset range allocated a node")
	}
}
