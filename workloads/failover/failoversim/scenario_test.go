package failoversim

import (
	"strings"
	"testing"
	"time"

	"github.com/besim/besim/scenarios"
)

// keepalive interval 0 in a failover scenario turns keepalive off (the
// core reads 0 as its 100 ms default, so the translation must say -1).
func TestFailoverKeepaliveOff(t *testing.T) {
	data, err := scenarios.Builtin("failover")
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Parse("f.yaml", []byte(strings.Replace(string(data), "keepalive: {interval: 100ms, timeout: 500ms}", "keepalive: {interval: 0s}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := FromScenario(s)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster.BE.KeepaliveInterval >= 0 {
		t.Errorf("keepalive interval %v, want negative (off)", cfg.Cluster.BE.KeepaliveInterval)
	}
	s2, _ := scenarios.Load("failover")
	if cfg2, _ := FromScenario(s2); cfg2.Cluster.BE.KeepaliveInterval != 100*time.Millisecond || cfg2.Cluster.BE.KeepaliveTimeout != 500*time.Millisecond {
		t.Errorf("failover keepalive %v / %v, want 100ms / 500ms", cfg2.Cluster.BE.KeepaliveInterval, cfg2.Cluster.BE.KeepaliveTimeout)
	}
}
