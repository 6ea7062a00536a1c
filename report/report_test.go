package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func sample() *Result {
	r := &Result{Tool: "besim", Scenario: "incast", Seed: 1, Duration: "2ms"}
	r.Add("flow/victim/goodput", 9.5, "Gbps")
	r.Add("pfc/pause_frames", 120, "")
	t := Table{Name: "flows", Title: "Flows", KeyName: "flow",
		Columns: []Column{{"goodput", "Gbps"}, {"drops", ""}}}
	t.AddRow("victim", 9.5, 0)
	t.AddRow("in,cast", 1.25, math.NaN())
	r.Tables = append(r.Tables, t)
	return r
}

func TestJSONRoundTrip(t *testing.T) {
	r := sample()
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	got, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	want := sample()
	want.Format = Format
	want.ToolVersion, want.Revision = Build()
	if d := cmp.Diff(want, got, cmpopts.EquateNaNs()); d != "" {
		t.Fatalf("round trip (-want +got):\n%s", d)
	}
}

func TestRenderings(t *testing.T) {
	tb := sample().Tables[0]
	var txt, md, csv bytes.Buffer
	tb.WriteText(&txt)
	tb.WriteMarkdown(&md)
	tb.WriteCSV(&csv)
	wantTxt := "Flows\nflow     goodput (Gbps)  drops\n-------------------------------\nvictim             9.50      0\nin,cast            1.25      -\n"
	if txt.String() != wantTxt {
		t.Errorf("text:\n%q\nwant\n%q", txt.String(), wantTxt)
	}
	if !strings.Contains(md.String(), "| flow | goodput (Gbps) | drops |\n|---|---:|---:|\n| victim | 9.50 | 0 |") {
		t.Errorf("markdown:\n%s", md.String())
	}
	if csv.String() != "flow,goodput_gbps,drops\nvictim,9.5,0\n\"in,cast\",1.25,\n" {
		t.Errorf("csv:\n%s", csv.String())
	}
}

func TestCompare(t *testing.T) {
	a, b := sample(), sample()
	b.Metrics[0].Value = 19
	b.Metrics = b.Metrics[:1]
	c := Compare(a, b, "besim", "berun")
	if len(c.Rows) != 1 || c.Rows[0].Values[2] != 2 {
		t.Fatalf("%+v", c.Rows)
	}
}

func TestNum(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{{3, "3"}, {123.456, "123.5"}, {1.234, "1.23"}, {0.01234, "0.0123"}, {math.Inf(1), "-"}, {math.NaN(), "-"}, {-1, "-1"}} {
		if got := Num(tc.x); got != tc.want {
			t.Errorf("Num(%v)=%q want %q", tc.x, got, tc.want)
		}
	}
}

// TestMissingIsNull: a missing value is null in JSON, an empty cell in
// CSV and "-" in text, and -1 is an ordinary value everywhere.
func TestMissingIsNull(t *testing.T) {
	r := &Result{Tool: "besim", Scenario: "x"}
	r.Add("gone", math.NaN(), "ms")
	r.Add("minus", -1, "")
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	js := b.String()
	for _, w := range []string{`"format": "besim-result/2"`, `"value": null`, `"value": -1`} {
		if !strings.Contains(js, w) {
			t.Errorf("JSON lacks %s:\n%s", w, js)
		}
	}
	back, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(back.Metrics[0].Value) || back.Metrics[1].Value != -1 {
		t.Errorf("read back %v", back.Metrics)
	}
}

// TestReadVersion1: in a file without a format field -1 meant missing.
func TestReadVersion1(t *testing.T) {
	v1 := `{"tool":"besim","scenario":"x","seed":0,"duration":"1ms","metrics":[{"name":"a","value":-1},{"name":"b","value":2}],"tables":[{"name":"t","title":"T","key_name":"k","columns":[{"name":"c"}],"rows":[{"key":"r","values":[-1]}]}]}`
	r, err := ReadJSON(strings.NewReader(v1))
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(r.Metrics[0].Value) || r.Metrics[1].Value != 2 || !math.IsNaN(r.Tables[0].Rows[0].Values[0]) {
		t.Errorf("%+v", r)
	}
	if _, err := ReadJSON(strings.NewReader(`{"format":"besim-result/9","tool":"besim"}`)); err == nil || !strings.Contains(err.Error(), "besim-result/9") {
		t.Errorf("unknown format: %v", err)
	}
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{{459.34671199999997, "459.346712"}, {1e6, "1000000"}, {0.1 + 0.2, "0.3"}, {3, "3"}, {-1, "-1"},
		{1.5e-7, "1.5e-07"}, {2.5e22, "2.5e+22"}, {123456789012, "123456789012"}} {
		if got := Number(tc.x); got != tc.want {
			t.Errorf("Number(%v)=%q want %q", tc.x, got, tc.want)
		}
	}
}

// numberSlow is Number without its integer shortcut.
func numberSlow(x float64) string {
	if x == 0 {
		return "0"
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 15, 64), 64)
	if err != nil {
		r = x
	}
	if a := math.Abs(r); a >= 1e21 || a < 1e-6 {
		return strconv.FormatFloat(r, 'g', -1, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// TestNumberIntegersAsBefore checks Number's integer shortcut against the
// conversions it skips, at every magnitude up to and past its 15 digits.
func TestNumberIntegersAsBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 200000; i++ {
		x := math.Trunc(rng.Float64() * math.Pow(10, float64(rng.IntN(18))))
		if i%2 == 1 {
			x = -x
		}
		if i%5 == 0 {
			x += 0.5 // not an integer: the slow path, for contrast
		}
		if got, want := Number(x), numberSlow(x); got != want {
			t.Fatalf("Number(%v) = %q, want %q", x, got, want)
		}
	}
	for _, x := range []float64{1e15 - 1, 1e15, 1e15 + 1, 1 << 53, 999999999999999} {
		if got, want := Number(x), numberSlow(x); got != want {
			t.Fatalf("Number(%v) = %q, want %q", x, got, want)
		}
	}
}

// TestNumberAsBefore checks Number against the three conversions it makes
// only for decimals longer than 15 digits, over random doubles of every
// magnitude, short decimals, sums with binary noise, and integers.
func TestNumberAsBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	check := func(x float64) {
		if Missing(x) {
			return
		}
		if got, want := Number(x), numberSlow(x); got != want {
			t.Fatalf("Number(%v) = %q, want %q", x, got, want)
		}
	}
	for i := 0; i < 300000; i++ {
		check(math.Float64frombits(rng.Uint64()))                                // any double
		check(float64(rng.Int64N(1e6)) * math.Pow(10, float64(rng.IntN(40)-20))) // a short decimal
		check(float64(rng.IntN(100000)) * 1e-5)                                  // sample instants
		check(0.1*float64(rng.IntN(1000)) + 0.2*float64(rng.IntN(1000)))         // binary noise
		check(math.Nextafter(float64(rng.Int64N(1e15)), math.Inf(1)))
	}
	for _, x := range []float64{math.NaN(), math.Inf(1)} { // not to be passed, but no panic
		if got, want := Number(x), numberSlow(x); got != want {
			t.Fatalf("Number(%v) = %q, want %q", x, got, want)
		}
	}
	for _, x := range []float64{1e15 - 0.5, 999999999999999.9, 0.1 + 0.2, 5e-324, math.MaxFloat64, 1e21, 1e-6, 9.999999999999999e20, 9.99999999999999e-7} {
		check(x)
		check(-x)
	}
}

func TestCSVHeadersAndParams(t *testing.T) {
	tb := Table{Name: "sweep", KeyName: "point", Params: []string{"fabric.switch.buffer", "flows[0].src"},
		Columns: []Column{{"sent", "KB"}, {"tx pkts", ""}, {"of line", "%"}, {"flow/victim/goodput", "Gbps"}}}
	tb.AddRow("fabric.switch.buffer=2MiB,flows[0].src=0,2,4", 1.5, 10, 99.5, math.NaN())
	var b bytes.Buffer
	if err := tb.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	want := "fabric.switch.buffer,flows[0].src,sent_bytes,tx_pkts,of_line_pct,flow/victim/goodput_gbps\n2MiB,\"0,2,4\",1500,10,99.5,\n"
	if b.String() != want {
		t.Errorf("csv:\n%s\nwant\n%s", b.String(), want)
	}
}

// randomSeries returns series whose names and units need escaping or
// quoting, with missing values, nil and empty slices, value slices shorter
// than their instants, and runs of series on one grid (the same instants,
// in separate slices), some of whose instants are missing.
func randomSeries(rng *rand.Rand) []Series {
	names := []string{"queue/sw0->h1/3", "a,b", `say "hi"`, " lead", "line\nbreak", "<&>", "ü", "", `\.`}
	var series []Series
	for i := 0; i < 200; i++ {
		s := Series{Name: names[rng.IntN(len(names))], Unit: names[rng.IntN(len(names))]}
		if i%7 != 0 {
			n := rng.IntN(30)
			if i%3 != 0 {
				n = 12 // a common grid: runs of series with equal instants
			}
			s.T, s.V = make([]float64, n), make([]float64, n)
			for j := range n {
				s.T[j] = float64(j) * 1e-5
				if i%11 == 0 && j == 3 {
					s.T[j] = math.NaN()
				}
				s.V[j] = []float64{0, 3, 1500, 0.1 + 0.2, -2.5e-9, math.NaN(), math.Inf(1), 1e22, float64(rng.Int64N(1 << 40))}[rng.IntN(9)]
			}
			if i%5 == 0 && n > 0 {
				s.V = s.V[:n-1]
			}
		} else if i%2 == 0 {
			s.T, s.V = []float64{}, []float64{}
		}
		series = append(series, s)
	}
	return series
}

// TestSeriesWritersAsBefore checks the direct JSON and CSV writers of series
// against encoding/json and encoding/csv given the same values, for names
// and units that need escaping or quoting, missing values, nil and empty
// slices and a value slice shorter than its instants.
func TestSeriesWritersAsBefore(t *testing.T) {
	series := randomSeries(rand.New(rand.NewPCG(11, 12)))
	for _, s := range series {
		type plain struct {
			Name string            `json:"name"`
			Unit string            `json:"unit,omitempty"`
			T    []json.RawMessage `json:"t"`
			V    []json.RawMessage `json:"v"`
		}
		want, err := json.Marshal(plain{s.Name, s.Unit, jsonNumbers(s.T), jsonNumbers(s.V)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.MarshalJSON()
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("series %q: MarshalJSON = %s, %v; encoding/json gives %s", s.Name, got, err, want)
		}
	}
	var want bytes.Buffer
	cw := csv.NewWriter(&want)
	cw.Write([]string{"series", "unit", "t_s", "value"})
	for _, s := range series {
		for i := range s.T {
			v, tt := "", ""
			if i < len(s.V) && !Missing(s.V[i]) {
				v = Number(s.V[i])
			}
			if !Missing(s.T[i]) {
				tt = Number(s.T[i])
			}
			cw.Write([]string{s.Name, s.Unit, tt, v})
		}
	}
	cw.Flush()
	var got bytes.Buffer
	if err := (&Result{Series: series}).WriteSeriesCSV(&got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Fatalf("WriteSeriesCSV differs from encoding/csv:\n%s\nwant\n%s", got.String(), want.String())
	}
}
