package experiment

import (
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// Runner is one assembled, not yet run, simulation of a scenario.
type Runner interface {
	// Explain writes what `besim validate` prints for a valid scenario: a
	// one-line summary and, where there is a fabric, its derived
	// thresholds, headroom and BDP.
	Explain(w io.Writer) error
	// Run simulates the scenario and reduces what it measured. It returns
	// a result even when it also returns an error: a workload that could
	// not be built or completed has a note saying so and no metrics (a
	// sweep or search over a failed point must not read it as "no PFC"),
	// and the error lets a caller exit non-zero. The result's Timing holds
	// the simulated event count; Build's runner adds the wall time.
	Run() (*report.Result, error)
}

// Builder assembles the simulation of a validated scenario of its kind.
// Its errors name the scenario field (Scenario.Errorf).
type Builder func(s *scenarios.Scenario) (Runner, error)

// Flows is the kind of a scenario with neither a workload nor a benchmark
// section: raw, rc or ud flows on the fabric.
const Flows = "flows"

var registry struct {
	sync.Mutex
	b   map[string]Builder
	dup []string
}

// Register makes b the builder of scenarios of kind: a workload kind
// (workload.kind), a benchmark kind (benchmark.kind) or Flows. Each
// workload package registers itself in its init; cmd/besim links them all
// through package workloads/all. A kind registered twice is a programming
// error that Build reports.
func Register(kind string, b Builder) {
	registry.Lock()
	defer registry.Unlock()
	if registry.b == nil {
		registry.b = map[string]Builder{}
	}
	if _, ok := registry.b[kind]; ok || b == nil {
		registry.dup = append(registry.dup, kind)
		return
	}
	registry.b[kind] = b
}

// Kinds lists the registered kinds, sorted.
func Kinds() []string {
	registry.Lock()
	defer registry.Unlock()
	var out []string
	for k := range registry.b {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Kind is the registry key of s: its workload kind, its benchmark kind, or
// Flows.
func Kind(s *scenarios.Scenario) string {
	switch {
	case s.Workload != nil:
		return string(s.Workload.Kind)
	case s.Benchmark != nil:
		return string(s.Benchmark.Kind)
	}
	return Flows
}

// Build assembles the simulation of s with the builder registered for its
// kind. The runner it returns adds the wall time to the result's Timing.
func Build(s *scenarios.Scenario) (Runner, error) {
	kind := Kind(s)
	registry.Lock()
	b, dup := registry.b[kind], slices.Contains(registry.dup, kind)
	registry.Unlock()
	if dup {
		return nil, fmt.Errorf("experiment: kind %q is registered twice (or with a nil builder)", kind)
	}
	if b == nil {
		field, what := "workload.kind", "workload"
		switch {
		case s.Benchmark != nil:
			field, what = "benchmark.kind", "benchmark"
		case s.Workload == nil:
			field, what = "flows", "flow scenario"
		}
		known := "none: link package workloads/all"
		if k := Kinds(); len(k) > 0 {
			known = strings.Join(k, ", ")
		}
		return nil, s.Errorf(field, "unknown %s %q (registered: %s)", what, kind, known)
	}
	if err := checkMemory(s); err != nil {
		return nil, err
	}
	x, err := b(s)
	if err != nil {
		return nil, err
	}
	return timed{x, s}, nil
}

// timed adds the wall time of Run to the result's Timing and the
// provenance of the result (Provenance).
type timed struct {
	Runner
	s *scenarios.Scenario
}

func (t timed) Run() (*report.Result, error) { return t.run(t.Runner.Run) }

// RunWatched implements Watched: the runner's own RunWatched, timed, or
// its Run when it cannot be stopped early.
func (t timed) RunWatched(w *Watch) (*report.Result, error) {
	x, ok := t.Runner.(Watched)
	if !ok {
		return t.Run()
	}
	return t.run(func() (*report.Result, error) { return x.RunWatched(w) })
}

func (t timed) run(f func() (*report.Result, error)) (r *report.Result, err error) {
	start := time.Now()
	defer func() {
		// No input should reach a panic; if one does, it is a bug in a
		// model, reported as the run's error (with where it happened)
		// rather than a crash that loses a sweep.
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("internal error (please report): simulation panicked: %v%s", p, panicSite())
		}
	}()
	r, err = f()
	wall := time.Since(start).Seconds()
	if r == nil {
		if err == nil {
			err = fmt.Errorf("experiment: the run returned no result")
		}
		return nil, err
	}
	if r.Timing == nil {
		r.Timing = &report.Timing{}
	}
	r.Timing.WallSeconds = wall
	if wall > 0 {
		r.Timing.EventsPerSecond = float64(r.Timing.Events) / wall
	}
	if perr := Provenance(r, t.s); perr != nil && err == nil {
		err = perr
	}
	return r, err
}

// panicSite is " at FILE:LINE" of the frame that panicked, from inside a
// deferred recover.
func panicSite() string {
	lines := strings.Split(string(debug.Stack()), "\n")
	for i, l := range lines {
		// The frame after runtime's panic is the one that panicked.
		if strings.HasPrefix(l, "panic(") && i+3 < len(lines) {
			return " at " + strings.TrimSpace(strings.Fields(lines[i+3])[0])
		}
	}
	return ""
}

// Provenance stamps r with where it came from: the build of the running
// binary (report.Result.SetBuild), the scenario's name, seed and digest,
// and the scenario with every default. Build's runners call it; a sweep
// calls it with its base scenario.
func Provenance(r *report.Result, s *scenarios.Scenario) error { return s.Stamp(r) }

// Simulate builds and runs one scenario (the simulator of besim's sweeps
// and searches, sweep.DefaultSimulator). The result has no Timing (it is
// returned apart); a panic inside the models becomes an error. A scenario
// that cannot be built, or whose run fails, returns an error (and, when
// the run failed, also the result with its note): a sweep records such a
// point as failed rather than as a row of missing metrics.
func Simulate(s *scenarios.Scenario) (*report.Result, report.Timing, error) {
	return simulate(s, nil)
}

// simulate is Simulate, under w when w is set and the runner can be
// watched (SimulateWatched).
func simulate(s *scenarios.Scenario, w *Watch) (res *report.Result, t report.Timing, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("simulation of %s failed: %v", s.Name, r)
		}
	}()
	x, err := Build(s)
	if err != nil {
		return nil, t, err
	}
	if wx, ok := x.(Watched); ok && w != nil {
		return untimed(wx.RunWatched(w))
	}
	return untimed(x.Run())
}

// untimed moves a run's Timing out of its result (Simulate's contract).
func untimed(r *report.Result, runErr error) (*report.Result, report.Timing, error) {
	var t report.Timing
	if r == nil {
		return nil, t, runErr
	}
	if r.Timing != nil {
		t = *r.Timing
	}
	r.Timing = nil
	return r, t, runErr
}

// NewResult is the empty result of a run of s.
func NewResult(s *scenarios.Scenario) *report.Result {
	return &report.Result{Tool: "besim", Scenario: s.Name, Seed: s.Seed, Duration: s.Duration.String()}
}

// Failed notes a workload that could not be built or completed on r (and
// leaves its metrics out) and returns the error Run returns with it.
func Failed(r *report.Result, err error) error {
	if err == nil {
		return nil
	}
	r.Notes = append(r.Notes, fmt.Sprintf("workload failed: %v", err))
	return fmt.Errorf("workload failed: %w", err)
}

// Events sets the simulated event count on r (Run's Timing).
func Events(r *report.Result, n uint64) {
	r.Timing = &report.Timing{Events: n}
}
