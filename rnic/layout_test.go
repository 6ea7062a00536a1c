package rnic

import (
	"testing"
	"unsafe"

	"github.com/besim/besim/internal/layouttest"
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
	layouttest.Within(t, "QP", 64,
		layouttest.Field{Name: "nic", Off: unsafe.Offsetof(q.nic), Size: unsafe.Sizeof(q.nic)},
		layouttest.Field{Name: "actNext", Off: unsafe.Offsetof(q.actNext), Size: unsafe.Sizeof(q.actNext)},
		layouttest.Field{Name: "actPrev", Off: unsafe.Offsetof(q.actPrev), Size: unsafe.Sizeof(q.actPrev)},
		layouttest.Field{Name: "qpn", Off: unsafe.Offsetof(q.qpn), Size: unsafe.Sizeof(q.qpn)},
		layouttest.Field{Name: "flow", Off: unsafe.Offsetof(q.flow), Size: unsafe.Sizeof(q.flow)},
		layouttest.Field{Name: "lruAt", Off: unsafe.Offsetof(q.lruAt), Size: unsafe.Sizeof(q.lruAt)},
		layouttest.Field{Name: "cacheHits", Off: unsafe.Offsetof(q.cacheHits), Size: unsafe.Sizeof(q.cacheHits)},
	)
	layouttest.AtMost(t, "QP", unsafe.Sizeof(q), 896, "its size class")
}
