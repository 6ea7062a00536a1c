package sweep

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/besim/besim/metrics"
	"github.com/besim/besim/report"
)

// Replications. Options.Replications = N adds a last axis "seed" with the
// values S, S+1, ..., S+N-1 (S: the scenario's seed), so each point of the
// other axes runs N times with independent random streams; each run is a
// row of the sweep table as usual. Each run's latency histograms (its
// tables named metrics.TablePrefix+NAME) are kept in the result as
// "[POINT] hist/NAME" and pooled per point of the other axes by merging
// their bucket counts (metrics.Histogram.Merge): the pooled quantiles are
// those of one histogram of every run's values, not an average of the
// runs' quantiles. Beside them, the mean of the runs' P99s with a 95%
// Student-t confidence interval says how much one run's tail varies.
//
// The pooled table and histograms are computed when the result is
// assembled, from the kept per-run histograms, so a sharded replication
// sweep merged with Merge pools exactly as the whole run does.

// Names in a replication sweep's result.
const (
	// TableReplications has one row per point of the other axes and
	// histogram: the pooled quantiles and the spread of the runs' P99s.
	TableReplications = "replications"
	// PooledPrefix starts the name of each pooled histogram table:
	// "hist/pooled/NAME", with " [POINT]" after it when other axes are
	// swept.
	PooledPrefix = metrics.TablePrefix + "pooled/"
	// MetricReplications is the replication count N (absent without).
	MetricReplications = "sweep/replications"
	// histParam is the replications table's extra key: the histogram.
	histParam = "histogram"
)

// maxReplications bounds Options.Replications (as maxValues bounds an axis).
const maxReplications = maxValues

// replicationAxis is the seed axis of n replications of b.
func replicationAxis(b *Base, axes []Axis, n int) (Axis, error) {
	if n < 1 || n > maxReplications {
		return Axis{}, fmt.Errorf("--replications %d: want 1..%d", n, maxReplications)
	}
	for _, a := range axes {
		if a.Key == "seed" {
			return Axis{}, fmt.Errorf("--replications %d: the seed is also given to --set (replications sweep it: seed %d and the %d after)", n, b.Scenario.Seed, n-1)
		}
	}
	s := b.Scenario.Seed
	if s > math.MaxUint64-uint64(n-1) {
		return Axis{}, fmt.Errorf("--replications %d: seed %d + %d overflows", n, s, n-1)
	}
	a := Axis{Key: "seed"}
	for i := range uint64(n) {
		a.Values = append(a.Values, strconv.FormatUint(s+i, 10))
	}
	return a, nil
}

// keepHistograms adds r's histogram tables to o as "[POINT] hist/NAME"
// (what keep does for every table; used when Keep is off).
func keepHistograms(o *outcome, r *report.Result) {
	var h report.Result
	for _, t := range r.Tables {
		if strings.HasPrefix(t.Name, metrics.TablePrefix) {
			h.Tables = append(h.Tables, t)
		}
	}
	keep(o, "", &h)
}

// studentT975 is the 97.5% quantile of Student's t with df = 1..30
// degrees of freedom (standard tables); above 30 the normal 1.96 is used.
var studentT975 = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

func tQuantile(df int) float64 {
	if df >= 1 && df <= len(studentT975) {
		return studentT975[df-1]
	}
	return 1.96
}

// pool builds the replications table and the pooled histograms from the
// kept per-run histograms of outs (in point order; every n consecutive
// points are one group's replications, the seed axis being last). params
// are the other axes' keys. A failed run contributes nothing: the
// replications column counts the runs pooled.
func pool(outs []outcome, params []string, n int) ([]report.Table, error) {
	t := report.Table{
		Name:    TableReplications,
		Title:   fmt.Sprintf("Pooled latency over %d replications (merged histograms; P99 mean over runs with a 95%% Student-t interval)", n),
		KeyName: "point",
		Params:  append(slices.Clone(params), histParam),
	}
	var hists []report.Table
	unit := ""
	for g := 0; g+n <= len(outs); g += n {
		// The group's key: a run's key without its last ",seed=S".
		gk := outs[g].key
		if i := strings.LastIndex(gk, "seed="); i >= 0 {
			gk = strings.TrimSuffix(gk[:i], ",")
		}
		type acc struct {
			h    *metrics.Histogram
			p99s []float64
			unit string
		}
		var names []string
		accs := map[string]*acc{}
		for _, o := range outs[g : g+n] {
			pre := "[" + o.key + "] " + metrics.TablePrefix
			for _, ht := range o.tables {
				name, ok := strings.CutPrefix(ht.Name, pre)
				if !ok {
					continue
				}
				h, err := metrics.FromTable(ht)
				if err != nil {
					return nil, fmt.Errorf("replication %s: %w", o.key, err)
				}
				a := accs[name]
				if a == nil {
					a = &acc{h: metrics.New(h.Digits())}
					if len(ht.Columns) > 0 {
						a.unit = ht.Columns[0].Unit
					}
					accs[name] = a
					names = append(names, name)
				}
				if err := a.h.Merge(h); err != nil {
					return nil, fmt.Errorf("replication %s: histogram %s: %w", o.key, name, err)
				}
				if h.Count() > 0 {
					a.p99s = append(a.p99s, float64(h.P99()))
				}
			}
		}
		for _, name := range names {
			a := accs[name]
			unit = a.unit
			k := len(a.p99s)
			mean, sd, half := math.NaN(), math.NaN(), math.NaN()
			if k > 0 {
				mean = 0
				for _, x := range a.p99s {
					mean += x
				}
				mean /= float64(k)
			}
			if k > 1 {
				ss := 0.0
				for _, x := range a.p99s {
					ss += (x - mean) * (x - mean)
				}
				sd = math.Sqrt(ss / float64(k-1))
				half = tQuantile(k-1) * sd / math.Sqrt(float64(k))
			}
			q := func(f func() int64) float64 {
				if a.h.Count() == 0 {
					return math.NaN()
				}
				return float64(f())
			}
			key := histParam + "=" + name
			hn := PooledPrefix + name
			if gk != "" {
				key = gk + "," + key
				hn += " [" + gk + "]"
			}
			if t.Columns == nil {
				t.Columns = []report.Column{{Name: "runs pooled"}, {Name: "count"},
					{Name: "p50", Unit: unit}, {Name: "p99", Unit: unit}, {Name: "p999", Unit: unit}, {Name: "max", Unit: unit},
					{Name: "run p99 mean", Unit: unit}, {Name: "run p99 sd", Unit: unit},
					{Name: "run p99 ci95 lo", Unit: unit}, {Name: "run p99 ci95 hi", Unit: unit}}
			}
			t.AddRow(key, float64(k), float64(a.h.Count()), q(a.h.P50), q(a.h.P99), q(a.h.P999), q(a.h.Max),
				mean, sd, mean-half, mean+half)
			ht := a.h.Table(strings.TrimPrefix(hn, metrics.TablePrefix), a.unit)
			hists = append(hists, ht)
		}
	}
	if t.Columns == nil {
		return nil, nil // no run kept a histogram: nothing to pool
	}
	return append([]report.Table{t}, hists...), nil
}

// pooledTable reports whether a table of a sweep file is one pool wrote
// (Merge recomputes them).
func pooledTable(name string) bool {
	return name == TableReplications || strings.HasPrefix(name, PooledPrefix)
}
