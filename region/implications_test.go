package region

import (
	"math"
	"testing"

	"github.com/dpkit/dpkit"
)

func TestImpliedDeltaReference(t *testing.T) {
	ln2, ln3 := math.Log(2), math.Log(3)
	cases := []struct {
		b        dpkit.Budget
		epsTilde float64
		want     float64
		source   string
	}{
		{dpkit.Budget{Epsilon: ln3}, 0, 0.5, "(3 − 1)/(1 + 3)"},
		{dpkit.Budget{Epsilon: ln3}, ln2, 0.25, "(3 − 2)/(1 + 3)"},
		{dpkit.Budget{Epsilon: ln3}, ln3, 0, "ε̃ = ε"},
		{dpkit.Budget{Epsilon: ln3}, 5, 0, "ε̃ > ε"},
		{dpkit.Budget{Epsilon: ln3, Delta: 0.1}, 0, 0.55, "0.1 + 0.9·(3 − 1)/4"},
		{dpkit.Budget{Epsilon: ln3, Delta: 0.1}, 7, 0.1, "ε̃ > ε: δ"},
		{dpkit.Budget{Epsilon: 1000}, 999, 1 - 1/math.E, "(e^1000 − e^999)/(1 + e^1000) = 1 − 1/e up to e^−1000"},
		{dpkit.Budget{Epsilon: 1000, Delta: 0.5}, 0, 1, "1 − 0.5·2/(1+e^1000)"},
		// No cancellation: tanh(ε/2) for ε = 1e-10 is 5e-11 − (5e-11)³/3 = 5e-11 to 1e-21.
		{dpkit.Budget{Epsilon: 1e-10}, 0, 5e-11, "tanh(5e-11)"},
		// δ + (1−δ)(e^ε − e^ε̃)/(1+e^ε) with e^ε − e^ε̃ = e·(1 − e^(−1e-12)) ≈ e·1e-12.
		{dpkit.Budget{Epsilon: 1, Delta: 1e-20}, 1 - 1e-12, 1e-20 + math.E*1e-12/(1+math.E), "e·(1e-12 − 5e-25)/(1+e)"},
	}
	for _, c := range cases {
		got, err := ImpliedDelta(c.b, c.epsTilde)
		if err != nil {
			t.Fatal(err)
		}
		if !near(got, c.want, 1e-11) && math.Abs(got-c.want) > 1e-16 {
			t.Errorf("ImpliedDelta(%v, %g) = %.17g, want %.17g (%s)", c.b, c.epsTilde, got, c.want, c.source)
		}
	}
	_, err := ImpliedDelta(dpkit.Budget{Epsilon: 1}, math.NaN())
	wantParamError(t, err, "epsTilde")
	_, err = ImpliedDelta(dpkit.Budget{Epsilon: 1, Delta: 2}, 0)
	wantParamError(t, err, "delta")
}

func TestTotalVariationReference(t *testing.T) {
	cases := []struct {
		b      dpkit.Budget
		want   float64
		source string
	}{
		{dpkit.Budget{Epsilon: math.Log(3)}, 0.5, "1 − 2/(1+3)"},
		{dpkit.Budget{Epsilon: math.Log(3), Delta: 0.1}, 0.55, "1 − 2·0.9/4"},
		{dpkit.Budget{Epsilon: 0, Delta: 0.3}, 0.3, "ε = 0: δ"},
		{dpkit.Budget{Epsilon: 1e-10}, 5e-11, "tanh(5e-11) = 5e-11 to 1e-21, no cancellation"},
		{dpkit.Budget{Epsilon: 1000, Delta: 0.2}, 1, "e^ε overflows: 1"},
	}
	for _, c := range cases {
		got, err := TotalVariation(c.b)
		if err != nil || !near(got, c.want, 1e-15) {
			t.Errorf("TotalVariation(%v) = %.17g, %v; want %g (%s)", c.b, got, err, c.want, c.source)
		}
	}
	_, err := TotalVariation(dpkit.Budget{Epsilon: math.Inf(1)})
	wantParamError(t, err, "epsilon")
}

func TestImpliesReference(t *testing.T) {
	ln2, ln3 := math.Log(2), math.Log(3)
	cases := []struct {
		from, to dpkit.Budget
		want     bool
		why      string
	}{
		{dpkit.Budget{Epsilon: 1}, dpkit.Budget{Epsilon: 1}, true, "reflexive"},
		{dpkit.Budget{Epsilon: 1}, dpkit.Budget{Epsilon: 0.5}, false, "smaller ε at the same δ"},
		{dpkit.Budget{Epsilon: 1}, dpkit.Budget{Epsilon: 2, Delta: 0.1}, true, "larger ε and δ"},
		{dpkit.Budget{Epsilon: ln3}, dpkit.Budget{Epsilon: ln2, Delta: 0.25}, true, "ImpliedDelta = 1/4"},
		{dpkit.Budget{Epsilon: ln3}, dpkit.Budget{Epsilon: ln2, Delta: 0.2499}, false, "below 1/4"},
		{dpkit.Budget{Epsilon: ln3, Delta: 0.1}, dpkit.Budget{Epsilon: 5, Delta: 0.05}, false, "δ̃ < δ"},
		{dpkit.Budget{Epsilon: ln3, Delta: 0.1}, dpkit.Budget{Epsilon: 0, Delta: 0.55}, true, "TV bound, Remark A.1(b)"},
	}
	for _, c := range cases {
		got, err := Implies(c.from, c.to)
		if err != nil || got != c.want {
			t.Errorf("Implies(%v, %v) = %v, %v; want %v (%s)", c.from, c.to, got, err, c.want, c.why)
		}
	}
	_, err := Implies(dpkit.Budget{Epsilon: -1}, dpkit.Budget{})
	wantParamError(t, err, "from.epsilon")
	_, err = Implies(dpkit.Budget{}, dpkit.Budget{Epsilon: 1, Delta: math.NaN()})
	wantParamError(t, err, "to.delta")
}
