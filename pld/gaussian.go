package pld

import "math"

// gaussRelErr bounds the relative error of GaussianDelta's evaluation (see there).
func gaussRelErr(mu, eps, oneMinusR float64) float64 {
	return 1e-13 + 64*u*(math.Abs(eps)+mu*mu+math.Abs(eps/mu)*math.Abs(eps/mu)+1)/math.Max(oneMinusR, 1e-300)
}

// logNormCDF returns ln Φ(x), accurate in the far lower tail (asymptotic series beyond
// x = −30, where erfc underflows long before).
func logNormCDF(x float64) float64 {
	if x > -30 {
		return math.Log(normCDF(x))
	}
	x2 := 1 / (x * x)
	// Φ(x) = φ(x)/|x| · (1 − 1/x² + 3/x⁴ − 15/x⁶ + 105/x⁸ − …), truncation < 945/x¹⁰.
	s := 1 - x2 + 3*x2*x2 - 15*x2*x2*x2 + 105*x2*x2*x2*x2
	return -x*x/2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log(s)
}

// gaussianDelta returns δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) (Balle & Wang 2018,
// Thm 8; Dong, Roth & Su 2022, Cor. 2.13) and a bound on its relative error. The
// difference is taken as Φ(a)·(1 − r), r = e^(ε + ln Φ(b) − ln Φ(a)), so that it does not
// cancel in the tail; the bound covers the absolute error of ln r (64u of the sizes of
// its terms) magnified by 1/(1 − r).
func gaussianDelta(mu, eps float64) (delta, relErr float64) {
	if math.IsInf(eps, 1) {
		return 0, 0
	}
	a, b := -eps/mu+mu/2, -eps/mu-mu/2
	la, lb := logNormCDF(a), logNormCDF(b)
	lr := eps + lb - la
	oneMinusR := -math.Expm1(lr)
	if oneMinusR <= 0 {
		return 0, 0
	}
	return math.Exp(la) * oneMinusR, gaussRelErr(mu, eps, oneMinusR)
}

// GaussianDelta returns an upper bound on δ(ε) of μ-Gaussian DP (the exact curve of a
// Gaussian mechanism with Δ/σ = μ, or of a composition with μ² = Σ μ_i²), within its
// stated relative error (≈1e-13 away from the far tail) above the exact value.
func GaussianDelta(mu, eps float64) (float64, error) {
	if err := positive("mu", mu); err != nil {
		return 0, err
	}
	if math.IsNaN(eps) {
		return 0, paramErr("eps", eps, "a number, not NaN")
	}
	d, e := gaussianDelta(mu, eps)
	return math.Min(1, d*(1+e)), nil
}

// GaussianEpsilon returns the smallest ε ≥ 0 with δ_μ(ε) ≤ delta, never below the exact
// value (bisection on the upper-rounded δ), to a relative 1e-14.
func GaussianEpsilon(mu, delta float64) (float64, error) {
	if err := positive("mu", mu); err != nil {
		return 0, err
	}
	if math.IsNaN(delta) || delta <= 0 || delta > 1 {
		return 0, paramErr("delta", delta, "in (0, 1]")
	}
	return gaussianEpsilon(mu, delta, true), nil
}

// gaussianEpsilon bisects for the ε at which the curve (rounded up, or down) meets delta.
func gaussianEpsilon(mu, delta float64, up bool) float64 {
	f := func(e float64) float64 {
		d, r := gaussianDelta(mu, e)
		if up {
			return d * (1 + r)
		}
		return d * (1 - r)
	}
	if f(0) <= delta {
		return 0
	}
	// δ_μ(ε) ≤ Φ(−ε/μ + μ/2): at ε = μ²/2 + μ·z with Φ(−z) = δ it is ≤ δ (before rounding).
	z := math.Sqrt2 * math.Erfcinv(2*delta)
	hi := mu*mu/2 + mu*math.Max(z, 0) + 1e-12
	for f(hi) > delta {
		hi = hi*2 + 1e-9
	}
	lo := 0.0
	for i := 0; i < 200 && hi-lo > 1e-15*hi; i++ {
		mid := (lo + hi) / 2
		if f(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	if up {
		return hi
	}
	return lo
}
