package fabric

import (
	"testing"
	"unsafe"

	"github.com/besim/besim/internal/layouttest"
)

// TestPacketLayout keeps what every hop reads of a frame (link, switch
// port, switch, host port) in its first 48 bytes, so that a hop touches one
// or two of the frame's cache lines, and the frame at 136 bytes: moving a
// field can undo both without changing any result, and only cachegrind
// (bench/cachegrind.sh) would show it.
func TestPacketLayout(t *testing.T) {
	var p Packet
	layouttest.Within(t, "Packet", 48,
		layouttest.Field{Name: "Kind", Off: unsafe.Offsetof(p.Kind), Size: unsafe.Sizeof(p.Kind)},
		layouttest.Field{Name: "Prio", Off: unsafe.Offsetof(p.Prio), Size: unsafe.Sizeof(p.Prio)},
		layouttest.Field{Name: "ECN", Off: unsafe.Offsetof(p.ECN), Size: unsafe.Sizeof(p.ECN)},
		layouttest.Field{Name: "Path", Off: unsafe.Offsetof(p.Path), Size: unsafe.Sizeof(p.Path)},
		layouttest.Field{Name: "PauseMask", Off: unsafe.Offsetof(p.PauseMask), Size: unsafe.Sizeof(p.PauseMask)},
		layouttest.Field{Name: "Src", Off: unsafe.Offsetof(p.Src), Size: unsafe.Sizeof(p.Src)},
		layouttest.Field{Name: "Dst", Off: unsafe.Offsetof(p.Dst), Size: unsafe.Sizeof(p.Dst)},
		layouttest.Field{Name: "Flow", Off: unsafe.Offsetof(p.Flow), Size: unsafe.Sizeof(p.Flow)},
		layouttest.Field{Name: "Size", Off: unsafe.Offsetof(p.Size), Size: unsafe.Sizeof(p.Size)},
		layouttest.Field{Name: "next", Off: unsafe.Offsetof(p.next), Size: unsafe.Sizeof(p.next)},
		layouttest.Field{Name: "due", Off: unsafe.Offsetof(p.due), Size: unsafe.Sizeof(p.due)},
		layouttest.Field{Name: "inPort", Off: unsafe.Offsetof(p.inPort), Size: unsafe.Sizeof(p.inPort)},
	)
	layouttest.AtMost(t, "Packet", unsafe.Sizeof(p), 136, "")
}
