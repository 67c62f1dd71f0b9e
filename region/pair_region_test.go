package region

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpkit/dpkit"
)

// Vertices by hand: order the outcomes by decreasing P0/P1 and accept H0 on a growing
// prefix; MD = P1(accepted), FA = P0(rejected).
func TestRegionReference(t *testing.T) {
	cases := []struct {
		name   string
		p0, p1 []float64
		want   []Point
	}{
		// Ratios 3, 1/3: (0,1) → accept x1 → (1/4, 1/4) → (1, 0).
		{"randomized response ln 3", rrP0, rrP1, []Point{{0, 1}, {0.25, 0.25}, {1, 0}}},
		// Ratios 2, 0.8, 0: (0,1) → (0.3, 0.4) → (0.8, 0); the last step runs along the axis.
		{"asymmetric", asymP0, asymP1, []Point{{0, 1}, {0.3, 0.4}, {0.8, 0}}},
		// Ratio +Inf first: (0,1) → (0, 0.9) along the axis → (1, 0).
		{"point mass", []float64{0.1, 0.9}, []float64{0, 1}, []Point{{0, 0.9}, {1, 0}}},
		{"identical", []float64{0.2, 0.8}, []float64{0.2, 0.8}, []Point{{0, 1}, {1, 0}}},
		{"disjoint", []float64{0.5, 0.5, 0}, []float64{0, 0, 1}, []Point{{0, 0}}},
		// Equal ratios 2, 2 are merged: no vertex at (0.1, 0.8).
		{"ties", []float64{0.2, 0.4, 0.4}, []float64{0.1, 0.2, 0.7}, []Point{{0, 1}, {0.3, 0.4}, {1, 0}}},
	}
	for _, c := range cases {
		got := mustPair(t, c.p0, c.p1).Region()
		if !samePoints(got, c.want, 1e-15) {
			t.Errorf("%s: Region() = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPolygonReference(t *testing.T) {
	cases := []struct {
		name   string
		p0, p1 []float64
		want   []Point
	}{
		// Lower chain of TestRegionReference plus the axes, then its reflection through
		// (½, ½): (0.3, 0.4) ↦ (0.7, 0.6), (0.8, 0) ↦ (0.2, 1).
		{"asymmetric", asymP0, asymP1, []Point{{0, 1}, {0.3, 0.4}, {0.8, 0}, {1, 0}, {0.7, 0.6}, {0.2, 1}}},
		{"randomized response ln 3", rrP0, rrP1, []Point{{0, 1}, {0.25, 0.25}, {1, 0}, {0.75, 0.75}}},
		{"identical", []float64{0.2, 0.8}, []float64{0.2, 0.8}, []Point{{0, 1}, {1, 0}}},
		{"disjoint", []float64{1, 0}, []float64{0, 1}, []Point{{0, 1}, {0, 0}, {1, 0}, {1, 1}}},
	}
	for _, c := range cases {
		got := mustPair(t, c.p0, c.p1).Polygon()
		if !samePoints(got, c.want, 1e-15) {
			t.Errorf("%s: Polygon() = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestBreakpointsReference(t *testing.T) {
	ln3 := math.Log(3)
	cases := []struct {
		name   string
		p0, p1 []float64
		want   []dpkit.Budget
		source string
	}{
		{"randomized response ln 3", rrP0, rrP1, []dpkit.Budget{{Epsilon: ln3, Delta: 0}},
			"KOV Remark 6.1: E = {ln 3}, d_ln3 = 0"},
		{"2-fold randomized response ln 3",
			[]float64{9.0 / 16, 3.0 / 16, 3.0 / 16, 1.0 / 16}, []float64{1.0 / 16, 3.0 / 16, 3.0 / 16, 9.0 / 16},
			[]dpkit.Budget{{Epsilon: 0, Delta: 0.5}, {Epsilon: 2 * ln3, Delta: 0}},
			"KOV eq. (6), k = 2: δ_0 = (9 − 1)/16 at ε̃ = 0 (an outcome with ratio 1 gives an edge of normal (1, 1))"},
		{"3-fold randomized response ln 3",
			[]float64{27.0 / 64, 9.0 / 64, 9.0 / 64, 9.0 / 64, 3.0 / 64, 3.0 / 64, 3.0 / 64, 1.0 / 64},
			[]float64{1.0 / 64, 3.0 / 64, 3.0 / 64, 3.0 / 64, 9.0 / 64, 9.0 / 64, 9.0 / 64, 27.0 / 64},
			[]dpkit.Budget{{Epsilon: ln3, Delta: 3.0 / 8}, {Epsilon: 3 * ln3, Delta: 0}},
			"KOV eq. (6), k = 3: δ_1 = (27 − 3)/64; ε̃ = 0 is implied (no ratio-1 outcome)"},
		{"asymmetric", asymP0, asymP1,
			[]dpkit.Budget{{Epsilon: 0, Delta: 0.3}, {Epsilon: math.Log(4.0 / 3), Delta: 0.2}},
			"by hand: d(P0‖P1) = 0.6 − 0.3e^ε and d(P1‖P0) = 0.2 on e^ε ≥ 5/4 cross at e^ε = 4/3, " +
				"which is no likelihood ratio; ln 1.25 and ln 2 are implied by their neighbours"},
		{"identical", []float64{0.2, 0.8}, []float64{0.2, 0.8}, []dpkit.Budget{{Epsilon: 0, Delta: 0}},
			"R(0, 0) is the segment md + fa = 1"},
		{"disjoint", []float64{1, 0}, []float64{0, 1}, []dpkit.Budget{{Epsilon: 0, Delta: 1}},
			"the whole square"},
		{"point masses", []float64{0.1, 0.6, 0.3, 0}, []float64{0, 0.3, 0.6, 0.1},
			[]dpkit.Budget{{Epsilon: math.Log(2), Delta: 0.1}},
			"the canonical pair of (ln 2, 0.1): δ stays 0.1 at every ε ≥ ln 2"},
	}
	for _, c := range cases {
		got := mustPair(t, c.p0, c.p1).Breakpoints()
		ok := len(got) == len(c.want)
		for i := 0; ok && i < len(got); i++ {
			ok = math.Abs(got[i].Epsilon-c.want[i].Epsilon) <= 1e-14*max(1, c.want[i].Epsilon) &&
				math.Abs(got[i].Delta-c.want[i].Delta) <= 1e-14
		}
		if !ok {
			t.Errorf("%s: Breakpoints() = %v, want %v (%s)", c.name, got, c.want, c.source)
		}
	}
}

// Taking ε_j only at likelihood ratios, as Remark 6.1 does for symmetric pairs, is not
// enough for the asymmetric pair: (0.7, 0.07) satisfies R(0, 0.3), R(ln 1.25, 0.225) and
// R(ln 2, 0.2) but lies outside the hull of R(P0, P1) and its mirror image, whose edge
// md + (4/3) fa ≥ 0.8 it violates (0.7 + 0.0933 = 0.7933). Breakpoints has the crossing.
func TestBreakpointsNeedCrossings(t *testing.T) {
	z := Point{0.7, 0.07}
	ratiosOnly := []dpkit.Budget{{Epsilon: 0, Delta: 0.3}, {Epsilon: math.Log(1.25), Delta: 0.225}, {Epsilon: math.Log(2), Delta: 0.2}}
	if m := budgetsMargin(ratiosOnly, z); m <= 0 {
		t.Fatalf("ratios-only description should contain %v (margin %g)", z, m)
	}
	if m := budgetsMargin(mustPair(t, asymP0, asymP1).Breakpoints(), z); m >= 0 {
		t.Errorf("Breakpoints should exclude %v (margin %g)", z, m)
	}
}

// describesHull checks ∩_j R(ε_j, δ_j) = conv(R(P0,P1) ∪ R(P1,P0)) on random points and
// on points just inside and outside the hull's vertices, skipping points within 1e-9 of
// either boundary.
func describesHull(t tester, p *Pair, rng *rand.Rand) {
	t.Helper()
	bs := p.Breakpoints()
	var all []Point
	for _, v := range p.Polygon() {
		all = append(all, v, Point{v.FA, v.MD}) // and the mirror image about md = fa
	}
	hull := convexHull(all)
	pts := make([]Point, 0, 300)
	for range 200 {
		pts = append(pts, Point{rng.Float64(), rng.Float64()})
	}
	for _, v := range hull {
		for _, s := range []float64{-1e-6, 1e-6} {
			z := Point{v.MD + s*(v.MD-0.5), v.FA + s*(v.FA-0.5)}
			if z.MD >= 0 && z.MD <= 1 && z.FA >= 0 && z.FA <= 1 {
				pts = append(pts, z)
			}
		}
	}
	for _, z := range pts {
		mb, mh := budgetsMargin(bs, z), signedDistance(hull, z)
		if math.Abs(mb) < 1e-9 || math.Abs(mh) < 1e-9 {
			continue
		}
		if (mb > 0) != (mh > 0) {
			t.Fatalf("P0 = %v, P1 = %v: at %v the breakpoints %v say inside = %v (margin %g) but the hull %v says %v (distance %g)",
				p.P0, p.P1, z, bs, mb > 0, mb, hull, mh > 0, mh)
		}
		in := true
		for _, b := range bs {
			ok, err := Contains(b, z.MD, z.FA)
			if err != nil {
				t.Fatalf("Contains(%v, %v): %v", b, z, err)
			}
			in = in && ok
		}
		if in != (mb > 0) {
			t.Fatalf("Contains disagrees with the margin %g at %v", mb, z)
		}
	}
}

func TestBreakpointsDescribeRegion(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pairs := [][2][]float64{
		{rrP0, rrP1},
		{asymP0, asymP1},
		{[]float64{0.2, 0.8}, []float64{0.2, 0.8}},
		{[]float64{1, 0}, []float64{0, 1}},
		{[]float64{0.1, 0.6, 0.3, 0}, []float64{0, 0.3, 0.6, 0.1}},
		{[]float64{0.5, 0.3, 0.2, 0}, []float64{0.05, 0.15, 0.3, 0.5}},
		{[]float64{0.9, 0.1}, []float64{0.5, 0.5}},
	}
	for _, pp := range pairs {
		describesHull(t, mustPair(t, pp[0], pp[1]), rng)
	}
}

// For symmetric pairs (the assumption of KOV Remark 6.1) the hull is R(P0, P1) itself.
func TestBreakpointsSymmetricEqualsPolygon(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// P1 is P0 with outcomes reversed: π(x) = n−1−x.
	for _, p0 := range [][]float64{{0.5, 0.2, 0.2, 0.1}, {0.4, 0.35, 0.25}, {0.7, 0.2, 0.1, 0, 0}} {
		p1 := make([]float64, len(p0))
		for i := range p0 {
			p1[len(p0)-1-i] = p0[i]
		}
		p := mustPair(t, p0, p1)
		poly, bs := p.Polygon(), p.Breakpoints()
		for range 500 {
			z := Point{rng.Float64(), rng.Float64()}
			mb, mp := budgetsMargin(bs, z), signedDistance(poly, z)
			if math.Abs(mb) > 1e-9 && math.Abs(mp) > 1e-9 && (mb > 0) != (mp > 0) {
				t.Fatalf("%v: at %v breakpoints say %v, polygon says %v", p, z, mb > 0, mp > 0)
			}
		}
	}
}
