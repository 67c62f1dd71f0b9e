package region

import (
	"math"
	"testing"

	"github.com/dpkit/dpkit"
)

func TestContainsReference(t *testing.T) {
	ln3 := math.Log(3)
	// Hand-evaluated against the four inequalities of KOV eq. (2) and its reflection,
	// e^ε = 3. Every point is at least 0.05 away from the boundary, so no rounding issue.
	cases := []struct {
		b      dpkit.Budget
		md, fa float64
		want   bool
		why    string
	}{
		{dpkit.Budget{Epsilon: ln3}, 0.3, 0.3, true, "0.3 + 3·0.3 = 1.2 ≥ 1; upper: 0.7 + 3·0.7 ≥ 1"},
		{dpkit.Budget{Epsilon: ln3}, 0.2, 0.2, false, "0.2 + 3·0.2 = 0.8 < 1"},
		{dpkit.Budget{Epsilon: ln3}, 0.5, 0.5, true, "the trivial test"},
		{dpkit.Budget{Epsilon: ln3}, 0, 1, true, "always reject H0"},
		{dpkit.Budget{Epsilon: ln3}, 1, 0, true, "never reject H0"},
		{dpkit.Budget{Epsilon: ln3}, 0, 0.9, false, "md = 0 forces fa ≥ 1−δ = 1"},
		{dpkit.Budget{Epsilon: ln3}, 0.7, 0.7, true, "upper: 0.3 + 3·0.3 = 1.2 ≥ 1"},
		{dpkit.Budget{Epsilon: ln3}, 0.8, 0.8, false, "upper: 0.2 + 3·0.2 = 0.8 < 1"},
		{dpkit.Budget{Epsilon: ln3}, 0.1, 0.6, false, "md + 3·fa = 1.9 ≥ 1 but 3·md + fa = 0.9 < 1"},
		{dpkit.Budget{Epsilon: ln3, Delta: 0.1}, 0, 0.95, true, "fa ≥ 1−δ = 0.9"},
		{dpkit.Budget{Epsilon: ln3, Delta: 0.1}, 0, 0.85, false, "fa < 0.9"},
		{dpkit.Budget{Epsilon: ln3, Delta: 0.1}, 0.2, 0.2, false, "0.2 + 3·0.2 = 0.8 < 1−δ = 0.9"},
		{dpkit.Budget{Epsilon: ln3, Delta: 0.1}, 0.25, 0.25, true, "0.25 + 3·0.25 = 1 ≥ 0.9"},
		{dpkit.Budget{Epsilon: 0, Delta: 0}, 0.3, 0.7, true, "ε = δ = 0: the segment md + fa = 1"},
		{dpkit.Budget{Epsilon: 0, Delta: 0}, 0.3, 0.6, false, "ε = δ = 0: below the segment"},
		{dpkit.Budget{Epsilon: 2, Delta: 1}, 0, 0, true, "δ = 1: the whole square"},
		{dpkit.Budget{Epsilon: 1000}, 1e-300, 0.5, true, "e^ε overflows; 1e-300·e^1000 ≫ 1"},
		{dpkit.Budget{Epsilon: 1000}, 0.5, 0, false, "fa = 0 needs md ≥ 1−δ = 1 even when e^ε = +Inf"},
	}
	for _, c := range cases {
		got, err := Contains(c.b, c.md, c.fa)
		if err != nil {
			t.Fatalf("Contains(%v, %g, %g): %v", c.b, c.md, c.fa, err)
		}
		if got != c.want {
			t.Errorf("Contains(%v, %g, %g) = %v, want %v (%s)", c.b, c.md, c.fa, got, c.want, c.why)
		}
	}
}

func TestContainsErrors(t *testing.T) {
	cases := []struct {
		b      dpkit.Budget
		md, fa float64
		name   string
	}{
		{dpkit.Budget{Epsilon: math.NaN()}, 0.5, 0.5, "epsilon"},
		{dpkit.Budget{Epsilon: math.Inf(1)}, 0.5, 0.5, "epsilon"},
		{dpkit.Budget{Epsilon: -1}, 0.5, 0.5, "epsilon"},
		{dpkit.Budget{Epsilon: 1, Delta: 2}, 0.5, 0.5, "delta"},
		{dpkit.Budget{Epsilon: 1, Delta: math.NaN()}, 0.5, 0.5, "delta"},
		{dpkit.Budget{Epsilon: 1}, math.NaN(), 0.5, "md"},
		{dpkit.Budget{Epsilon: 1}, -0.1, 0.5, "md"},
		{dpkit.Budget{Epsilon: 1}, 0.5, 1.5, "fa"},
		{dpkit.Budget{Epsilon: 1}, 0.5, math.Inf(-1), "fa"},
	}
	for _, c := range cases {
		_, err := Contains(c.b, c.md, c.fa)
		wantParamError(t, err, c.name)
	}
}

func TestBoundaryReference(t *testing.T) {
	ln3 := math.Log(3)
	// v = (1−δ)/(1+e^ε) by hand: e^ε = 3 gives v = (1−δ)/4.
	cases := []struct {
		b    dpkit.Budget
		want []Point
	}{
		{dpkit.Budget{Epsilon: ln3}, []Point{{0, 1}, {0.25, 0.25}, {1, 0}}},
		{dpkit.Budget{Epsilon: ln3, Delta: 0.1}, []Point{{0, 0.9}, {0.225, 0.225}, {0.9, 0}}},
		{dpkit.Budget{Epsilon: 0, Delta: 0.2}, []Point{{0, 0.8}, {0.8, 0}}},
		{dpkit.Budget{Epsilon: 1e-20, Delta: 0}, []Point{{0, 1}, {1, 0}}}, // e^(−1e-20) rounds to 1
		{dpkit.Budget{Epsilon: 3, Delta: 1}, []Point{{0, 0}}},
		// e^(−800) underflows to 0: the vertex is (0, 0) up to 1e-348.
		{dpkit.Budget{Epsilon: 800}, []Point{{0, 1}, {0, 0}, {1, 0}}},
	}
	for _, c := range cases {
		got, err := Boundary(c.b)
		if err != nil {
			t.Fatalf("Boundary(%v): %v", c.b, err)
		}
		if !samePoints(got, c.want, 1e-15) {
			t.Errorf("Boundary(%v) = %v, want %v", c.b, got, c.want)
		}
	}
	if _, err := Boundary(dpkit.Budget{Epsilon: -1}); err == nil {
		t.Error("Boundary(ε = −1): want an error")
	} else {
		wantParamError(t, err, "epsilon")
	}
}

// The middle vertex of Boundary lies on both lower constraints: a step of 1e-12 towards
// (1, 1) is inside R(ε, δ), a step away is outside.
func TestBoundaryVertexIsTight(t *testing.T) {
	for _, b := range []dpkit.Budget{{Epsilon: 0.1, Delta: 0}, {Epsilon: 1, Delta: 1e-6}, {Epsilon: 5, Delta: 0.3}} {
		pts, err := Boundary(b)
		if err != nil {
			t.Fatal(err)
		}
		v := pts[1]
		in, _ := Contains(b, v.MD+1e-12, v.FA+1e-12)
		out, _ := Contains(b, v.MD-1e-12, v.FA-1e-12)
		if !in || out {
			t.Errorf("%v: vertex %v: inside step %v, outside step %v", b, v, in, out)
		}
	}
}

// math.Exp on amd64 returns +Inf from x ≈ 709.436 (Go 1.26), though e^709.6 ≈ 1.5e308 is
// finite. With e^ε = 1.5e308: 0.5 + 1.5e308·1e-309 = 0.65 < 1, so the point is outside;
// an early +Inf would put it inside.
func TestContainsNearOverflow(t *testing.T) {
	in, err := Contains(dpkit.Budget{Epsilon: 709.6}, 0.5, 1e-309)
	if err != nil || in {
		t.Errorf("Contains(709.6, 0.5, 1e-309) = %v, %v; want false", in, err)
	}
	in, err = Contains(dpkit.Budget{Epsilon: 709.6}, 0.5, 1e-308) // 0.5 + 1.5 ≥ 1
	if err != nil || !in {
		t.Errorf("Contains(709.6, 0.5, 1e-308) = %v, %v; want true", in, err)
	}
	// exp against e·e^(x−1), and e^709.7 against 2^1023·e^(709.7 − 1023 ln 2), both with
	// arguments where math.Exp is right.
	for _, x := range []float64{709.2, 709.5, 709.7, 709.78} {
		want := math.Ldexp(math.Exp(x-1023*math.Ln2), 1023)
		if got := exp(x); !near(got, want, 1e-13) {
			t.Errorf("exp(%g) = %g, want %g", x, got, want)
		}
	}
	if !math.IsInf(exp(709.8), 1) {
		t.Error("exp(709.8) must overflow")
	}
}
