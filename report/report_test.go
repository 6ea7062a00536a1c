package report

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
	want.Tables[0].Rows[1].Values[1] = -1 // NaN is written as the -1 sentinel
	if d := cmp.Diff(want, got); d != "" {
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
	if !strings.Contains(csv.String(), "\"in,cast\",1.25,NaN") {
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
	}{{3, "3"}, {123.456, "123.5"}, {1.234, "1.23"}, {0.01234, "0.0123"}, {math.Inf(1), "-"}} {
		if got := Num(tc.x); got != tc.want {
			t.Errorf("Num(%v)=%q want %q", tc.x, got, tc.want)
		}
	}
}
