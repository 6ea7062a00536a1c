package fabric

import (
	"testing"

	"github.com/besim/besim/internal/layouttest"
)

// TestPacketLayout keeps what every hop reads of a frame (link, switch
// port, switch, host port) in its first 48 bytes, so that a hop touches one
// or two of the frame's cache lines, and the frame at 136 bytes: moving a
// field can undo both without changing any result, and only cachegrind
// (bench/cachegrind.sh) would show it.
func TestPacketLayout(t *testing.T) {
	layouttest.Within(t, (*Packet)(nil), 48,
		"Kind", "Prio", "ECN", "Path", "PauseMask", "Src", "Dst", "Flow", "Size", "next", "due", "inPort")
	layouttest.AtMost(t, (*Packet)(nil), 136, "")
}
