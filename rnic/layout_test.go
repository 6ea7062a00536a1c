package rnic

import (
	"testing"
	"unsafe"
)

// TestQPLayout keeps what the transmit arbiter and the context cache read
// at every visit to a QP (its NIC, its links in the NIC's active list, its
// number and flow, the cache stamp and hit counter) in the QP's first 64
// bytes, and the QP within Go's 896-byte size class (85,808 QPs in the
// training scenario): a field moved in front of them, or one more field,
// would change no result, and only cachegrind (bench/cachegrind.sh) or a
// heap profile would show it.
func TestQPLayout(t *testing.T) {
	var q QP
	hot := []struct {
		name      string
		off, size uintptr
	}{
		{"nic", unsafe.Offsetof(q.nic), unsafe.Sizeof(q.nic)},
		{"actNext", unsafe.Offsetof(q.actNext), unsafe.Sizeof(q.actNext)},
		{"actPrev", unsafe.Offsetof(q.actPrev), unsafe.Sizeof(q.actPrev)},
		{"qpn", unsafe.Offsetof(q.qpn), unsafe.Sizeof(q.qpn)},
		{"flow", unsafe.Offsetof(q.flow), unsafe.Sizeof(q.flow)},
		{"lruAt", unsafe.Offsetof(q.lruAt), unsafe.Sizeof(q.lruAt)},
		{"cacheHits", unsafe.Offsetof(q.cacheHits), unsafe.Sizeof(q.cacheHits)},
	}
	for _, f := range hot {
		if end := f.off + f.size; end > 64 {
			t.Errorf("QP.%s ends at byte %d, want within the first 64", f.name, end)
		}
	}
	if s := unsafe.Sizeof(q); s > 896 {
		t.Errorf("QP is %d bytes, want at most 896 (its size class)", s)
	}
}
