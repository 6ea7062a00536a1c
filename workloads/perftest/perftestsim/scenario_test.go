package perftestsim

import (
	"strings"
	"testing"

	"github.com/besim/besim/workloads/internal/wltest"
)

// TestTable2Scenario: the table2 benchmark reproduces the paper's shape.
func TestTable2Scenario(t *testing.T) {
	r := wltest.Builtin(t, "table2")
	tb, ok := r.Table("perftest")
	if !ok || len(tb.Rows) != 8 {
		t.Fatalf("perftest table: %+v", tb)
	}
	get := func(key, col string) float64 {
		v, ok := tb.Value(key, col)
		if !ok {
			t.Fatalf("no %s/%s", key, col)
		}
		return v
	}
	for _, row := range tb.Rows {
		t.Logf("%-16s model %7.2f paper %7.2f line %7.2f", row.Key, get(row.Key, "model"), get(row.Key, "paper"), get(row.Key, "line"))
		if strings.HasSuffix(row.Key, "/rc") && get(row.Key, "model") < 0.9*get(row.Key, "line") {
			t.Errorf("%s: RC %.2f below 90%% of line %.2f", row.Key, get(row.Key, "model"), get(row.Key, "line"))
		}
		if get(row.Key, "paper") <= 0 {
			t.Errorf("%s: no paper value", row.Key)
		}
	}
	if v := get("100G/1024B/ud", "model"); v < 35 || v > 65 {
		t.Errorf("UD 100G/1KB %.2f Gbps, want 35..65", v)
	}
	if v := get("200G/4096B/ud", "model"); v < 90 || v > 140 {
		t.Errorf("UD 200G/4KB %.2f Gbps, want 90..140", v)
	}
	if _, ok := r.Table("rc_vs_ud"); !ok {
		t.Error("no rc_vs_ud table")
	}
}
