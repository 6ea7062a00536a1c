package report

import (
	"fmt"
	"io"
	"math"
)

// Compare builds a side-by-side table of the metrics both results have, in
// the order of a, with the ratio b/a.
func Compare(a, b *Result, aName, bName string) *Table {
	t := &Table{
		Name:    "compare",
		Title:   fmt.Sprintf("%s vs %s (%s)", aName, bName, a.Scenario),
		KeyName: "metric",
		Columns: []Column{{Name: aName}, {Name: bName}, {Name: "ratio"}},
	}
	for _, m := range a.Metrics {
		o, ok := b.Metric(m.Name)
		if !ok {
			continue
		}
		ratio := math.NaN() // missing: nothing to divide by
		if m.Value != 0 {
			ratio = o.Value / m.Value
		}
		key := m.Name
		if m.Unit != "" {
			key += " (" + m.Unit + ")"
		}
		t.AddRow(key, m.Value, o.Value, ratio)
	}
	return t
}

// WriteSummary prints every table of r as text, then its notes.
func (r *Result) WriteSummary(w io.Writer) error {
	fmt.Fprintf(w, "%s: scenario %s, seed %d, %s simulated\n\n", r.Tool, r.Scenario, r.Seed, r.Duration)
	for i := range r.Tables {
		if err := r.Tables[i].WriteText(w); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note:", n)
	}
	return nil
}
