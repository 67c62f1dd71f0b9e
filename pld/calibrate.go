package pld

import (
	"math"

	"github.com/dpkit/dpkit"
)

// GaussianMu returns the largest μ (rounded down) whose Gaussian-DP curve meets
// δ_μ(eps) ≤ delta, by bisection on the upper-rounded closed form (δ_μ grows with μ).
// K releases of Gaussian noise σ on a query of ℓ2 sensitivity Δ compose to μ = Δ√K/σ,
// so σ = Δ√K/GaussianMu(ε, δ) is the smallest noise that meets (ε, δ).
func GaussianMu(eps, delta float64) (float64, error) {
	if err := positive("eps", eps); err != nil {
		return 0, err
	}
	if math.IsNaN(delta) || delta <= 0 || delta >= 1 {
		return 0, paramErr("delta", delta, "in (0, 1): a Gaussian mechanism is not (ε, 0)-DP")
	}
	lo, hi := 0.0, 1.0
	for d, _ := GaussianDelta(hi, eps); d <= delta; d, _ = GaussianDelta(hi, eps) {
		lo, hi = hi, hi*2
	}
	for i := 0; i < 200 && hi-lo > 1e-15*hi; i++ {
		mid := (lo + hi) / 2
		if d, _ := GaussianDelta(mid, eps); d <= delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// CalibrateScale returns, to a relative 1e-4 and never below, the smallest noise scale
// s such that k releases of mechanism(s) meet the budget b by the certified upper curve
// of Compose. mechanism must be monotone in s (more noise, more privacy), and
// pureScale a scale that meets b for sure (for Laplace-type noise on sensitivity Δ,
// k·Δ/ε: the basic composition of pure ε-DP releases); the search covers
// [pureScale/10^6, pureScale].
func CalibrateScale(mechanism func(scale float64) Mechanism, k int64, b dpkit.Budget, pureScale float64) (float64, error) {
	if err := b.Validate(); err != nil {
		return 0, err
	}
	if err := positive("pure scale", pureScale); err != nil {
		return 0, err
	}
	meets := func(scale float64) (bool, error) {
		c, err := Compose([]Item{{Mechanism: mechanism(scale), Count: k}}, &Options{Delta: math.Max(b.Delta, 1e-300)})
		if err != nil {
			return false, err
		}
		up, _, err := c.Epsilon(b.Delta)
		if err != nil {
			return false, nil // infeasible at this scale: more noise is needed
		}
		return up <= b.Epsilon, nil
	}
	hi := pureScale
	lo := hi / 1e6
	for i := 0; i < 60 && (hi-lo) > 1e-4*hi; i++ {
		mid := math.Sqrt(lo * hi)
		ok, err := meets(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
