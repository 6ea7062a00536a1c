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
//
// result.schema.json in this directory is the JSON Schema of the file
// WriteJSON writes; a test in cmd/besim checks a fresh run and every
// committed result against it.
package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Format names the result file format WriteJSON writes. Version 1 (files
// without a "format" field) wrote missing values as -1; version 2 writes
// them as null and adds the provenance fields.
const Format = "besim-result/2"

// Unknown is written where a provenance fact is not available (a build
// without module or VCS information, such as `go run` or `go test`).
const Unknown = "unknown"

// Result is one run.
type Result struct {
	// Format is the file format (Format); empty in version 1 files.
	Format string `json:"format,omitempty"`
	Tool   string `json:"tool"` // "besim", "berun" or "bench" (bench/internal/allocreport)
	// ToolVersion and Revision say which build wrote the result (the
	// module version and VCS commit of runtime/debug.ReadBuildInfo, the
	// commit with "+dirty" when the tree had local changes); Unknown when
	// the build carries none.
	ToolVersion string `json:"tool_version,omitempty"`
	Revision    string `json:"revision,omitempty"`
	Scenario    string `json:"scenario"`
	// ScenarioSHA256 is the hex SHA-256 of the scenario file's bytes as
	// loaded (after --set overrides: the text that was run).
	ScenarioSHA256 string `json:"scenario_sha256,omitempty"`
	Seed           uint64 `json:"seed"`
	// Duration is the measured interval (virtual time for besim).
	Duration string   `json:"duration"`
	Metrics  []Metric `json:"metrics"`
	Tables   []Table  `json:"tables"`
	Series   []Series `json:"series,omitempty"`
	// Notes explain the run to a person: why PFC did or did not fire, which
	// hardware counters were absent, and so on.
	Notes []string `json:"notes,omitempty"`
	// ResolvedScenario is the scenario with every default filled in, as a
	// JSON object with the YAML file's keys and order (scenario units stay
	// strings: "25Gbps"). For a sweep it is the base scenario.
	ResolvedScenario json.RawMessage `json:"resolved_scenario,omitempty"`
	Timing           *Timing         `json:"timing,omitempty"`
}

// Timing is about the machine that produced the result, not the scenario.
type Timing struct {
	WallSeconds     float64 `json:"wall_seconds"`
	Events          uint64  `json:"events,omitempty"`
	EventsPerSecond float64 `json:"events_per_second,omitempty"`
}

// Metric is a named scalar. Names are slash paths, e.g.
// "flow/victim/goodput" or "pfc/pause_frames". A missing value (a ratio
// with nothing to divide, a time that never came) is NaN in Go, null in
// JSON, an empty cell in CSV and "-" in text; infinities are treated the
// same. No finite value is reserved to mean "missing".
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
// says why in Error; its values are then NaN (missing: null in JSON, empty in CSV, "-" in text).
type Row struct {
	Key    string    `json:"key"`
	Values []float64 `json:"values"`
	Error  string    `json:"error,omitempty"`
}

// Table is a keyed table, e.g. one row per flow or per switch port.
type Table struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	KeyName string `json:"key_name"`
	// Params, when set, are the swept keys of a sweep or search table, in
	// order: each row's Key is then "k1=v1,k2=v2" with these keys, and
	// WriteCSV writes one column per key instead of the key column.
	Params  []string `json:"params,omitempty"`
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

// WriteJSON writes r indented, as Format: missing values (NaN, Inf) are
// null and numbers have no binary noise (Number). Size columns of tables
// are written in bytes (MachineUnit), the unit of the size metrics. A
// result without ToolVersion and Revision gets the running binary's
// (Build), so every tool that writes results stamps them.
func (r *Result) WriteJSON(w io.Writer) error {
	return r.Prepare().WriteJSON(w)
}

// MarshalJSON writes a missing value as null.
func (m Metric) MarshalJSON() ([]byte, error) {
	type plain struct {
		Name  string          `json:"name"`
		Value json.RawMessage `json:"value"`
		Unit  string          `json:"unit,omitempty"`
	}
	return json.Marshal(plain{m.Name, jsonNumber(m.Value), m.Unit})
}

// MaxFile is the largest result file besim reads (merge, plot, compare)
// and berun writes, in bytes.
const MaxFile = 256 << 20

// UnmarshalJSON reads null as NaN.
func (m *Metric) UnmarshalJSON(b []byte) error {
	var p struct {
		Name  string   `json:"name"`
		Value *float64 `json:"value"`
		Unit  string   `json:"unit,omitempty"`
	}
	if err := strictUnmarshal(b, &p); err != nil {
		return err
	}
	*m = Metric{Name: p.Name, Value: orNaN(p.Value), Unit: p.Unit}
	return nil
}

// MarshalJSON writes missing values as null.
func (r Row) MarshalJSON() ([]byte, error) {
	type plain struct {
		Key    string            `json:"key"`
		Values []json.RawMessage `json:"values"`
		Error  string            `json:"error,omitempty"`
	}
	return json.Marshal(plain{r.Key, jsonNumbers(r.Values), r.Error})
}

// UnmarshalJSON reads null as NaN.
func (r *Row) UnmarshalJSON(b []byte) error {
	var p struct {
		Key    string     `json:"key"`
		Values []*float64 `json:"values"`
		Error  string     `json:"error,omitempty"`
	}
	if err := strictUnmarshal(b, &p); err != nil {
		return err
	}
	*r = Row{Key: p.Key, Values: orNaNs(p.Values), Error: p.Error}
	return nil
}

// MarshalJSON writes missing values as null. Series hold most of a
// result's numbers, so the object is written directly, without a
// json.RawMessage per number: the bytes json.Marshal gives for {name, unit
// (omitted when empty), t, v} with each number as jsonNumber.
func (s Series) MarshalJSON() ([]byte, error) {
	name, err := json.Marshal(s.Name)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 32+len(name)+len(s.Unit)+12*(len(s.T)+len(s.V)))
	b = append(b, `{"name":`...)
	b = append(b, name...)
	if s.Unit != "" {
		unit, err := json.Marshal(s.Unit)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"unit":`...)
		b = append(b, unit...)
	}
	b = append(b, `,"t":`...)
	b = appendJSONNumbers(b, s.T)
	b = append(b, `,"v":`...)
	b = appendJSONNumbers(b, s.V)
	return append(b, '}'), nil
}

// appendJSONNumbers appends xs as a JSON array of jsonNumber (null for a
// nil slice, as json.Marshal writes one).
func appendJSONNumbers(b []byte, xs []float64) []byte {
	if xs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, x := range xs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONNumber(b, x)
	}
	return append(b, ']')
}

// UnmarshalJSON reads null as NaN.
func (s *Series) UnmarshalJSON(b []byte) error {
	var p struct {
		Name string     `json:"name"`
		Unit string     `json:"unit,omitempty"`
		T    []*float64 `json:"t"`
		V    []*float64 `json:"v"`
	}
	if err := strictUnmarshal(b, &p); err != nil {
		return err
	}
	*s = Series{Name: p.Name, Unit: p.Unit, T: orNaNs(p.T), V: orNaNs(p.V)}
	return nil
}

func strictUnmarshal(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

func jsonNumber(x float64) json.RawMessage { return appendJSONNumber(nil, x) }

// appendJSONNumber appends x as JSON: null when missing, else Number(x).
func appendJSONNumber(b []byte, x float64) []byte {
	if Missing(x) {
		return append(b, "null"...)
	}
	return appendNumber(b, x)
}

func jsonNumbers(xs []float64) []json.RawMessage {
	if xs == nil {
		return nil
	}
	out := make([]json.RawMessage, len(xs))
	for i, x := range xs {
		out[i] = jsonNumber(x)
	}
	return out
}

func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

func orNaNs(ps []*float64) []float64 {
	if ps == nil {
		return nil
	}
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = orNaN(p)
	}
	return out
}

// Missing reports whether x stands for a missing value: NaN or an
// infinity.
func Missing(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) }

// Number formats x for machines (JSON and CSV): the shortest decimal that
// reads back as x after rounding to 15 significant digits, so that binary
// noise (459.34671199999997) is dropped (459.346712), and without an
// exponent between 1e-6 and 1e21 (1000000, not 1e+06). x must not be
// Missing.
func Number(x float64) string { return string(appendNumber(nil, x)) }

// appendNumber appends Number(x) to b.
func appendNumber(b []byte, x float64) []byte {
	if x == 0 {
		return append(b, '0')
	}
	if Missing(x) {
		return strconv.AppendFloat(b, x, 'g', -1, 64) // NaN, +Inf, -Inf, as before
	}
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		// An integer of at most 15 digits survives the rounding exactly and
		// prints without a fraction or an exponent (queue depths, counts).
		return strconv.AppendInt(b, int64(x), 10)
	}
	// x rounded to 15 significant digits, d.dddddddddddddde±XX. The double
	// r nearest that decimal D is what the definition prints, in its
	// shortest form, and that form is D without its trailing zeros: D lies
	// on the 15-digit grid, whose points are at least 1e-15 of r apart,
	// while the decimals that read back as r lie within about 1.1e-16 of r,
	// so D is the only grid point among them and none shorter exists.
	var g [32]byte
	e := strconv.AppendFloat(g[:0], x, 'e', 14, 64)
	neg := e[0] == '-'
	if neg {
		e = e[1:]
	}
	exp := 0
	for _, c := range e[18:] {
		exp = exp*10 + int(c-'0')
	}
	if e[17] == '-' {
		exp = -exp
	}
	if exp >= 21 || exp < -6 {
		// |r| >= 1e21 or < 1e-6 (D decides it: rounding to the nearest
		// double keeps the order with those bounds' own doubles): the
		// shortest form with an exponent, as strconv writes it.
		r, err := strconv.ParseFloat(string(e), 64)
		if err != nil {
			r = math.Abs(x) // beyond the largest double: x itself, as before
		}
		if neg {
			r = -r
		}
		return strconv.AppendFloat(b, r, 'g', -1, 64)
	}
	var d [15]byte
	d[0] = e[0]
	copy(d[1:], e[2:16])
	nd := 15
	for nd > 1 && d[nd-1] == '0' {
		nd--
	}
	if neg {
		b = append(b, '-')
	}
	if exp < 0 {
		b = append(b, "0."...)
		for range -exp - 1 {
			b = append(b, '0')
		}
		return append(b, d[:nd]...)
	}
	if nd <= exp+1 {
		b = append(b, d[:nd]...)
		for range exp + 1 - nd {
			b = append(b, '0')
		}
		return b
	}
	b = append(b, d[:exp+1]...)
	b = append(b, '.')
	return append(b, d[exp+1:nd]...)
}

// ReadJSON parses a result written by WriteJSON, of this format or
// version 1. In a version 1 file -1 stood for a missing value; it is read
// as NaN.
func ReadJSON(rd io.Reader) (*Result, error) {
	var r Result
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	switch r.Format {
	case "":
		v1Missing(&r)
	case Format:
	default:
		return nil, fmt.Errorf("report: format %q is not one this build reads (%s, or version 1 without a format field)", r.Format, Format)
	}
	return &r, nil
}

func v1Missing(r *Result) {
	fix := func(x *float64) {
		if *x == -1 {
			*x = math.NaN()
		}
	}
	for i := range r.Metrics {
		fix(&r.Metrics[i].Value)
	}
	for _, t := range r.Tables {
		for _, row := range t.Rows {
			for j := range row.Values {
				fix(&row.Values[j])
			}
		}
	}
}

// Num formats a value for people: integers without decimals, others with
// up to four significant decimals.
func Num(x float64) string {
	switch {
	case Missing(x):
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

// NothingCompleted returns the headline completion counts of r (metrics
// named */count, */completed or */delivered) when there is at least one
// and every one is zero: the measured interval saw no completed work, so
// the other numbers describe nothing. It returns nil otherwise.
func (r *Result) NothingCompleted() []string {
	var names []string
	for _, m := range r.Metrics {
		base := m.Name[strings.LastIndex(m.Name, "/")+1:]
		if base != "count" && base != "completed" && base != "delivered" {
			continue
		}
		if m.Value != 0 {
			return nil
		}
		names = append(names, m.Name)
	}
	return names
}
