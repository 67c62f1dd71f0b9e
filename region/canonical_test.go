package region

import (
	"math"
	"testing"

	"github.com/dpkit/dpkit"
)

func TestCanonicalReference(t *testing.T) {
	// KOV eq. (17)/(18) by hand at e^ε = 3, δ = 0.1: (1−δ)·3/4 = 0.675, (1−δ)/4 = 0.225.
	p := mustCanonical(t, dpkit.Budget{Epsilon: math.Log(3), Delta: 0.1})
	want0, want1 := []float64{0.1, 0.675, 0.225, 0}, []float64{0, 0.225, 0.675, 0.1}
	for i := range want0 {
		if !closeAbs(p.P0[i], want0[i], 1e-15) || !closeAbs(p.P1[i], want1[i], 1e-15) {
			t.Fatalf("Canonical(ln 3, 0.1) = %v, want P0 = %v, P1 = %v", p, want0, want1)
		}
	}
	// ε = 700: e^ε is near overflow; the small probability is 0.75·e^−700, computed
	// without forming e^700 (reference: math.Exp(-700) is a normal float64, exact to an ulp).
	p = mustCanonical(t, dpkit.Budget{Epsilon: 700, Delta: 0.25})
	if p.P0[1] != 0.75 || !near(p.P0[2], 0.75*math.Exp(-700), 1e-15) || p.P1[2] != 0.75 {
		t.Errorf("Canonical(700, 0.25) = %v", p)
	}
	_, err := Canonical(dpkit.Budget{Epsilon: 1, Delta: -0.5})
	wantParamError(t, err, "delta")
	// ε = 800: (1−δ)/(1+e^ε) ≈ 3e-348 is not representable.
	_, err = Canonical(dpkit.Budget{Epsilon: 800, Delta: 0.25})
	wantParamError(t, err, "epsilon")
	// δ = 1 needs no small probability: the supports are disjoint for every ε.
	if _, err := Canonical(dpkit.Budget{Epsilon: 800, Delta: 1}); err != nil {
		t.Errorf("Canonical(800, 1): %v", err)
	}
}

// The hockey stick of the canonical pair is ImpliedDelta, in both directions (KOV
// Remark A.1(a) and §6.1: the pair's region is R(ε, δ)).
func TestCanonicalHockeyStickIsImpliedDelta(t *testing.T) {
	for _, b := range []dpkit.Budget{{Epsilon: 0, Delta: 0}, {Epsilon: 0.1, Delta: 1e-6}, {Epsilon: 1, Delta: 0},
		{Epsilon: 2.5, Delta: 0.3}, {Epsilon: 30, Delta: 1e-12}, {Epsilon: 700, Delta: 0.01}, {Epsilon: 3, Delta: 1}} {
		p := mustCanonical(t, b)
		for _, et := range []float64{0, 1e-9, 0.05, 0.5, 1, 2.4999, 2.5, 3, 29, 31, 700, 900} {
			want, err := ImpliedDelta(b, et)
			if err != nil {
				t.Fatal(err)
			}
			// Relative 1e-12, or 1e-15 absolute: the canonical probabilities are rounded,
			// so near a tie the term (1−δ)(e^ε − e^ε̃)/(1+e^ε) carries their rounding.
			for dir, got := range []float64{p.HockeyStick(et), p.HockeyStickReverse(et)} {
				if math.Abs(got-want) > 1e-12*want+1e-15 {
					t.Errorf("%v, direction %d: d at ε̃ = %g is %.17g, ImpliedDelta %.17g", b, dir, et, got, want)
				}
			}
		}
	}
}

func TestCanonicalRegionIsBoundary(t *testing.T) {
	for _, b := range []dpkit.Budget{{Epsilon: 0, Delta: 0}, {Epsilon: 0, Delta: 0.4}, {Epsilon: math.Log(3), Delta: 0},
		{Epsilon: 1, Delta: 1e-6}, {Epsilon: 4, Delta: 0.5}, {Epsilon: 50, Delta: 0}, {Epsilon: 700, Delta: 0.2},
		{Epsilon: 2, Delta: 1}, {Epsilon: 1e-20, Delta: 0.1}} {
		want, err := Boundary(b)
		if err != nil {
			t.Fatal(err)
		}
		got := mustCanonical(t, b).Region()
		if !samePoints(got, want, 1e-15) {
			t.Errorf("%v: Canonical(b).Region() = %v, Boundary(b) = %v", b, got, want)
		}
	}
}

// Canonical(ε, δ) is its own description: Breakpoints = [(ε, δ)] and Epsilon(δ) = ε.
func TestCanonicalBreakpointsAndEpsilon(t *testing.T) {
	for _, b := range []dpkit.Budget{{Epsilon: 0.5, Delta: 0}, {Epsilon: 1, Delta: 1e-6}, {Epsilon: 10, Delta: 0.2}} {
		p := mustCanonical(t, b)
		bs := p.Breakpoints()
		if len(bs) != 1 || math.Abs(bs[0].Epsilon-b.Epsilon) > 1e-14*b.Epsilon || math.Abs(bs[0].Delta-b.Delta) > 1e-15 {
			t.Errorf("%v: Breakpoints() = %v", b, bs)
		}
		eps, err := p.Epsilon(b.Delta)
		if err != nil || math.Abs(eps-b.Epsilon) > 1e-14*max(1, b.Epsilon) {
			t.Errorf("%v: Epsilon(δ) = %.17g, %v", b, eps, err)
		}
	}
}
