package sensitivity

import (
	"math"

	"github.com/dpkit/dpkit"
)

// down returns the float64 just below x (for positive finite x): used to round a noise
// parameter in the safe direction when it comes out of a rounded computation.
func down(x float64) float64 { return math.Nextafter(x, 0) }

// HeavyTailCalibration returns the parameters that make the release
//
//	f(D) + (S(D)/α)·η,   η with density ∝ 1/(1+|z|^γ),
//
// ε-differentially private, when S is a β-smooth upper bound on the local sensitivity of
// f (NRS 2007, Lemma 2.10 and Thm 2.7; the lecture slides corrected by docs/errata.md, slides item 3):
//
//	α = β = ε/(2(γ+1)),   γ > 1.
//
// Both are rounded down (by at most two ulps), which only adds noise. ε must be finite
// and > 0, γ finite and > 1.
func HeavyTailCalibration(eps, gamma float64) (alpha, beta float64, err error) {
	if err := dpkit.InPackage("sensitivity", dpkit.CheckPositive("epsilon", eps)); err != nil {
		return 0, 0, err
	}
	if math.IsNaN(gamma) || math.IsInf(gamma, 0) || gamma <= 1 {
		return 0, 0, &dpkit.ParamError{Pkg: "sensitivity", Name: "gamma", Value: gamma, Want: "a finite number > 1"}
	}
	a := down(eps / down(2*(gamma+1)))
	if a == 0 || math.IsNaN(a) {
		return 0, 0, &dpkit.ParamError{Pkg: "sensitivity", Name: "epsilon", Value: eps, Want: "large enough that ε/(2(γ+1)) > 0 in float64"}
	}
	return a, a, nil
}

// LaplaceCalibration returns the parameters that make the release
//
//	f(D) + (S(D)/α)·η,   η ~ Laplace(1),
//
// (ε, δ)-differentially private, when S is a β-smooth upper bound on the local
// sensitivity of f (NRS 2007, Lemma 2.9 and Thm 2.7; the lecture slides corrected by
// docs/errata.md, slides item 3):
//
//	α = ε/2,   β = ε/(2 ln(2/δ)),   δ ∈ (0, 1).
//
// α is exact; β is rounded down by a few ulps, which only adds noise. ε must be finite
// and > 0.
func LaplaceCalibration(eps, delta float64) (alpha, beta float64, err error) {
	if err := dpkit.InPackage("sensitivity", dpkit.CheckPositive("epsilon", eps)); err != nil {
		return 0, 0, err
	}
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return 0, 0, &dpkit.ParamError{Pkg: "sensitivity", Name: "delta", Value: delta, Want: "in (0, 1)"}
	}
	// ln(2/δ) = ln 2 − ln δ; both logarithms are within an ulp, the sum adds one more:
	// multiplying by 1 + 2^−50 makes the denominator an upper bound.
	l := (math.Ln2 - math.Log(delta)) * (1 + 0x1p-50)
	b := down(eps / (2 * l))
	if b == 0 {
		return 0, 0, &dpkit.ParamError{Pkg: "sensitivity", Name: "epsilon", Value: eps, Want: "large enough that β > 0 in float64"}
	}
	return eps / 2, b, nil
}
