package fabric

import (
	"testing"
	"unsafe"
)

// TestPacketLayout keeps what every hop reads of a frame (link, switch
// port, switch, host port) in its first 48 bytes, so that a hop touches one
// or two of the frame's cache lines, and the frame at 136 bytes: moving a
// field can undo both without changing any result, and only cachegrind
// (bench/cachegrind.sh) would show it.
func TestPacketLayout(t *testing.T) {
	var p Packet
	hot := []struct {
		name      string
		off, size uintptr
	}{
		{"Kind", unsafe.Offsetof(p.Kind), unsafe.Sizeof(p.Kind)},
		{"Prio", unsafe.Offsetof(p.Prio), unsafe.Sizeof(p.Prio)},
		{"ECN", unsafe.Offsetof(p.ECN), unsafe.Sizeof(p.ECN)},
		{"Path", unsafe.Offsetof(p.Path), unsafe.Sizeof(p.Path)},
		{"PauseMask", unsafe.Offsetof(p.PauseMask), unsafe.Sizeof(p.PauseMask)},
		{"Src", unsafe.Offsetof(p.Src), unsafe.Sizeof(p.Src)},
		{"Dst", unsafe.Offsetof(p.Dst), unsafe.Sizeof(p.Dst)},
		{"Flow", unsafe.Offsetof(p.Flow), unsafe.Sizeof(p.Flow)},
		{"Size", unsafe.Offsetof(p.Size), unsafe.Sizeof(p.Size)},
		{"next", unsafe.Offsetof(p.next), unsafe.Sizeof(p.next)},
		{"due", unsafe.Offsetof(p.due), unsafe.Sizeof(p.due)},
		{"inPort", unsafe.Offsetof(p.inPort), unsafe.Sizeof(p.inPort)},
	}
	for _, f := range hot {
		if end := f.off + f.size; end > 48 {
			t.Errorf("Packet.%s ends at byte %d, want within the first 48", f.name, end)
		}
	}
	if s := unsafe.Sizeof(p); s > 136 {
		t.Errorf("Packet is %d bytes, want at most 136", s)
	}
}
