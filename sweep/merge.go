package sweep

import (
	"fmt"
	"slices"
	"strings"

	"github.com/besim/besim/report"
)

// Merge combines the partial results of one sweep or search run as shards
// (--shard i/n for every i) into the file a single run would have
// written, byte for byte. Parts may come in any order; they must be the
// same sweep (scenario, axes, columns) and cover every shard once. A lone
// whole (unsharded) result is returned as it is.
func Merge(parts []*report.Result) (*report.Result, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("merge: no input files")
	}
	type part struct {
		shard Shard
		m     meta
		sims  int
		outs  []outcome
	}
	var ps []part
	for pi, r := range parts {
		m, shard, sims, outs, err := split(r)
		if err != nil {
			return nil, fmt.Errorf("merge: input %d: %w", pi+1, err)
		}
		if shard.Whole() {
			if len(parts) > 1 {
				return nil, fmt.Errorf("merge: input %d is a whole sweep, not a shard; nothing to merge it with", pi+1)
			}
			return r, nil
		}
		ps = append(ps, part{shard, m, sims, outs})
	}
	slices.SortFunc(ps, func(a, b part) int { return a.shard.I - b.shard.I })
	n := ps[0].shard.N
	for i, p := range ps {
		if p.shard.N != n {
			return nil, fmt.Errorf("merge: shard %s and shard %s are of different splits", ps[0].shard, p.shard)
		}
		if i > 0 && p.shard.I == ps[i-1].shard.I {
			return nil, fmt.Errorf("merge: shard %s given twice", p.shard)
		}
		if err := sameMeta(ps[0].m, p.m); err != nil {
			return nil, fmt.Errorf("merge: shard %s is not of the same sweep as shard %s: %v", p.shard, ps[0].shard, err)
		}
	}
	if len(ps) != n {
		var missing []string
		have := map[int]bool{}
		for _, p := range ps {
			have[p.shard.I] = true
		}
		for i := range n {
			if !have[i] {
				missing = append(missing, fmt.Sprintf("%d/%d", i, n))
			}
		}
		return nil, fmt.Errorf("merge: missing shard(s) %s", strings.Join(missing, ", "))
	}
	points := ps[0].m.points
	all := make([]outcome, points)
	sims := 0
	for _, p := range ps {
		sims += p.sims
		for k, o := range p.outs {
			all[p.shard.I+k*n] = o
		}
	}
	if m := ps[0].m; m.replications > 0 {
		if len(m.table.Params) == 0 || m.table.Params[len(m.table.Params)-1] != "seed" {
			return nil, fmt.Errorf("merge: a sweep of %d replications whose last axis is not the seed", m.replications)
		}
		if _, err := pool(all, m.table.Params[:len(m.table.Params)-1], m.replications); err != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
	return assemble(ps[0].m, Shard{}, all, sims), incomplete(all, false)
}

// split takes a sweep result file apart into what assemble needs.
func split(r *report.Result) (m meta, shard Shard, sims int, outs []outcome, err error) {
	num := func(name string) (int, bool) {
		x, ok := r.Metric(name)
		return int(x.Value), ok && x.Value == float64(int(x.Value)) && x.Value >= 0
	}
	points, ok1 := num(MetricPoints)
	reps, _ := num(MetricReplications)
	sims, ok2 := num(MetricSimulations)
	if !ok1 || !ok2 || len(r.Tables) == 0 || (r.Tables[0].Name != "sweep" && r.Tables[0].Name != "search") {
		return m, shard, 0, nil, fmt.Errorf("not a besim sweep result (no %s metric or sweep table)", MetricPoints)
	}
	if i, ok := num(MetricShard); ok {
		nn, ok := num(MetricShards)
		if !ok || nn < 1 || i >= nn {
			return m, shard, 0, nil, fmt.Errorf("bad %s/%s metrics", MetricShard, MetricShards)
		}
		shard = Shard{I: i, N: nn}
	}
	m = meta{tool: r.Tool, scenario: r.Scenario, seed: r.Seed, duration: r.Duration, points: points, table: r.Tables[0],
		prov: report.Result{ToolVersion: r.ToolVersion, Revision: r.Revision, ScenarioSHA256: r.ScenarioSHA256, ResolvedScenario: r.ResolvedScenario}}
	m.table.Rows = nil
	m.replications = reps
	rows := r.Tables[0].Rows
	want := 0
	for i := 0; i < points; i++ {
		if shard.Has(i) {
			want++
		}
	}
	if len(rows) != want {
		return m, shard, 0, nil, fmt.Errorf("shard %s of %d points should have %d rows, has %d", shard, points, want, len(rows))
	}
	outs = make([]outcome, len(rows))
	keys := make([]string, len(rows))
	for i, row := range rows {
		if len(row.Values) != len(m.table.Columns) {
			return m, shard, 0, nil, fmt.Errorf("row %q has %d values for %d columns", row.Key, len(row.Values), len(m.table.Columns))
		}
		outs[i] = outcome{key: row.Key, values: row.Values, err: row.Error}
		keys[i] = row.Key
	}
	owner := func(name string) int {
		best, bestLen := -1, -1
		for i, k := range keys {
			if strings.HasPrefix(name, "["+k+"] ") && len(k) > bestLen {
				best, bestLen = i, len(k)
			}
		}
		return best
	}
	for _, t := range r.Tables[1:] {
		if reps > 0 && pooledTable(t.Name) {
			continue // recomputed from the runs' histograms
		}
		i := owner(t.Name)
		if i < 0 {
			return m, shard, 0, nil, fmt.Errorf("table %q belongs to no point of the sweep", t.Name)
		}
		outs[i].tables = append(outs[i].tables, t)
	}
	for _, s := range r.Series {
		i := owner(s.Name)
		if i < 0 {
			return m, shard, 0, nil, fmt.Errorf("series %q belongs to no point of the sweep", s.Name)
		}
		outs[i].series = append(outs[i].series, s)
	}
	var sn string
	if !shard.Whole() {
		sn = shardNote(shard, points)
	}
	for _, note := range r.Notes {
		if i := owner(note); i >= 0 {
			outs[i].notes = append(outs[i].notes, note)
		} else if d, ok := strings.CutPrefix(note, noteDigest); ok {
			m.digest = d
		} else if note != sn && !strings.HasPrefix(note, notePartial) && !strings.HasPrefix(note, noteFailed) {
			m.notes = append(m.notes, note)
		}
	}
	return m, shard, sims, outs, nil
}

func sameMeta(a, b meta) error {
	switch {
	case a.tool != b.tool || a.scenario != b.scenario || a.seed != b.seed || a.duration != b.duration:
		return fmt.Errorf("scenario %s seed %d (%s) vs %s seed %d (%s)", a.scenario, a.seed, a.duration, b.scenario, b.seed, b.duration)
	case a.digest != b.digest:
		return fmt.Errorf("different sweep definitions (scenario source, axes or their values; digest %s vs %s)", orNone(a.digest), orNone(b.digest))
	case a.prov.ScenarioSHA256 != b.prov.ScenarioSHA256:
		return fmt.Errorf("scenario digests differ (%s vs %s): the shards ran different scenario files", a.prov.ScenarioSHA256, b.prov.ScenarioSHA256)
	case a.replications != b.replications:
		return fmt.Errorf("%d vs %d replications", a.replications, b.replications)
	case a.points != b.points:
		return fmt.Errorf("%d vs %d points", a.points, b.points)
	case a.table.Name != b.table.Name || a.table.Title != b.table.Title || a.table.KeyName != b.table.KeyName || !slices.Equal(a.table.Columns, b.table.Columns):
		return fmt.Errorf("different tables (%s vs %s, or different columns)", a.table.Title, b.table.Title)
	case !slices.Equal(a.notes, b.notes):
		return fmt.Errorf("different descriptions (%q vs %q)", strings.Join(a.notes, "; "), strings.Join(b.notes, "; "))
	}
	return nil
}

func orNone(d string) string {
	if d == "" {
		return "none"
	}
	return d
}
