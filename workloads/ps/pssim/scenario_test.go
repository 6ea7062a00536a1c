package pssim

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// workload.rpc reaches the run: left out (the embedded ps-cluster) it is
// off; `rpc: true` gives the paper's Tc and Tr, and a mapping its own.
func TestFromScenarioRPC(t *testing.T) {
	s, err := scenarios.Load("ps-cluster")
	if err != nil {
		t.Fatal(err)
	}
	c, err := FromScenario(s)
	if err != nil || c.RPC != nil {
		t.Fatalf("ps-cluster as embedded: %v, rpc %+v", err, c.RPC)
	}
	b, err := os.ReadFile("../../../scenarios/builtin/ps-cluster.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []struct {
		yaml   string
		tc, tr time.Duration
	}{{"true", 10 * time.Millisecond, 40 * time.Millisecond}, {"{request_timeout: 2ms}", 10 * time.Millisecond, 2 * time.Millisecond}} {
		y := strings.Replace(string(b), "  kind: ps-cluster\n", "  kind: ps-cluster\n  rpc: "+v.yaml+"\n", 1)
		s, err := scenarios.Parse("p.yaml", []byte(y))
		if err != nil {
			t.Fatal(err)
		}
		c, err := FromScenario(s)
		if err != nil || c.RPC == nil || c.RPC.ConnTimeout != v.tc || c.RPC.RequestTimeout != v.tr || c.RPC.MaxAttempts != 3 || c.RPC.RetryProb != 0.5 {
			t.Errorf("rpc: %s: %v, %+v", v.yaml, err, c.RPC)
		}
	}
}
