package sweep

import (
	"bytes"
	"strings"
	"testing"

	"github.com/besim/besim/metrics"
	"github.com/besim/besim/report"
)

// TestReplicationsGroups: with another axis, each of its values pools its
// own replications (the seed axis is last), shards with Keep merge to the
// whole run, and the seed cannot also be swept.
func TestReplicationsGroups(t *testing.T) {
	b := mustBase(t, "fig14-incast")
	axes := sweepAxes(t, "workload.servers=4,6", "duration=100us")
	opt := Options{Replications: 2, Metrics: []string{"pull/p99"}, Keep: true}
	whole, _, err := Run(b, axes, opt)
	if err != nil {
		t.Fatal(err)
	}
	rep, ok := whole.Table(TableReplications)
	if !ok || len(rep.Rows) != 2 {
		t.Fatalf("replications table: %v, %d rows", ok, len(rep.Rows))
	}
	for i, g := range []string{"workload.servers=4,duration=100us", "workload.servers=6,duration=100us"} {
		if want := g + ",histogram=pull_latency"; rep.Rows[i].Key != want {
			t.Errorf("row %d: key %q, want %q", i, rep.Rows[i].Key, want)
		}
		var all *metrics.Histogram
		for _, seed := range []string{"1", "2"} {
			ht, ok := whole.Table("[" + g + ",seed=" + seed + "] hist/pull_latency")
			if !ok {
				t.Fatalf("%s seed %s: no kept histogram", g, seed)
			}
			h, err := metrics.FromTable(*ht)
			if err != nil {
				t.Fatal(err)
			}
			if all == nil {
				all = metrics.New(h.Digits())
			}
			if err := all.Merge(h); err != nil {
				t.Fatal(err)
			}
		}
		if p99, _ := rep.Value(rep.Rows[i].Key, "p99"); p99 != float64(all.P99()) {
			t.Errorf("%s: pooled p99 %v, merged histogram's %d", g, p99, all.P99())
		}
	}
	var parts []*report.Result
	for i := range 3 {
		o := opt
		o.Shard = Shard{I: i, N: 3}
		r, _, err := Run(b, axes, o)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, r)
	}
	merged, err := Merge(parts)
	if err != nil {
		t.Fatal(err)
	}
	var a, m bytes.Buffer
	if err := whole.WriteJSON(&a); err != nil {
		t.Fatal(err)
	}
	if err := merged.WriteJSON(&m); err != nil {
		t.Fatal(err)
	}
	if a.String() != m.String() {
		t.Error("merged shards of a kept replication sweep differ from the whole run")
	}
	if _, _, err := Run(b, sweepAxes(t, "seed=1,2"), Options{Replications: 2}); err == nil || !strings.Contains(err.Error(), "seed is also given") {
		t.Errorf("--replications with --set seed: %v", err)
	}
	if _, _, err := RunSearch(b, Search{Key: "workload.servers", Lo: 1, Hi: 2}, nil, Options{Replications: 2}); err == nil {
		t.Error("--replications with --search accepted")
	}
}
