package rnic

import (
	"bytes"
	"testing"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/sim"
	"github.com/besim/besim/units"
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

// TestInlineCopiedAtPost: an inline SEND and WRITE carry the bytes their
// source held when they were posted (the NIC copies them into the WQE),
// not what the application wrote there afterwards, including when the SQ
// wraps and a WQE position is reused by a non-inline WR between two inline
// ones.
func TestInlineCopiedAtPost(t *testing.T) {
	p := newPair(t, DefaultConfig(), 25*units.Gbps, sim.Microsecond)
	o := defaultOpts()
	o.depth = 2
	a, b := p.rc(t, o)
	src := newRegion(t, a.pd, 4096, allAccess)
	dst := newRegion(t, b.pd, 4096, allAccess)
	for round := 0; round < 3; round++ {
		fill(src.buf[:64], 10+round)
		want := append([]byte(nil), src.buf[:64]...)
		_, err := b.qp.PostRecv(&verbs.RecvWR{ID: uint64(round), SGL: []verbs.SGE{dst.sge(1024, 64)}})
		must(t, err)
		wrs := []verbs.SendWR{
			{ID: 1, Opcode: verbs.OpSend, Flags: verbs.FlagInline, SGL: []verbs.SGE{src.sge(0, 64)}},
			{ID: 2, Opcode: verbs.OpWrite, Flags: verbs.FlagInline, SGL: []verbs.SGE{src.sge(0, 64)},
				RemoteAddr: uint64(dst.addr(0)), RKey: dst.mr.RKey()},
		}
		wrs[0].Next = &wrs[1]
		_, err = a.qp.PostSend(&wrs[0])
		must(t, err)
		clear(src.buf[:64]) // after the post: must not reach the peer
		p.waitCQ(t, a.cq, 2, sim.Millisecond)
		if rwc := p.waitCQ(t, b.cq, 1, sim.Millisecond); rwc[0].Status != verbs.WCSuccess || rwc[0].ByteLen != 64 {
			t.Fatalf("round %d: receive %+v", round, rwc[0])
		}
		if !bytes.Equal(dst.buf[1024:1088], want) || !bytes.Equal(dst.buf[:64], want) {
			t.Fatalf("round %d: inline SEND/WRITE delivered the bytes written after the post", round)
		}
		// A plain WRITE through the same SQ positions in between.
		fill(src.buf[:64], 20+round)
		w := verbs.SendWR{ID: 3, Opcode: verbs.OpWrite, SGL: []verbs.SGE{src.sge(0, 64)},
			RemoteAddr: uint64(dst.addr(2048)), RKey: dst.mr.RKey()}
		_, err = a.qp.PostSend(&w)
		must(t, err)
		p.waitCQ(t, a.cq, 1, sim.Millisecond)
		if !bytes.Equal(dst.buf[2048:2112], src.buf[:64]) {
			t.Fatalf("round %d: plain WRITE data differs", round)
		}
	}
}
