package sweep

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/besim/besim/report"
)

// Predicate is a condition on one metric of a result, from --until, e.g.
// "pfc/frames_tx>0" or "fabric/drops>=1".
type Predicate struct {
	Metric string
	Op     string // one of > >= < <= == !=
	Value  float64
}

var predRE = regexp.MustCompile(`^\s*([^<>=!\s]+)\s*(<=|>=|==|!=|<|>)\s*(\S+)\s*$`)

// ParsePredicate parses METRIC OP NUMBER.
func ParsePredicate(s string) (Predicate, error) {
	m := predRE.FindStringSubmatch(s)
	if m == nil {
		return Predicate{}, fmt.Errorf("--until %s: want METRIC OP NUMBER with OP one of > >= < <= == != (e.g. pfc/frames_tx>0)", s)
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil || math.IsNaN(v) {
		return Predicate{}, fmt.Errorf("--until %s: %q is not a number", s, m[3])
	}
	return Predicate{Metric: m[1], Op: m[2], Value: v}, nil
}

func (p Predicate) String() string {
	return p.Metric + p.Op + strconv.FormatFloat(p.Value, 'g', -1, 64)
}

// Eval reports whether the predicate holds for r, and the metric's value.
func (p Predicate) Eval(r *report.Result) (bool, float64, error) {
	m, ok := r.Metric(p.Metric)
	if !ok {
		return false, 0, fmt.Errorf("--until %s: no metric %s in the results (have: %s)", p, p.Metric, metricNames(r))
	}
	x := m.Value
	switch p.Op {
	case ">":
		return x > p.Value, x, nil
	case ">=":
		return x >= p.Value, x, nil
	case "<":
		return x < p.Value, x, nil
	case "<=":
		return x <= p.Value, x, nil
	case "==":
		return x == p.Value, x, nil
	case "!=":
		return x != p.Value, x, nil
	}
	return false, x, fmt.Errorf("--until %s: unknown operator %q", p, p.Op)
}

// Decided reports whether the predicate's outcome is settled at x for a
// metric that never falls during a run (a counter): once x satisfies > or
// >=, or exceeds the value of !=, it holds whatever comes after; once x
// fails < or <=, or exceeds the value of ==, it fails. Below those points
// nothing is settled.
func (p Predicate) Decided(x float64) bool {
	switch p.Op {
	case ">":
		return x > p.Value
	case ">=":
		return x >= p.Value
	case "<":
		return x >= p.Value
	case "<=":
		return x > p.Value
	case "==", "!=":
		return x > p.Value
	}
	return false
}

// Search is a bisection over one integer-valued key: the largest value in
// [Lo, Hi] for which Until is still false, assuming Until is false up to
// some value and true from the next one on (monotone).
type Search struct {
	Key    string
	Lo, Hi int64
	Unit   string // suffix written after each value: "KiB" makes 64 into 64KiB
	Until  Predicate
}

var searchRE = regexp.MustCompile(`^(-?[0-9]+)\.\.(-?[0-9]+)([A-Za-zµ%]*)$`)

// ParseSearch parses "key=LO..HI[UNIT]" (fabric.switch.buffer=64..4096KiB,
// flows[0].src#len=1..16).
func ParseSearch(s string) (Search, error) {
	key, r, ok := strings.Cut(s, "=")
	key = strings.TrimSpace(key)
	m := searchRE.FindStringSubmatch(strings.TrimSpace(r))
	if !ok || key == "" || m == nil {
		return Search{}, fmt.Errorf("--search %s: want key=LO..HI[UNIT] with integers LO <= HI (e.g. flows[0].src#len=1..16 or fabric.switch.buffer=64..4096KiB)", s)
	}
	if err := ValidKey(key); err != nil {
		return Search{}, fmt.Errorf("--search %s: %v", s, err)
	}
	lo, err1 := strconv.ParseInt(m[1], 10, 64)
	hi, err2 := strconv.ParseInt(m[2], 10, 64)
	if err1 != nil || err2 != nil || hi < lo {
		return Search{}, fmt.Errorf("--search %s: want integers LO <= HI", s)
	}
	return Search{Key: key, Lo: lo, Hi: hi, Unit: m[3]}, nil
}

func (s Search) value(v int64) string { return strconv.FormatInt(v, 10) + s.Unit }

// Columns of the search table.
const (
	ColLargest      = "largest"       // largest value with the predicate false (-1 shown "-": none)
	ColFirstTrue    = "first true"    // the next value, where it holds
	ColAtLargest    = "at largest"    // the metric there
	ColAtFirstTrue  = "at first true" // the metric there
	ColSimulations  = "simulations"   // simulations this point took
	noCrossingLabel = "no crossing in range"
)

type probe struct {
	v     int64
	holds bool
	x     float64
	r     *report.Result
}

// RunSearch bisects s.Key for every point of the other axes (in parallel
// over points; each bisection is sequential). It first checks that the
// predicate is false at Lo and true at Hi; otherwise that point's row says
// "no crossing in range" in a note (largest is Hi when it is false
// everywhere, "-" when it is already true at Lo). A point takes at most
// 2 + ceil(log2(Hi-Lo)) simulations.
//
// The result has a table "search" (one row per point; columns
// ColLargest..ColSimulations) and the sweep/... metrics, and shards and
// merges like Run's.
func RunSearch(b *Base, s Search, axes []Axis, opt Options) (*report.Result, Stats, error) {
	start := time.Now()
	st := Stats{Jobs: opt.jobs()}
	if opt.Replications != 0 {
		return nil, st, fmt.Errorf("--replications does not apply to --search (a search bisects one scenario per point)")
	}
	for _, a := range axes {
		if strings.TrimSuffix(a.Key, lenSuffix) == strings.TrimSuffix(s.Key, lenSuffix) {
			return nil, st, fmt.Errorf("--search %s: the key is also given to --set", s.Key)
		}
	}
	all, err := Points(axes)
	if err != nil {
		return nil, st, err
	}
	var pts []Point
	for _, p := range all {
		if opt.Shard.Has(p.Index) {
			pts = append(pts, p)
		}
	}
	// Check that both ends load for every point before simulating.
	if _, err := forEach(len(pts), opt.Jobs, nil, func(i int) error {
		for _, v := range []int64{s.Lo, s.Hi} {
			if _, err := b.Apply(append(clone(pts[i].Set), Override{s.Key, s.value(v)})); err != nil {
				return err
			}
		}
		return nil
	}, nil); err != nil {
		return nil, st, err
	}

	m, err := newMeta(b, append(axesDef(axes), "search", s.Key, s.value(s.Lo), s.value(s.Hi), s.Until.String())...)
	if err != nil {
		return nil, st, err
	}
	m.points = len(all)
	unit := s.Unit
	if strings.HasSuffix(s.Key, lenSuffix) {
		unit = "hosts"
	}
	munit := ""
	m.table = report.Table{
		Name:    "search",
		Title:   fmt.Sprintf("Largest %s in [%s, %s] with %s still false", s.Key, s.value(s.Lo), s.value(s.Hi), s.Until),
		KeyName: "point",
		Params:  axisKeys(axes),
	}
	m.notes = []string{fmt.Sprintf("search over %s of %s: largest %s in [%s, %s] for which %s is false, by bisection, assuming it is false below some value and true above (checked at both ends)",
		describeAxes(axes), m.scenario, s.Key, s.value(s.Lo), s.value(s.Hi), s.Until)}
	if opt.watched() {
		m.notes = append(m.notes, fmt.Sprintf("a probe stops as soon as %s is decided when %s is a counter that only grows and the workload kind can be watched: such probes say \"stopped at\" (virtual time) and their value is the counter then, not at the end of the run; --full-probes runs every probe to its end, with the same answer", s.Until, s.Until.Metric))
	}

	var mu sync.Mutex
	outs := make([]outcome, len(pts))
	prog := &progress{opt: &opt, total: len(pts), start: start}
	finished, err := forEach(len(pts), opt.Jobs, opt.Stop, func(i int) error {
		p := pts[i]
		var tried []probe
		eval := func(v int64) (probe, error) {
			l, err := b.load(append(clone(p.Set), Override{s.Key, s.value(v)}))
			if err != nil {
				return probe{}, err
			}
			r, t, err := opt.simulateProbe(l.s, s.Until)
			mu.Lock()
			st.add(t)
			mu.Unlock()
			if err != nil {
				msg := l.explain(err).Error()
				if at := s.Key + "=" + s.value(v); !strings.Contains(msg, at) {
					msg = at + ": " + msg
				}
				return probe{}, &probeErr{msg}
			}
			holds, x, err := s.Until.Eval(r)
			if err != nil {
				return probe{}, err
			}
			if mm, ok := r.Metric(s.Until.Metric); ok {
				mu.Lock()
				munit = mm.Unit
				mu.Unlock()
			}
			pr := probe{v, holds, x, r}
			tried = append(tried, pr)
			return pr, nil
		}
		o := outcome{key: p.Key()}
		nan := math.NaN()
		// A simulation that fails makes the point a failed row: its
		// error names the value tried; the other points go on.
		failed := func(err error) error {
			var pe *probeErr
			if !errors.As(err, &pe) {
				return err
			}
			o.err = pe.msg
			o.sims = len(tried) + 1
			o.values = []float64{nan, nan, nan, nan, float64(o.sims)}
			outs[i] = o
			return nil
		}
		lo, err := eval(s.Lo)
		if err != nil {
			return failed(err)
		}
		var hi probe
		if s.Hi == s.Lo {
			hi = lo
		} else if hi, err = eval(s.Hi); err != nil {
			return failed(err)
		}
		var why string
		var last, first *probe
		switch {
		case lo.holds:
			why = fmt.Sprintf("%s: %s already holds at %s=%s (%s)", noCrossingLabel, s.Until, s.Key, s.value(s.Lo), report.Num(lo.x))
			o.values = []float64{nan, float64(s.Lo), nan, lo.x}
			first = &lo
		case !hi.holds:
			why = fmt.Sprintf("%s: %s is still false at %s=%s (%s)", noCrossingLabel, s.Until, s.Key, s.value(s.Hi), report.Num(hi.x))
			o.values = []float64{float64(s.Hi), nan, hi.x, nan}
			last = &hi
		default:
			a, z := lo, hi
			for z.v-a.v > 1 {
				mid, err := eval(a.v + (z.v-a.v)/2)
				if err != nil {
					return failed(err)
				}
				if mid.holds {
					z = mid
				} else {
					a = mid
				}
			}
			o.values = []float64{float64(a.v), float64(z.v), a.x, z.x}
			last, first = &a, &z
		}
		o.sims = len(tried)
		o.values = append(o.values, float64(o.sims))
		var trace []string
		for _, t := range tried {
			at := ""
			if m, ok := t.r.Metric(MetricStoppedAt); ok {
				at = fmt.Sprintf(", stopped at %s us", report.Num(m.Value))
			}
			trace = append(trace, fmt.Sprintf("%s=%s %v (%s%s)", s.Key, s.value(t.v), t.holds, report.Num(t.x), at))
		}
		note := fmt.Sprintf("[%s] %s: %s", o.key, s.Until, strings.Join(trace, ", "))
		if why != "" {
			note += "; " + why
		}
		o.notes = append(o.notes, note)
		if opt.Keep {
			if last != nil {
				keep(&o, "largest: ", last.r)
			}
			if first != nil {
				keep(&o, "first true: ", first.r)
			}
		}
		outs[i] = o
		return nil
	}, func(i int) { prog.point(outs[i].sims) })
	interrupted := err == errStopped
	if err != nil && !interrupted {
		return nil, st, err
	}
	if interrupted {
		// Points in flight go on in the background: keep only the
		// finished ones.
		mu.Lock()
		stCopy, unit := st, munit
		mu.Unlock()
		st, munit = stCopy, unit
		done := make([]outcome, len(pts))
		for i := range pts {
			if finished[i] {
				done[i] = outs[i]
			} else {
				done[i] = outcome{key: pts[i].Key(), err: ErrNotRun, values: []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN(), 0}}
			}
		}
		outs = done
	}
	m.table.Columns = []report.Column{
		{Name: ColLargest, Unit: unit}, {Name: ColFirstTrue, Unit: unit},
		{Name: ColAtLargest + " (" + s.Until.Metric + ")", Unit: munit},
		{Name: ColAtFirstTrue + " (" + s.Until.Metric + ")", Unit: munit},
		{Name: ColSimulations},
	}
	sims := 0
	for _, o := range outs {
		sims += o.sims
	}
	st.Wall = time.Since(start).Seconds()
	return assemble(m, opt.Shard, outs, sims), st, incomplete(outs, interrupted)
}

// probeErr is a simulation of a search that failed (as opposed to an
// error that ends the whole search, such as a metric that does not exist).
type probeErr struct{ msg string }

func (e *probeErr) Error() string { return e.msg }

func clone(s []Override) []Override { return append([]Override(nil), s...) }
