// Package plot, internal to the module and used only by cmd/besim's
// `besim plot` subcommand, draws besim results (report.Result) with
// gonum/plot: line plots of a sweep or search (a metric against a swept
// key, one line per value of the other keys), time series (queue depth,
// bandwidth, pause over time), CDFs (from metrics histogram tables or the
// values of a series) and bar charts of a table column, as PNG or SVG.
//
// Output is deterministic: the same result and options give the same SVG
// bytes (colours, dashes and legend order come from the data's order,
// never from a map). PNG is rasterised with gonum's embedded Liberation
// fonts and is stable too, but only SVG is promised byte-identical (a PDF
// carries its creation time).
package plot

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"math"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/besim/besim/internal/fileio"
	"github.com/besim/besim/metrics"
	"github.com/besim/besim/report"
	"github.com/besim/besim/scenarios"
)

// Default size of a figure.
const (
	DefaultWidth  = 16 * vg.Centimeter
	DefaultHeight = 10 * vg.Centimeter
)

// Formats Encode accepts.
var Formats = []string{"png", "svg", "pdf"}

// Encode writes p in format ("png", "svg" or "pdf") at the given size (0:
// the default).
func Encode(p *gplot.Plot, w io.Writer, format string, width, height vg.Length) error {
	format = strings.ToLower(strings.TrimPrefix(format, "."))
	if !slices.Contains(Formats, format) {
		return fmt.Errorf("plot: format %q not supported (use %s)", format, strings.Join(Formats, ", "))
	}
	if width <= 0 {
		width = DefaultWidth
	}
	if height <= 0 {
		height = DefaultHeight
	}
	wt, err := p.WriterTo(width, height, format)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	_, err = wt.WriteTo(w)
	return err
}

// Save writes p to file, the format given by its extension (.png, .svg,
// .pdf).
func Save(p *gplot.Plot, file string, width, height vg.Length) error {
	format := strings.TrimPrefix(filepath.Ext(file), ".")
	if !slices.Contains(Formats, strings.ToLower(format)) {
		return fmt.Errorf("plot: %s: unknown format %q (name the file .png, .svg or .pdf)", file, format)
	}
	if width < MinSize || height < MinSize || width > MaxSize || height > MaxSize {
		return fmt.Errorf("plot: %s: size %.1f x %.1f cm: each side must be from %g to %g cm", file, width/vg.Centimeter, height/vg.Centimeter, MinSize/vg.Centimeter, MaxSize/vg.Centimeter)
	}
	// Render in memory, then write through a temporary file renamed into
	// place: a failure never leaves an empty or partial image.
	var b bytes.Buffer
	if err := Encode(p, &b, format, width, height); err != nil {
		return err
	}
	_, err := fileio.WriteFiles([]fileio.File{{Name: file, Data: b.Bytes()}})
	return err
}

// Plot size bounds (a 100 cm PNG side is about 3,800 pixels).
const (
	MinSize = 1 * vg.Centimeter
	MaxSize = 100 * vg.Centimeter
)

func newPlot(title, x, y string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Y.Tick.Marker = numTicks{}
	p.X.Tick.Marker = numTicks{}
	return p
}

// style gives line i a colour, dash pattern and glyph from fixed palettes.
func style(l *plotter.Line, s *plotter.Scatter, i int) {
	c := plotutil.Color(i)
	if l != nil {
		l.Color = c
		l.Width = vg.Points(1.5)
		l.Dashes = plotutil.Dashes(i / len(plotutil.SoftColors))
	}
	if s != nil {
		s.Color = c
		s.Shape = plotutil.Shape(i)
		s.Radius = vg.Points(2.5)
	}
}

func label(name, unit string) string {
	if unit == "" {
		return name
	}
	return name + " (" + unit + ")"
}

// ---- sweeps ----------------------------------------------------------------

// pair is one k=v of a sweep point key.
type pair struct{ k, v string }

// splitKey parses "k1=v1,k2=v2" as sweep writes it; a comma inside a value
// (a bracketed list) stays in the value.
func splitKey(key string) []pair {
	var out []pair
	depth := 0
	start := 0
	var parts []string
	for i, r := range key {
		switch r {
		case '[', '{':
			depth++
		case ']', '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, key[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, key[start:])
	for _, p := range parts {
		k, v, ok := strings.Cut(p, "=")
		if !ok && len(out) > 0 { // a value with a comma
			out[len(out)-1].v += "," + p
			continue
		}
		out = append(out, pair{k, v})
	}
	return out
}

// numeric reads a swept value as a number: plain numbers, and the
// scenario units (sizes in bytes, rates in bits/s, durations in seconds).
func numeric(v string) (float64, bool) {
	if x, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
		return x, true
	}
	if s, err := scenarios.ParseSize(v); err == nil {
		return float64(s), true
	}
	if r, err := scenarios.ParseRate(v); err == nil {
		return float64(r), true
	}
	if d, err := scenarios.ParseDuration(v); err == nil {
		return d.Time().Seconds(), true
	}
	return 0, false
}

// sweepTable is the table a sweep or search result plots.
func sweepTable(r *report.Result) (*report.Table, error) {
	for _, name := range []string{"sweep", "search"} {
		if t, ok := r.Table(name); ok {
			return t, nil
		}
	}
	return nil, fmt.Errorf("plot: %s has no sweep or search table (is it a besim sweep result?)", r.Scenario)
}

// column finds a column by exact name, else by a unique prefix or a
// unique substring (so "pfc/frames_tx" finds "at largest (pfc/frames_tx)"
// only when nothing else matches).
func column(t *report.Table, name string) (int, error) {
	var names []string
	for i, c := range t.Columns {
		if c.Name == name || report.CSVHeader(c) == name {
			return i, nil
		}
		names = append(names, c.Name)
	}
	for _, match := range []func(string) bool{
		func(c string) bool { return strings.HasPrefix(c, name) },
		func(c string) bool { return strings.Contains(c, name) },
	} {
		found := -1
		for i, c := range t.Columns {
			if match(c.Name) {
				if found >= 0 {
					return 0, fmt.Errorf("plot: %q matches several columns of table %s (%s, %s)", name, t.Name, t.Columns[found].Name, c.Name)
				}
				found = i
			}
		}
		if found >= 0 {
			return found, nil
		}
	}
	return 0, fmt.Errorf("plot: table %s has no column %q (columns: %s)", t.Name, name, strings.Join(names, ", "))
}

// Options adjust a plot: its y axis, the table a line plot reads, and
// reference points. The zero value is the default: a y axis from zero
// when every value is non-negative.
type Options struct {
	// Table names the table Sweep plots instead of a sweep or search
	// table: its row keys split at "/" as its key name does ("rate/fragment"
	// with rows "25G/512B"), each part then a key for --x.
	Table string
	// LogY puts the y axis on a log scale (every value must be positive).
	LogY bool
	// YMin, when not nil, is the bottom of the y axis.
	YMin *float64
	// YLabel replaces the y axis label.
	YLabel string
	// Refs are reference points drawn over a sweep plot (Sweep only).
	Refs []Ref
}

// Ref is a labelled set of reference points, e.g. a paper's values.
type Ref struct {
	Label  string
	Points []RefPoint
}

// RefPoint is one reference point: X as the swept value is written
// ("4KiB", "none", "16"), Y a number.
type RefPoint struct {
	X string
	Y float64
}

// ParseRef reads LABEL=X1:Y1,X2:Y2 (the y after the last colon of each
// point).
func ParseRef(s string) (Ref, error) {
	label, pts, ok := strings.Cut(s, "=")
	label = strings.TrimSpace(label)
	if !ok || label == "" || strings.TrimSpace(pts) == "" {
		return Ref{}, fmt.Errorf("plot: reference %q: want LABEL=X1:Y1,X2:Y2", s)
	}
	r := Ref{Label: label}
	for _, p := range strings.Split(pts, ",") {
		i := strings.LastIndex(p, ":")
		if i < 0 {
			return Ref{}, fmt.Errorf("plot: reference %q: point %q: want X:Y", s, p)
		}
		y, err := strconv.ParseFloat(strings.TrimSpace(p[i+1:]), 64)
		if err != nil || math.IsNaN(y) || math.IsInf(y, 0) {
			return Ref{}, fmt.Errorf("plot: reference %q: point %q: y %q is not a finite number", s, p, p[i+1:])
		}
		r.Points = append(r.Points, RefPoint{X: strings.TrimSpace(p[:i]), Y: y})
	}
	return r, nil
}

// finishY sets the y axis from the options once every plotter is added
// (p.Y.Min and Max are then the data's range): log scale, an explicit
// bottom, or zero when no value is negative; and the label.
func finishY(p *gplot.Plot, opt Options) error {
	switch {
	case opt.LogY && opt.YMin != nil && *opt.YMin <= 0:
		return fmt.Errorf("plot: a log y axis needs a positive --ymin (got %g)", *opt.YMin)
	case opt.LogY:
		if p.Y.Min <= 0 {
			return fmt.Errorf("plot: a log y axis needs positive values; the smallest is %g (drop --log-y, or plot another metric)", p.Y.Min)
		}
		p.Y.Scale = gplot.LogScale{}
		p.Y.Tick.Marker = gplot.LogTicks{Prec: -1}
		p.Y.Label.Text += " (log scale)"
		if opt.YMin != nil {
			p.Y.Min = *opt.YMin
		}
	case opt.YMin != nil:
		p.Y.Min = *opt.YMin
	case p.Y.Min > 0:
		p.Y.Min = 0
	}
	if p.Y.Max <= p.Y.Min {
		p.Y.Max = p.Y.Min + 1
	}
	if opt.YLabel != "" {
		p.Y.Label.Text = opt.YLabel
	}
	return nil
}

// rowPairs splits a row key into its key=value pairs: a sweep row
// ("k1=v1,k2=v2"), or a table's key split at "/" as its key name is
// ("rate/fragment" and "25G/512B").
func rowPairs(t *report.Table, key string) []pair {
	if len(t.Params) > 0 || t.Name == "sweep" || t.Name == "search" {
		return splitKey(key)
	}
	names := strings.Split(t.KeyName, "/")
	vals := strings.Split(key, "/")
	if len(names) != len(vals) {
		return []pair{{t.KeyName, key}}
	}
	out := make([]pair, len(names))
	for i := range names {
		out[i] = pair{names[i], vals[i]}
	}
	return out
}

// Sweep plots the columns ys of a sweep or search table (or of the table
// opt.Table names) against the swept key x, one line per column and
// combination of the other keys' values (legend in point order). x may be
// empty when the points have one key, ys when the table has one column or
// is a search (its largest value). Values written with units (1MiB,
// 25Gbps, 10us) are placed by their magnitude and labelled as written, on
// a log scale when they grow geometrically (each at least 1.5 times the
// one before, as buffer and window sweeps in powers of two do); values
// that are not numbers are spaced evenly. Missing values leave gaps.
// opt.Refs are drawn as separate points at their x values.
func Sweep(r *report.Result, x string, ys []string, opt Options) (*gplot.Plot, error) {
	var t *report.Table
	var err error
	if opt.Table != "" {
		var ok bool
		if t, ok = r.Table(opt.Table); !ok {
			var names []string
			for _, t := range r.Tables {
				names = append(names, t.Name)
			}
			return nil, fmt.Errorf("plot: no table %q (tables: %s)", opt.Table, strings.Join(names, ", "))
		}
	} else if t, err = sweepTable(r); err != nil {
		return nil, err
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("plot: table %s has no rows", t.Name)
	}
	var yis []int
	for _, y := range ys {
		yi, err := column(t, y)
		if err != nil {
			return nil, err
		}
		yis = append(yis, yi)
	}
	if len(yis) == 0 {
		if len(t.Columns) != 1 && t.Name != "search" {
			return nil, fmt.Errorf("plot: say which column to plot with --y (columns: %s)", colNames(t))
		}
		yis = []int{0}
	}
	first := rowPairs(t, t.Rows[0].Key)
	if x == "" {
		if len(first) != 1 {
			return nil, fmt.Errorf("plot: say which swept key goes on the x axis with --x (keys: %s)", keyNames(first))
		}
		x = first[0].k
	}
	type pt struct {
		xs  string
		x   float64
		row int
	}
	type group struct {
		name string
		pts  []pt
	}
	var groups []*group
	var xsSeen []string
	allNumeric := true
	for ri, row := range t.Rows {
		pairs := rowPairs(t, row.Key)
		xv, found := "", false
		var rest []string
		for _, p := range pairs {
			if p.k == x {
				xv, found = p.v, true
			} else {
				rest = append(rest, p.k+"="+p.v)
			}
		}
		if !found {
			return nil, fmt.Errorf("plot: point %q has no key %s (keys: %s)", row.Key, x, keyNames(pairs))
		}
		name := strings.Join(rest, ",")
		var g *group
		for _, h := range groups {
			if h.name == name {
				g = h
			}
		}
		if g == nil {
			g = &group{name: name}
			groups = append(groups, g)
		}
		xf, ok := numeric(xv)
		allNumeric = allNumeric && ok
		if !slices.Contains(xsSeen, xv) {
			xsSeen = append(xsSeen, xv)
		}
		g.pts = append(g.pts, pt{xs: xv, x: xf, row: ri})
	}
	var ticks []gplot.Tick
	for i, xs := range xsSeen {
		v := float64(i)
		if allNumeric {
			v, _ = numeric(xs)
		}
		ticks = append(ticks, gplot.Tick{Value: v, Label: xs})
	}
	slices.SortStableFunc(ticks, func(a, b gplot.Tick) int { return cmpF(a.Value, b.Value) })
	// xOf places a written x value: by magnitude, or by its index among
	// the points' values when they are not all numbers.
	xOf := func(xs string) (float64, bool) {
		if allNumeric {
			return numeric(xs)
		}
		i := slices.Index(xsSeen, xs)
		return float64(i), i >= 0
	}
	p := newPlot(t.Title, x, yLabel(t, yis))
	if allNumeric && geometric(ticks) {
		p.X.Scale = gplot.LogScale{}
		p.X.Label.Text += " (log scale)"
		if len(ticks) > 12 {
			p.X.Tick.Marker = gplot.LogTicks{Prec: -1}
		}
	}
	if len(ticks) <= 12 {
		p.X.Tick.Marker = gplot.ConstantTicks(ticks)
	}
	var lines []plotter.XYs
	var entries []string
	n := 0
	sharedUnit := len(yis) > 1 && yLabel(t, yis) == t.Columns[yis[0]].Unit
	for _, yi := range yis {
		for _, g := range groups {
			var xys plotter.XYs
			for _, q := range g.pts {
				yv := t.Rows[q.row].Values[yi]
				if report.Missing(yv) {
					continue
				}
				xv, _ := xOf(q.xs)
				xys = append(xys, plotter.XY{X: xv, Y: yv})
			}
			slices.SortStableFunc(xys, func(a, b plotter.XY) int { return cmpF(a.X, b.X) })
			if len(xys) == 0 {
				continue
			}
			l, s, err := plotter.NewLinePoints(xys)
			if err != nil {
				return nil, fmt.Errorf("plot: %w", err)
			}
			style(l, s, n)
			n++
			p.Add(l, s)
			lines = append(lines, xys)
			name := g.name
			if len(yis) > 1 {
				name = t.Columns[yi].Name
				if !sharedUnit {
					name = label(name, t.Columns[yi].Unit)
				}
				if g.name != "" {
					name += ", " + g.name
				}
			}
			if name == "" && len(opt.Refs) > 0 {
				name = "model" // beside reference points, the line needs a name too
			}
			if name != "" {
				p.Legend.Add(name, l, s)
				entries = append(entries, name)
			}
		}
	}
	for _, ref := range opt.Refs {
		var xys plotter.XYs
		for _, rp := range ref.Points {
			xv, ok := xOf(rp.X)
			if !ok {
				return nil, fmt.Errorf("plot: reference %s: x %q is not a value of %s (values: %s)", ref.Label, rp.X, x, strings.Join(xsSeen, ", "))
			}
			xys = append(xys, plotter.XY{X: xv, Y: rp.Y})
		}
		if len(xys) == 0 {
			continue
		}
		s, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, fmt.Errorf("plot: reference %s: %w", ref.Label, err)
		}
		s.Color = color.Black
		s.Shape = draw.CrossGlyph{}
		if n > 0 {
			s.Shape = plotutil.Shape(n)
		}
		s.Radius = vg.Points(4)
		n++
		p.Add(s)
		p.Legend.Add(ref.Label, s)
		lines = append(lines, xys)
		entries = append(entries, ref.Label)
	}
	if err := finishY(p, opt); err != nil {
		return nil, err
	}
	placeLegend(p, lines, entries)
	return p, nil
}

// yLabel is the y axis label of columns yis: the column and unit for one,
// the shared unit (or the names) for several.
func yLabel(t *report.Table, yis []int) string {
	if len(yis) == 1 {
		return label(t.Columns[yis[0]].Name, t.Columns[yis[0]].Unit)
	}
	unit := t.Columns[yis[0]].Unit
	var names []string
	for _, yi := range yis {
		if t.Columns[yi].Unit != unit {
			unit = ""
		}
		names = append(names, t.Columns[yi].Name)
	}
	if unit != "" {
		return unit
	}
	return strings.Join(names, ", ")
}

// geometric reports whether sorted positive tick values grow by a factor
// of at least 1.5 at every step (and 4 overall).
func geometric(t []gplot.Tick) bool {
	if len(t) < 3 || t[0].Value <= 0 || t[len(t)-1].Value < 4*t[0].Value {
		return false
	}
	for i := 1; i < len(t); i++ {
		if t[i].Value < 1.5*t[i-1].Value {
			return false
		}
	}
	return true
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func colNames(t *report.Table) string {
	var s []string
	for _, c := range t.Columns {
		s = append(s, c.Name)
	}
	return strings.Join(s, ", ")
}

func keyNames(ps []pair) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.k)
	}
	return strings.Join(s, ", ")
}

// ---- time series -----------------------------------------------------------

// matchSeries returns the series whose names match any pattern: an exact
// name, a path.Match pattern, or a substring. No patterns: all series.
func matchSeries(r *report.Result, patterns []string) ([]report.Series, error) {
	if len(patterns) == 0 {
		if len(r.Series) == 0 {
			return nil, fmt.Errorf("plot: the result has no time series")
		}
		return r.Series, nil
	}
	var out []report.Series
	seen := map[string]bool{}
	for _, pat := range patterns {
		n := 0
		for _, s := range r.Series {
			ok, _ := path.Match(pat, s.Name)
			if (s.Name == pat || ok || strings.Contains(s.Name, pat)) && !seen[s.Name] {
				seen[s.Name] = true
				out = append(out, s)
				n++
			}
		}
		if n == 0 {
			var names []string
			for _, s := range r.Series {
				names = append(names, s.Name)
			}
			return nil, fmt.Errorf("plot: no series matches %q (series: %s)", pat, strings.Join(names, ", "))
		}
	}
	return out, nil
}

// timeScale picks s, ms, us or ns for times up to tmax seconds.
func timeScale(tmax float64) (float64, string) {
	switch {
	case tmax >= 10:
		return 1, "s"
	case tmax >= 10e-3:
		return 1e3, "ms"
	case tmax >= 10e-6:
		return 1e6, "us"
	}
	return 1e9, "ns"
}

// Series plots time series (queue depth, bandwidth, pause over time)
// selected by name or pattern (all when none), one line each, the time
// axis in s, ms, us or ns as fits, the y axis as opt says.
func Series(r *report.Result, patterns []string, opt Options) (*gplot.Plot, error) {
	ss, err := matchSeries(r, patterns)
	if err != nil {
		return nil, err
	}
	tmax := 0.0
	units := map[string]bool{}
	var unitList []string
	for _, s := range ss {
		if len(s.T) != len(s.V) {
			return nil, fmt.Errorf("plot: series %s has %d times and %d values", s.Name, len(s.T), len(s.V))
		}
		for _, t := range s.T {
			tmax = max(tmax, t)
		}
		if !units[s.Unit] {
			units[s.Unit] = true
			unitList = append(unitList, s.Unit)
		}
	}
	scale, tu := timeScale(tmax)
	ylab := "value"
	if len(unitList) == 1 && unitList[0] != "" {
		ylab = unitList[0]
	} else if len(unitList) > 1 {
		ylab = strings.Join(unitList, ", ")
	}
	title := r.Scenario
	if len(ss) == 1 {
		title += ": " + ss[0].Name
	}
	p := newPlot(title, "time ("+tu+")", ylab)
	var lines []plotter.XYs
	var entries []string
	for i, s := range ss {
		xys := make(plotter.XYs, len(s.T))
		for j := range s.T {
			xys[j] = plotter.XY{X: s.T[j] * scale, Y: s.V[j]}
		}
		if len(xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("plot: series %s: %w", s.Name, err)
		}
		style(l, nil, i)
		p.Add(l)
		lines = append(lines, xys)
		if len(ss) > 1 {
			p.Legend.Add(s.Name, l)
			entries = append(entries, s.Name)
		}
	}
	if err := finishY(p, opt); err != nil {
		return nil, err
	}
	placeLegend(p, lines, entries)
	return p, nil
}

// ---- CDFs ------------------------------------------------------------------

// CDF plots cumulative distributions. Each name is a histogram table
// (metrics.Histogram.Table, with or without its "hist/" prefix) or a
// series, whose values are taken as samples. No names: every histogram
// table of the result.
func CDF(r *report.Result, names []string) (*gplot.Plot, error) {
	if len(names) == 0 {
		for _, t := range r.Tables {
			if strings.HasPrefix(t.Name, metrics.TablePrefix) {
				names = append(names, t.Name)
			}
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("plot: the result has no histogram tables (%s...); name a series to plot the CDF of its values", metrics.TablePrefix)
		}
	}
	p := newPlot(r.Scenario+": CDF", "value", "fraction of samples")
	var units []string
	var lines []plotter.XYs
	var entries []string
	for i, name := range names {
		xys, unit, err := cdfPoints(r, name)
		if err != nil {
			return nil, err
		}
		if unit != "" && !slices.Contains(units, unit) {
			units = append(units, unit)
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return nil, fmt.Errorf("plot: %s: %w", name, err)
		}
		l.StepStyle = plotter.PostStep
		style(l, nil, i)
		p.Add(l)
		lines = append(lines, xys)
		entries = append(entries, strings.TrimPrefix(name, metrics.TablePrefix))
		p.Legend.Add(entries[len(entries)-1], l)
	}
	if len(units) > 0 {
		p.X.Label.Text = strings.Join(units, ", ")
	}
	p.Y.Min, p.Y.Max = 0, 1
	placeLegend(p, lines, entries)
	return p, nil
}

func cdfPoints(r *report.Result, name string) (plotter.XYs, string, error) {
	for _, tn := range []string{name, metrics.TablePrefix + name} {
		t, ok := r.Table(tn)
		if !ok {
			continue
		}
		hi, err1 := column(t, "hi")
		cdf, err2 := column(t, "cdf")
		if err1 != nil || err2 != nil {
			return nil, "", fmt.Errorf("plot: table %s is not a histogram (needs hi and cdf columns)", tn)
		}
		if len(t.Rows) == 0 {
			return nil, "", fmt.Errorf("plot: histogram %s is empty", tn)
		}
		xys := plotter.XYs{{X: t.Rows[0].Values[hi], Y: 0}}
		for _, row := range t.Rows {
			xys = append(xys, plotter.XY{X: row.Values[hi], Y: row.Values[cdf]})
		}
		return xys, t.Columns[hi].Unit, nil
	}
	for _, s := range r.Series {
		if s.Name != name {
			continue
		}
		if len(s.V) == 0 {
			return nil, "", fmt.Errorf("plot: series %s is empty", name)
		}
		v := slices.Clone(s.V)
		slices.Sort(v)
		xys := plotter.XYs{{X: v[0], Y: 0}}
		for i, x := range v {
			xys = append(xys, plotter.XY{X: x, Y: float64(i+1) / float64(len(v))})
		}
		return xys, s.Unit, nil
	}
	return nil, "", fmt.Errorf("plot: no histogram table or series named %q", name)
}

// ---- bars ------------------------------------------------------------------

// Bars draws one bar per row of a table column (flows:goodput,
// ports:pause tx, sweep:pfc/frames_tx), the y axis as opt says. The bars of
// a one-key sweep are labelled by the swept value alone (the key names the
// axis); labels too wide for their bar's slot are turned 45 degrees.
func Bars(r *report.Result, table, col string, opt Options) (*gplot.Plot, error) {
	return GroupedBars(r, table, []string{col}, opt)
}

// GroupedBars draws, for every row of a table, one bar per column of cols
// side by side (the first column's colour first, a legend naming each
// when there are several), the y axis as opt says and as Bars labels.
func GroupedBars(r *report.Result, table string, cols []string, opt Options) (*gplot.Plot, error) {
	t, ok := r.Table(table)
	if !ok {
		var names []string
		for _, t := range r.Tables {
			names = append(names, t.Name)
		}
		return nil, fmt.Errorf("plot: no table %q (tables: %s)", table, strings.Join(names, ", "))
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("plot: no column of table %s to draw", table)
	}
	cis := make([]int, len(cols))
	for j, col := range cols {
		ci, err := column(t, col)
		if err != nil {
			return nil, err
		}
		cis[j] = ci
	}
	if len(t.Rows) == 0 {
		return nil, fmt.Errorf("plot: table %s has no rows", table)
	}
	names := make([]string, len(t.Rows))
	xlab := t.KeyName
	if len(t.Params) == 1 {
		xlab = t.Params[0]
	}
	for i, row := range t.Rows {
		names[i] = row.Key
		if len(t.Params) == 1 {
			names[i] = strings.TrimPrefix(row.Key, t.Params[0]+"=")
		}
	}
	p := newPlot(t.Title, xlab, yLabel(t, cis))
	// The bars of a row fill 60% of its slot at the default width (2 to
	// 40 points each).
	w := max(vg.Points(2), min(vg.Points(40), 0.6*(DefaultWidth-2*vg.Centimeter)/vg.Length(len(names)*len(cis))))
	for j, ci := range cis {
		vals := make(plotter.Values, len(t.Rows))
		for i, row := range t.Rows {
			v := row.Values[ci]
			if report.Missing(v) {
				v = 0
			}
			vals[i] = v
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return nil, fmt.Errorf("plot: %w", err)
		}
		b.Color = plotutil.Color(j)
		b.LineStyle.Width = 0
		b.Offset = w * vg.Length(2*j-len(cis)+1) / 2
		p.Add(b)
		if len(cis) > 1 {
			p.Legend.Add(t.Columns[ci].Name, b)
		}
	}
	if len(cis) > 1 {
		p.Legend.Top, p.Legend.Left = true, true // over the first rows (often the smallest)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(names))-0.5 // whole bars at both ends
	if labelsCollide(p, names) {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YCenter
	}
	if err := finishY(p, opt); err != nil {
		return nil, err
	}
	return p, nil
}

// labelsCollide reports whether the widest of the nominal x labels is
// wider than 90% of its slot at the default figure width (less a margin
// for the y axis).
func labelsCollide(p *gplot.Plot, names []string) bool {
	widest := vg.Length(0)
	for _, n := range names {
		widest = max(widest, p.X.Tick.Label.Width(n))
	}
	slot := (DefaultWidth - 2*vg.Centimeter) / vg.Length(len(names))
	return widest > 0.9*slot
}
