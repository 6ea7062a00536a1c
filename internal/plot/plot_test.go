package plot

import (
	"bytes"
	"image/png"
	"os"
	"strings"
	"testing"

	gplot "gonum.org/v1/plot"

	"github.com/besim/besim/metrics"
	"github.com/besim/besim/report"
	"github.com/besim/besim/sweep"
	_ "github.com/besim/besim/sweep/simulate"
)

// fixtures: a 2-D sweep, a search and a plain run with series and a
// histogram table.
func fixtures(t *testing.T) (sw, search, run *report.Result) {
	t.Helper()
	b, err := sweep.Load("incast")
	if err != nil {
		t.Fatal(err)
	}
	a1, _ := sweep.ParseAxis("fabric.switch.buffer=1MiB,2MiB,4MiB,8MiB")
	a2, _ := sweep.ParseAxis("flows[incast].rate=10Gbps,15Gbps")
	sw, _, err = sweep.Run(b, []sweep.Axis{a2, a1}, sweep.Options{Metrics: []string{"pfc/frames_tx", "flow/victim/goodput"}})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sweep.ParseSearch("flows[0].src#len=1..16")
	s.Until, _ = sweep.ParsePredicate("pfc/frames_tx>0")
	search, _, err = sweep.RunSearch(b, s, []sweep.Axis{a1}, sweep.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, _, err = sweep.Simulate(b.Scenario)
	if err != nil {
		t.Fatal(err)
	}
	h := metrics.New(2)
	for i := range int64(1000) {
		h.Record(1000 + i*i)
	}
	run.Tables = append(run.Tables, h.Table("rtt", "ns"))
	return sw, search, run
}

func TestPlotsAreDeterministic(t *testing.T) {
	sw, search, run := fixtures(t)
	tests := []struct {
		name string
		make func() (*gplot.Plot, error)
	}{
		{"sweep", func() (*gplot.Plot, error) {
			return Sweep(sw, "fabric.switch.buffer", []string{"pfc/frames_tx"}, Options{})
		}},
		{"sweep-other-x", func() (*gplot.Plot, error) {
			return Sweep(sw, "flows[incast].rate", []string{"flow/victim/goodput"}, Options{})
		}},
		{"search", func() (*gplot.Plot, error) { return Sweep(search, "", nil, Options{}) }},
		{"search-metric", func() (*gplot.Plot, error) { return Sweep(search, "", []string{"at first true"}, Options{}) }},
		{"series", func() (*gplot.Plot, error) { return Series(run, []string{"queue/"}, Options{}) }},
		{"series-all", func() (*gplot.Plot, error) { return Series(run, nil, Options{}) }},
		{"cdf-hist", func() (*gplot.Plot, error) { return CDF(run, []string{"rtt"}) }},
		{"cdf-all", func() (*gplot.Plot, error) { return CDF(run, nil) }},
		{"cdf-series", func() (*gplot.Plot, error) { return CDF(run, []string{run.Series[0].Name}) }},
		{"bars", func() (*gplot.Plot, error) { return Bars(run, "flows", "goodput", Options{}) }},
		{"grouped-bars", func() (*gplot.Plot, error) {
			return GroupedBars(run, "flows", []string{"goodput", "goodput"}, Options{})
		}},
	}
	for _, tc := range tests {
		var svgs [][]byte
		for range 2 {
			p, err := tc.make()
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			var b bytes.Buffer
			if err := Encode(p, &b, "svg", 0, 0); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			svgs = append(svgs, b.Bytes())
		}
		if !bytes.Equal(svgs[0], svgs[1]) || !bytes.HasPrefix(bytes.TrimSpace(svgs[0]), []byte("<?xml")) {
			t.Errorf("%s: SVG differs between two renders of the same result", tc.name)
		}
		p, _ := tc.make()
		var b bytes.Buffer
		if err := Encode(p, &b, "png", 0, 0); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		img, err := png.Decode(&b)
		if err != nil {
			t.Fatalf("%s: PNG does not decode: %v", tc.name, err)
		}
		if r := img.Bounds(); r.Dx() < 100 || r.Dy() < 100 {
			t.Errorf("%s: PNG is %v", tc.name, r)
		}
	}
}

func TestSweepLines(t *testing.T) {
	sw, _, _ := fixtures(t)
	p, err := Sweep(sw, "fabric.switch.buffer", []string{"pfc/frames_tx"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	Encode(p, &b, "svg", 0, 0)
	for _, want := range []string{"flows[incast].rate=10Gbps", "flows[incast].rate=15Gbps", "1MiB", "8MiB", "log scale"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("sweep plot lacks %q", want)
		}
	}
}

func TestPlotErrors(t *testing.T) {
	sw, search, run := fixtures(t)
	tests := []struct {
		err  error
		want string
	}{
		{second(Sweep(sw, "", []string{"pfc/frames_tx"}, Options{})), "say which swept key goes on the x axis with --x (keys: flows[incast].rate, fabric.switch.buffer)"},
		{second(Sweep(sw, "fabric.switch.buffer", nil, Options{})), "say which column to plot with --y"},
		{second(Sweep(sw, "nope", []string{"pfc/frames_tx"}, Options{})), "has no key nope"},
		{second(Sweep(sw, "fabric.switch.buffer", []string{"nope"}, Options{})), `no column "nope"`},
		{second(Sweep(search, "", []string{"at"}, Options{})), "matches several columns"},
		{second(Sweep(run, "", nil, Options{})), "no sweep or search table"},
		{second(Series(run, []string{"nope"}, Options{})), `no series matches "nope"`},
		{second(Series(sw, nil, Options{})), "no time series"},
		{second(CDF(sw, nil)), "no histogram tables"},
		{second(CDF(run, []string{"flows"})), "not a histogram"},
		{second(CDF(run, []string{"nope"})), `no histogram table or series named "nope"`},
		{second(Bars(run, "nope", "x", Options{})), `no table "nope"`},
		{second(Bars(run, "flows", "nope", Options{})), `no column "nope"`},
		{second(GroupedBars(run, "flows", []string{"goodput", "nope"}, Options{})), `no column "nope"`},
		{second(GroupedBars(run, "flows", nil, Options{})), "no column of table flows"},
		{Save(gplot.New(), t.TempDir()+"/x.gif", 0, 0), `unknown format "gif"`},
		{Encode(gplot.New(), &bytes.Buffer{}, "gif", 0, 0), `format "gif" not supported`},
	}
	for i, tc := range tests {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("case %d: error %v, want %q", i, tc.err, tc.want)
		}
	}
}

func second(_ *gplot.Plot, err error) error { return err }

func TestSplitKey(t *testing.T) {
	got := splitKey("a=1,flows[0].src=[0,1],b=x,y")
	want := []pair{{"a", "1"}, {"flows[0].src", "[0,1]"}, {"b", "x,y"}}
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%v, want %v", got, want)
		}
	}
	for in, want := range map[string]float64{"4MiB": 4 << 20, "25Gbps": 25e9, "10us": 10e-6, "3": 3, "1.5": 1.5} {
		if v, ok := numeric(in); !ok || v != want {
			t.Errorf("numeric(%q) = %g %v", in, v, ok)
		}
	}
	if _, ok := numeric("strict"); ok {
		t.Errorf("numeric(strict) is a number")
	}
}

func svgOf(t *testing.T, p *gplot.Plot, err error) string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := Encode(p, &b, "svg", 0, 0); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestYFromZero(t *testing.T) {
	sw, _, run := fixtures(t)
	p, err := Sweep(sw, "fabric.switch.buffer", []string{"flow/victim/goodput"}, Options{})
	svgOf(t, p, err)
	if p.Y.Min != 0 {
		t.Errorf("sweep of non-negative goodput: y from %g, want 0", p.Y.Min)
	}
	p, err = Series(run, []string{"queue/"}, Options{})
	svgOf(t, p, err)
	if p.Y.Min != 0 {
		t.Errorf("queue series: y from %g, want 0", p.Y.Min)
	}
	ymin := 5.0
	p, err = Sweep(sw, "fabric.switch.buffer", []string{"flow/victim/goodput"}, Options{YMin: &ymin, YLabel: "victim"})
	if s := svgOf(t, p, err); p.Y.Min != 5 || !strings.Contains(s, ">victim<") {
		t.Errorf("--ymin 5 --ylabel victim: y from %g, label %q", p.Y.Min, p.Y.Label.Text)
	}
	p, err = Sweep(sw, "fabric.switch.buffer", []string{"flow/victim/goodput"}, Options{LogY: true})
	svgOf(t, p, err)
	if _, ok := p.Y.Scale.(gplot.LogScale); !ok || p.Y.Min <= 0 {
		t.Errorf("--log-y: scale %T, y from %g", p.Y.Scale, p.Y.Min)
	}
	if _, err := Sweep(sw, "fabric.switch.buffer", []string{"pfc/frames_tx"}, Options{LogY: true}); err == nil || !strings.Contains(err.Error(), "needs positive values") {
		t.Errorf("--log-y over zeros: %v", err)
	}
}

func TestSeveralYAndRefs(t *testing.T) {
	sw, search, _ := fixtures(t)
	s := render(t)(Sweep(sw, "fabric.switch.buffer", []string{"pfc/frames_tx", "flow/victim/goodput"}, Options{}))
	for _, want := range []string{"pfc/frames_tx (frames), flows[incast].rate=10Gbps", "flow/victim/goodput (Gbps), flows[incast].rate=10Gbps", "flow/victim/goodput (Gbps), flows[incast].rate=15Gbps"} {
		if !strings.Contains(s, want) {
			t.Errorf("two --y: legend lacks %q", want)
		}
	}
	ref, err := ParseRef("paper (Table 4)=1MiB:3,8MiB:9")
	if err != nil {
		t.Fatal(err)
	}
	s = render(t)(Sweep(search, "", nil, Options{Refs: []Ref{ref}}))
	for _, want := range []string{">model<", ">paper (Table 4)<"} {
		if !strings.Contains(s, want) {
			t.Errorf("search with reference: legend lacks %q", want)
		}
	}
	bad, _ := ParseRef("paper=none:1")
	if _, err := Sweep(search, "", nil, Options{Refs: []Ref{bad}}); err == nil || !strings.Contains(err.Error(), `x "none" is not a value of fabric.switch.buffer`) {
		t.Errorf("reference off the axis: %v", err)
	}
	for _, in := range []string{"paper", "=1:2", "paper=1", "paper=1:x"} {
		if _, err := ParseRef(in); err == nil {
			t.Errorf("ParseRef(%q) accepted", in)
		}
	}
}

// render(t)(Sweep(...)) is the SVG of the plot, failing t on an error.
func render(t *testing.T) func(*gplot.Plot, error) string {
	return func(p *gplot.Plot, err error) string {
		t.Helper()
		return svgOf(t, p, err)
	}
}

func TestTablePlotAndBars(t *testing.T) {
	r := &report.Result{Scenario: "x", Tables: []report.Table{{
		Name: "fragsize", Title: "frag", KeyName: "rate/fragment",
		Columns: []report.Column{{Name: "goodput", Unit: "Gbps"}},
		Rows: []report.Row{
			{Key: "25G/512B", Values: []float64{11}}, {Key: "25G/4096B", Values: []float64{20}},
			{Key: "100G/512B", Values: []float64{13}}, {Key: "100G/4096B", Values: []float64{55}},
		},
	}}}
	s := render(t)(Sweep(r, "fragment", []string{"goodput_gbps"}, Options{Table: "fragsize"}))
	for _, want := range []string{"rate=25G", "rate=100G", "4096B"} {
		if !strings.Contains(s, want) {
			t.Errorf("table plot lacks %q", want)
		}
	}
	sw := &report.Result{Scenario: "x", Tables: []report.Table{{
		Name: "sweep", Title: "s", KeyName: "point", Params: []string{"workload.window"},
		Columns: []report.Column{{Name: "victim/goodput", Unit: "Gbps"}},
		Rows: []report.Row{
			{Key: "workload.window=none", Values: []float64{1}}, {Key: "workload.window=4KiB", Values: []float64{2}},
			{Key: "workload.window=8KiB", Values: []float64{2}}, {Key: "workload.window=16KiB", Values: []float64{2}},
		},
	}}}
	p, err := Bars(sw, "sweep", "victim/goodput", Options{})
	s = svgOf(t, p, err)
	if strings.Contains(s, ">workload.window=none<") || !strings.Contains(s, ">none<") || p.X.Tick.Label.Rotation != 0 {
		t.Errorf("one-key sweep bars: want the values as labels, unrotated")
	}
	long := make([]string, 8)
	for i := range long {
		long[i] = "a-rather-long-bar-label-" + string(rune('a'+i))
	}
	if !labelsCollide(p, long) || labelsCollide(p, []string{"none", "4KiB"}) {
		t.Errorf("labelsCollide misjudges")
	}
}

func TestPDF(t *testing.T) {
	_, search, _ := fixtures(t)
	p, err := Sweep(search, "", nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := t.TempDir() + "/x.pdf"
	if err := Save(p, f, DefaultWidth, DefaultHeight); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil || !bytes.HasPrefix(b, []byte("%PDF-")) {
		t.Errorf("x.pdf: %v, starts %q", err, b[:min(len(b), 8)])
	}
}
