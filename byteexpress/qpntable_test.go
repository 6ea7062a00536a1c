package byteexpress

import "testing"

func TestQPNTable(t *testing.T) {
	var m qpnTable
	a, b, c := &engine{}, &engine{}, &engine{}
	for _, q := range []uint32{0, 0x100, qpnDense - 1, qpnDense, 1<<24 - 1} {
		if m.get(q) != nil {
			t.Fatalf("empty table has QPN %#x", q)
		}
	}
	m.set(0x105, a)
	m.set(qpnDense+7, b)
	m.set(0x101, c)
	if m.get(0x105) != a || m.get(qpnDense+7) != b || m.get(0x101) != c || m.get(0x102) != nil || m.get(qpnDense+8) != nil {
		t.Fatal("lookups after set")
	}
	m.remove(0x105)
	m.remove(qpnDense + 7)
	m.remove(0x999) // absent: no effect
	if m.get(0x105) != nil || m.get(qpnDense+7) != nil || m.get(0x101) != c {
		t.Fatal("lookups after remove")
	}
}
