package experiment

import (
	"testing"

	"github.com/besim/besim/byteexpress/rpc"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/simhost"
	"github.com/besim/besim/workloads/hol"
	"github.com/besim/besim/workloads/incast"
	"github.com/besim/besim/workloads/ps"
)

// TestClusterMovesAppHeaders: a workload cluster's NICs move only the first
// simhost.AppHead bytes of a large message (RDMAHead) and hand SENDs to the
// core with their completions (RecvView). Every header an application over
// the core writes and reads at a message's front must fit in those bytes,
// or a run would read bytes that were never moved.
func TestClusterMovesAppHeaders(t *testing.T) {
	s, err := scenarios.Load("fig14-incast")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ClusterConfig(s)
	if err != nil {
		t.Fatal(err)
	}
	if c.NIC.SizesOnly || !c.NIC.RecvView || c.NIC.RDMAHead != simhost.AppHead {
		t.Fatalf("cluster NIC: SizesOnly %v, RecvView %v, RDMAHead %d (want false, true, %d)",
			c.NIC.SizesOnly, c.NIC.RecvView, c.NIC.RDMAHead, simhost.AppHead)
	}
	for _, h := range []struct {
		name string
		n    int
	}{
		{"incast", incast.HeaderSize},
		{"hol", hol.HeaderSize},
		{"ps", ps.HeaderSize},
		{"ps over rpc (echoed whole)", rpc.HeaderSize + ps.HeaderSize},
		{"rpc (failover)", rpc.HeaderSize},
	} {
		if h.n > simhost.AppHead {
			t.Errorf("%s header of %d bytes: more than simhost.AppHead = %d bytes move", h.name, h.n, simhost.AppHead)
		}
	}
}
