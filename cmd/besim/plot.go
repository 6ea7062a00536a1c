package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/besim/besim/internal/plot"
)

func cmdPlot(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plot", stdout, stderr)
	series := fs.String("series", "", "time series to plot: comma-separated names, path patterns or substrings (queue/ for every queue)")
	x := fs.String("x", "", "sweep plot: the swept `KEY` on the x axis (default: the only one)")
	var ys, refs multiFlag
	fs.Var(&ys, "y", "sweep plot: a `METRIC` (table column, as named in the JSON or the CSV header) on the y axis;\nrepeat (or separate by commas) for several, one line each")
	table := fs.String("table", "", "line plot of this `TABLE` of a run instead of a sweep: its row keys split at / as\nits key name is (fig10's fragsize: rate/fragment), each part a key for --x")
	fs.Var(&refs, "ref", "sweep plot: reference points `LABEL=X1:Y1,X2:Y2` (X as the swept value is written); repeatable")
	refFile := fs.String("ref-file", "", "sweep plot: reference points from a CSV `FILE` with header label,x,y (# lines: its citation)")
	logY := fs.Bool("log-y", false, "log scale on the y axis (every value must be positive)")
	ymin := fs.String("ymin", "", "bottom of the y axis (default 0 when no value is negative)")
	ylabel := fs.String("ylabel", "", "replace the y axis label")
	cdf := fs.String("cdf", "", "CDF of histogram tables or series: comma-separated `NAMES` (\"all\": every histogram table)")
	bar := fs.String("bar", "", "bar chart of a table column: `TABLE:COLUMN` (e.g. flows:goodput); several comma-separated columns are grouped bars")
	title := fs.String("title", "", "replace the title")
	width := fs.Float64("width", 16, "width in cm")
	height := fs.Float64("height", 10, "height in cm")
	out := fs.String("o", "", "output `FILE` (.png, .svg or .pdf)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || *out == "" {
		fs.Usage()
		return errUsage
	}
	lo, hi := float64(plot.MinSize/vg.Centimeter), float64(plot.MaxSize/vg.Centimeter)
	if !(*width >= lo && *width <= hi && *height >= lo && *height <= hi) {
		return fmt.Errorf("--width %g --height %g: each must be from %g to %g (cm)", *width, *height, lo, hi)
	}
	kinds := 0
	for _, set := range []bool{*series != "", *x != "" || len(ys) > 0 || *table != "", *cdf != "", *bar != ""} {
		if set {
			kinds++
		}
	}
	if kinds > 1 {
		return fmt.Errorf("plot one kind at a time: --series, --x/--y, --cdf or --bar")
	}
	opt := plot.Options{Table: *table, LogY: *logY, YLabel: *ylabel}
	if *ymin != "" {
		v, err := strconv.ParseFloat(*ymin, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("--ymin %s: want a finite number", *ymin)
		}
		opt.YMin = &v
	}
	for _, s := range refs {
		ref, err := plot.ParseRef(s)
		if err != nil {
			return fmt.Errorf("--ref: %w", err)
		}
		opt.Refs = append(opt.Refs, ref)
	}
	if *refFile != "" {
		rs, err := readRefFile(*refFile)
		if err != nil {
			return err
		}
		opt.Refs = append(opt.Refs, rs...)
	}
	var yl []string
	for _, y := range ys {
		yl = append(yl, splitList(y)...)
	}
	lineKind := *series == "" && *cdf == "" && *bar == ""
	if len(opt.Refs) > 0 && !lineKind {
		return fmt.Errorf("--ref and --ref-file apply to sweep and table line plots (--x/--y), not --series, --cdf or --bar")
	}
	if (*cdf != "") && (opt.LogY || opt.YMin != nil || opt.YLabel != "") {
		return fmt.Errorf("--log-y, --ymin and --ylabel do not apply to --cdf (its y axis is the fraction 0..1)")
	}
	r, err := readResult(pos[0])
	if err != nil {
		return err
	}
	var p *gplot.Plot
	switch {
	case *cdf != "":
		var names []string
		if *cdf != "all" {
			names = splitList(*cdf)
		}
		p, err = plot.CDF(r, names)
	case *bar != "":
		t, c, ok := strings.Cut(*bar, ":")
		if !ok {
			return fmt.Errorf("--bar %s: want TABLE:COLUMN", *bar)
		}
		p, err = plot.GroupedBars(r, t, splitList(c), opt)
	case *series != "":
		p, err = plot.Series(r, splitList(*series), opt)
	default:
		_, sw := r.Table("sweep")
		_, se := r.Table("search")
		if sw || se || *x != "" || len(yl) > 0 || *table != "" {
			p, err = plot.Sweep(r, *x, yl, opt)
		} else if len(opt.Refs) > 0 {
			return fmt.Errorf("--ref: %s is a run; reference points go on a sweep or --table plot", pos[0])
		} else {
			p, err = plot.Series(r, nil, opt) // a run: its time series
		}
	}
	if err != nil {
		return err
	}
	if *title != "" {
		p.Title.Text = *title
	}
	if err := plot.Save(p, *out, vg.Length(*width)*vg.Centimeter, vg.Length(*height)*vg.Centimeter); err != nil {
		return err
	}
	fmt.Fprintln(stderr, "wrote", filepath.Clean(*out))
	return nil
}

// readRefFile reads reference points from a CSV file: '#' lines (the
// source, e.g. the paper's table) are comments, then a header
// label,x,y and one row per point; rows with the same label form one set.
func readRefFile(file string) ([]plot.Ref, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("--ref-file: %w", err)
	}
	defer f.Close()
	cr := csv.NewReader(f)
	cr.Comment = '#'
	cr.FieldsPerRecord = 3
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("--ref-file %s: %w", file, err)
	}
	if len(rows) < 2 || strings.Join(rows[0], ",") != "label,x,y" {
		return nil, fmt.Errorf("--ref-file %s: want a header label,x,y and at least one row", file)
	}
	var out []plot.Ref
	for i, row := range rows[1:] {
		y, err := strconv.ParseFloat(strings.TrimSpace(row[2]), 64)
		if err != nil || math.IsNaN(y) || math.IsInf(y, 0) {
			return nil, fmt.Errorf("--ref-file %s: row %d: y %q is not a finite number", file, i+2, row[2])
		}
		pt := plot.RefPoint{X: strings.TrimSpace(row[1]), Y: y}
		if n := len(out); n > 0 && out[n-1].Label == row[0] {
			out[n-1].Points = append(out[n-1].Points, pt)
		} else {
			out = append(out, plot.Ref{Label: row[0], Points: []plot.RefPoint{pt}})
		}
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
