package main

import (
	"math"
	"sort"

	"github.com/dpkit/dpkit"
)

// point is a point (x, y) = (P_MD, P_FA) of the hypothesis-testing plane of KOV §2:
// x the probability of missed detection, y the probability of false alarm.
type point struct{ x, y float64 }

// line is y = c + m·x.
type line struct{ m, c float64 }

func (l line) at(x float64) float64 { return l.c + l.m*x }

// lowerBoundary returns the vertices, by increasing x from x = 0 to x = 1, of the lower
// boundary of the privacy region ∩_j R(ε_j, δ_j) (KOV §2, eq. 2 and Thm 3.3):
//
//	y(x) = max(0, max_j max(1 − δ_j − e^ε_j·x,  e^−ε_j·(1 − δ_j − x))),  x ∈ [0, 1].
//
// y is the upper envelope of lines, convex and piecewise linear, so its vertices are
// computed exactly (up to float64 rounding of the intersections), not on a grid. With no
// pairs the region is the whole square and the boundary is y = 0. A slope e^ε_j that
// overflows float64 is taken as −MaxFloat64: its line then meets y = 0 at x ≈ 1e-308.
func lowerBoundary(pairs []dpkit.Budget) []point {
	lines := make([]line, 0, 2*len(pairs)+1)
	lines = append(lines, line{}) // y = 0
	for _, p := range pairs {
		steep := math.Min(math.Exp(p.Epsilon), math.MaxFloat64)
		flat := math.Exp(-p.Epsilon)
		lines = append(lines,
			line{m: -steep, c: 1 - p.Delta},         // x·e^ε + y ≥ 1 − δ
			line{m: -flat, c: flat * (1 - p.Delta)}) // x + e^ε·y ≥ 1 − δ
	}
	hull := upperEnvelope(lines)

	// Vertex i of the envelope joins hull[i] and hull[i+1]; keep those inside (0, 1).
	out := []point{{0, envelopeAt(hull, 0)}}
	for i := 0; i+1 < len(hull); i++ {
		x := meet(hull[i], hull[i+1])
		if x <= 0 || x >= 1 {
			continue
		}
		if x == out[len(out)-1].x {
			continue // lines meeting at one point
		}
		y := math.Max(hull[i].at(x), hull[i+1].at(x))
		out = append(out, point{x, math.Min(1, math.Max(0, y))})
	}
	return append(out, point{1, envelopeAt(hull, 1)})
}

// upperEnvelope returns the lines that form max_i lines[i](x) over all x, ordered by
// increasing slope (the order in which they are maximal as x increases).
func upperEnvelope(lines []line) []line {
	sorted := append([]line(nil), lines...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].m != sorted[j].m {
			return sorted[i].m < sorted[j].m
		}
		return sorted[i].c > sorted[j].c
	})
	var hull []line
	for i, l := range sorted {
		if i > 0 && l.m == sorted[i-1].m {
			continue // parallel and not higher than the line kept
		}
		// The top line is useless when l overtakes the one below it no later than it
		// overtakes the one below.
		for len(hull) >= 2 && meet(hull[len(hull)-2], l) <= meet(hull[len(hull)-2], hull[len(hull)-1]) {
			hull = hull[:len(hull)-1]
		}
		hull = append(hull, l)
	}
	return hull
}

// meet returns the x where b, of larger slope, overtakes a.
func meet(a, b line) float64 { return (a.c - b.c) / (b.m - a.m) }

// envelopeAt returns max_i hull[i](x), clamped to [0, 1].
func envelopeAt(hull []line, x float64) float64 {
	y := 0.0
	for _, l := range hull {
		y = math.Max(y, l.at(x))
	}
	return math.Min(1, y)
}

// regionPolygon returns the privacy region ∩_j R(ε_j, δ_j) as a closed polygon: the
// lower boundary y(x) from x = 0 to 1, then the upper boundary 1 − y(1 − x) (the region
// is symmetric under (x, y) → (1 − x, 1 − y)) from x = 1 back to 0.
func regionPolygon(pairs []dpkit.Budget) []point {
	lower := lowerBoundary(pairs)
	poly := make([]point, 0, 2*len(lower))
	poly = append(poly, lower...)
	for _, p := range lower {
		poly = append(poly, point{1 - p.x, 1 - p.y})
	}
	return poly
}
