// Package report is the result format shared by besim (simulation) and berun
// (real hosts): named scalar metrics, tables and time series, written as JSON
// for machines and as aligned text, Markdown and CSV for people. Both tools
// write the same shape so that one compare command can put a simulated run
// next to a hardware run of the same scenario.
//
// Output is deterministic: maps are never iterated into output, floats are
// formatted with fixed rules, and wall-clock facts (how long a run took) live
// in a separate Timing block that callers may omit when byte-identical files
// are wanted.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Result is one run.
type Result struct {
	Tool     string `json:"tool"` // "besim" or "berun"
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	// Duration is the measured interval (virtual time for besim).
	Duration string   `json:"duration"`
	Metrics  []Metric `json:"metrics"`
	Tables   []Table  `json:"tables"`
	Series   []Series `json:"series,omitempty"`
	// Notes explain the run to a person: why PFC did or did not fire, which
	// hardware counters were absent, and so on.
	Notes  []string `json:"notes,omitempty"`
	Timing *Timing  `json:"timing,omitempty"`
}

// Timing is about the machine that produced the result, not the scenario.
type Timing struct {
	WallSeconds     float64 `json:"wall_seconds"`
	Events          uint64  `json:"events,omitempty"`
	EventsPerSecond float64 `json:"events_per_second,omitempty"`
}

// Metric is a named scalar. Names are slash paths, e.g.
// "flow/victim/goodput" or "pfc/pause_frames".
type Metric struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

// Column describes one value column of a table.
type Column struct {
	Name string `json:"name"`
	Unit string `json:"unit,omitempty"`
}

// Row is a keyed row of values, one per column. A row whose values could
// not be measured (a sweep point whose simulation failed or never ran)
// says why in Error; its values are then NaN (written -1, shown "-").
type Row struct {
	Key    string    `json:"key"`
	Values []float64 `json:"values"`
	Error  string    `json:"error,omitempty"`
}

// Table is a keyed table, e.g. one row per flow or per switch port.
type Table struct {
	Name    string   `json:"name"`
	Title   string   `json:"title"`
	KeyName string   `json:"key_name"`
	Columns []Column `json:"columns"`
	Rows    []Row    `json:"rows"`
}

// Series is a sampled time series; T in seconds of virtual (or wall) time.
type Series struct {
	Name string    `json:"name"`
	Unit string    `json:"unit,omitempty"`
	T    []float64 `json:"t"`
	V    []float64 `json:"v"`
}

// Add appends a metric.
func (r *Result) Add(name string, v float64, unit string) {
	r.Metrics = append(r.Metrics, Metric{Name: name, Value: v, Unit: unit})
}

// Metric returns the named metric.
func (r *Result) Metric(name string) (Metric, bool) {
	for _, m := range r.Metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Table returns the named table.
func (r *Result) Table(name string) (*Table, bool) {
	for i := range r.Tables {
		if r.Tables[i].Name == name {
			return &r.Tables[i], true
		}
	}
	return nil, false
}

// Value returns the cell at (key, column name).
func (t *Table) Value(key, col string) (float64, bool) {
	ci := -1
	for i, c := range t.Columns {
		if c.Name == col {
			ci = i
		}
	}
	if ci < 0 {
		return 0, false
	}
	for _, r := range t.Rows {
		if r.Key == key {
			return r.Values[ci], true
		}
	}
	return 0, false
}

// AddRow appends a row, checking its width.
func (t *Table) AddRow(key string, vals ...float64) {
	if len(vals) != len(t.Columns) {
		panic(fmt.Sprintf("report: table %s row %q has %d values for %d columns", t.Name, key, len(vals), len(t.Columns)))
	}
	t.Rows = append(t.Rows, Row{Key: key, Values: vals})
}

// WriteJSON writes r indented. Non-finite values are written as null-free
// sentinels by Num so the JSON stays valid.
func (r *Result) WriteJSON(w io.Writer) error {
	c := *r
	c.Metrics = append([]Metric(nil), r.Metrics...)
	for i := range c.Metrics {
		c.Metrics[i].Value = finite(c.Metrics[i].Value)
	}
	c.Tables = make([]Table, len(r.Tables))
	for i, t := range r.Tables {
		c.Tables[i] = t
		c.Tables[i].Rows = make([]Row, len(t.Rows))
		for j, row := range t.Rows {
			v := make([]float64, len(row.Values))
			for k, x := range row.Values {
				v[k] = finite(x)
			}
			c.Tables[i].Rows[j] = Row{Key: row.Key, Values: v, Error: row.Error}
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(&c)
}

// finite maps NaN/Inf (undefined ratios) to -1, which no metric takes.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return -1
	}
	return x
}

// MaxFile is the largest result file besim reads (merge, plot, compare)
// and berun writes, in bytes.
const MaxFile = 256 << 20

// ReadJSON parses a result written by WriteJSON.
func ReadJSON(rd io.Reader) (*Result, error) {
	var r Result
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return &r, nil
}

// Num formats a value for people: integers without decimals, others with
// up to four significant decimals.
func Num(x float64) string {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0) || x == -1:
		return "-"
	case x == math.Trunc(x) && math.Abs(x) < 1e15:
		return strconv.FormatInt(int64(x), 10)
	case math.Abs(x) >= 100:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case math.Abs(x) >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	default:
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
}

func header(c Column) string {
	if c.Unit == "" {
		return c.Name
	}
	return c.Name + " (" + c.Unit + ")"
}

// HasErrors reports whether any row has an Error; the text, Markdown and
// CSV forms of such a table end with an "error" column.
func (t *Table) HasErrors() bool {
	for _, r := range t.Rows {
		if r.Error != "" {
			return true
		}
	}
	return false
}

// ErrorColumn is the name of the trailing column that holds row errors.
const ErrorColumn = "error"

// WriteText writes t as an aligned text table.
func (t *Table) WriteText(w io.Writer) error {
	errs := t.HasErrors()
	cells := [][]string{{t.KeyName}}
	for _, c := range t.Columns {
		cells[0] = append(cells[0], header(c))
	}
	if errs {
		cells[0] = append(cells[0], ErrorColumn)
	}
	for _, r := range t.Rows {
		line := []string{r.Key}
		for _, v := range r.Values {
			line = append(line, Num(v))
		}
		if errs {
			line = append(line, r.Error)
		}
		cells = append(cells, line)
	}
	width := make([]int, len(cells[0]))
	for _, line := range cells {
		for i, c := range line {
			width[i] = max(width[i], len(c))
		}
	}
	var b strings.Builder
	b.WriteString(t.Title + "\n")
	for li, line := range cells {
		for i, c := range line {
			if i == len(line)-1 && errs && i > 0 {
				fmt.Fprintf(&b, "  %s", c) // left-aligned, not padded
			} else if i == 0 {
				fmt.Fprintf(&b, "%-*s", width[i], c)
			} else {
				fmt.Fprintf(&b, "  %*s", width[i], c)
			}
		}
		b.WriteString("\n")
		if li == 0 {
			n := len(width) - 1
			for _, x := range width {
				n += x + 1
			}
			b.WriteString(strings.Repeat("-", n) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes t as a GitHub Markdown table.
func (t *Table) WriteMarkdown(w io.Writer) error {
	errs := t.HasErrors()
	var b strings.Builder
	b.WriteString("| " + t.KeyName)
	for _, c := range t.Columns {
		b.WriteString(" | " + header(c))
	}
	if errs {
		b.WriteString(" | " + ErrorColumn)
	}
	b.WriteString(" |\n|---")
	for range t.Columns {
		b.WriteString("|---:")
	}
	if errs {
		b.WriteString("|---")
	}
	b.WriteString("|\n")
	for _, r := range t.Rows {
		b.WriteString("| " + r.Key)
		for _, v := range r.Values {
			b.WriteString(" | " + Num(v))
		}
		if errs {
			b.WriteString(" | " + strings.ReplaceAll(strings.ReplaceAll(r.Error, "|", "\\|"), "\n", " "))
		}
		b.WriteString(" |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteCSV writes t as CSV with full-precision values.
func (t *Table) WriteCSV(w io.Writer) error {
	errs := t.HasErrors()
	var b strings.Builder
	b.WriteString(csvField(t.KeyName))
	for _, c := range t.Columns {
		b.WriteString("," + csvField(header(c)))
	}
	if errs {
		b.WriteString("," + ErrorColumn)
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString(csvField(r.Key))
		for _, v := range r.Values {
			b.WriteString("," + strconv.FormatFloat(v, 'g', -1, 64))
		}
		if errs {
			b.WriteString("," + csvField(r.Error))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func csvField(s string) string {
	if strings.ContainsAny(s, ",\"\n\r") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}
