package byteexpress

import (
	"testing"
	"unsafe"
)

// TestEngineLayout keeps what a completion, a received record and a fill
// read first in an engine (its thread, QP, state and flags, fill and
// round-robin cursor) in its first 64 bytes, and the engine within Go's
// 704-byte size class (85,808 engines in the training scenario): moving a
// field or adding one would change no result, and only cachegrind
// (bench/cachegrind.sh) or a heap profile would show it. The check is
// written out here rather than taken from internal/layouttest, as fabric's
// and rnic's are: the core's tests import only verbs, the core and the
// standard library (TestLayering).
func TestEngineLayout(t *testing.T) {
	var e engine
	hot := []struct {
		name      string
		off, size uintptr
	}{
		{"th", unsafe.Offsetof(e.th), unsafe.Sizeof(e.th)},
		{"qp", unsafe.Offsetof(e.qp), unsafe.Sizeof(e.qp)},
		{"qpn", unsafe.Offsetof(e.qpn), unsafe.Sizeof(e.qpn)},
		{"state", unsafe.Offsetof(e.state), unsafe.Sizeof(e.state)},
		{"dirty", unsafe.Offsetof(e.dirty), unsafe.Sizeof(e.dirty)},
		{"curOpen", unsafe.Offsetof(e.curOpen), unsafe.Sizeof(e.curOpen)},
		{"curFill", unsafe.Offsetof(e.curFill), unsafe.Sizeof(e.curFill)},
		{"rr", unsafe.Offsetof(e.rr), unsafe.Sizeof(e.rr)},
		{"nactive", unsafe.Offsetof(e.nactive), unsafe.Sizeof(e.nactive)},
	}
	for _, f := range hot {
		if end := f.off + f.size; end > 64 {
			t.Errorf("engine.%s ends at byte %d, want within the first 64", f.name, end)
		}
	}
	if s := unsafe.Sizeof(e); s > 704 {
		t.Errorf("engine is %d bytes, want at most 704 (its size class)", s)
	}
}
