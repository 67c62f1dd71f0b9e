package pld

import (
	"math"

	"github.com/dpkit/dpkit/internal/numeric"
)

// Q-masses are carried as natural logarithms. A loss l = ln(P/Q) may be any float64, but
// the Q-mass P·e^(−l) of an outcome with a large loss underflows (e^(−l) leaves float64
// past l ≈ 745; subnormal values lose relative accuracy from l ≈ 708), and a lattice
// that put such outcomes at +∞ or dropped them could not answer ε ≈ 700 or more. Its
// logarithm ln P − l is always representable; −Inf stands for a Q-mass of 0.

// logAdd returns ln(e^a + e^b). Its absolute error is at most the larger error of a and
// b plus 2u.
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// logSub returns ln(e^a − e^b) for b ≤ a (−Inf when b ≥ a), and the factor
// (1 + r)/(1 − r), r = e^(b−a), by which absolute errors of a and b are magnified.
func logSub(a, b float64) (float64, float64) {
	if math.IsInf(b, -1) {
		return a, 1
	}
	if b >= a {
		return math.Inf(-1), 0
	}
	d := b - a
	return a + math.Log(-math.Expm1(d)), (1 + math.Exp(d)) / -math.Expm1(d)
}

// logCdfCell returns ln of the mass of (a, b] from ln F and ln S (a CDF and its survival
// function, each accurate to e in absolute terms of the logarithm), taking the difference
// on the side where the values are smaller, and the absolute error of the result.
func logCdfCell(lnF, lnS func(float64) float64, a, b, e float64) (lm, err float64) {
	if b <= a {
		return math.Inf(-1), 0
	}
	if sa := lnS(a); sa <= -math.Ln2 {
		lm, f := logSub(sa, lnS(b))
		return lm, f*e + 2*u
	}
	lm, f := logSub(lnF(b), lnF(a))
	return lm, f*e + 2*u
}

// linearToLog converts a Q-mass summed in float64 from non-negative products into its
// logarithm. Products that fell below the normal range lost relative accuracy, so a sum
// below qUnknown is reported as −Inf, "Q-mass not known": discretize then places the
// cell's P-mass knowing only that its loss lies in the cell (upper: at the top; lower:
// at the bottom). Above qUnknown each of at most 2^60 subnormal products errs by at most
// 2^−1074, below 2^−114 of the sum in all: far inside the u-level error bounds.
func linearToLog(q float64) float64 {
	if q < qUnknown {
		return math.Inf(-1)
	}
	return math.Log(q)
}

// addMass returns the P-mass and log Q-mass of the union of two disjoint sets of outcomes.
// A set with P-mass but lq = −Inf has a Q-mass that is not known (see linearToLog), and
// so has the union.
func addMass(p1, lq1, p2, lq2 float64) (p, lq float64) {
	if (p1 > 0 && math.IsInf(lq1, -1)) || (p2 > 0 && math.IsInf(lq2, -1)) {
		return p1 + p2, math.Inf(-1)
	}
	return p1 + p2, logAdd(lq1, lq2)
}

// qUnknown is the smallest linear Q-mass sum linearToLog trusts.
const qUnknown = 0x1p-900

// underflowErr bounds the absolute error per cell or product from results below the
// normal float64 range (each such rounding errs by at most 2^−1075; a cell's mass is a
// handful of them). It is added to the upper bound's Err, so that masses that underflowed
// to 0, or to an imprecise subnormal, never make δ(ε) come out low; at 2^−1060 per cell it
// is below 1e-310 for any lattice dpkit builds.
const underflowErr = 0x1p-1060

// logNormCDF returns ln Φ(x) (numeric.LogNormCDF).
func logNormCDF(x float64) float64 { return numeric.LogNormCDF(x) }

// logNormSF returns ln(1 − Φ(x)) = ln Φ(−x).
func logNormSF(x float64) float64 { return numeric.LogNormCDF(-x) }
