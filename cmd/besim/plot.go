package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/besim/besim/plot"
)

func cmdPlot(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plot", stdout, stderr)
	series := fs.String("series", "", "time series to plot: comma-separated names, path patterns or substrings (queue/ for every queue)")
	x := fs.String("x", "", "sweep plot: the swept `KEY` on the x axis (default: the only one)")
	y := fs.String("y", "", "sweep plot: the `METRIC` (table column) on the y axis")
	cdf := fs.String("cdf", "", "CDF of histogram tables or series: comma-separated `NAMES` (\"all\": every histogram table)")
	bar := fs.String("bar", "", "bar chart of a table column: `TABLE:COLUMN` (e.g. flows:goodput)")
	title := fs.String("title", "", "replace the title")
	width := fs.Float64("width", 16, "width in cm")
	height := fs.Float64("height", 10, "height in cm")
	out := fs.String("o", "", "output `FILE` (.png or .svg)")
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
	for _, set := range []bool{*series != "", *x != "" || *y != "", *cdf != "", *bar != ""} {
		if set {
			kinds++
		}
	}
	if kinds > 1 {
		return fmt.Errorf("plot one kind at a time: --series, --x/--y, --cdf or --bar")
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
		p, err = plot.Bars(r, t, c)
	case *series != "":
		p, err = plot.Series(r, splitList(*series))
	default:
		if _, ok := r.Table("sweep"); ok || *x != "" || *y != "" {
			p, err = plot.Sweep(r, *x, *y)
		} else if _, ok := r.Table("search"); ok {
			p, err = plot.Sweep(r, *x, *y)
		} else {
			p, err = plot.Series(r, nil) // a run: its time series
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

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
