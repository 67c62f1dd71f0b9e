package main

import (
	"bytes"
	"fmt"
	"image/color"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// Figure layout: a square plot above a strip for the legend (two columns, so that it
// never hides a curve or a region; legendRow per row of entries plus legendPad), and the
// resolution of PNG output.
const (
	plotWidth = 6 * vg.Inch
	legendRow = 0.25 * vg.Inch
	legendPad = 0.2 * vg.Inch
	pngDPI    = 150
)

// regionStyle is how one theorem's region is drawn.
type regionStyle struct {
	theorem compose.Theorem
	label   string
	fill    color.Color
	line    draw.LineStyle
}

// regionStyles lists the theorems in drawing order, loosest first. The fills are opaque
// and drawn in this order, so nested regions show as rings and the exact one is on top;
// every outline is drawn after all fills, so a region that sticks out from under another
// (DRV's is not inside basic's) keeps its whole boundary visible.
func regionStyles(homogeneous bool) []regionStyle {
	kov := "KOV bound (Thm 3.5)"
	if homogeneous {
		kov = "KOV bound (Thm 3.4)"
	}
	outline := func(c color.Color, width vg.Length, dashes ...vg.Length) draw.LineStyle {
		return draw.LineStyle{Color: c, Width: width, Dashes: dashes}
	}
	return []regionStyle{
		{compose.Basic, "basic (Thm 3.1)", color.NRGBA{R: 232, G: 232, B: 232, A: 255},
			outline(color.NRGBA{R: 80, G: 80, B: 80, A: 255}, vg.Points(1.2), vg.Points(2), vg.Points(2))},
		{compose.DRV, "DRV (Thm 3.2)", color.NRGBA{R: 252, G: 221, B: 186, A: 255},
			outline(color.NRGBA{R: 210, G: 100, B: 0, A: 255}, vg.Points(1.5), vg.Points(6), vg.Points(3))},
		{compose.KOV, kov, color.NRGBA{R: 198, G: 216, B: 245, A: 255},
			outline(color.NRGBA{R: 30, G: 70, B: 190, A: 255}, vg.Points(1.5), vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2))},
		{compose.Exact, "exact (Thm 3.3)", color.NRGBA{R: 120, G: 192, B: 140, A: 255},
			outline(color.NRGBA{R: 0, G: 90, B: 30, A: 255}, vg.Points(1.8))},
	}
}

// writeRegionPlot draws the privacy regions of the basic, DRV, KOV and exact composition
// of ms in the (P_MD, P_FA) plane, in the style of KOV Figs. 2–3, and writes the figure to
// file in format ("svg" or "png"). exact is the exact region's breakpoints
// (compose.Curve.Breakpoints); the other regions come from compose.Region.
func writeRegionPlot(file, format string, ms []compose.Mech, exact []dpkit.Budget) error {
	groups := compose.Group(ms)
	p := plot.New()
	p.Title.Text = plotTitle(groups)
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.Text = "P_MD (probability of missed detection)"
	p.Y.Label.Text = "P_FA (probability of false alarm)"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.X.Tick.Marker, p.Y.Tick.Marker = unitTicks(), unitTicks()

	var legend []legendEntry
	var outlines []plot.Plotter
	for _, s := range regionStyles(len(groups) == 1) {
		pairs := exact
		if s.theorem != compose.Exact {
			var err error
			if pairs, err = compose.Region(s.theorem, ms, nil); err != nil {
				return err
			}
		}
		xys := toXYs(regionPolygon(pairs))
		fill, err := plotter.NewPolygon(xys)
		if err != nil {
			return fmt.Errorf("plot %s region: %w", s.theorem, err)
		}
		fill.Color, fill.LineStyle.Width = s.fill, 0
		edge, err := plotter.NewPolygon(xys)
		if err != nil {
			return fmt.Errorf("plot %s region: %w", s.theorem, err)
		}
		edge.Color, edge.LineStyle = nil, s.line
		p.Add(fill)
		outlines = append(outlines, edge)

		thumb := *fill
		thumb.LineStyle = s.line
		legend = append(legend, legendEntry{s.label, &thumb})
	}
	p.Add(plotter.NewGrid())
	p.Add(outlines...)

	return savePlot(file, format, p, legend)
}

// plotRightPad keeps the last label of the x axis ("1.0", centred on the plot's right
// edge) inside the figure even when a viewer draws it a little wider.
const plotRightPad = 0.25 * vg.Inch

// legendEntry is one entry of a figure's legend.
type legendEntry struct {
	label string
	thumb plot.Thumbnailer
}

// savePlot draws p (square) above a two-column legend of entries and writes the figure
// to file in format.
func savePlot(file, format string, p *plot.Plot, entries []legendEntry) error {
	rows := (len(entries) + 1) / 2
	strip := vg.Length(rows)*legendRow + legendPad
	return saveFigure(file, format, plotWidth, plotWidth+strip, func(dc draw.Canvas) {
		p.Draw(draw.Crop(dc, 0, -plotRightPad, strip, 0))
		legendArea := draw.Crop(dc, 0, 0, 0, strip-(dc.Max.Y-dc.Min.Y))
		for col := range 2 {
			l := plot.NewLegend()
			for _, e := range entries[min(col*rows, len(entries)):min((col+1)*rows, len(entries))] {
				l.Add(e.label, e.thumb)
			}
			l.Top, l.Left = true, true
			l.ThumbnailWidth = vg.Points(36)
			l.Padding = vg.Points(4)
			l.TextStyle.Font.Size = vg.Points(11)
			left := plotWidth/8 + vg.Length(col)*plotWidth*7/16
			l.Draw(draw.Crop(legendArea, left, 0, 0, -vg.Points(8)))
		}
	})
}

// saveFigure draws a figure of size w × h with drawFn on a white background and writes it
// to file in format ("svg" or "png"). SVG output embeds the font it uses, so that it
// looks the same whatever fonts the viewer has installed.
func saveFigure(file, format string, w, h vg.Length, drawFn func(dc draw.Canvas)) error {
	var canvas vg.CanvasWriterTo
	switch format {
	case "svg":
		canvas = vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(true))
	case "png":
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI))}
	default:
		return fmt.Errorf("plot format %q: want svg or png", format) // plotFormat prevents this
	}
	dc := draw.New(canvas)
	dc.FillPolygon(color.White, []vg.Point{dc.Min, {X: dc.Max.X, Y: dc.Min.Y}, dc.Max, {X: dc.Min.X, Y: dc.Max.Y}})
	drawFn(dc)

	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return fmt.Errorf("cannot render --plot %q: %w", file, err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o666); err != nil {
		return fmt.Errorf("cannot write --plot %q: %s", file, pathErrorText(err))
	}
	return nil
}

// unitTicks marks [0, 1] every 0.1 and labels every 0.2.
func unitTicks() plot.ConstantTicks {
	ticks := make(plot.ConstantTicks, 11)
	for i := range ticks {
		ticks[i].Value = float64(i) / 10
		if i%2 == 0 {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', 1, 64)
		}
	}
	return ticks
}

func toXYs(pts []point) plotter.XYs {
	xys := make(plotter.XYs, len(pts))
	for i, p := range pts {
		xys[i] = plotter.XY{X: p.x, Y: p.y}
	}
	return xys
}

// plotTitle names the workload as KOV's figures do: "30-fold composition of
// (0.1, 0.001)-DP", or the first few kinds of release of a heterogeneous one.
func plotTitle(groups []compose.Mech) string {
	if len(groups) == 1 {
		g := groups[0]
		if g.Count == 1 {
			return fmt.Sprintf("(%g, %g)-DP mechanism", g.Epsilon, g.Delta)
		}
		return fmt.Sprintf("%d-fold composition of (%g, %g)-DP", g.Count, g.Epsilon, g.Delta)
	}
	var total int64
	for _, g := range groups {
		total += g.Count
	}
	const shown = 3
	parts := make([]string, 0, shown+1)
	for i, g := range groups {
		if i == shown {
			parts = append(parts, fmt.Sprintf("… (%d kinds)", len(groups)))
			break
		}
		parts = append(parts, fmt.Sprintf("%d×(%g, %g)", g.Count, g.Epsilon, g.Delta))
	}
	return fmt.Sprintf("composition of %d releases: %s", total, strings.Join(parts, ", "))
}
