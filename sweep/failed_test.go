package sweep

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/besim/besim/report"
)

// tinyBuffer fails to build with a 1 KiB switch buffer (no room for PFC
// headroom) and runs with 1 MiB.
const tinyBuffer = `name: tiny
duration: 50us
fabric:
  topology: {kind: star, hosts: 3}
  switch: {buffer: 1MiB}
  priorities:
    - prio: 3
      lossless: true
      pfc: {xoff: dynamic, alpha: 1/8}
flows:
  - {name: a, src: 0, dst: 2, prio: 3, rate: line}
  - {name: b, src: 1, dst: 2, prio: 3, rate: line}
`

func tinyBase(t *testing.T) *Base {
	t.Helper()
	b, err := NewBase("tiny.yaml", []byte(tinyBuffer))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFailedPointIsAnErrorRow: a point whose simulation cannot be built is
// a row with its error (in JSON, CSV, Markdown and text), the other points
// are measured, and Run returns *Incomplete naming the point.
func TestFailedPointIsAnErrorRow(t *testing.T) {
	b := tinyBase(t)
	for _, jobs := range []int{1, 4} {
		// The failed point comes first: the columns come from the next.
		r, _, err := Run(b, sweepAxes(t, "fabric.switch.buffer=1KiB,1MiB,2MiB"), Options{Jobs: jobs})
		var inc *Incomplete
		if !errors.As(err, &inc) || len(inc.Failed) != 1 || inc.Failed[0].Key != "fabric.switch.buffer=1KiB" || inc.Interrupted {
			t.Fatalf("jobs %d: err %v, want one failed point", jobs, err)
		}
		if !strings.Contains(err.Error(), "1 of 3 points failed") || !strings.Contains(err.Error(), "headroom") {
			t.Errorf("error does not say which point failed and why: %v", err)
		}
		tab := r.Tables[0]
		if len(tab.Columns) == 0 {
			t.Fatalf("no columns learned from the points that ran")
		}
		if tab.Rows[0].Error == "" || !math.IsNaN(tab.Rows[0].Values[0]) {
			t.Errorf("failed row %+v: want an error and no values", tab.Rows[0])
		}
		for _, row := range tab.Rows[1:] {
			if row.Error != "" {
				t.Errorf("row %s: unexpected error %s", row.Key, row.Error)
			}
		}
		if m, ok := r.Metric(MetricFailed); !ok || m.Value != 1 {
			t.Errorf("%s = %v, %v", MetricFailed, m, ok)
		}
		for name, write := range map[string]func(*bytes.Buffer) error{
			"json": func(w *bytes.Buffer) error { return r.WriteJSON(w) },
			"csv":  func(w *bytes.Buffer) error { return tab.WriteCSV(w) },
			"md":   func(w *bytes.Buffer) error { return tab.WriteMarkdown(w) },
			"text": func(w *bytes.Buffer) error { return tab.WriteText(w) },
		} {
			var buf bytes.Buffer
			if err := write(&buf); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(buf.String(), "cannot hold the headroom") {
				t.Errorf("%s output does not carry the error:\n%s", name, buf.String())
			}
		}
		// Round trip through JSON keeps the error.
		var buf bytes.Buffer
		r.WriteJSON(&buf)
		back, err := report.ReadJSON(&buf)
		if err != nil || back.Tables[0].Rows[0].Error == "" {
			t.Errorf("JSON round trip lost the row error: %v", err)
		}
	}
}

// TestFailedPointsSurviveMerge: shards with a failed point merge into the
// file a whole run writes, error included.
func TestFailedPointsSurviveMerge(t *testing.T) {
	b := tinyBase(t)
	axes := sweepAxes(t, "fabric.switch.buffer=1KiB,1MiB,2MiB")
	opt := Options{Metrics: []string{"pfc/frames_tx"}}
	whole, _, _ := Run(b, axes, opt)
	var parts []*report.Result
	for i := range 2 {
		o := opt
		o.Shard = Shard{I: i, N: 2}
		p, _, err := Run(b, axes, o)
		if i == 0 && err == nil {
			t.Errorf("shard 0 has the failed point but no error")
		}
		parts = append(parts, p)
	}
	merged, err := Merge(parts)
	if err == nil {
		t.Errorf("merge of shards with a failed point: no error")
	}
	if a, b := jsonBytes(t, whole), jsonBytes(t, merged); !bytes.Equal(a, b) {
		t.Errorf("merged differs from whole:\n%s\n---\n%s", a, b)
	}
}

// TestSearchFailedPoint: a search whose simulation fails names the point
// and the value it tried, and records the point as a failed row.
func TestSearchFailedPoint(t *testing.T) {
	b := tinyBase(t)
	s, err := ParseSearch("fabric.switch.buffer=1..1024KiB")
	if err != nil {
		t.Fatal(err)
	}
	s.Until, _ = ParsePredicate("pfc/frames_tx>0")
	r, _, err := RunSearch(b, s, nil, Options{})
	var inc *Incomplete
	if !errors.As(err, &inc) || len(inc.Failed) != 1 {
		t.Fatalf("err %v, want one failed point", err)
	}
	if !strings.Contains(inc.Failed[0].Err, "fabric.switch.buffer=1KiB") || !strings.Contains(inc.Failed[0].Err, "headroom") {
		t.Errorf("error %q does not name the value tried and why it failed", inc.Failed[0].Err)
	}
	if r.Tables[0].Rows[0].Error == "" {
		t.Errorf("search row has no error")
	}
}

// TestStopWritesFinishedPoints: closing Options.Stop ends a sweep early
// with the finished points and the others marked not run.
func TestStopWritesFinishedPoints(t *testing.T) {
	b := tinyBase(t)
	stop := make(chan struct{})
	opt := Options{Jobs: 1, Metrics: []string{"pfc/frames_tx"}, Stop: stop}
	opt.Progress = func(p Progress) {
		if p.Done == 1 {
			close(stop)
		}
	}
	r, _, err := Run(b, sweepAxes(t, "fabric.switch.buffer=1MiB,2MiB,3MiB"), opt)
	var inc *Incomplete
	if !errors.As(err, &inc) || !inc.Interrupted {
		t.Fatalf("err %v, want interrupted", err)
	}
	rows := r.Tables[0].Rows
	if rows[0].Error != "" || rows[1].Error != ErrNotRun || rows[2].Error != ErrNotRun {
		t.Errorf("rows %+v: want the first finished and the others not run", rows)
	}
	if m, ok := r.Metric(MetricInterrupted); !ok || m.Value != 2 {
		t.Errorf("%s = %v, %v", MetricInterrupted, m, ok)
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "PARTIAL") {
		t.Errorf("notes do not mark the result partial: %q", r.Notes)
	}

	// A search too.
	stop2 := make(chan struct{})
	close(stop2)
	s, _ := ParseSearch("fabric.switch.buffer=64..1024KiB")
	s.Until, _ = ParsePredicate("pfc/frames_tx>0")
	_, _, err = RunSearch(b, s, sweepAxes(t, "seed=1,2"), Options{Stop: stop2})
	if !errors.As(err, &inc) || !inc.Interrupted {
		t.Fatalf("search: err %v, want interrupted", err)
	}
}

// TestMergeComparesAxisValues: shards of two sweeps whose axes have the
// same names and counts but different values are refused, as are shards
// of searches with different ranges.
func TestMergeComparesAxisValues(t *testing.T) {
	b := tinyBase(t)
	opt := func(i int) Options {
		return Options{Shard: Shard{I: i, N: 2}, Metrics: []string{"pfc/frames_tx"}}
	}
	p0, _, err := Run(b, sweepAxes(t, "seed=1,2"), opt(0))
	if err != nil {
		t.Fatal(err)
	}
	p1, _, err := Run(b, sweepAxes(t, "seed=3,4"), opt(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Merge([]*report.Result{p0, p1}); err == nil || !strings.Contains(err.Error(), "different sweep definitions") {
		t.Errorf("merge of seed=1,2 and seed=3,4 shards: %v", err)
	}
	s1, _ := ParseSearch("fabric.switch.buffer=64..128KiB")
	s2, _ := ParseSearch("fabric.switch.buffer=64..256KiB")
	s1.Until, _ = ParsePredicate("pfc/frames_tx>0")
	s2.Until = s1.Until
	axes := sweepAxes(t, "seed=1,2")
	q0, _, _ := RunSearch(b, s1, axes, opt(0))
	q1, _, _ := RunSearch(b, s2, axes, opt(1))
	if _, err := Merge([]*report.Result{q0, q1}); err == nil || !strings.Contains(err.Error(), "not of the same sweep") {
		t.Errorf("merge of two searches: %v", err)
	}
}
