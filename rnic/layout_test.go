package rnic

import (
	"testing"

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
	layouttest.Within(t, (*QP)(nil), 64, "nic", "actNext", "actPrev", "qpn", "flow", "lruAt", "cacheHits")
	layouttest.AtMost(t, (*QP)(nil), 896, "its size class")
}
