package experiment

import (
	"fmt"
	"strings"
	"testing"

	"github.com/besim/besim/scenarios"
)

// TestFatTreeKDocumentedIsAccepted: every k the schema allows (even,
// 2..46) passes both the loader and the fabric's own checks; the next one
// is refused by the loader with the limit, not by the fabric.
func TestFatTreeKDocumentedIsAccepted(t *testing.T) {
	src := func(k int) []byte {
		return []byte(fmt.Sprintf("name: ft\nduration: 10us\nfabric:\n  topology: {kind: fat-tree, k: %d}\nflows:\n  - {name: a, src: 0, dst: 1, rate: line}\n", k))
	}
	for k := 2; k <= 46; k += 2 {
		s, err := scenarios.Parse("ft.yaml", src(k))
		if err != nil {
			t.Fatalf("k %d: %v", k, err)
		}
		if _, err := FabricConfig(s); err != nil {
			t.Errorf("k %d: loader accepts it, fabric refuses: %v", k, err)
		}
	}
	if _, err := scenarios.Parse("ft.yaml", src(48)); err == nil || !strings.Contains(err.Error(), "fabric.topology.k: 48 is not allowed (k must be even, from 2 to 46") {
		t.Errorf("k 48: %v", err)
	}
}

// TestFabricErrorPrefixOnce: an error from the fabric's own checks names
// the field once ("fabric: invalid config: ...", not "fabric: fabric: ...").
func TestFabricErrorPrefixOnce(t *testing.T) {
	// 65,000 hosts under 2,000 switches: 130M routing entries.
	s, err := scenarios.Parse("ls.yaml", []byte("name: ls\nduration: 10us\nfabric:\n  topology: {kind: leaf-spine, leaves: 1000, hosts_per_leaf: 65, spines: 1000}\nflows:\n  - {name: a, src: 0, dst: 1, rate: line}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = FabricConfig(s)
	if err == nil || strings.Contains(err.Error(), "fabric: fabric:") || !strings.Contains(err.Error(), "fabric: invalid config: topology needs") {
		t.Errorf("err %v", err)
	}
}
