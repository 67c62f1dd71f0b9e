package region

import (
	"math"
	"slices"
)

// dominanceTol is the relative perturbation of the probabilities that Dominates
// ignores.
const dominanceTol = 1e-12

// Dominates reports whether the privacy region of mPrime lies inside that of m,
//
//	R(P0', P1') ⊆ R(P0, P1)      (KOV eq. 3),
//
// that is, whether m dominates mPrime: by KOV Thm 2.4 (data processing) this holds when
// mPrime is a post-processing of m, and by Thm 2.5 (Blackwell) only then: there is a
// stochastic map T with T(P0) = P0' and T(P1) = P1'. Exchanging P0 and P1 in both pairs
// reflects both regions about the line md = fa and does not change the answer.
//
// A region is the intersection of its supporting half-planes, and the one of normal
// (1, e^ε) or (e^ε, 1) sits at 1 − d_ε(P1‖P0) or 1 − d_ε(P0‖P1) (KOV eq. 19). So
//
//	R(m') ⊆ R(m)  ⟺  for all ε ≥ 0:  d_ε(P0'‖P1') ≤ d_ε(P0‖P1)  and  d_ε(P1'‖P0') ≤ d_ε(P1‖P0).
//
// Both sides are piecewise linear in e^ε with breaks at the likelihood ratios of the two
// pairs, and constant beyond the largest, so Dominates checks each inequality exactly
// there: at ε = 0, at every |ln(P0(x)/P1(x))| and |ln(P0'(x)/P1'(x))|, and at ε = +Inf.
//
// Probabilities computed in floating point carry rounding errors, and d_ε cancels
// where P0(x) ≈ e^ε P1(x), so a post-processing computed in float64 can exceed the
// original by more than its own rounding. Dominates therefore ignores what relative
// perturbations of η = 1e-12 in the probabilities can cause:
//
//	d'(ε) ≤ d(ε) + η·(s(ε) + s'(ε)),     s(ε) = Σ (P0(x) + e^ε P1(x)),
//
// summed over the outcomes x of m with P0(x) − e^ε P1(x) > −η·(P0(x) + e^ε P1(x)) (those
// that contribute to d(ε), or nearly do), and s' likewise for mPrime. Since s(ε) ≥ d(ε)
// this includes a relative tolerance η on d; away from cancellation it is no more than
// that, so small δ are compared as precisely as large ones. At ε = +Inf, s is the mass
// P0({P1 = 0}) itself.
//
// Dominates takes O((G+G')²) time for G and G' distinct ratios. It returns false if
// either pair is nil or is not one NewPair would accept.
func Dominates(m, mPrime *Pair) bool {
	if m.check() != nil || mPrime.check() != nil {
		return false
	}
	g, gp := groups(m.P0, m.P1), groups(mPrime.P0, mPrime.P1)
	rg, rgp := reversed(g), reversed(gp)
	eps := append(candidates(g, rg), candidates(gp, rgp)...)
	eps = append(eps, math.Inf(1))
	slices.Sort(eps)
	for _, e := range slices.Compact(eps) {
		if !atMost(gp, g, e) || !atMost(rgp, rg, e) {
			return false
		}
	}
	return true
}

// atMost reports d_ε(gp) ≤ d_ε(g) up to the perturbations described at Dominates.
func atMost(gp, g []group, eps float64) bool {
	var d, dp float64
	if math.IsInf(eps, 1) {
		d, dp = pointMass(g), pointMass(gp)
	} else {
		d, dp = divergence(g, eps), divergence(gp, eps)
	}
	if dp <= d {
		return true
	}
	return dp-d <= dominanceTol*(activeMass(g, eps, dominanceTol)+activeMass(gp, eps, dominanceTol))
}
