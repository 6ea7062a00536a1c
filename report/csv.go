package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"strings"
	"unicode"
)

// MachineUnit returns the unit a value of display unit u is written in by
// the machine formats (JSON and CSV), and the factor that converts it:
// sizes shown in KB or MB are written in bytes, the unit of the size
// metrics; every other unit is kept.
func MachineUnit(u string) (string, float64) {
	switch u {
	case "B":
		return "bytes", 1
	case "KB":
		return "bytes", 1e3
	case "MB":
		return "bytes", 1e6
	case "GB":
		return "bytes", 1e9
	}
	return u, 1
}

// machine returns a copy of t in machine units (MachineUnit).
func (t Table) machine() Table {
	c := t
	c.Columns = append([]Column(nil), t.Columns...)
	scale := make([]float64, len(t.Columns))
	scaled := false
	for i, col := range t.Columns {
		c.Columns[i].Unit, scale[i] = MachineUnit(col.Unit)
		scaled = scaled || scale[i] != 1
	}
	if !scaled {
		return c
	}
	c.Rows = make([]Row, len(t.Rows))
	for j, row := range t.Rows {
		v := make([]float64, len(row.Values))
		for k, x := range row.Values {
			v[k] = x * scale[k]
		}
		c.Rows[j] = Row{Key: row.Key, Values: v, Error: row.Error}
	}
	return c
}

// unitSuffix is how a unit is spelled at the end of a machine column
// name: lower case, "%" as pct, "/" as _per_. Counts of things (frames,
// packets) carry no suffix: the name already says what is counted.
func unitSuffix(u string) string {
	switch u {
	case "", "frames", "packets", "pkts", "messages", "events", "count":
		return ""
	case "%":
		return "pct"
	}
	u = strings.ReplaceAll(u, "/", "_per_")
	return MachineName(u)
}

// MachineName turns a display name into a column name for machines:
// lower case, '%' spelled pct, and runs of characters other than letters,
// digits, '/', '.' and '_' replaced by one '_' ("tx pkts" -> "tx_pkts",
// "no TD / TD" -> "no_td/td", "at largest (pfc/frames_tx)" ->
// "at_largest_pfc/frames_tx").
func MachineName(s string) string {
	var b strings.Builder
	pendingSep := false
	for _, r := range s {
		switch {
		case r == '%':
			if b.Len() > 0 {
				pendingSep = true
			}
			if pendingSep {
				b.WriteByte('_')
				pendingSep = false
			}
			b.WriteString("pct")
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '.' || r == '_':
			if pendingSep && b.Len() > 0 {
				b.WriteByte('_')
			}
			pendingSep = false
			b.WriteRune(unicode.ToLower(r))
		case r == '/':
			pendingSep = false
			b.WriteRune(r)
		default:
			if last := b.String(); last != "" && !strings.HasSuffix(last, "/") {
				pendingSep = true
			}
		}
	}
	return b.String()
}

// CSVHeader is the CSV name of column c: its machine name with the
// machine unit appended (goodput, Gbps -> goodput_gbps; sent, KB ->
// sent_bytes), unless the name already ends with it.
func CSVHeader(c Column) string {
	name := MachineName(c.Name)
	u, _ := MachineUnit(c.Unit)
	suf := unitSuffix(u)
	if suf == "" || name == suf || strings.HasSuffix(name, "_"+suf) || strings.HasSuffix(name, "/"+suf) {
		return name
	}
	return name + "_" + suf
}

// ParamValues splits a sweep row key "k1=v1,k2=v2" with the keys params
// (in order) into its values. A value may itself contain commas
// ("flows[0].src=0,2,4"): the key names the split points.
func ParamValues(key string, params []string) ([]string, error) {
	vals := make([]string, len(params))
	rest := key
	for i, p := range params {
		if !strings.HasPrefix(rest, p+"=") {
			return nil, fmt.Errorf("report: row %q does not have the swept key %s in position %d", key, p, i+1)
		}
		rest = rest[len(p)+1:]
		if i == len(params)-1 {
			vals[i] = rest
			break
		}
		next := strings.Index(rest, ","+params[i+1]+"=")
		if next < 0 {
			return nil, fmt.Errorf("report: row %q does not have the swept key %s", key, params[i+1])
		}
		vals[i], rest = rest[:next], rest[next+1:]
	}
	return vals, nil
}

// WriteCSV writes t as a tidy CSV table: one header line of machine names
// with units in them (CSVHeader), one line per row. The first column is
// the row key (named by MachineName(KeyName)), or, for a sweep table
// (Params set), one column per swept key named by the key with the
// values as written on the command line. Values are in machine units
// (MachineUnit) formatted by Number; a missing value is an empty cell.
func (t *Table) WriteCSV(w io.Writer) error {
	m := t.machine()
	cw := csv.NewWriter(w)
	var head []string
	if len(t.Params) > 0 {
		head = append(head, t.Params...)
	} else {
		head = append(head, MachineName(t.KeyName))
	}
	for _, c := range t.Columns {
		head = append(head, CSVHeader(c))
	}
	errs := t.HasErrors()
	if errs {
		head = append(head, ErrorColumn)
	}
	if err := cw.Write(head); err != nil {
		return err
	}
	for _, r := range m.Rows {
		var line []string
		if len(t.Params) > 0 {
			vals, err := ParamValues(r.Key, t.Params)
			if err != nil {
				return fmt.Errorf("table %s: %w", t.Name, err)
			}
			line = append(line, vals...)
		} else {
			line = append(line, r.Key)
		}
		for _, v := range r.Values {
			if Missing(v) {
				line = append(line, "")
			} else {
				line = append(line, Number(v))
			}
		}
		if errs {
			line = append(line, r.Error)
		}
		if err := cw.Write(line); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteSeriesCSV writes every time series of r as one long, tidy table:
// series, unit, t_s (seconds), value; one line per sample.
func (r *Result) WriteSeriesCSV(w io.Writer) error {
	return r.Prepare().WriteSeriesCSV(w)
}

// csvFields is the fields as encoding/csv writes them, quoted where they
// need it, without the line's end.
func csvFields(fields ...string) ([]byte, error) {
	var b bytes.Buffer
	cw := csv.NewWriter(&b)
	if err := cw.Write(fields); err != nil {
		return nil, err
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
