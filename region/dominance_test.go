package region

import (
	"math"
	"testing"

	"github.com/dpkit/dpkit"
)

func TestDominatesReference(t *testing.T) {
	rr3 := randomizedResponse(t, math.Log(3))
	rr2 := randomizedResponse(t, math.Log(2))
	trivial := mustPair(t, []float64{1}, []float64{1})
	asym := mustPair(t, asymP0, asymP1)
	can3 := mustCanonical(t, dpkit.Budget{Epsilon: math.Log(3)})
	cases := []struct {
		name string
		m, p *Pair
		want bool
		why  string
	}{
		{"rr3 ≥ rr2", rr3, rr2, true, "d_ε of RR(ln 2) ≤ that of RR(ln 3) at every ε (KOV Thm 2.4: RR(ln 2) is a post-processing)"},
		{"rr2 ≥ rr3", rr2, rr3, false, "at ε = ln 2: 0 < 1/4"},
		{"rr3 ≥ trivial", rr3, trivial, true, "a constant output is a post-processing of anything"},
		{"trivial ≥ rr3", trivial, rr3, false, "d_0 = 0 < 1/2"},
		{"canonical ≥ rr", can3, rr3, true, "equal regions (§6.1)"},
		{"rr ≥ canonical", rr3, can3, true, "equal regions"},
		{"asym ≥ swapped", asym, swapped(t, asym), false, "at ε = ln 2: d(P0‖P1) = 0 < 0.2 = d(P1‖P0)"},
		{"asym ≥ asym", asym, asym, true, "reflexive"},
		{"nil", nil, rr3, false, "invalid input"},
		{"invalid", rr3, &Pair{P0: []float64{1}}, false, "invalid input"},
	}
	for _, c := range cases {
		if got := Dominates(c.m, c.p); got != c.want {
			t.Errorf("%s: Dominates = %v, want %v (%s)", c.name, got, c.want, c.why)
		}
	}
}

// Merging outcomes with equal likelihood ratio gives the same region; the rounding of the
// merged probabilities must not break Dominates in either direction.
func TestDominatesTies(t *testing.T) {
	m := mustPair(t, []float64{0.2, 0.4, 0.4}, []float64{0.1, 0.2, 0.7})
	merged := mustPair(t, []float64{0.6000000000000001, 0.4}, []float64{0.30000000000000004, 0.7})
	if !Dominates(m, merged) || !Dominates(merged, m) {
		t.Errorf("merging outcomes of equal ratio: Dominates %v / %v, want true / true",
			Dominates(m, merged), Dominates(merged, m))
	}
	// Splitting the second outcome 3 : 4 in float64 rounds P0' by an ulp; d_0(P1‖P0) =
	// 1 − 0.99999237… cancels, so that ulp is a relative 1.5e-11 of d — more than a
	// relative tolerance on d allows, within what perturbing the probabilities by 1e-12
	// explains (found by TestPropPostProcessingIsDominated).
	m = mustPair(t, []float64{7.629336324033172e-06, 0.999992370663676}, []float64{0, 1})
	split := mustPair(t, []float64{7.629336324033172e-06, 0, 0.4285681588558611, 0.5714242118078148},
		[]float64{0, 0, 0.42857142857142855, 0.5714285714285714})
	if !Dominates(m, split) {
		t.Error("a pair must dominate its float64 post-processing")
	}
}

// The tolerance is not a blanket one: a change of 1e-9 in ε is detected.
func TestDominatesResolution(t *testing.T) {
	a, b := randomizedResponse(t, 1), randomizedResponse(t, 1+1e-9)
	if Dominates(a, b) {
		t.Error("RR(1) must not dominate RR(1 + 1e-9)")
	}
	if !Dominates(b, a) {
		t.Error("RR(1 + 1e-9) must dominate RR(1)")
	}
}

// Dominates on canonical pairs is Implies (Cor 2.3 with §6.1): R(ε', δ') ⊆ R(ε, δ) iff
// every (ε', δ')-DP mechanism is (ε, δ)-DP.
func TestDominatesCanonicalIsImplies(t *testing.T) {
	bs := []dpkit.Budget{{Epsilon: 0, Delta: 0}, {Epsilon: 0.5, Delta: 0}, {Epsilon: 1, Delta: 0}, {Epsilon: 1, Delta: 0.1},
		{Epsilon: 0.5, Delta: 0.3}, {Epsilon: 2, Delta: 0.05}, {Epsilon: 0, Delta: 0.5}, {Epsilon: 3, Delta: 1}}
	for _, a := range bs {
		for _, b := range bs {
			want, err := Implies(b, a)
			if err != nil {
				t.Fatal(err)
			}
			if got := Dominates(mustCanonical(t, a), mustCanonical(t, b)); got != want {
				t.Errorf("Dominates(Canonical(%v), Canonical(%v)) = %v, Implies(%v, %v) = %v", a, b, got, b, a, want)
			}
		}
	}
}

// A small δ is compared relative to itself, not to 1.
func TestDominatesSmallDelta(t *testing.T) {
	a := mustCanonical(t, dpkit.Budget{Epsilon: 1, Delta: 1e-16})
	b := mustCanonical(t, dpkit.Budget{Epsilon: 1, Delta: 2e-16})
	if Dominates(a, b) {
		t.Error("Canonical(1, 1e-16) must not dominate Canonical(1, 2e-16)")
	}
	if !Dominates(b, a) {
		t.Error("Canonical(1, 2e-16) must dominate Canonical(1, 1e-16)")
	}
}
