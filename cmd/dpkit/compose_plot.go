package main

import (
	"context"
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/pld"
)

// curvePoints is the number of ε values at which a privacy curve is drawn.
const curvePoints = 240

// minPlotDelta is the smallest δ a log axis shows.
const minPlotDelta = 1e-300

// namedCurve is one privacy curve of a figure: its legend label, its line, and its
// (upper) δ at ε.
type namedCurve struct {
	label string
	line  draw.LineStyle
	delta func(eps float64) (float64, error)
}

// curveLine is the line of a theorem's curve: the outline style of its privacy region
// in the region plot, so that both figures read alike.
func curveLine(theorem string) draw.LineStyle {
	for _, s := range regionStyles(true) {
		if string(s.theorem) == theorem {
			return s.line
		}
	}
	return draw.LineStyle{Color: color.NRGBA{R: 0, G: 90, B: 30, A: 255}, Width: vg.Points(1.8)} // pld: as exact
}

// plotCurves draws δ(ε) of each theorem that has an answer (--plot without --mechanism).
func (c *composeCommand) plotCurves(ctx context.Context, rows []composeRow, ms []compose.Mech) error {
	var curves []namedCurve
	for _, row := range rows {
		if row.err != nil {
			continue
		}
		th := compose.Theorem(row.theorem)
		label := map[compose.Theorem]string{compose.Basic: "basic (KOV Thm 3.1)", compose.DRV: "DRV (KOV Thm 3.2)",
			compose.KOV: "KOV Thm 3.4/3.5", compose.Exact: "exact (KOV Thm 3.3)"}[th]
		nc := namedCurve{label: label, line: curveLine(row.theorem)}
		if th == compose.Exact {
			curve, err := compose.NewCurve(ms, &compose.Options{Tolerance: c.tolerance.value})
			if err != nil {
				return err
			}
			nc.delta = func(eps float64) (float64, error) {
				up, _, err := curve.Delta(eps)
				return up, err
			}
		} else {
			nc.delta = func(eps float64) (float64, error) {
				r, err := compose.DeltaBy(th, ms, eps, nil)
				return r.Delta, err
			}
		}
		curves = append(curves, nc)
	}
	return c.writeCurvePlot(ctx, plotTitle(compose.Group(ms)), curves, rows)
}

// plotPLD draws the mechanism-aware curve δ(ε) (--plot with --mechanism).
func (c *composeCommand) plotPLD(ctx context.Context, row composeRow, comp *pld.Composition) error {
	curve := namedCurve{label: "mechanism-aware (upper curve)", line: curveLine("pld"), delta: func(eps float64) (float64, error) {
		up, _, err := comp.Delta(eps)
		return up, err
	}}
	title := "privacy curve δ(ε) of " + strings.Join(c.mechanisms.texts, " + ")
	if len(c.workload.mechs) > 0 || len(c.workload.files) > 0 {
		title += " + (ε, δ) releases"
	}
	return c.writeCurvePlot(ctx, title, []namedCurve{curve}, []composeRow{row})
}

// writeCurvePlot draws curves on a log δ axis against ε, marks each row's answer and the
// target (a dashed line at the total δ or ε asked for), and writes the figure.
func (c *composeCommand) writeCurvePlot(ctx context.Context, title string, curves []namedCurve, rows []composeRow) error {
	format, _ := plotFormat(c.plot)
	ref := c.eps.value
	if c.delta.set {
		ref = 0
		for _, r := range rows {
			if r.err == nil && !math.IsInf(r.epsilon, 0) {
				ref = math.Max(ref, r.epsilon)
			}
		}
	}
	epsMax := 1.5 * ref
	if !c.delta.set {
		epsMax = 2.5 * ref // show where the curve goes below the δ read at the target
	}
	if epsMax <= 0 {
		epsMax = 1
	}
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "total ε"
	p.Y.Label.Text = "total δ(ε) (log scale)"
	p.X.Min, p.X.Max = 0, epsMax
	p.Y.Scale = plot.LogScale{}

	var legend []legendEntry
	lo := 1.0
	err := runJob(ctx, c.s.stderr, "drawing", func(ctx context.Context, progress progressFunc) error {
		for i, nc := range curves {
			var xys plotter.XYs
			for j := 0; j <= curvePoints; j++ {
				progress(int64(i*(curvePoints+1)+j), int64(len(curves)*(curvePoints+1)))
				if err := ctx.Err(); err != nil {
					return err
				}
				eps := epsMax * float64(j) / curvePoints
				d, err := nc.delta(eps)
				if err != nil || !(d > 0) || math.IsInf(d, 0) {
					continue // not drawable on a log axis (δ = 0), or no value there
				}
				d = math.Max(math.Min(d, 1), minPlotDelta)
				lo = math.Min(lo, d)
				xys = append(xys, plotter.XY{X: eps, Y: d})
			}
			if len(xys) < 2 {
				continue
			}
			l, err := plotter.NewLine(xys)
			if err != nil {
				return fmt.Errorf("plot %s: %w", nc.label, err)
			}
			l.LineStyle = nc.line
			p.Add(l)
			legend = append(legend, legendEntry{nc.label, l})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range rows {
		if r.err == nil && r.delta > 0 {
			lo = math.Min(lo, math.Max(r.delta, minPlotDelta))
		}
	}
	p.Y.Min, p.Y.Max = lo, 1
	if lo >= 1 {
		p.Y.Min = 1e-3
	}
	p.Y.Tick.Marker = decadeTicks{}
	p.Add(plotter.NewGrid())
	if err := addTarget(p, &legend, c.delta.set, c.delta.value, c.eps.value, epsMax); err != nil {
		return err
	}
	if err := addAnswers(p, &legend, rows); err != nil {
		return err
	}
	return savePlot(c.plot, format, p, legend)
}

// addTarget marks the target: a dashed horizontal line at the total δ (--delta) or a
// vertical one at the total ε (--eps).
func addTarget(p *plot.Plot, legend *[]legendEntry, byDelta bool, delta, eps, epsMax float64) error {
	var xys plotter.XYs
	switch {
	case byDelta && delta > 0:
		xys = plotter.XYs{{X: 0, Y: delta}, {X: epsMax, Y: delta}}
	case !byDelta:
		xys = plotter.XYs{{X: eps, Y: p.Y.Min}, {X: eps, Y: 1}}
	default:
		return nil // δ = 0 is not on a log axis
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.LineStyle = draw.LineStyle{Color: color.NRGBA{R: 200, G: 0, B: 0, A: 255}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}
	p.Add(l)
	label := "target δ = " + formatFloat(delta)
	if !byDelta {
		label = "target ε = " + formatFloat(eps)
	}
	*legend = append(*legend, legendEntry{label, l})
	return nil
}

// addAnswers marks each row's answer (ε, δ) with a dot.
func addAnswers(p *plot.Plot, legend *[]legendEntry, rows []composeRow) error {
	var xys plotter.XYs
	for _, r := range rows {
		if r.err == nil && r.delta > 0 {
			xys = append(xys, plotter.XY{X: r.epsilon, Y: math.Max(r.delta, minPlotDelta)})
		}
	}
	if len(xys) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	s.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
	p.Add(s)
	*legend = append(*legend, legendEntry{"reported answer", s})
	return nil
}

// plotSteps draws ε (or δ) against the number of releases, with the certified bracket
// (--every with --plot).
func (c *composeCommand) plotSteps(rows []composeRow) error {
	format, _ := plotFormat(c.plot)
	p := plot.New()
	what, target := "ε", "δ = "+formatFloat(c.delta.value)
	if !c.delta.set {
		what, target = "δ", "ε = "+formatFloat(c.eps.value)
	}
	p.Title.Text = fmt.Sprintf("%s at %s every %s releases of %s", what, target, formatCountText(c.every.value), c.mechanisms.texts[0])
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.X.Label.Text = "releases (steps)"
	p.Y.Label.Text = "total " + what + " (certified upper value)"
	p.X.Min, p.Y.Min = 0, 0
	top := 0.0
	up, lo := make(plotter.XYs, len(rows)), make(plotter.XYs, len(rows))
	for i, r := range rows {
		up[i] = plotter.XY{X: float64(r.releases), Y: r.value(c.delta.set)}
		lo[i] = plotter.XY{X: float64(r.releases), Y: r.lower}
		top = math.Max(top, up[i].Y)
	}
	var legend []legendEntry
	upper, points, err := plotter.NewLinePoints(up)
	if err != nil {
		return err
	}
	upper.LineStyle = curveLine("pld")
	points.GlyphStyle = draw.GlyphStyle{Color: upper.LineStyle.Color, Radius: vg.Points(2), Shape: draw.CircleGlyph{}}
	p.Add(upper, points)
	legend = append(legend, legendEntry{what + " (upper, reported)", upper})
	lower, err := plotter.NewLine(lo)
	if err != nil {
		return err
	}
	lower.LineStyle = draw.LineStyle{Color: color.NRGBA{R: 120, G: 120, B: 120, A: 255}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(3), vg.Points(2)}}
	p.Add(lower)
	legend = append(legend, legendEntry{what + " lower (certified)", lower})
	p.Add(plotter.NewGrid())
	p.Y.Max = 1.05 * top
	return savePlot(c.plot, format, p, legend)
}

// decadeTicks marks a log axis at powers of ten, labelling at most about eight of them
// (a δ axis may span 300 decades).
type decadeTicks struct{}

func (decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	first, last := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	step := max((last-first+7)/8, 1)
	var ticks []plot.Tick
	for e := last; e >= first; e-- {
		t := plot.Tick{Value: math.Pow(10, float64(e))}
		if (last-e)%step == 0 {
			t.Label = "1e" + strconv.Itoa(e)
			if e == 0 {
				t.Label = "1"
			}
		}
		if t.Value >= lo && t.Value <= hi {
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// formatCountText prints a count with digit grouping: 10000 → "10 000".
func formatCountText(n int64) string {
	s := strconv.FormatInt(n, 10)
	if len(s) <= 4 {
		return s
	}
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ' ')
		}
		out = append(out, s[i])
	}
	return string(out)
}
