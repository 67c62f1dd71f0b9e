package pld

import (
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
)

// The one Gaussian privacy curve of dpkit: μ-Gaussian DP (Balle & Wang 2018, Thm 8;
// Dong, Roth & Su 2022, Cor. 2.13),
//
//	δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2),
//
// the exact curve of the Gaussian mechanism with Δ/σ = μ and of any composition of
// Gaussian mechanisms with μ² = Σ μ_i². Package mechanism, calibration and the
// accounting core all read it here.

// MaxGaussianMu bounds μ = Δ/σ (of one release, and of a composition): beyond it μ²/2,
// the median privacy loss, would be beyond 1e300.
const MaxGaussianMu = 1e150

// gaussRelErr bounds the relative error of gaussianDelta's evaluation (see there).
func gaussRelErr(mu, eps, oneMinusR float64) float64 {
	return 1e-13 + 64*u*(math.Abs(eps)+mu*mu+math.Abs(eps/mu)*math.Abs(eps/mu)+1)/math.Max(oneMinusR, 1e-300)
}

// gaussianDelta returns δ_μ(ε) and a bound on its relative error. The difference is
// taken as Φ(a)·(1 − r), r = e^(ε + ln Φ(b) − ln Φ(a)), a = −ε/μ + μ/2, b = a − μ, so that
// it does not cancel in the tail; the bound covers the absolute error of ln r (64u of
// the sizes of its terms; logNormCDF's series is far more accurate) magnified by
// 1/(1 − r). A δ below the float64 range comes out as 0 (gaussianBounds rounds it up).
func gaussianDelta(mu, eps float64) (delta, relErr float64) {
	if math.IsInf(eps, 1) {
		return 0, 0
	}
	a, b := -eps/mu+mu/2, -eps/mu-mu/2
	la, lb := logNormCDF(a), logNormCDF(b)
	if math.IsInf(la, -1) {
		return 0, 0
	}
	lr := eps + lb - la
	oneMinusR := -math.Expm1(lr)
	if !(oneMinusR > 0) {
		return 0, 0
	}
	return math.Exp(la) * oneMinusR, gaussRelErr(mu, eps, oneMinusR)
}

// gaussianBounds returns lower ≤ δ_μ(ε) ≤ upper. δ_μ(ε) > 0 at every finite ε, so the
// upper value is at least the smallest positive float64.
func gaussianBounds(mu, eps float64) (upper, lower float64) {
	d, r := gaussianDelta(mu, eps)
	upper = math.Min(1, d*(1+r))
	if !math.IsInf(eps, 1) {
		upper = math.Max(upper, math.SmallestNonzeroFloat64)
	}
	return upper, math.Max(0, d*(1-r))
}

func checkMu(mu float64) error {
	if err := positive("mu", mu); err != nil {
		return err
	}
	if mu > MaxGaussianMu {
		return paramErr("mu", mu, "at most 1e150 (μ²/2, the median privacy loss, would exceed 1e300)")
	}
	return nil
}

// GaussianDelta returns an upper bound on δ(ε) of μ-Gaussian DP (the exact curve of a
// Gaussian mechanism with Δ/σ = μ, or of a composition with μ² = Σ μ_i²), above the
// exact value by at most its stated relative error (≈1e-13 away from the far tail), and
// never below 5e-324 (the exact value is positive). ε may be any number but NaN;
// GaussianDelta(μ, +Inf) = 0.
func GaussianDelta(mu, eps float64) (float64, error) {
	up, _, err := GaussianDeltaBounds(mu, eps)
	return up, err
}

// GaussianDeltaBounds returns lower ≤ δ_μ(ε) ≤ upper, certified: the evaluation's error
// bound is subtracted from and added to the computed value (see gaussianDelta).
func GaussianDeltaBounds(mu, eps float64) (upper, lower float64, err error) {
	if err := checkMu(mu); err != nil {
		return 0, 0, err
	}
	if math.IsNaN(eps) {
		return 0, 0, paramErr("epsilon", eps, "a number, not NaN")
	}
	upper, lower = gaussianBounds(mu, eps)
	return upper, lower, nil
}

// GaussianEpsilon returns the smallest ε ≥ 0 with δ_μ(ε) ≤ delta, never below the exact
// value (bisection on the upper bound of δ), to a relative 1e-15.
func GaussianEpsilon(mu, delta float64) (float64, error) {
	if err := checkMu(mu); err != nil {
		return 0, err
	}
	if math.IsNaN(delta) || delta <= 0 || delta > 1 {
		return 0, paramErr("delta", delta, "in (0, 1]")
	}
	return gaussianEpsilon(mu, delta, true), nil
}

// gaussianEpsilon returns where the curve's upper bound (up) or lower bound meets delta:
// the smallest ε seen to have upper δ ≤ delta, or the largest seen to have lower δ >
// delta; the exact ε(delta) lies between the two. The bracket's top,
// μ²/2 + μ·√(2 ln(1/(2δ))), meets delta since δ_μ(ε) ≤ Φ(−ε/μ + μ/2) ≤ ½e^(−(ε/μ−μ/2)²/2).
func gaussianEpsilon(mu, delta float64, up bool) float64 {
	above := func(e float64) (bool, error) { // δ at e (bound) is still above delta
		u, l := gaussianBounds(mu, e)
		if up {
			return u > delta, nil
		}
		return l > delta, nil
	}
	if ok, _ := above(0); !ok {
		return 0
	}
	hi := mu*mu/2 + mu*math.Sqrt(2*math.Log(1/(2*math.Min(delta, 0.5))))
	hi = math.Max(hi*(1+1e-9), 1e-300)
	if ok, _ := above(hi); ok {
		// Only the error bound can keep δ above delta there: grow until it does not.
		_, h, found, _ := numeric.ExpandUp(hi, 2, math.MaxFloat64, above)
		if !found {
			return math.Inf(1)
		}
		hi = h
	}
	lo, hi, _ := numeric.Bisect(0, hi, above, numeric.Stop{RelTol: 1e-15})
	if up {
		return hi
	}
	return lo
}

// GaussianMu returns the largest μ (rounded down) whose Gaussian-DP curve meets
// δ_μ(eps) ≤ delta by its upper bound, by bisection (δ_μ grows with μ). K releases of
// Gaussian noise σ on a query of ℓ2 sensitivity Δ compose to μ = Δ√K/σ, so
// σ = Δ√K/GaussianMu(ε, δ) is the smallest noise that meets (ε, δ) (GaussianSigma).
func GaussianMu(eps, delta float64) (float64, error) {
	if err := positive("epsilon", eps); err != nil {
		return 0, err
	}
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return 0, paramErr("delta", delta, "in (0, 1): a Gaussian mechanism is not (ε, 0)-DP")
	}
	meets := func(mu float64) (bool, error) {
		u, _ := gaussianBounds(mu, eps)
		return u <= delta, nil
	}
	// μ → 0 meets any δ > 0 (δ_μ(ε) → 0): 0 is the bracket's passing end.
	hi := 1.0
	if ok, _ := meets(hi); ok {
		lo, h, found, err := numeric.ExpandUp(1, 2, MaxGaussianMu, meets)
		if err != nil {
			return 0, err
		}
		if !found {
			return lo, nil // every μ ≤ MaxGaussianMu meets it
		}
		hi = h
	}
	lo, _, err := numeric.Bisect(0, hi, meets, numeric.Stop{RelTol: 1e-15})
	return lo, err
}

// GaussianSigma returns the smallest noise σ (rounded up) such that k releases of the
// Gaussian mechanism N(0, σ²) on a query of ℓ2 sensitivity Δ are (ε, δ)-DP together:
// σ = Δ·√k / GaussianMu(ε, δ) (k = 1 for one release).
func GaussianSigma(eps, delta, sensitivity float64, k int64) (float64, error) {
	if err := positive("sensitivity", sensitivity); err != nil {
		return 0, err
	}
	if err := dpkit.CheckCount("count", k, MaxCount); err != nil {
		return 0, dpkit.InPackage("pld", err)
	}
	mu, err := GaussianMu(eps, delta)
	if err != nil {
		return 0, err
	}
	if mu == 0 {
		return 0, &dpkit.InfeasibleError{Msg: "no Gaussian noise meets this (ε, δ): δ is too small for float64 at this ε"}
	}
	s := sensitivity * math.Sqrt(float64(k)) / mu * (1 + 4*u)
	if math.IsInf(s, 0) {
		return 0, paramErr("sensitivity", sensitivity, "small enough that σ = Δ√k/μ is a finite float64")
	}
	return math.Nextafter(s, math.Inf(1)), nil
}

// invNormSF returns z with Φ̄(z) = p for p ∈ (0, 1), to a relative 1e-15 (bisection on
// logNormSF, which stays accurate where math.Erfcinv loses all digits, p < 1e-16).
func invNormSF(p float64) float64 {
	if p >= 0.5 {
		return -invNormSF(1 - p)
	}
	lp := math.Log(p)
	above := func(z float64) (bool, error) { return logNormSF(z) > lp, nil }
	hi := math.Sqrt(2*math.Log(1/(2*p))) + 1
	lo, hi, _ := numeric.Bisect(0, hi, above, numeric.Stop{RelTol: 1e-15})
	return lo/2 + hi/2
}
