package report

import (
	"bytes"
	"math"
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
