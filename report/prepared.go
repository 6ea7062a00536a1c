package report

import (
	"encoding/json"
	"io"
	"math"
	"slices"
)

// Prepared is a result ready to be written in more than one form: the
// numbers of its series, most of a result's numbers, are formatted once
// (Number) and shared by the JSON and the series CSV, and series sampled on
// one grid share the text of their instants. Its writers give the bytes
// WriteJSON and WriteSeriesCSV always gave.
type Prepared struct {
	r    *Result
	text *seriesText
}

// Prepare returns r ready to be written. r must not change while the
// result is used.
func (r *Result) Prepare() *Prepared { return &Prepared{r: r} }

// series formats the series' numbers on first use.
func (p *Prepared) series() *seriesText {
	if p.text == nil {
		p.text = formatSeries(p.r.Series)
	}
	return p.text
}

// WriteJSON writes r as WriteJSON does, handing w a part at a time.
func (p *Prepared) WriteJSON(w io.Writer) error { return writeSpilled(w, p.appendJSON) }

// sink takes the bytes a writer has appended whenever at least at are
// buffered (WriteJSON, WriteSeriesCSV), so that a large result is never
// whole in memory; a nil sink leaves everything in the buffer
// (AppendJSON, AppendSeriesCSV).
type sink struct {
	w   io.Writer
	at  int
	err error // the first write's error; later spills write nothing
}

// spillAt is how many bytes WriteJSON and WriteSeriesCSV buffer.
const spillAt = 64 << 10

// spill hands b to the sink if it holds at least s.at bytes and returns
// the emptied buffer; without a sink it makes room in b (roomy).
func (s *sink) spill(b []byte) []byte {
	if s == nil {
		return roomy(b)
	}
	if len(b) < s.at {
		return b
	}
	if s.err == nil {
		_, s.err = s.w.Write(b)
	}
	return b[:0]
}

// writeSpilled writes to w what app appends, spilling through a sink, and
// the rest at the end.
func writeSpilled(w io.Writer, app func([]byte, *sink) ([]byte, error)) error {
	s := &sink{w: w, at: spillAt}
	b, err := app(make([]byte, 0, 2*spillAt), s)
	if err != nil {
		return err
	}
	if s.err == nil {
		_, s.err = w.Write(b)
	}
	return s.err
}

// AppendJSON appends the bytes WriteJSON writes to b: the top-level
// object indented by two spaces, as encoding/json's Encoder with
// SetIndent("", "  ") writes it. The series, the metrics and the tables'
// rows, most of a result's bytes, are written directly, without
// encoding/json's compaction and indentation passes over them; every
// other field (a table's name, title, key name, params and columns among
// them) goes through json.MarshalIndent (a value nested n levels deep is
// indented as a whole document with a prefix of n times two spaces). The
// fields, their order and omitempty follow the tags of Result, Table and Row
// (TestPreparedJSONAsEncoder holds them together).
func (p *Prepared) AppendJSON(b []byte) ([]byte, error) { return p.appendJSON(b, nil) }

// appendJSON is AppendJSON, spilling into s.
func (p *Prepared) appendJSON(b []byte, s *sink) ([]byte, error) {
	r := p.r
	version, revision := r.ToolVersion, r.Revision
	if version == "" && revision == "" {
		version, revision = Build()
	}
	o := object{b: append(b, '{'), indent: "\n  "}
	o.field("format", Format)
	o.field("tool", r.Tool)
	if version != "" {
		o.field("tool_version", version)
	}
	if revision != "" {
		o.field("revision", revision)
	}
	o.field("scenario", r.Scenario)
	if r.ScenarioSHA256 != "" {
		o.field("scenario_sha256", r.ScenarioSHA256)
	}
	o.field("seed", r.Seed)
	o.field("duration", r.Duration)
	if o.key("metrics") {
		o.b, o.err = appendMetrics(o.b, s, r.Metrics)
	}
	if o.key("tables") {
		o.b, o.err = appendTables(o.b, s, r.Tables)
	}
	if len(r.Series) > 0 && o.key("series") {
		o.b, o.err = p.series().appendJSON(o.b, s, r.Series)
	}
	if len(r.Notes) > 0 {
		o.field("notes", r.Notes)
	}
	if len(r.ResolvedScenario) > 0 {
		o.field("resolved_scenario", r.ResolvedScenario)
	}
	if r.Timing != nil {
		o.field("timing", r.Timing)
	}
	if o.err != nil {
		return nil, o.err
	}
	return append(o.b, "\n}\n"...), nil
}

// object writes the fields of an indented JSON object into b: indent is a
// newline and the indentation of the object's fields.
type object struct {
	b      []byte
	indent string
	n      int // fields written
	err    error
}

// key writes the next field's name, unless an error came before; it
// reports whether it did (the caller then writes the value).
func (o *object) key(name string) bool {
	if o.err != nil {
		return false
	}
	if o.n > 0 {
		o.b = append(o.b, ',')
	}
	o.n++
	o.b = append(o.b, o.indent...)
	o.b = append(o.b, '"')
	o.b = append(o.b, name...)
	o.b = append(o.b, "\": "...)
	return true
}

// field writes a field whose value encoding/json indents.
func (o *object) field(name string, v any) {
	if !o.key(name) {
		return
	}
	var j []byte
	if j, o.err = json.MarshalIndent(v, o.indent[1:], "  "); o.err == nil {
		o.b = append(o.b, j...)
	}
}

// appendString appends s as a JSON string, escaped as encoding/json
// escapes it.
func appendString(b []byte, s string) ([]byte, error) {
	j, err := json.Marshal(s)
	return append(b, j...), err
}

// appendList appends a JSON array of n elements at depth d (their lines
// at depth d+1), as encoding/json indents one: null when isNil, [] when n
// is 0, else each element as elem writes it after its comma and line
// break.
func appendList(b []byte, s *sink, n int, isNil bool, d int, elem func(b []byte, i int) ([]byte, error)) ([]byte, error) {
	if isNil {
		return append(b, "null"...), nil
	}
	if n == 0 {
		return append(b, "[]"...), nil
	}
	b = append(b, '[')
	var err error
	for i := range n {
		b = s.spill(b)
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = elem(appendLine(b, d+1), i); err != nil {
			return nil, err
		}
	}
	return append(appendLine(b, d), ']'), nil
}

// roomy returns b, moved to a buffer twice its length if fewer than 4 KiB
// are free: append alone grows a large buffer by a quarter at a time,
// allocating about five times the final size over a long JSON document,
// where doubling allocates about twice.
func roomy(b []byte) []byte {
	if cap(b)-len(b) < 4096 {
		return slices.Grow(b, max(len(b), 4096))
	}
	return b
}

// appendLine appends a line break and the indentation of depth d (two
// spaces a level, at most 8 levels).
func appendLine(b []byte, d int) []byte {
	const line = "\n                "
	return append(b, line[:1+2*d]...)
}

// appendMetrics appends ms as the value of a top-level field, each metric
// an object at depth 2, as encoding/json indents Metric.MarshalJSON's.
func appendMetrics(b []byte, s *sink, ms []Metric) ([]byte, error) {
	return appendList(b, s, len(ms), ms == nil, 1, func(b []byte, i int) ([]byte, error) {
		m := &ms[i]
		b = append(b, "{\n      \"name\": "...)
		b, err := appendString(b, m.Name)
		if err != nil {
			return nil, err
		}
		b = append(b, ",\n      \"value\": "...)
		b = appendJSONNumber(b, m.Value)
		if m.Unit != "" {
			b = append(b, ",\n      \"unit\": "...)
			if b, err = appendString(b, m.Unit); err != nil {
				return nil, err
			}
		}
		return append(b, "\n    }"...), nil
	})
}

// appendTables appends ts as the value of a top-level field, each table an
// object at depth 2 (machine units, as Result.MarshalJSON has them), its
// rows written directly as encoding/json indents Row.MarshalJSON's
// objects: at depth 4, their values at depth 6, one a line.
func appendTables(b []byte, s *sink, ts []Table) ([]byte, error) {
	// Never null, as Result.MarshalJSON has it.
	return appendList(b, s, len(ts), false, 1, func(b []byte, i int) ([]byte, error) {
		t := ts[i].machine()
		o := object{b: append(b, '{'), indent: "\n      "}
		o.field("name", t.Name)
		o.field("title", t.Title)
		o.field("key_name", t.KeyName)
		if len(t.Params) > 0 {
			o.field("params", t.Params)
		}
		o.field("columns", t.Columns)
		if o.key("rows") {
			o.b, o.err = appendRows(o.b, s, t.Rows)
		}
		if o.err != nil {
			return nil, o.err
		}
		return append(o.b, "\n    }"...), nil
	})
}

// appendRows appends rows as the value of a table's field (depth 3).
func appendRows(b []byte, s *sink, rows []Row) ([]byte, error) {
	return appendList(b, s, len(rows), rows == nil, 3, func(b []byte, i int) ([]byte, error) {
		row := &rows[i]
		b = append(b, "{\n          \"key\": "...)
		b, err := appendString(b, row.Key)
		if err != nil {
			return nil, err
		}
		b = append(b, ",\n          \"values\": "...)
		b, _ = appendList(b, s, len(row.Values), row.Values == nil, 5, func(b []byte, j int) ([]byte, error) {
			return appendJSONNumber(b, row.Values[j]), nil
		})
		if row.Error != "" {
			b = append(b, ",\n          \"error\": "...)
			if b, err = appendString(b, row.Error); err != nil {
				return nil, err
			}
		}
		return append(b, "\n        }"...), nil
	})
}

// WriteSeriesCSV writes r's series as WriteSeriesCSV does, handing w a
// part at a time.
func (p *Prepared) WriteSeriesCSV(w io.Writer) error { return writeSpilled(w, p.appendSeriesCSV) }

// AppendSeriesCSV appends the bytes WriteSeriesCSV writes to b.
func (p *Prepared) AppendSeriesCSV(b []byte) ([]byte, error) { return p.appendSeriesCSV(b, nil) }

// appendSeriesCSV is AppendSeriesCSV, spilling into out.
func (p *Prepared) appendSeriesCSV(b []byte, out *sink) ([]byte, error) {
	st := p.series()
	heads, size, err := p.seriesCSVHeads()
	if err != nil {
		return nil, err
	}
	if out == nil {
		// Grown once to its exact size: appending row by row grows a
		// megabyte buffer by a quarter at a time, allocating about five
		// times its size.
		b = slices.Grow(b, size)
	}
	b = append(b, seriesCSVHeader...)
	for k, s := range p.r.Series {
		head := heads[k]
		for i := range s.T {
			if out != nil {
				b = out.spill(b)
			}
			b = append(b, head...)
			b = append(b, ',')
			b = append(b, st.num(st.t[k]+i)...)
			b = append(b, ',')
			if i < len(s.V) {
				b = append(b, st.num(st.v[k]+i)...)
			}
			b = append(b, '\n')
		}
	}
	return b, nil
}

// seriesCSVHeader is the first line of a series CSV.
const seriesCSVHeader = "series,unit,t_s,value\n"

// seriesCSVHeads returns the name and unit of each series quoted as
// encoding/csv quotes them, once per series (the numbers after them never
// need quoting), and the length of the CSV AppendSeriesCSV writes.
func (p *Prepared) seriesCSVHeads() (heads [][]byte, size int, err error) {
	st := p.series()
	heads = make([][]byte, len(p.r.Series))
	size = len(seriesCSVHeader)
	for k, s := range p.r.Series {
		if heads[k], err = csvFields(s.Name, s.Unit); err != nil {
			return nil, 0, err
		}
		// Each row: the head, two commas, the two numbers, a line break.
		size += len(s.T)*(len(heads[k])+3) + st.span(st.t[k], len(s.T)) + st.span(st.v[k], min(len(s.V), len(s.T)))
	}
	return heads, size, nil
}

// seriesText is the text of every number of a list of series, each
// formatted once: Number, or empty when the value is missing.
type seriesText struct {
	buf []byte
	off []int // number i is buf[off[i]:off[i+1]]
	// t and v are, per series, the index of its first instant's and its
	// first value's number.
	t, v []int
}

func formatSeries(ss []Series) *seriesText {
	n := 0
	for _, s := range ss {
		n += len(s.T) + len(s.V)
	}
	st := &seriesText{
		buf: make([]byte, 0, 8*n),
		off: make([]int, 1, n+1),
		t:   make([]int, len(ss)),
		v:   make([]int, len(ss)),
	}
	var last []float64 // the instants last formatted
	for k, s := range ss {
		if k > 0 && sameBits(s.T, last) {
			st.t[k] = st.t[k-1]
		} else {
			st.t[k] = st.add(s.T)
			last = s.T
		}
		st.v[k] = st.add(s.V)
	}
	return st
}

// add formats xs and returns the index of its first number.
func (st *seriesText) add(xs []float64) int {
	i := len(st.off) - 1
	for _, x := range xs {
		if !Missing(x) {
			st.buf = appendNumber(st.buf, x)
		}
		st.off = append(st.off, len(st.buf))
	}
	return i
}

// num is number i's text.
func (st *seriesText) num(i int) []byte { return st.buf[st.off[i]:st.off[i+1]] }

// span is the length of the text of the n numbers from number first.
func (st *seriesText) span(first, n int) int { return st.off[first+n] - st.off[first] }

// sameBits reports whether a and b hold the same float64 bit patterns.
func sameBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// appendJSON appends ss as the value of a top-level field of an indented
// result: each series an object at depth 2, its numbers at depth 4, one a
// line, null for a missing one, as Series.MarshalJSON indented by
// encoding/json.
func (st *seriesText) appendJSON(b []byte, out *sink, ss []Series) ([]byte, error) {
	return appendList(b, out, len(ss), ss == nil, 1, func(b []byte, k int) ([]byte, error) {
		s := &ss[k]
		b = append(b, "{\n      \"name\": "...)
		b, err := appendString(b, s.Name)
		if err != nil {
			return nil, err
		}
		if s.Unit != "" {
			b = append(b, ",\n      \"unit\": "...)
			if b, err = appendString(b, s.Unit); err != nil {
				return nil, err
			}
		}
		b = append(b, ",\n      \"t\": "...)
		b = st.appendArray(b, out, s.T, st.t[k])
		b = append(b, ",\n      \"v\": "...)
		b = st.appendArray(b, out, s.V, st.v[k])
		return append(b, "\n    }"...), nil
	})
}

// appendArray appends xs, whose first number is first, as an array at
// depth 3 with its elements at depth 4 ("[]" when empty, null when nil).
func (st *seriesText) appendArray(b []byte, out *sink, xs []float64, first int) []byte {
	b, _ = appendList(b, out, len(xs), xs == nil, 3, func(b []byte, i int) ([]byte, error) {
		if t := st.num(first + i); len(t) > 0 {
			return append(b, t...), nil
		}
		return append(b, "null"...), nil
	})
	return b
}
