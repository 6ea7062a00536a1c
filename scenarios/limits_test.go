package scenarios

import (
	"strings"
	"testing"
)

// TestRunLengthLimits: a run that could not finish in reasonable time is
// refused with the limit: the virtual duration, and the sampling ticks.
func TestRunLengthLimits(t *testing.T) {
	base := "name: l\nduration: 1ms\nfabric: {topology: {kind: star, hosts: 2}}\nflows: [{src: 0, dst: 1}]\n"
	for _, c := range []struct{ old, new, want string }{
		{"duration: 1ms", "duration: 9223372s", "duration: 9223372s is too long (at most 10s of virtual time"},
		{"duration: 1ms", "duration: 11s", "duration: 11s is too long (at most 10s"},
		{"flows:", "outputs: {sample_interval: 1ps}\nflows:", "outputs.sample_interval: 1ps samples the 1ms run 1000000000 times (at most 1000000: use at least 1ns)"},
	} {
		_, err := Parse("l.yaml", []byte(strings.Replace(base, c.old, c.new, 1)))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", c.new, err, c.want)
		}
	}
	for _, ok := range []string{"duration: 10s", "duration: 1ms\noutputs: {sample_interval: 1ns}"} {
		if _, err := Parse("l.yaml", []byte(strings.Replace(base, "duration: 1ms", ok, 1))); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
