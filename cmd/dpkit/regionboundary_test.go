package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// lowerY evaluates the lower boundary of ∩_j R(ε_j, δ_j) literally (KOV §2, eq. 2):
// y(x) = max(0, max_j max(1 − δ_j − e^ε_j·x, e^−ε_j·(1 − δ_j − x))).
func lowerY(pairs []dpkit.Budget, x float64) float64 {
	y := 0.0
	for _, p := range pairs {
		y = math.Max(y, 1-p.Delta-math.Exp(p.Epsilon)*x)
		y = math.Max(y, math.Exp(-p.Epsilon)*(1-p.Delta-x))
	}
	return y
}

// interpolate evaluates the piecewise-linear curve through vs (by increasing x) at x.
func interpolate(vs []point, x float64) float64 {
	for i := 1; i < len(vs); i++ {
		if x <= vs[i].x {
			a, b := vs[i-1], vs[i]
			return a.y + (b.y-a.y)*(x-a.x)/(b.x-a.x)
		}
	}
	return vs[len(vs)-1].y
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// One (ε, δ) pair: R(ε, δ) has the vertices (0, 1−δ), the point on the diagonal
// x = y = (1−δ)/(1+e^ε), and (1−δ, 0) (KOV Fig. 1), then y = 0 up to x = 1.
func TestLowerBoundarySinglePair(t *testing.T) {
	for _, p := range []dpkit.Budget{{Epsilon: 1, Delta: 0.1}, {Epsilon: 0.1, Delta: 0}, {Epsilon: 3, Delta: 0.5}} {
		v := (1 - p.Delta) / (1 + math.Exp(p.Epsilon))
		want := []point{{0, 1 - p.Delta}, {v, v}, {1 - p.Delta, 0}, {1, 0}}
		if p.Delta == 0 {
			want = want[:3] // (1 − δ, 0) is the end point (1, 0)
		}
		got := lowerBoundary([]dpkit.Budget{p})
		if len(got) != len(want) {
			t.Fatalf("%v: vertices %v, want %v", p, got, want)
		}
		for i := range want {
			if !near(got[i].x, want[i].x, 1e-15) || !near(got[i].y, want[i].y, 1e-15) {
				t.Errorf("%v: vertex %d = %v, want %v", p, i, got[i], want[i])
			}
		}
	}
}

func TestLowerBoundarySpecialCases(t *testing.T) {
	for _, c := range []struct {
		name  string
		pairs []dpkit.Budget
		want  []point
	}{
		{"no pairs: the whole square", nil, []point{{0, 0}, {1, 0}}},
		{"δ = 1: the whole square", []dpkit.Budget{{Epsilon: 0.5, Delta: 1}}, []point{{0, 0}, {1, 0}}},
		{"(0, 0): the anti-diagonal", []dpkit.Budget{{Epsilon: 0, Delta: 0}}, []point{{0, 1}, {1, 0}}},
		// e^800 overflows float64 and e^−800 underflows: the boundary drops from
		// (0, 0.75) to y ≈ 0 at x ≈ 1e-308 (it stays above 0 by < e^−800 until x = 0.75).
		{"ε = 800", []dpkit.Budget{{Epsilon: 800, Delta: 0.25}}, []point{{0, 0.75}, {0, 0}, {1, 0}}},
	} {
		got := lowerBoundary(c.pairs)
		ok := len(got) == len(c.want)
		for i := 0; ok && i < len(got); i++ {
			ok = near(got[i].x, c.want[i].x, 1e-300) && near(got[i].y, c.want[i].y, 1e-15)
		}
		if !ok {
			t.Errorf("%s: vertices %v, want %v", c.name, got, c.want)
		}
	}
}

// For random sets of pairs the vertices lie on the literal formula, the polyline through
// them equals it everywhere, it is convex (slopes increase), and it is symmetric under
// reflection in the diagonal (R(ε, δ) is: (x, y) ∈ R ⇔ (y, x) ∈ R).
func TestLowerBoundaryMatchesFormula(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 300 {
		pairs := make([]dpkit.Budget, 1+rng.IntN(40))
		for i := range pairs {
			pairs[i] = dpkit.Budget{Epsilon: 5 * rng.Float64() * rng.Float64(), Delta: 0.2 * rng.Float64() * rng.Float64()}
		}
		vs := lowerBoundary(pairs)
		if vs[0].x != 0 || vs[len(vs)-1].x != 1 {
			t.Fatalf("trial %d: ends %v, %v, want x = 0 and x = 1", trial, vs[0], vs[len(vs)-1])
		}
		for i, v := range vs {
			if !near(v.y, lowerY(pairs, v.x), 1e-13) {
				t.Fatalf("trial %d: vertex %v off the boundary (y = %v)", trial, v, lowerY(pairs, v.x))
			}
			if i > 0 && !(v.x > vs[i-1].x) {
				t.Fatalf("trial %d: x not increasing at vertex %d: %v", trial, i, vs)
			}
			if i > 1 {
				s0 := (vs[i-1].y - vs[i-2].y) / (vs[i-1].x - vs[i-2].x)
				s1 := (v.y - vs[i-1].y) / (v.x - vs[i-1].x)
				if s1 < s0-1e-9*math.Max(1, math.Abs(s0)) {
					t.Fatalf("trial %d: not convex at vertex %d: slopes %v then %v", trial, i-1, s0, s1)
				}
			}
			// Symmetry: a boundary point (x, y) with y > 0 reflects to (y, x) on it.
			if v.y > 1e-9 && v.x > 0 && !near(lowerY(pairs, v.y), v.x, 1e-12) {
				t.Fatalf("trial %d: y(%v) = %v, want %v (diagonal symmetry)", trial, v.y, lowerY(pairs, v.y), v.x)
			}
		}
		for range 50 {
			x := rng.Float64()
			if got, want := interpolate(vs, x), lowerY(pairs, x); !near(got, want, 1e-12) {
				t.Fatalf("trial %d: boundary at x = %v is %v, formula %v", trial, x, got, want)
			}
		}
	}
}

func TestRegionPolygonIsCentrallySymmetric(t *testing.T) {
	pairs := []dpkit.Budget{{Epsilon: 1, Delta: 0.05}, {Epsilon: 0.2, Delta: 0.2}}
	lower := lowerBoundary(pairs)
	poly := regionPolygon(pairs)
	if len(poly) != 2*len(lower) {
		t.Fatalf("polygon has %d vertices, want %d", len(poly), 2*len(lower))
	}
	for i, p := range lower {
		if q := poly[len(lower)+i]; q.x != 1-p.x || q.y != 1-p.y {
			t.Errorf("upper vertex %d = %v, want the mirror of %v", i, q, p)
		}
	}
}

// The regions the plot draws are nested: exact ⊂ KOV bound ⊂ basic and exact ⊂ DRV
// (KOV §3), i.e. the lower boundary of a smaller region lies above the larger one's.
func TestRegionsNested(t *testing.T) {
	ms := []compose.Mech{{Epsilon: 0.1, Delta: 0.001, Count: 30}}
	region := map[compose.Theorem][]dpkit.Budget{}
	for _, th := range allTheorems {
		pairs, err := compose.Region(th, ms, nil)
		if err != nil {
			t.Fatal(err)
		}
		region[th] = pairs
	}
	for _, c := range [][2]compose.Theorem{{compose.Exact, compose.KOV}, {compose.KOV, compose.Basic}, {compose.Exact, compose.DRV}} {
		inner, outer := lowerBoundary(region[c[0]]), lowerBoundary(region[c[1]])
		for i := 0; i <= 2000; i++ {
			x := float64(i) / 2000
			if a, b := interpolate(inner, x), interpolate(outer, x); a < b-1e-12 {
				t.Fatalf("%s region not inside %s at x = %v: lower boundaries %v < %v", c[0], c[1], x, a, b)
			}
		}
	}
}
