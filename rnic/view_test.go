package rnic

import (
	"testing"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/verbs"
)

// TestViewSizeClasses checks that a RecvView buffer is sized by the SEND
// it holds (not one 4 KiB buffer for every SEND), holds what it was asked
// for, and is reused from its class's free list.
func TestViewSizeClasses(t *testing.T) {
	n := &NIC{}
	for _, size := range []int{0, 1, 40, 64, 65, 1000, 1024, 1025, 4096, 4097, 1 << 20} {
		b := n.viewGet(size)
		if len(b) != 0 || cap(b) < size {
			t.Fatalf("viewGet(%d): len %d cap %d", size, len(b), cap(b))
		}
		if size > 64 && cap(b) >= 2*size {
			t.Fatalf("viewGet(%d): cap %d, more than twice the size", size, cap(b))
		}
		n.viewPut(b)
		if c := n.viewGet(size); cap(c) != cap(b) || &c[:1][0] != &b[:1][0] {
			t.Fatalf("viewGet(%d) after viewPut: a new buffer (cap %d), want the returned one", size, cap(c))
		}
	}
	// A buffer that append grew past its class goes back to the class its
	// capacity fills, and serves requests of that class only.
	g := append(n.viewGet(64), make([]byte, 100)...)
	n.viewPut(g)
	if b := n.viewGet(65); cap(b) < 65 {
		t.Fatalf("viewGet(65) got cap %d", cap(b))
	}
}

// TestPayloadBufferMTU checks that a packet's payload buffer is made for
// the port MTU (what any packet of the NIC can carry), not a fixed 4 KiB,
// and that a buffer that already holds the size is kept.
func TestPayloadBufferMTU(t *testing.T) {
	for _, mtu := range []int{256, 1024, 4096} {
		n := &NIC{}
		n.cfg.PortMTU = verbs.MTU(mtu)
		p := &fabric.Packet{}
		b := n.setPayload(p, 100)
		if len(b) != 100 || cap(b) != mtu {
			t.Fatalf("MTU %d: setPayload(100) len %d cap %d, want cap %d", mtu, len(b), cap(b), mtu)
		}
		if c := n.setPayload(p, int64(mtu)); &c[0] != &b[0] {
			t.Fatalf("MTU %d: a full-MTU payload reallocated the buffer", mtu)
		}
	}
}
