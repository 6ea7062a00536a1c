package byteexpress

import (
	"testing"
	"unsafe"

	"github.com/besim/besim/internal/layouttest"
)

// TestEngineLayout keeps what a completion, a received record and a fill
// read first in an engine (its thread, QP, state and flags, fill and
// round-robin cursor) in its first 64 bytes, and the engine within Go's
// 704-byte size class (85,808 engines in the training scenario): moving a
// field or adding one would change no result, and only cachegrind
// (bench/cachegrind.sh) or a heap profile would show it.
func TestEngineLayout(t *testing.T) {
	var e engine
	layouttest.Within(t, "engine", 64,
		layouttest.Field{Name: "th", Off: unsafe.Offsetof(e.th), Size: unsafe.Sizeof(e.th)},
		layouttest.Field{Name: "qp", Off: unsafe.Offsetof(e.qp), Size: unsafe.Sizeof(e.qp)},
		layouttest.Field{Name: "qpn", Off: unsafe.Offsetof(e.qpn), Size: unsafe.Sizeof(e.qpn)},
		layouttest.Field{Name: "state", Off: unsafe.Offsetof(e.state), Size: unsafe.Sizeof(e.state)},
		layouttest.Field{Name: "dirty", Off: unsafe.Offsetof(e.dirty), Size: unsafe.Sizeof(e.dirty)},
		layouttest.Field{Name: "curOpen", Off: unsafe.Offsetof(e.curOpen), Size: unsafe.Sizeof(e.curOpen)},
		layouttest.Field{Name: "curFill", Off: unsafe.Offsetof(e.curFill), Size: unsafe.Sizeof(e.curFill)},
		layouttest.Field{Name: "rr", Off: unsafe.Offsetof(e.rr), Size: unsafe.Sizeof(e.rr)},
		layouttest.Field{Name: "nactive", Off: unsafe.Offsetof(e.nactive), Size: unsafe.Sizeof(e.nactive)},
	)
	layouttest.AtMost(t, "engine", unsafe.Sizeof(e), 704, "its size class")
}
