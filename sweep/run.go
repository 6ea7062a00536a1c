package sweep

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// Options control how a sweep or search runs. None of them changes what a
// point computes, so any Jobs gives the same bytes.
type Options struct {
	// Jobs is how many simulations run at once (one per goroutine; each is
	// single-threaded). <= 0 means GOMAXPROCS.
	Jobs int
	// Shard restricts the run to some points; the result is a partial file
	// for Merge.
	Shard Shard
	// Metrics selects the columns of the sweep table: metric names or
	// path.Match patterns ("flow/*/goodput"). Empty: every metric of the
	// sweep's first point, in its order.
	Metrics []string
	// Keep adds every point's own tables, series and notes to the result,
	// named "[POINT] NAME".
	Keep bool
	// Replications, when > 0, runs every point of the axes that many
	// times with seeds S, S+1, ... (S: the scenario's seed; a last axis
	// "seed") and pools the runs' latency histograms (see
	// TableReplications). Run only; not with a search.
	Replications int
	// Progress, if set, is called after each point, never concurrently.
	Progress func(Progress)
	// Stop, when closed (on SIGINT), ends the run early: no new point
	// starts, points in flight are abandoned, and Run and RunSearch return
	// the finished points with an *Incomplete error (Interrupted).
	Stop <-chan struct{}
	// Simulate runs each point (nil: DefaultSimulator).
	Simulate Simulator
	// FullProbes makes a search run every probe to its end. Otherwise,
	// when Simulate is nil and DefaultWatchedSimulator is set, a probe
	// stops as soon as its --until outcome is decided (see
	// WatchedSimulator); the search's answer is the same either way.
	FullProbes bool
}

// Progress is reported after each finished point.
type Progress struct {
	Done, Total int     // points
	Simulations int     // simulations run so far (a search runs several per point)
	Elapsed     float64 // wall seconds since the start
}

// Stats are facts about the machine's work, kept out of the result so that
// files stay byte-identical.
type Stats struct {
	Simulations int     // including any run only to learn the metric names
	Events      uint64  // kernel events over all simulations
	SimSeconds  float64 // wall seconds inside simulations, summed over workers
	Wall        float64 // wall seconds of the whole run
	Jobs        int
}

func (st *Stats) add(t report.Timing) {
	st.Simulations++
	st.Events += t.Events
	st.SimSeconds += t.WallSeconds
}

// Simulator runs one scenario of a sweep or search and reduces it to a
// result: besim's is experiment.Simulate (package sweep/simulate makes it
// the default), berun's runs the scenario on real hosts. It returns an
// error for a point that could not be built or run (and, when the run
// failed, also the result with its note); the Timing is returned apart.
type Simulator func(s *scenarios.Scenario) (*report.Result, report.Timing, error)

// DefaultSimulator is the Simulator of Simulate, and of Run and RunSearch
// when Options.Simulate is nil. This package links no simulator (so that
// berun, which links none, can run searches on hardware); importing
// package sweep/simulate sets it to besim's.
var DefaultSimulator Simulator

// WatchedSimulator is a Simulator that may stop a run as soon as the
// outcome of until is decided: where until's metric is a counter that
// only grows during a run, once it holds (for > >= !=) or fails (for < <=
// ==) it can no longer change (Predicate.Decided). A stopped run's result
// has the metric until names, at its value when the run stopped, and
// MetricStoppedAt. besim's is experiment.SimulateWatched.
type WatchedSimulator func(s *scenarios.Scenario, until Predicate) (*report.Result, report.Timing, error)

// DefaultWatchedSimulator is the WatchedSimulator a search uses when
// Options.Simulate is nil and Options.FullProbes is not set (package
// sweep/simulate sets it; nil: probes run to their end).
var DefaultWatchedSimulator WatchedSimulator

// MetricStoppedAt is the metric of a probe stopped early: the virtual time
// it stopped at, in microseconds (experiment.MetricStoppedAt).
const MetricStoppedAt = "run/stopped_at"

// Simulate runs one scenario with DefaultSimulator.
func Simulate(s *scenarios.Scenario) (*report.Result, report.Timing, error) {
	if DefaultSimulator == nil {
		return nil, report.Timing{}, errors.New(`sweep: no simulator linked (import _ "github.com/besim/besim/sweep/simulate", or set Options.Simulate)`)
	}
	return DefaultSimulator(s)
}

// watched reports whether a search's probes may stop early.
func (o *Options) watched() bool {
	return !o.FullProbes && o.Simulate == nil && DefaultWatchedSimulator != nil
}

// simulateProbe runs one probe of a search for until.
func (o *Options) simulateProbe(s *scenarios.Scenario, until Predicate) (*report.Result, report.Timing, error) {
	if o.watched() {
		return DefaultWatchedSimulator(s, until)
	}
	return o.simulate(s)
}

func (o *Options) simulate(s *scenarios.Scenario) (*report.Result, report.Timing, error) {
	if o.Simulate != nil {
		return o.Simulate(s)
	}
	return Simulate(s)
}

// FailedPoint is a point of a sweep or search whose simulation could not
// be built or run (or, in an interrupted run, never finished).
type FailedPoint struct {
	Key string // the point's key, "k1=v1,k2=v2"
	Err string
}

// Incomplete is the error Run and RunSearch return together with their
// result when some points have no measurement: each failed point is a row
// with its Error set (and NaN values), and the caller should write the
// result and exit non-zero. Interrupted means Options.Stop ended the run
// early; its unfinished points are rows with ErrNotRun.
type Incomplete struct {
	Failed      []FailedPoint // in point order, interrupted ones included
	Points      int           // points in this run (its shard)
	Interrupted bool
}

// ErrNotRun is the row error of a point an interrupted run did not finish.
const ErrNotRun = "not run: the sweep was interrupted before this point finished"

func (e *Incomplete) Error() string {
	var b strings.Builder
	failed := 0
	for _, f := range e.Failed {
		if f.Err != ErrNotRun {
			failed++
		}
	}
	if e.Interrupted {
		fmt.Fprintf(&b, "interrupted: %d of %d points finished; the result is partial", e.Points-len(e.Failed)+failed, e.Points)
		if failed > 0 {
			fmt.Fprintf(&b, ", and %d failed", failed)
		}
	} else {
		fmt.Fprintf(&b, "%d of %d points failed", failed, e.Points)
	}
	for _, f := range e.Failed {
		if f.Err == ErrNotRun {
			continue
		}
		fmt.Fprintf(&b, "\n  point %s: %s", f.Key, f.Err)
	}
	return b.String()
}

// incomplete collects the failed rows of outs into an *Incomplete, or nil.
func incomplete(outs []outcome, interrupted bool) error {
	e := &Incomplete{Points: len(outs), Interrupted: interrupted}
	for _, o := range outs {
		if o.err != "" {
			e.Failed = append(e.Failed, FailedPoint{Key: o.key, Err: o.err})
		}
	}
	if len(e.Failed) == 0 && !interrupted {
		return nil
	}
	return e
}

// Prefixes of the notes assemble adds to an incomplete file or a shard
// (Merge drops and recomputes them).
const (
	noteDigest  = "sweep definition digest (scenario source, axes and values; besim merge compares it): "
	notePartial = "PARTIAL: "
	noteFailed  = "FAILED: "
)

// Result metric names of an incomplete sweep file (absent when 0).
const (
	MetricFailed      = "sweep/failed"      // points whose simulation failed
	MetricInterrupted = "sweep/interrupted" // points not run because the run was interrupted
)

// forEach runs f(0..n-1) on jobs goroutines. Indices are handed out in
// order and handing out stops at the first failure, so the error returned
// (that of the lowest failing index) does not depend on scheduling. done is
// called with the index after each success, serialized.
//
// When stop is closed forEach hands out no more indices and returns at
// once with errStopped, without waiting for the calls in flight (their
// goroutines finish in the background and must only write their own
// index's slot). finished then says which indices completed before the
// stop; it is a copy taken under the lock that serializes done, so what
// f wrote for those indices is visible to the caller.
func forEach(n, jobs int, stop <-chan struct{}, f func(i int) error, done func(i int)) (finished []bool, err error) {
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	jobs = max(1, min(jobs, n))
	errs := make([]error, n)
	fin := make([]bool, n)
	var mu sync.Mutex
	next, failed := 0, false
	stopped := func() bool {
		select {
		case <-stop:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	for range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if failed || next >= n || stopped() {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				err := f(i)
				mu.Lock()
				if err != nil {
					errs[i] = err
					failed = true
				} else {
					fin[i] = true
					if done != nil {
						done(i)
					}
				}
				mu.Unlock()
			}
		}()
	}
	all := make(chan struct{})
	go func() { wg.Wait(); close(all) }()
	select {
	case <-all:
		if stopped() && slices.Contains(fin, false) {
			return fin, errStopped
		}
	case <-stop:
		mu.Lock()
		failed = true
		snap := append([]bool(nil), fin...)
		mu.Unlock()
		return snap, errStopped
	}
	for _, err := range errs {
		if err != nil {
			return fin, err
		}
	}
	return fin, nil
}

// errStopped is forEach's error when Options.Stop was closed.
var errStopped = fmt.Errorf("sweep: stopped")

func (o *Options) jobs() int {
	if o.Jobs <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return o.Jobs
}

// outcome is what one point contributes to a result file.
type outcome struct {
	key    string
	err    string // the point failed (or never ran): its row's Error
	values []float64
	sims   int
	tables []report.Table
	series []report.Series
	notes  []string
}

// meta is what a sweep file says besides its points.
type meta struct {
	tool     string
	scenario string
	seed     uint64
	duration string
	table    report.Table // name, title, key name, columns; no rows
	notes    []string     // general notes, before the points' own
	points   int          // in the whole sweep
	digest   string       // of the sweep's definition: written in shards, compared by Merge
	// replications is Options.Replications (0: none); the last axis is
	// then the seed, and assemble pools the runs' histograms.
	replications int
	// prov holds the provenance of the sweep file: the build, and the base
	// scenario's digest and resolved form (experiment.Provenance).
	prov report.Result
}

func newMeta(b *Base, def ...string) (meta, error) {
	s := b.Scenario
	m := meta{tool: "besim", scenario: s.Name, seed: s.Seed, duration: s.Duration.Time().String(), digest: digest(b, def...)}
	err := s.Stamp(&m.prov)
	return m, err
}

// digest identifies a sweep's definition: the scenario's source and each
// part of def (axis keys and values, a search's range and predicate), so
// that Merge refuses shards of different sweeps even when their axes have
// the same names and counts.
func digest(b *Base, def ...string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:", len(b.Data))
	h.Write(b.Data)
	for _, d := range def {
		fmt.Fprintf(h, "%d:%s", len(d), d)
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// axesDef is the part of a sweep's definition its axes contribute.
func axesDef(axes []Axis) []string {
	var def []string
	for _, a := range axes {
		def = append(def, "axis", a.Key)
		def = append(def, a.Values...)
	}
	return def
}

// Result metric names of a sweep file.
const (
	MetricPoints      = "sweep/points"      // points of the whole sweep
	MetricSimulations = "sweep/simulations" // simulations behind this file's rows
	MetricShard       = "sweep/shard"       // partial files only: i of --shard i/n
	MetricShards      = "sweep/shards"      // partial files only: n
)

// assemble writes a result file from outcomes in point order. A full run
// and Merge both end here, which is what makes them byte-identical.
func assemble(m meta, shard Shard, outs []outcome, sims int) *report.Result {
	r := &report.Result{Tool: m.tool, Scenario: m.scenario, Seed: m.seed, Duration: m.duration,
		ToolVersion: m.prov.ToolVersion, Revision: m.prov.Revision, ScenarioSHA256: m.prov.ScenarioSHA256,
		ResolvedScenario: m.prov.ResolvedScenario}
	t := m.table
	t.Rows = nil
	failed, notRun := 0, 0
	for _, o := range outs {
		t.AddRow(o.key, o.values...)
		if o.err != "" {
			t.Rows[len(t.Rows)-1].Error = o.err
			if o.err == ErrNotRun {
				notRun++
			} else {
				failed++
			}
		}
	}
	r.Add(MetricPoints, float64(m.points), "")
	r.Add(MetricSimulations, float64(sims), "")
	if failed > 0 {
		r.Add(MetricFailed, float64(failed), "")
	}
	if notRun > 0 {
		r.Add(MetricInterrupted, float64(notRun), "")
	}
	if !shard.Whole() {
		r.Add(MetricShard, float64(shard.I), "")
		r.Add(MetricShards, float64(shard.N), "")
	}
	if m.replications > 0 {
		r.Add(MetricReplications, float64(m.replications), "")
	}
	r.Tables = append(r.Tables, t)
	if m.replications > 0 {
		pooled, err := pool(outs, t.Params[:len(t.Params)-1], m.replications)
		if err != nil {
			// The kept tables are ours (Run) or checked by Merge's
			// split: an error here is a corrupt input; say so in the file.
			r.Notes = append(r.Notes, noteFailed+"cannot pool the replications: "+err.Error())
		}
		r.Tables = append(r.Tables, pooled...)
	}
	r.Notes = append(r.Notes, m.notes...)
	if notRun > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf(notePartial+"the run was interrupted; %d of %d points of this file did not finish (rows with error %q)", notRun, len(outs), ErrNotRun))
	}
	if failed > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf(noteFailed+"%d of %d points of this file failed; their rows give the error", failed, len(outs)))
	}
	if !shard.Whole() {
		r.Notes = append(r.Notes, shardNote(shard, m.points))
		r.Notes = append(r.Notes, noteDigest+m.digest)
	}
	for _, o := range outs {
		r.Tables = append(r.Tables, o.tables...)
		r.Series = append(r.Series, o.series...)
		r.Notes = append(r.Notes, o.notes...)
	}
	return r
}

// axisKeys are the swept keys, the sweep table's Params.
func axisKeys(axes []Axis) []string {
	var keys []string
	for _, a := range axes {
		keys = append(keys, a.Key)
	}
	return keys
}

func shardNote(s Shard, points int) string {
	n := 0
	for i := s.I; i < points; i += s.N {
		n++
	}
	return fmt.Sprintf("shard %s: this file holds points %d, %d, ... (%d of %d); combine all %d shards with besim merge", s, s.I, s.I+s.N, n, points, s.N)
}

// keep prefixes a point's own tables, series and notes with "[KEY] ".
func keep(o *outcome, label string, r *report.Result) {
	p := "[" + o.key + "] " + label
	for _, t := range r.Tables {
		t.Name = p + t.Name
		t.Title = p + t.Title
		o.tables = append(o.tables, t)
	}
	for _, s := range r.Series {
		s.Name = p + s.Name
		o.series = append(o.series, s)
	}
	for _, n := range r.Notes {
		o.notes = append(o.notes, p+n)
	}
}

// selectColumns expands the metric patterns against a result.
func selectColumns(patterns []string, r *report.Result) ([]report.Column, error) {
	var cols []report.Column
	if len(patterns) == 0 {
		for _, m := range r.Metrics {
			cols = append(cols, report.Column{Name: m.Name, Unit: m.Unit})
		}
		return cols, nil
	}
	seen := map[string]bool{}
	for _, p := range patterns {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("--metrics %s: bad pattern: %v", p, err)
		}
		found := false
		for _, m := range r.Metrics {
			if ok, _ := path.Match(p, m.Name); ok {
				found = true
				if !seen[m.Name] {
					seen[m.Name] = true
					cols = append(cols, report.Column{Name: m.Name, Unit: m.Unit})
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("--metrics %s: no such metric in the results (have: %s)", p, metricNames(r))
		}
	}
	return cols, nil
}

// literal reports whether no pattern has path.Match meta characters.
func literal(patterns []string) bool {
	if len(patterns) == 0 {
		return false
	}
	for _, p := range patterns {
		if strings.ContainsAny(p, `*?[\\`) {
			return false
		}
	}
	return true
}

// literalColumns are named metrics, with the unit of the first result
// that has each.
func literalColumns(names []string, rs []*report.Result) ([]report.Column, error) {
	var cols []report.Column
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		found := false
		for _, r := range rs {
			if m, ok := r.Metric(n); ok {
				cols = append(cols, report.Column{Name: n, Unit: m.Unit})
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("--metrics %s: no such metric in the results (have: %s)", n, metricNames(rs[0]))
		}
	}
	return cols, nil
}

func metricNames(r *report.Result) string {
	var s []string
	for _, m := range r.Metrics {
		s = append(s, m.Name)
	}
	return strings.Join(s, ", ")
}

func row(cols []report.Column, r *report.Result) []float64 {
	v := make([]float64, len(cols))
	for i, c := range cols {
		v[i] = math.NaN() // missing: null in JSON, an empty CSV cell, "-" in text
		if m, ok := r.Metric(c.Name); ok {
			v[i] = m.Value
		}
	}
	return v
}

func describeAxes(axes []Axis) string {
	if len(axes) == 0 {
		return "the scenario as written"
	}
	var s []string
	for _, a := range axes {
		s = append(s, fmt.Sprintf("%s (%d values)", a.Key, len(a.Values)))
	}
	return strings.Join(s, " x ")
}

// progress tracks and reports finished points.
type progress struct {
	opt   *Options
	total int
	done  int
	sims  int
	start time.Time
}

func (p *progress) point(sims int) {
	p.done++
	p.sims += sims
	if p.opt.Progress != nil {
		p.opt.Progress(Progress{Done: p.done, Total: p.total, Simulations: p.sims, Elapsed: time.Since(p.start).Seconds()})
	}
}

// Run runs a sweep: every point of the cross product of axes (or the
// shard's share) applied to the base scenario. The result has a table
// "sweep", one row per point keyed "k1=v1,k2=v2", with the selected
// metrics as columns, and the metrics sweep/points and sweep/simulations;
// a partial (sharded) result also has sweep/shard and sweep/shards.
func Run(b *Base, axes []Axis, opt Options) (*report.Result, Stats, error) {
	start := time.Now()
	st := Stats{Jobs: opt.jobs()}
	var def []string
	if opt.Replications != 0 {
		a, err := replicationAxis(b, axes, opt.Replications)
		if err != nil {
			return nil, st, err
		}
		def = append(axesDef(axes), "replications", strconv.Itoa(opt.Replications))
		axes = append(slices.Clone(axes), a)
	} else {
		def = axesDef(axes)
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
	// Load every point before simulating any, so a bad value fails fast.
	scs := make([]*loaded, len(pts))
	if _, err := forEach(len(pts), opt.Jobs, nil, func(i int) error {
		l, err := b.load(pts[i].Set)
		scs[i] = l
		return err
	}, nil); err != nil {
		return nil, st, err
	}

	m, err := newMeta(b, def...)
	if err != nil {
		return nil, st, err
	}
	m.points = len(all)
	m.replications = opt.Replications
	m.table = report.Table{Name: "sweep", Title: fmt.Sprintf("Sweep of %s over %s", m.scenario, describeAxes(axes)), KeyName: "point", Params: axisKeys(axes)}
	m.notes = []string{fmt.Sprintf("sweep of %s: %d points over %s, each simulated for %s with seed %d unless set", m.scenario, len(all), describeAxes(axes), m.duration, m.seed)}
	if n := opt.Replications; n > 0 {
		m.notes = append(m.notes, fmt.Sprintf("replications: each point of the other axes runs %d times (seed %d to %d); table %s pools each one's latency histograms by merging their bucket counts (the quantiles of all runs' values together, to the histograms' precision), with the mean of the runs' P99s and its 95%% Student-t interval; each run's histogram is kept as [POINT] hist/NAME", n, m.seed, m.seed+uint64(n-1), TableReplications))
	}

	var mu sync.Mutex
	var cols []report.Column
	colsReady := false
	if !literal(opt.Metrics) && !opt.Shard.Has(0) {
		// The columns come from point 0: a shard without it runs it once,
		// only to learn them (name the metrics literally to avoid this).
		l, err := b.load(all[0].Set)
		if err != nil {
			return nil, st, err
		}
		r, t, err := opt.simulate(l.s)
		if err != nil {
			return nil, st, fmt.Errorf("point %s failed, so this shard cannot learn the sweep's columns from it (name them with --metrics): %w", all[0].Key(), l.explain(err))
		}
		st.add(t)
		if cols, err = selectColumns(opt.Metrics, r); err != nil {
			return nil, st, err
		}
		colsReady = true
	}
	results := make([]*report.Result, len(pts))
	errs := make([]string, len(pts))
	prog := &progress{opt: &opt, total: len(pts), start: start}
	finished, err := forEach(len(pts), opt.Jobs, opt.Stop, func(i int) error {
		r, t, err := opt.simulate(scs[i].s)
		if err != nil {
			// A failed point is a row with its error, not the end of
			// the sweep; its metrics are not read.
			errs[i] = scs[i].explain(err).Error()
			r = nil
		}
		mu.Lock()
		st.add(t)
		mu.Unlock()
		results[i] = r
		return nil
	}, func(int) { prog.point(1) })
	interrupted := err == errStopped
	if err != nil && !interrupted {
		return nil, st, err
	}
	// After an interrupt, points in flight still run in the background:
	// read only the finished ones, and Stats under the lock.
	res := make([]*report.Result, len(pts))
	why := make([]string, len(pts))
	ok := make([]*report.Result, 0, len(pts))
	for i := range pts {
		if !finished[i] {
			why[i] = ErrNotRun
			continue
		}
		res[i], why[i] = results[i], errs[i]
		if res[i] != nil {
			ok = append(ok, res[i])
		}
	}
	results, errs = res, why
	mu.Lock()
	stCopy := st
	mu.Unlock()
	st = stCopy
	switch {
	case colsReady:
	case literal(opt.Metrics) && len(opt.Metrics) > 0:
		if len(ok) > 0 {
			if cols, err = literalColumns(opt.Metrics, ok); err != nil {
				return nil, st, err
			}
		} else {
			for _, n := range opt.Metrics {
				cols = append(cols, report.Column{Name: n})
			}
		}
	case len(ok) == 0:
		// Nothing ran: no columns to learn; the rows say why.
	case results[0] != nil || opt.Shard.Whole():
		// Point 0 comes first in this run; when it failed, the first
		// point that ran gives the columns.
		if cols, err = selectColumns(opt.Metrics, ok[0]); err != nil {
			return nil, st, err
		}
	default:
		return nil, st, fmt.Errorf("point %s failed, so this shard cannot learn the sweep's columns from it (name them with --metrics): %s", pts[0].Key(), errs[0])
	}
	m.table.Columns = cols
	outs := make([]outcome, len(pts))
	for i, r := range results {
		o := outcome{key: pts[i].Key(), sims: 1, err: errs[i]}
		if r == nil {
			o.values = row(cols, &report.Result{})
			if errs[i] == ErrNotRun {
				o.sims = 0
			}
		} else {
			o.values = row(cols, r)
			if opt.Keep {
				keep(&o, "", r)
			} else if opt.Replications > 0 {
				keepHistograms(&o, r)
			}
		}
		outs[i] = o
	}
	sims := 0
	for _, o := range outs {
		sims += o.sims
	}
	st.Wall = time.Since(start).Seconds()
	return assemble(m, opt.Shard, outs, sims), st, incomplete(outs, interrupted)
}
