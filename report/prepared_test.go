package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// encoderJSON is how WriteJSON wrote a result before Prepared: the whole
// result through encoding/json's Encoder, indented by two spaces.
func encoderJSON(r *Result) ([]byte, error) {
	c := *r
	c.Format = Format
	if c.ToolVersion == "" && c.Revision == "" {
		c.ToolVersion, c.Revision = Build()
	}
	c.Tables = make([]Table, len(r.Tables))
	for i := range r.Tables {
		c.Tables[i] = r.Tables[i].machine()
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	err := enc.Encode(&c)
	return b.Bytes(), err
}

// fullResult sets every field of Result, with values that need escaping,
// scaling (KB columns) or null.
func fullResult() *Result {
	r := &Result{
		Format:         "ignored: WriteJSON writes Format",
		Tool:           "besim <&>",
		ToolVersion:    "v1.2.3",
		Revision:       "abc+dirty",
		Scenario:       `incast "x"`,
		ScenarioSHA256: "00ff",
		Seed:           42,
		Duration:       "60ms",
		Metrics: []Metric{
			{Name: "flows/sent", Value: 128e6, Unit: "bytes"},
			{Name: "missing", Value: math.NaN()},
			{Name: "ratio", Value: 0.1 + 0.2, Unit: "%"},
			{Name: "q/<a&b>\"\u2028", Value: -1e-9, Unit: "<us>"},
		},
		Tables: []Table{{
			Name: "qps", Title: "QPs <b>", KeyName: "qp", Params: []string{"a", "b"},
			Columns: []Column{{Name: "sent", Unit: "KB"}, {Name: "rate", Unit: "Gbps"}, {Name: "n"}},
			Rows: []Row{
				{Key: "a=1,b=2", Values: []float64{1.5, 25, 3}},
				{Key: "a=2,b=2", Values: []float64{math.NaN(), math.Inf(-1), 0}, Error: "failed: <x>"},
			},
		}, {Name: "empty", Columns: []Column{}, Rows: []Row{}, Params: []string{}},
			{Name: "nil rows"},
			{Name: "nil values", Rows: []Row{{Key: "nil"}, {Key: "none", Values: []float64{}}, {Key: "<&>", Values: []float64{1e21, 1e-7, -0.0}}}}},
		Series:           randomSeries(rand.New(rand.NewPCG(3, 4))),
		Notes:            []string{"PFC fired", "a & b", ""},
		ResolvedScenario: json.RawMessage(`{"name": "x", "fabric": {"rate": "25Gbps", "list": [1, 2, {"a": []}], "empty": {}}, "on": true, "off": null}`),
		Timing:           &Timing{WallSeconds: 0.32, Events: 1696541, EventsPerSecond: 5.28e6},
	}
	return r
}

// TestPreparedJSONAsEncoder checks that WriteJSON writes the bytes the
// whole result through encoding/json's Encoder gave, for a result with
// every field set (so a field added to Result and not to AppendJSON
// fails here), with each optional field empty in turn, and with no
// provenance (the build's is stamped).
func TestPreparedJSONAsEncoder(t *testing.T) {
	full := fullResult()
	v := reflect.ValueOf(full).Elem()
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("fullResult leaves Result.%s unset", v.Type().Field(i).Name)
		}
	}
	for _, x := range []any{full.Tables[0], full.Tables[0].Rows[1]} {
		v := reflect.ValueOf(x)
		for i := range v.NumField() {
			if v.Field(i).IsZero() {
				t.Fatalf("fullResult leaves %s.%s unset", v.Type().Name(), v.Type().Field(i).Name)
			}
		}
	}
	cases := map[string]*Result{"full": full, "minimal": {Tool: "besim"}}
	for _, name := range []string{"ToolVersion", "Revision", "ScenarioSHA256", "Metrics", "Tables", "Series", "Notes", "ResolvedScenario", "Timing"} {
		r := fullResult()
		f := reflect.ValueOf(r).Elem().FieldByName(name)
		f.Set(reflect.Zero(f.Type()))
		cases["no "+name] = r
	}
	empty := fullResult()
	empty.Metrics, empty.Tables, empty.Series, empty.Notes = []Metric{}, []Table{}, []Series{}, []string{}
	cases["empty slices"] = empty
	noProvenance := fullResult()
	noProvenance.ToolVersion, noProvenance.Revision = "", ""
	cases["no provenance"] = noProvenance
	for name, r := range cases {
		want, err := encoderJSON(r)
		if err != nil {
			t.Fatalf("%s: encoding/json: %v", name, err)
		}
		var got bytes.Buffer
		if err := r.WriteJSON(&got); err != nil {
			t.Fatalf("%s: WriteJSON: %v", name, err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			i := 0
			for i < min(got.Len(), len(want)) && got.Bytes()[i] == want[i] {
				i++
			}
			t.Fatalf("%s: WriteJSON differs from encoding/json at byte %d:\n%s\nwant\n%s", name, i,
				got.Bytes()[max(0, i-80):min(got.Len(), i+80)], want[max(0, i-80):min(len(want), i+80)])
		}
		if _, err := ReadJSON(bytes.NewReader(got.Bytes())); err != nil {
			t.Fatalf("%s: ReadJSON of WriteJSON's output: %v", name, err)
		}
	}
}

// TestPreparedSharesNumbers checks that one Prepared writes the JSON and
// the CSV that separate WriteJSON and WriteSeriesCSV calls write, in
// either order, and that series on one grid share their instants' text.
func TestPreparedSharesNumbers(t *testing.T) {
	r := fullResult()
	var wantJSON, wantCSV bytes.Buffer
	if err := r.WriteJSON(&wantJSON); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteSeriesCSV(&wantCSV); err != nil {
		t.Fatal(err)
	}
	p := r.Prepare()
	csv1, err := p.AppendSeriesCSV(nil)
	if err != nil {
		t.Fatal(err)
	}
	js, err := p.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(js, wantJSON.Bytes()) || !bytes.Equal(csv1, wantCSV.Bytes()) {
		t.Fatal("a Prepared's JSON or CSV differs from WriteJSON's or WriteSeriesCSV's")
	}
	st := p.series()
	shared := 0
	for k := 1; k < len(r.Series); k++ {
		if len(r.Series[k].T) > 0 && len(r.Series[k-1].T) > 0 && st.t[k] == st.t[k-1] {
			shared++
			if !sameBits(r.Series[k].T, r.Series[k-1].T) {
				t.Fatalf("series %d shares the instants of %d but its own differ", k, k-1)
			}
		}
	}
	if shared < 30 {
		t.Fatalf("%d series share their instants' text, want the runs of the common grid (at least 30)", shared)
	}
}

// TestSeriesCSVSize checks that AppendSeriesCSV's size, by which it grows
// its buffer once, is the exact length of what it writes: for series with
// names that need quoting, missing numbers, fewer values than instants,
// and more values than instants (those are not written).
func TestSeriesCSVSize(t *testing.T) {
	r := fullResult()
	r.Series = append(r.Series, Series{Name: "long v", T: []float64{1, 2}, V: []float64{3, 4, 5, 6}})
	for _, ss := range [][]Series{nil, {}, r.Series} {
		p := (&Result{Series: ss}).Prepare()
		_, size, err := p.seriesCSVHeads()
		if err != nil {
			t.Fatal(err)
		}
		b, err := p.AppendSeriesCSV(nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != size {
			t.Errorf("%d series: wrote %d bytes, sized %d", len(ss), len(b), size)
		}
	}
}

// TestPreparedSpills checks that the streaming writers give the bytes the
// appending ones do, spilling after every list element (at: 1) and every
// 200 bytes, for a full result and one with large series; and that a
// writer's error is returned.
func TestPreparedSpills(t *testing.T) {
	big := fullResult()
	for k := range 3 {
		s := Series{Name: "big", Unit: "bytes"}
		for i := range 50_000 {
			s.T = append(s.T, float64(i)*1e-5)
			s.V = append(s.V, float64((i*7+k)%1500))
		}
		big.Series = append(big.Series, s)
	}
	for _, r := range []*Result{fullResult(), big} {
		p := r.Prepare()
		wantJSON, err := p.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		wantCSV, err := p.AppendSeriesCSV(nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []int{1, 200, spillAt} {
			var js, cs bytes.Buffer
			s := &sink{w: &js, at: at}
			b, err := p.appendJSON(nil, s)
			js.Write(b)
			if err != nil || s.err != nil || !bytes.Equal(js.Bytes(), wantJSON) {
				t.Fatalf("spilling every %d bytes: JSON differs (%v, %v)", at, err, s.err)
			}
			s = &sink{w: &cs, at: at}
			b, err = p.appendSeriesCSV(nil, s)
			cs.Write(b)
			if err != nil || s.err != nil || !bytes.Equal(cs.Bytes(), wantCSV) {
				t.Fatalf("spilling every %d bytes: CSV differs (%v, %v)", at, err, s.err)
			}
		}
		var js bytes.Buffer
		if err := p.WriteJSON(&js); err != nil || !bytes.Equal(js.Bytes(), wantJSON) {
			t.Fatalf("WriteJSON differs from AppendJSON (%v)", err)
		}
	}
	for _, n := range []int{0, 100_000} {
		if err := big.Prepare().WriteJSON(&failAfter{n: n}); err == nil {
			t.Fatalf("JSON: the error of a writer failing after %d bytes was not returned", n)
		}
		if err := big.Prepare().WriteSeriesCSV(&failAfter{n: n}); err == nil {
			t.Fatalf("CSV: the error of a writer failing after %d bytes was not returned", n)
		}
	}
}

// failAfter fails every write once it has taken n bytes.
type failAfter struct{ n int }

func (f *failAfter) Write(b []byte) (int, error) {
	if len(b) > f.n {
		return 0, errors.New("disk full")
	}
	f.n -= len(b)
	return len(b), nil
}
