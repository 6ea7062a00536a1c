package plot

import (
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

// numTicks is gonum's default tick placement with plainer labels
// (2500000 or 2.5e+06, not 2500000.00).
type numTicks struct{}

func (numTicks) Ticks(lo, hi float64) []gplot.Tick {
	t := gplot.DefaultTicks{}.Ticks(lo, hi)
	for i := range t {
		if t[i].Label != "" {
			t[i].Label = fmtTick(t[i].Value)
		}
	}
	return t
}

func fmtTick(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

// placeLegend puts the legend in the corner of the data area that the
// data crosses least (top right, top left, bottom right, bottom left on a
// tie), estimating the legend's box from its entries. Call it after all
// plotters are added.
func placeLegend(p *gplot.Plot, lines []plotter.XYs, entries []string) {
	if len(entries) == 0 {
		return
	}
	norm := func(v float64, a gplot.Axis) float64 {
		lo, hi := a.Min, a.Max
		if _, ok := a.Scale.(gplot.LogScale); ok && lo > 0 && v > 0 {
			v, lo, hi = math.Log(v), math.Log(lo), math.Log(hi)
		}
		if hi <= lo {
			return 0.5
		}
		return (v - lo) / (hi - lo)
	}
	longest := 0
	for _, e := range entries {
		longest = max(longest, len(e))
	}
	w := min(0.9, 0.1+float64(longest)*0.018) // of the data width at the default size
	h := min(0.9, float64(len(entries))*0.075)
	type corner struct{ top, left bool }
	corners := []corner{{true, false}, {true, true}, {false, false}, {false, true}}
	best, bestN := corners[0], math.MaxInt
	for _, c := range corners {
		n := 0
		inside := func(x, y float64) bool {
			if c.left && x > w || !c.left && x < 1-w {
				return false
			}
			return c.top && y > 1-h || !c.top && y < h
		}
		for _, l := range lines {
			for i, pt := range l {
				x, y := norm(pt.X, p.X), norm(pt.Y, p.Y)
				if inside(x, y) {
					n++
				}
				if i > 0 { // sample the segment from the previous point
					x0, y0 := norm(l[i-1].X, p.X), norm(l[i-1].Y, p.Y)
					for k := 1; k < 8; k++ {
						f := float64(k) / 8
						if inside(x0+(x-x0)*f, y0+(y-y0)*f) {
							n++
						}
					}
				}
			}
		}
		if n < bestN {
			best, bestN = c, n
		}
	}
	p.Legend.Top, p.Legend.Left = best.top, best.left
}
