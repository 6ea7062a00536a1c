package plot

import (
	"bytes"
	"image/png"
	"strings"
	"testing"

	gplot "gonum.org/v1/plot"

	"github.com/besim/besim/metrics"
	"github.com/besim/besim/report"
	"github.com/besim/besim/sweep"
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
		{"sweep", func() (*gplot.Plot, error) { return Sweep(sw, "fabric.switch.buffer", "pfc/frames_tx") }},
		{"sweep-other-x", func() (*gplot.Plot, error) { return Sweep(sw, "flows[incast].rate", "flow/victim/goodput") }},
		{"search", func() (*gplot.Plot, error) { return Sweep(search, "", "") }},
		{"search-metric", func() (*gplot.Plot, error) { return Sweep(search, "", "at first true") }},
		{"series", func() (*gplot.Plot, error) { return Series(run, []string{"queue/"}) }},
		{"series-all", func() (*gplot.Plot, error) { return Series(run, nil) }},
		{"cdf-hist", func() (*gplot.Plot, error) { return CDF(run, []string{"rtt"}) }},
		{"cdf-all", func() (*gplot.Plot, error) { return CDF(run, nil) }},
		{"cdf-series", func() (*gplot.Plot, error) { return CDF(run, []string{run.Series[0].Name}) }},
		{"bars", func() (*gplot.Plot, error) { return Bars(run, "flows", "goodput") }},
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
	p, err := Sweep(sw, "fabric.switch.buffer", "pfc/frames_tx")
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
		{second(Sweep(sw, "", "pfc/frames_tx")), "say which swept key goes on the x axis with --x (keys: flows[incast].rate, fabric.switch.buffer)"},
		{second(Sweep(sw, "fabric.switch.buffer", "")), "say which column to plot with --y"},
		{second(Sweep(sw, "nope", "pfc/frames_tx")), "has no key nope"},
		{second(Sweep(sw, "fabric.switch.buffer", "nope")), `no column "nope"`},
		{second(Sweep(search, "", "at")), "matches several columns"},
		{second(Sweep(run, "", "")), "no sweep or search table"},
		{second(Series(run, []string{"nope"})), `no series matches "nope"`},
		{second(Series(sw, nil)), "no time series"},
		{second(CDF(sw, nil)), "no histogram tables"},
		{second(CDF(run, []string{"flows"})), "not a histogram"},
		{second(CDF(run, []string{"nope"})), `no histogram table or series named "nope"`},
		{second(Bars(run, "nope", "x")), `no table "nope"`},
		{second(Bars(run, "flows", "nope")), `no column "nope"`},
		{Save(gplot.New(), t.TempDir()+"/x.gif", 0, 0), `unknown format "gif"`},
		{Encode(gplot.New(), &bytes.Buffer{}, "pdf", 0, 0), `format "pdf" not supported`},
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
