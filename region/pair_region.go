package region

import (
	"math"
	"slices"

	"github.com/dpkit/dpkit"
)

// pruneTol is the relative tolerance below which Breakpoints treats a constraint as
// implied by its neighbours.
const pruneTol = 1e-12

// Region returns the lower-left boundary of the privacy region R(P0, P1) of the pair
// (KOV eq. 3: the convex hull of (P_MD, P_FA) over all tests), the part drawn in KOV
// Figure 1, as the vertices of a convex polygonal chain in order of increasing MD:
//
//	(0, P0(supp P1)),  …,  (P1(supp P0), 0)
//
// It runs from the lowest point on the MD = 0 axis to the leftmost point on the FA = 0
// axis; the segments from (0, 1) down to its first vertex and from its last vertex to
// (1, 0) lie on the axes and are left out, as in [Boundary] (Region of
// Canonical(b) equals Boundary(b)).
//
// The chain is the Neyman–Pearson trade-off curve: order the outcomes by decreasing
// likelihood ratio P0(x)/P1(x) and accept H0 on the first k of them, k = 0, 1, …; the
// vertices are
//
//	(MD_k, FA_k) = ( Σ_{j≤k} P1(x_j),  Σ_{j>k} P0(x_j) ),
//
// each coordinate a sum of probabilities (never 1 minus a sum). Outcomes whose ratios
// agree to within 8 units of roundoff are merged (they are equal ratios, rounded
// separately), so no vertex lies on the segment between its neighbours.
//
// The region is symmetric about (½, ½): the upper-right boundary is the reflection
// (md, fa) ↦ (1−md, 1−fa) of this chain (the complementary tests), and [Pair.Polygon]
// returns the whole closed polygon. Unlike R(ε, δ), R(P0, P1) need not be symmetric
// about the line md = fa: exchanging P0 and P1 reflects it about that line.
//
// Region returns the single point (0, 0) when P0 and P1 have disjoint supports, and
// nil for a Pair that NewPair would reject.
func (p *Pair) Region() []Point {
	if p.check() != nil {
		return nil
	}
	c := lowerChain(groups(p.P0, p.P1))
	first, last := 0, len(c)-1
	for first+1 < len(c) && c[first+1].MD == 0 {
		first++
	}
	for last > first && c[last-1].FA == 0 {
		last--
	}
	return slices.Clone(c[first : last+1])
}

// Polygon returns the whole privacy region R(P0, P1) of the pair (KOV eq. 3) as a closed
// convex polygon: its vertices in counter-clockwise order, starting at (0, ΣP0) = (0, 1),
// running along the lower-left boundary (the axes segments and [Pair.Region]) to
// (ΣP1, 0) = (1, 0), and back along the upper-right boundary, which is the reflection
// through (½, ½):
//
//	lower: (Σ_{j≤k} P1(x_j), Σ_{j>k} P0(x_j)),   upper: (Σ_{j>k} P1(x_j), Σ_{j≤k} P0(x_j)),
//
// x_1, x_2, … in order of decreasing likelihood ratio. The first vertex is not repeated at
// the end. When P0 = P1 the polygon degenerates to the segment [(0, 1), (1, 0)]; when the
// supports are disjoint it is the unit square. Polygon returns nil for a Pair that
// NewPair would reject.
func (p *Pair) Polygon() []Point {
	if p.check() != nil {
		return nil
	}
	gs := groups(p.P0, p.P1)
	poly := lowerChain(gs)
	// Upper chain, k = 1 … G−1 groups rejected: (P1 of the rest, P0 of the first k).
	up := make([]Point, len(gs)+1)
	var md, fa sum
	for k := len(gs); k >= 0; k-- {
		up[k].MD = md.value()
		if k > 0 {
			md.add(gs[k-1].p1)
		}
	}
	for k := 0; k <= len(gs); k++ {
		up[k].FA = fa.value()
		if k < len(gs) {
			fa.add(gs[k].p0)
		}
	}
	for _, q := range up[1 : len(up)-1] {
		if q != poly[len(poly)-1] && q != poly[0] {
			poly = append(poly, q)
		}
	}
	return poly
}

// lowerChain returns the vertices (MD_k, FA_k), k = 0 … G, of the lower-left boundary
// from (0, ΣP0) to (ΣP1, 0), without repeated points, for groups in decreasing ratio.
func lowerChain(gs []group) []Point {
	pts := make([]Point, len(gs)+1)
	var md, fa sum
	for k := 0; k <= len(gs); k++ {
		pts[k].MD = md.value()
		if k < len(gs) {
			md.add(gs[k].p1)
		}
	}
	for k := len(gs); k >= 0; k-- {
		pts[k].FA = fa.value()
		if k > 0 {
			fa.add(gs[k-1].p0)
		}
	}
	return slices.Compact(pts)
}

// Breakpoints returns finitely many guarantees (ε_j, δ_j), in increasing ε_j, that
// describe the pair's privacy region (KOV Remark 6.1 and the construction before it,
// generalised to pairs that are not symmetric; errata item 9):
//
//	∩_j R(ε_j, δ_j) = conv( R(P0, P1) ∪ R(P1, P0) ),     δ_j = max( d_ε_j(P0‖P1), d_ε_j(P1‖P0) ).
//
// R(P1, P0), the region with the roles of D0 and D1 exchanged, is the reflection of
// R(P0, P1) about the line md = fa. Because every R(ε, δ) is symmetric about that line,
// this hull is the smallest region of that form that contains R(P0, P1); it equals
// R(P0, P1) when the pair is symmetric (P0(x) = P1(π(x)) for a permutation π, the case of
// Remark 6.1). The pair, with the neighbouring inputs in either order, is (ε, δ)-DP if
// and only if the hull lies in R(ε, δ) (KOV Cor 2.3).
//
// The ε_j are the breaks of δ(ε) = max(d_ε(P0‖P1), d_ε(P1‖P0)) as a function of e^ε,
// which is convex and piecewise linear there:
//
//   - the log-likelihood ratios |ln(P0(x)/P1(x))| of the outcomes, from both directions;
//   - the points where d_ε(P0‖P1) and d_ε(P1‖P0) cross, which are not likelihood ratios
//     in general (a pair whose region is not symmetric can need them);
//   - ε = 0, the total-variation constraint md + fa ≥ 1 − TV, when the region has an
//     edge perpendicular to the line md = fa.
//
// Each δ_j is capped at 1 (which holds for every pair), so every entry is a valid
// dpkit.Budget even when the stored probabilities sum to slightly more than 1.
// Candidates whose constraint is implied by the others to within a relative 1e-12 of δ
// are dropped (the points (e^ε_j, δ_j) kept are the corners of the lower convex hull);
// dropping never turns a true statement into a false one: every returned (ε_j, δ_j) is
// a guarantee of the pair. Only finite ε_j are returned: beyond the
// largest finite ratio both divergences are constant, equal to the mass that only one
// input can produce, P0({P1 = 0}) and P1({P0 = 0}), so if such outcomes exist then every
// δ_j, including the last, is at least that mass.
//
// Breakpoints takes O(G²) time for G distinct likelihood ratios, and returns nil for a
// Pair that NewPair would reject.
func (p *Pair) Breakpoints() []dpkit.Budget {
	if p.check() != nil {
		return nil
	}
	gs := groups(p.P0, p.P1)
	rev := reversed(gs)
	type value struct{ eps, d01, d10 float64 }
	var vals []value
	for _, e := range candidates(gs, rev) {
		vals = append(vals, value{e, divergence(gs, e), divergence(rev, e)})
	}
	// δ is capped at 1, which every pair satisfies: a total that exceeds 1 by rounding
	// (NewPair allows 1e-9) could otherwise make δ_j a little above 1, not a valid Budget.
	knot := func(eps, d01, d10 float64) dpkit.Budget {
		return dpkit.Budget{Epsilon: eps, Delta: min(max(d01, d10), 1)}
	}
	var knots []dpkit.Budget
	for i, a := range vals {
		knots = append(knots, knot(a.eps, a.d01, a.d10))
		if i+1 == len(vals) {
			break
		}
		b := vals[i+1]
		if e, ok := crossing(a.eps, a.d01-a.d10, max(a.d01, a.d10), b.eps, b.d01-b.d10, max(b.d01, b.d10)); ok {
			knots = append(knots, knot(e, divergence(gs, e), divergence(rev, e)))
		}
	}
	return prune(knots)
}

// candidates returns 0 and the distinct positive finite log-likelihood ratios of the
// pair in both directions, ln(P0(x)/P1(x)) from gs and ln(P1(x)/P0(x)) from rev, in
// increasing order: the breaks of both divergences on ε ≥ 0.
func candidates(gs, rev []group) []float64 {
	eps := []float64{0}
	for _, g := range slices.Concat(gs, rev) {
		if g.l > 0 && !math.IsInf(g.l, 1) {
			eps = append(eps, g.l)
		}
	}
	slices.Sort(eps)
	return slices.Compact(eps)
}

// crossing returns the ε in (ea, eb) at which d_ε(P0‖P1) − d_ε(P1‖P0), linear in e^ε
// between consecutive candidates ea < eb with values da and db, changes sign. A
// difference within a relative pruneTol of zero is rounding noise and counts as zero.
func crossing(ea, da, scaleA, eb, db, scaleB float64) (float64, bool) {
	if math.Abs(da) <= pruneTol*scaleA || math.Abs(db) <= pruneTol*scaleB || (da > 0) == (db > 0) {
		return 0, false
	}
	w := da / (da - db) // where the root lies in [e^ea, e^eb], in (0, 1)
	gap := eb - ea
	var e float64
	if gap < 1 {
		e = ea + math.Log1p(w*math.Expm1(gap)) // e^e = e^ea (1 + w (e^gap − 1))
	} else {
		e = eb + ln(w+(-db/(da-db))*math.Exp(-gap)) // = e^eb (w + (1−w) e^(−gap))
	}
	return e, e > ea && e < eb
}

// prune drops the knots whose constraint is implied by the others: those at which δ(ε),
// as a function of e^ε, has no break. It keeps the lower convex hull of the points
// (e^ε_j, δ_j) (monotone chain), popping a point that lies on or above the chord of its
// kept neighbours to within pruneTol — comparing with kept neighbours, not adjacent
// candidates, so that two nearly equal candidates cannot hide a break between them.
// The last point goes if the curve is flat before it (it is flat after it), and ε = 0
// goes if it is implied by the next kept point and that point's mirror image (the
// constraints at ε and −ε are the two halves of R(ε, δ)).
func prune(knots []dpkit.Budget) []dpkit.Budget {
	kept := make([]dpkit.Budget, 0, len(knots))
	for _, k := range knots {
		for len(kept) >= 2 && !below(kept[len(kept)-2], kept[len(kept)-1], k) {
			kept = kept[:len(kept)-1]
		}
		kept = append(kept, k)
	}
	if n := len(kept); n >= 2 && !(kept[n-1].Delta < kept[n-2].Delta*(1-pruneTol)) {
		kept = kept[:n-1]
	}
	if len(kept) >= 2 {
		// md + fa ≥ 1 − δ_0 is the sum of the two constraints at ε_1, divided by
		// 1 + e^ε1, iff δ_0 ≥ (e^ε1 − 1 + 2 δ_1)/(e^ε1 + 1); by convexity δ_0 never
		// exceeds that value.
		e1, d1 := kept[1].Epsilon, kept[1].Delta
		s := math.Exp(-e1)
		implied := (-math.Expm1(-e1) + 2*d1*s) / (1 + s)
		if !(kept[0].Delta < implied*(1-pruneTol)) {
			kept = kept[1:]
		}
	}
	return kept
}

// below reports whether mid lies below the chord from lo to hi in the (e^ε, δ) plane by
// more than pruneTol·lo.Delta, i.e. whether δ has a break at mid.Epsilon.
func below(lo, mid, hi dpkit.Budget) bool {
	// Weight of lo in the interpolation at e^mid.eps between e^lo.eps and e^hi.eps.
	lambda := math.Expm1(mid.Epsilon-hi.Epsilon) / math.Expm1(lo.Epsilon-hi.Epsilon)
	interp := lambda*lo.Delta + (1-lambda)*hi.Delta
	return mid.Delta < interp-pruneTol*lo.Delta
}
