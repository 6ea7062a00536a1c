package sweep

import (
	"strings"
	"testing"
)

const twoClasses = `name: two
duration: 100us
fabric:
  topology: {kind: star, hosts: 3}
  priorities:
    - prio: 3
      lossless: true
      pfc: {xoff: dynamic, alpha: 1/8}
    - prio: 4
      lossless: true
      pfc: {xoff: dynamic, alpha: 1/8}
flows:
  - {name: a, src: 0, dst: 2, prio: 3, rate: line}
  - {name: b, src: 1, dst: 2, prio: 4, rate: line}
`

// TestBuildErrorsNameOverrides: errors found when the simulation is
// assembled (after loading) name the overrides, with true lines when the
// text was edited in place and without lines when it was re-encoded.
func TestBuildErrorsNameOverrides(t *testing.T) {
	b, err := NewBase("two.yaml", []byte(twoClasses))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Simulate(b.Scenario); err != nil {
		t.Fatalf("base: %v", err)
	}
	for _, tc := range []struct {
		axis, want string
	}{
		{"fabric.priorities[1].pfc.alpha=1/4", "--set fabric.priorities[1].pfc.alpha=1/4: two.yaml:11: fabric.priorities[1].pfc: priority 4 differs"},
		// xon_offset is not in the file: the tree is re-encoded, lines are dropped.
		{"fabric.priorities[1].pfc.xon_offset=4KiB", "--set fabric.priorities[1].pfc.xon_offset=4KiB: two.yaml: fabric.priorities[1].pfc: priority 4 differs"},
	} {
		_, _, err := Run(b, sweepAxes(t, tc.axis), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %q", tc.axis, err, tc.want)
		}
	}
}
