package bemalloc

import "testing"

// The radix maps every block index of a run to its block, across leaf and
// middle-node boundaries, forgets cleared ones, and answers nil for
// addresses never set or beyond the indexed address space.
func TestRadixLookup(t *testing.T) {
	const shift = 22 // 4 MiB blocks: 26 index bits, 10/8/8
	r := newRadix(shift)
	if r.midBits != 8 || r.leafBits != 8 || len(r.root) != 1<<10 {
		t.Fatalf("split %d/%d/%d, want 10/8/8", len(r.root), r.midBits, r.leafBits)
	}
	a, b, c := &block{}, &block{}, &block{}
	const B = uintptr(1) << shift
	// a: 3 blocks ending at a leaf boundary and crossing into the next leaf;
	// b: across a middle-node boundary; c: the last index of the space.
	aAt := (1<<8 - 2) * B
	bAt := (1<<16 - 1) * B
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
	r.set(1<<40, B, nil) // clearing where nothing was set allocates nothing
	if r.lookup(aAt+B) != nil || r.lookup(bAt) != b {
		t.Fatalf("after clearing a: lookup(a) %p, lookup(b) %p", r.lookup(aAt+B), r.lookup(bAt))
	}
	if r.root[(1<<40)>>(shift+16)].Load() != nil {
		t.Fatal("clearing an unset range allocated a node")
	}
}
