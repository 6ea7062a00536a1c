package app

import (
	"strings"
	"testing"

	"github.com/besim/besim/scenarios"
)

// TestEngineThreadDomains: workload.thread_domains false turns the core's
// thread domains off; unset or true keeps them (the zero Config).
func TestEngineThreadDomains(t *testing.T) {
	off, on := false, true
	for _, c := range []struct {
		td   *bool
		want bool
	}{{nil, false}, {&on, false}, {&off, true}} {
		w := &scenarios.Workload{ThreadDomains: c.td}
		if got := Engine(w).NoThreadDomains; got != c.want {
			t.Errorf("thread_domains %v: NoThreadDomains %v, want %v", c.td, got, c.want)
		}
	}
	b, err := scenarios.Builtin("fig14-incast")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "\nworkload:\n", "\nworkload:\n  thread_domains: false\n", 1)
	if text == string(b) {
		t.Fatal("fig14-incast has no workload section")
	}
	s, err := scenarios.Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if !Engine(s.Workload).NoThreadDomains {
		t.Error("thread_domains: false in a scenario left the thread domains on")
	}
}
