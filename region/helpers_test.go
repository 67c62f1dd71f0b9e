package region

import (
	"cmp"
	"errors"
	"math"
	"slices"

	"github.com/dpkit/dpkit"
)

// tester is what the helpers need from *testing.T and *rapid.T.
type tester interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// near reports |got − want| ≤ rel·|want| (or got == want, which covers ±Inf and 0).
func near(got, want, rel float64) bool {
	return got == want || math.Abs(got-want) <= rel*math.Abs(want)
}

func mustPair(t tester, p0, p1 []float64) *Pair {
	t.Helper()
	p, err := NewPair(p0, p1)
	if err != nil {
		t.Fatalf("NewPair(%v, %v): %v", p0, p1, err)
	}
	return p
}

func mustCanonical(t tester, b dpkit.Budget) *Pair {
	t.Helper()
	p, err := Canonical(b)
	if err != nil {
		t.Fatalf("Canonical(%v): %v", b, err)
	}
	return p
}

// randomizedResponse is binary randomized response with P0 = (e^ε, 1)/(1+e^ε) and
// P1 = (1, e^ε)/(1+e^ε), computed without overflow.
func randomizedResponse(t tester, eps float64) *Pair {
	t.Helper()
	s := math.Exp(-eps)
	hi, lo := 1/(1+s), s/(1+s)
	return mustPair(t, []float64{hi, lo}, []float64{lo, hi})
}

// wantParamError checks that err wraps a *dpkit.ParamError for the parameter name, and
// that the message carries the package prefix and the name.
func wantParamError(t tester, err error, name string) {
	t.Helper()
	var pe *dpkit.ParamError
	if !errors.As(err, &pe) {
		t.Fatalf("want an error wrapping *dpkit.ParamError for %q, got %v", name, err)
	}
	if pe.Name != name {
		t.Errorf("error names %q, want %q (%v)", pe.Name, name, err)
	}
	if msg := err.Error(); len(msg) < 8 || msg[:8] != "region: " {
		t.Errorf("error %q lacks the \"region: \" prefix", msg)
	}
}

func samePoints(got, want []Point, rel float64) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if !closeAbs(got[i].MD, want[i].MD, rel) || !closeAbs(got[i].FA, want[i].FA, rel) {
			return false
		}
	}
	return true
}

// closeAbs compares coordinates in [0, 1]: relative to max(|want|, 1e-300), or exact zero.
func closeAbs(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*max(math.Abs(want), 1e-300)
}

// convexHull returns the convex hull of pts in counter-clockwise order (Andrew's
// monotone chain), dropping collinear points. It is written independently of the
// package code, to check Polygon and Breakpoints against.
func convexHull(pts []Point) []Point {
	ps := slices.Clone(pts)
	slices.SortFunc(ps, func(a, b Point) int {
		if c := cmp.Compare(a.MD, b.MD); c != 0 {
			return c
		}
		return cmp.Compare(a.FA, b.FA)
	})
	ps = slices.Compact(ps)
	if len(ps) < 3 {
		return ps
	}
	cross := func(o, a, b Point) float64 {
		return (a.MD-o.MD)*(b.FA-o.FA) - (a.FA-o.FA)*(b.MD-o.MD)
	}
	var h []Point
	for _, p := range ps { // lower hull
		for len(h) >= 2 && cross(h[len(h)-2], h[len(h)-1], p) <= 0 {
			h = h[:len(h)-1]
		}
		h = append(h, p)
	}
	lower := len(h) + 1
	for i := len(ps) - 2; i >= 0; i-- { // upper hull
		p := ps[i]
		for len(h) >= lower && cross(h[len(h)-2], h[len(h)-1], p) <= 0 {
			h = h[:len(h)-1]
		}
		h = append(h, p)
	}
	return h[:len(h)-1]
}

// signedDistance returns the distance from z to the boundary of the convex polygon poly
// (counter-clockwise), positive inside and negative outside. A polygon with fewer than
// three vertices has an empty interior, so every point gets a value ≤ 0.
func signedDistance(poly []Point, z Point) float64 {
	if len(poly) == 1 {
		return -math.Hypot(z.MD-poly[0].MD, z.FA-poly[0].FA)
	}
	if len(poly) == 2 { // a segment: distance to it, negated
		a, b := poly[0], poly[1]
		ex, ey := b.MD-a.MD, b.FA-a.FA
		s := max(0, min(1, ((z.MD-a.MD)*ex+(z.FA-a.FA)*ey)/(ex*ex+ey*ey)))
		return -math.Hypot(z.MD-a.MD-s*ex, z.FA-a.FA-s*ey)
	}
	d := math.Inf(1)
	for i := range poly {
		a, b := poly[i], poly[(i+1)%len(poly)]
		ex, ey := b.MD-a.MD, b.FA-a.FA
		if n := math.Hypot(ex, ey); n > 1e-12 { // the direction of a shorter edge is rounding noise
			d = min(d, (ex*(z.FA-a.FA)-ey*(z.MD-a.MD))/n)
		}
	}
	return d
}

// budgetsMargin returns the smallest normalised slack of z in the four inequalities of
// every R(ε_j, δ_j): positive inside the intersection, negative outside, and about the
// distance to its boundary.
func budgetsMargin(bs []dpkit.Budget, z Point) float64 {
	m := math.Inf(1)
	for _, b := range bs {
		// (x + e^ε y − (1−δ)) / |(1, e^ε)|, divided through by e^ε so that nothing overflows.
		s := math.Exp(-b.Epsilon)
		n := math.Hypot(s, 1)
		for _, xy := range [][2]float64{{z.MD, z.FA}, {z.FA, z.MD}, {1 - z.MD, 1 - z.FA}, {1 - z.FA, 1 - z.MD}} {
			m = min(m, (s*xy[0]+xy[1]-s*(1-b.Delta))/n)
		}
	}
	return m
}

// swapped returns the pair with P0 and P1 exchanged: its region is the reflection about
// the line md = fa.
func swapped(t tester, p *Pair) *Pair {
	return mustPair(t, p.P1, p.P0)
}
