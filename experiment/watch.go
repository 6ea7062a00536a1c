package experiment

import (
	"fmt"
	"slices"
	"strings"

	"github.com/besim/besim/fabric"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
	"github.com/besim/besim/sim"
)

// liveMetrics are the FabricMetrics a run can be watched on: counters that
// only grow during a run, so a condition on one can be settled before the
// run ends.
var liveMetrics = map[string]func(*fabric.Live) int64{
	"pfc/frames_tx":         func(l *fabric.Live) int64 { return l.PFCFramesTx },
	"pfc/xoff_events":       func(l *fabric.Live) int64 { return l.XOFFEvents },
	"pfc/storm_trips":       func(l *fabric.Live) int64 { return l.StormTrips },
	"fabric/drops":          func(l *fabric.Live) int64 { return l.Drops },
	"fabric/watchdog_drops": func(l *fabric.Live) int64 { return l.WatchdogDrops },
	"fabric/ecn_marks":      func(l *fabric.Live) int64 { return l.ECNMarks },
}

// LiveMetrics lists the metrics a Watch can watch, sorted.
func LiveMetrics() []string {
	var out []string
	for m := range liveMetrics {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// MetricStoppedAt is the metric of a run a Watch stopped: the virtual time
// (microseconds from the start) at which it stopped.
const MetricStoppedAt = "run/stopped_at"

// Watch stops a run as soon as a condition on one monotone fabric counter
// (LiveMetrics) is settled, so that a search probe whose answer is known
// early does not simulate the rest of its scenario. Decided reports
// whether the condition's outcome can no longer change once the counter
// has reached x (counters never fall). The watch is told of every change
// of the counters (fabric.Network.OnLive) and schedules no event of its
// own: the run stops after the very event that settled the condition, and
// a run that is never stopped is event for event the run unwatched, so it
// reports exactly what it reports unwatched. A run that is stopped reports
// only its fabric counters at the stop (FabricMetrics) and
// MetricStoppedAt.
type Watch struct {
	Metric  string
	Decided func(x float64) bool

	read    func(*fabric.Live) int64
	k       *sim.Kernel
	n       *fabric.Network
	stopped bool
	at      sim.Time
}

// NewWatch checks that metric can be watched.
func NewWatch(metric string, decided func(x float64) bool) (*Watch, error) {
	read, ok := liveMetrics[metric]
	if !ok || decided == nil {
		return nil, fmt.Errorf("experiment: metric %s cannot be watched during a run (can: %s)", metric, strings.Join(LiveMetrics(), ", "))
	}
	return &Watch{Metric: metric, Decided: decided, read: read}, nil
}

// Start watches n's counters from now on, in kernel k: at every change,
// and once now, it reads the counter, and when the condition is decided
// it stops k (the running RunUntil returns after the current event). The
// runner checks Stopped before and after every phase and returns at once.
func (w *Watch) Start(k *sim.Kernel, n *fabric.Network) {
	w.k, w.n = k, n
	n.OnLive(w.check)
	w.check()
}

// check is the OnLive function: it stops the run once decided.
func (w *Watch) check() {
	if w.stopped {
		return
	}
	l := w.n.Live()
	if w.Decided(float64(w.read(&l))) {
		w.stopped, w.at = true, w.k.Now()
		w.k.Stop()
	}
}

// Stopped reports whether the condition was decided and the run stopped.
func (w *Watch) Stopped() bool { return w != nil && w.stopped }

// At is the virtual time the run stopped at.
func (w *Watch) At() sim.Time { return w.at }

// Report adds a stopped run's metrics and note to r: the fabric totals
// at the stop (FabricMetrics: after the event that decided it) and
// MetricStoppedAt.
func (w *Watch) Report(r *report.Result) {
	t := w.n.Report().Totals
	FabricMetrics(r, &t)
	r.Add(MetricStoppedAt, w.at.Seconds()*1e6, "us")
	l := t.Live()
	x := float64(w.read(&l))
	r.Notes = append(r.Notes, fmt.Sprintf("stopped early at %s of virtual time, when the condition on %s was decided (%s = %s): only the fabric counters up to then are reported",
		w.at, w.Metric, w.Metric, report.Num(x)))
}

// Watched is a Runner that can be stopped by a Watch (RunWatched); a
// runner that is not runs to its end under SimulateWatched.
type Watched interface {
	RunWatched(w *Watch) (*report.Result, error)
}

// SimulateWatched is Simulate with an early stop: when metric can be
// watched (LiveMetrics) and the scenario's runner supports it, the run
// stops as soon as decided reports true for the counter's value, and its
// result is Watch.Report's; otherwise it is exactly Simulate.
func SimulateWatched(s *scenarios.Scenario, metric string, decided func(x float64) bool) (*report.Result, report.Timing, error) {
	w, err := NewWatch(metric, decided)
	if err != nil {
		return Simulate(s)
	}
	return simulate(s, w)
}
