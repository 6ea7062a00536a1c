package sweep

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/besim/besim/experiment"
	"github.com/besim/besim/report"
)

// Predicate.Decided: once it says the outcome is settled at x, Eval gives
// the same outcome at every larger value (the metric is a counter), and it
// is never settled at a value from which a larger one would flip Eval.
func TestPredicateDecided(t *testing.T) {
	xs := []float64{0, 0.5, 1, 2, 3, 10, 1e9}
	for _, spec := range []string{"m>0", "m>=1", "m<2", "m<=2", "m==2", "m!=2", "m>2", "m>=3"} {
		p, err := ParsePredicate(spec)
		if err != nil {
			t.Fatal(err)
		}
		eval := func(x float64) bool { // the search's own Eval on a result holding x
			var r report.Result
			r.Add(p.Metric, x, "")
			ok, _, err := p.Eval(&r)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		decidedSomewhere := false
		for i, x := range xs {
			later := true // Eval is constant from x on
			for _, y := range xs[i:] {
				later = later && eval(y) == eval(x)
			}
			if p.Decided(x) && !later {
				t.Errorf("%s: decided at %g, but Eval changes later", spec, x)
			}
			// Settled as soon as possible: if Eval is constant from x on
			// (over every larger real, not just these), Decided says so;
			// checked at the points past which nothing can change.
			if x > p.Value+1 && !p.Decided(x) {
				t.Errorf("%s: not decided at %g, well past %g", spec, x, p.Value)
			}
			decidedSomewhere = decidedSomewhere || p.Decided(x)
		}
		if !decidedSomewhere {
			t.Errorf("%s: never decided", spec)
		}
	}
	if MetricStoppedAt != experiment.MetricStoppedAt {
		t.Errorf("sweep.MetricStoppedAt %q, experiment's %q", MetricStoppedAt, experiment.MetricStoppedAt)
	}
}

// A search whose probes stop once pfc/frames_tx>0 is decided finds what
// the same search with every probe run to its end finds, simulating fewer
// events; the probes that stopped are those where the predicate held, each
// says when, and the counter they report is at least 1 and no more than
// the full run's.
func TestSearchStopsEarly(t *testing.T) {
	if testing.Short() {
		t.Skip("two 8-probe searches of the Figure 14 incast")
	}
	b := mustBase(t, "fig14-incast")
	axes := sweepAxes(t, "workload.window=none", "duration=100us", "workload.warmup=20us")
	full, stFull := search(t, b, "workload.servers=1..64", "pfc/frames_tx>0", axes, Options{FullProbes: true, Jobs: 1})
	early, stEarly := search(t, b, "workload.servers=1..64", "pfc/frames_tx>0", axes, Options{Jobs: 1})
	key := "workload.window=none,duration=100us,workload.warmup=20us"
	for _, col := range []string{ColLargest, ColFirstTrue, ColSimulations} {
		a, _ := full.Tables[0].Value(key, col)
		e, _ := early.Tables[0].Value(key, col)
		if a != e || math.IsNaN(a) {
			t.Errorf("%s: full probes %g, stopped probes %g", col, a, e)
		}
	}
	if stEarly.Events >= stFull.Events {
		t.Errorf("stopping early simulated %d events, running to the end %d", stEarly.Events, stFull.Events)
	}
	fullTrace, earlyTrace := traceOf(t, full.Notes), traceOf(t, early.Notes)
	if strings.Contains(fullTrace, "stopped at") {
		t.Errorf("--full-probes trace has a stopped probe: %s", fullTrace)
	}
	fp, ep := probes(fullTrace), probes(earlyTrace)
	if len(fp) != len(ep) {
		t.Fatalf("probes differ:\n%s\n%s", fullTrace, earlyTrace)
	}
	stopped := 0
	for i := range fp {
		holdsFull, xf := parseProbe(t, fp[i])
		holds, xe := parseProbe(t, ep[i])
		if holds != holdsFull {
			t.Errorf("probe %d: holds %v with stops, %v without", i, holds, holdsFull)
		}
		if s := strings.Contains(ep[i], "stopped at"); s != holds {
			t.Errorf("probe %q: stopped %v, holds %v", ep[i], s, holds)
		} else if s {
			stopped++
			if xe < 1 || xe > xf {
				t.Errorf("probe %q reports %g frames, the full run %g", ep[i], xe, xf)
			}
		} else if xe != xf {
			t.Errorf("probe %q (not stopped) reports %g, the full run %g", ep[i], xe, xf)
		}
	}
	if stopped == 0 {
		t.Errorf("no probe stopped: %s", earlyTrace)
	}
}

var probeRE = regexp.MustCompile(`^\S+ (true|false) \(([0-9.e+]+)(, stopped at [0-9.e+]+ us)?\)$`)

// parseProbe reads one probe of a trace: "KEY=V true (3, stopped at 2810 us)".
func parseProbe(t *testing.T, s string) (bool, float64) {
	t.Helper()
	m := probeRE.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("probe %q: not KEY=V BOOL (X[, stopped at T us])", s)
	}
	x, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		t.Fatalf("probe %q: %v", s, err)
	}
	return m[1] == "true", x
}

// probes splits a trace into its probes.
func probes(trace string) []string {
	ps := strings.Split(trace, "), ")
	for i := range len(ps) - 1 {
		ps[i] += ")"
	}
	return ps
}

// traceOf is the probe list of a one-point search's trace note.
func traceOf(t *testing.T, notes []string) string {
	t.Helper()
	for _, n := range notes {
		if _, tr, ok := strings.Cut(n, "] pfc/frames_tx>0: "); ok {
			tr, _, _ = strings.Cut(tr, "; ")
			return tr
		}
	}
	t.Fatalf("no trace in %q", notes)
	return ""
}
