package ledger

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/internal/numeric"
	"github.com/dpkit/dpkit/pld"
)

// Gaussian releases: budgets accounted in Gaussian differential privacy (Dong, Roth and
// Su, "Gaussian differential privacy", JRSS B 2022). A μ-GDP release has the privacy
// curve δ_μ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2) (their Cor. 2.13; pld.GaussianDelta,
// evaluated without cancellation and rounded up), and μ_i-GDP releases compose to
// √(Σ μ_i²)-GDP (their Cor. 3.3) — exactly, where KOV's (ε, δ) composition of the
// releases' (ε, δ) points would lose much of it.

const (
	// GaussianMechanism is Policy.Mechanism of a fixed budget of Gaussian releases.
	GaussianMechanism = "gaussian"
	// GaussianFilter is the privacy filter of an adaptive budget of Gaussian releases: a
	// release of μ_i-GDP is accepted while, including it, Σ μ_i² ≤ μ², μ the total
	// budget's μ (GaussianMu). Smith and Thakurta, "Fully adaptive composition for
	// Gaussian differential privacy" (2022, arXiv:2210.17520), prove that this filter —
	// each μ_i chosen after seeing the previous answers, the interaction stopped before
	// Σ μ_i² would exceed μ² — is μ-GDP, with the same parameters as non-adaptive
	// composition; the interaction is then (ε, δ_μ(ε))-DP at every ε, in particular
	// (ε, δ) for the budget's total.
	GaussianFilter Filter = "gaussian"
)

// GaussianMu returns the largest μ (to a relative 1e-12, rounded down) whose certified
// curve meets the total: δ_μ(ε) ≤ δ (δ > 0; pld.GaussianDelta's upper bound), found by
// doubling and bisection (internal/numeric) on the curve, which increases with μ.
func GaussianMu(total dpkit.Budget) (float64, error) {
	if err := dpkit.InPackage("ledger", total.Validate()); err != nil {
		return 0, err
	}
	if !(total.Delta > 0) {
		return 0, &dpkit.ParamError{Pkg: "ledger", Name: "delta", Value: total.Delta, Want: "> 0: a Gaussian budget needs δ > 0"}
	}
	fits := func(mu float64) (bool, error) {
		d, err := pld.GaussianDelta(mu, total.Epsilon)
		return d <= total.Delta, err
	}
	lo := 0x1p-40
	if ok, err := fits(lo); err != nil || !ok {
		return 0, &dpkit.InfeasibleError{Msg: fmt.Sprintf("no Gaussian release fits the total %v (not even μ = 2^-40)", total)}
	}
	lo, hi, found, err := numeric.ExpandUp(lo, 2, 0x1p40, fits)
	if err != nil {
		return 0, err
	}
	if !found {
		return lo, nil // δ_μ(ε) ≤ δ up to μ = 2^40: any release fits; report that bound
	}
	lo, _, err = numeric.Bisect(lo, hi, fits, numeric.Stop{RelTol: 1e-12})
	return lo, err
}

// resolveFixedGaussian calibrates a fixed budget of K Gaussian releases: μ0 = μ/√K
// (rounded down), μ = GaussianMu(total). PerRelease is set to one release's (ε, δ) at
// δ0 = δ/K for display (each release is (ε0, δ0)-DP, ε0 = pld.GaussianEpsilon(μ0, δ0)).
func resolveFixedGaussian(total dpkit.Budget, p Policy) (Policy, error) {
	if p.ReleaseDelta != nil {
		return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "release_delta", Value: *p.ReleaseDelta, Want: "absent with the Gaussian mechanism (releases are accounted by μ)"}
	}
	mu, err := GaussianMu(total)
	if err != nil {
		return Policy{}, err
	}
	mu0 := math.Nextafter(mu/math.Sqrt(float64(p.Releases)), 0)
	// Independent check: √K·μ0 (rounded up) still meets the total.
	if d, err := pld.GaussianDelta(composedMu(mu0, p.Releases), total.Epsilon); err != nil || d > total.Delta {
		return Policy{}, &dpkit.InfeasibleError{Msg: fmt.Sprintf("%d Gaussian releases of μ0 = %g compose to δ = %g above the total %v (%v)", p.Releases, mu0, d, total, err)}
	}
	d0 := total.Delta / float64(p.Releases)
	e0, err := pld.GaussianEpsilon(mu0, d0)
	if err != nil {
		return Policy{}, dpkit.InPackage("ledger", err)
	}
	return Policy{Kind: Fixed, Releases: p.Releases, Mechanism: GaussianMechanism, PerReleaseMu: &mu0, Mu: &mu,
		PerRelease: &dpkit.Budget{Epsilon: e0, Delta: d0}}, nil
}

// resolveGaussianFilter checks and stores the Gaussian filter's μ.
func resolveGaussianFilter(total dpkit.Budget, p Policy) (Policy, error) {
	if p.FilterDelta != 0 {
		return Policy{}, &dpkit.ParamError{Pkg: "ledger", Name: "filter_delta", Value: p.FilterDelta, Want: "0 (unused) with the gaussian filter"}
	}
	mu, err := GaussianMu(total)
	if err != nil {
		return Policy{}, err
	}
	return Policy{Kind: Adaptive, Filter: GaussianFilter, Mu: &mu}, nil
}

// composedMu returns √n·μ0 rounded up.
func composedMu(mu0 float64, n int64) float64 {
	return math.Nextafter(math.Sqrt(float64(n))*mu0*(1+0x1p-51), math.Inf(1))
}

// releaseMu returns the μ of a release's mechanism (rounded up): its descriptor's PLD must
// be a Gaussian.
func releaseMu(r Release) (float64, error) {
	if r.Mechanism.IsZero() {
		return 0, fmt.Errorf("a Gaussian budget needs the release's mechanism (none was given)")
	}
	pm, err := mechanismPLD(r.Mechanism)
	if err != nil {
		return 0, err
	}
	g, ok := pm.(pld.Gaussian)
	if !ok {
		return 0, fmt.Errorf("a Gaussian budget accounts releases whose privacy loss distribution is Gaussian; %s is not", r.Mechanism)
	}
	mu := g.Sensitivity / g.Sigma
	if math.FMA(mu, g.Sigma, -g.Sensitivity) < 0 {
		mu = math.Nextafter(mu, math.Inf(1))
	}
	return mu, nil
}

// gaussianSpent returns ε at the total δ and δ at the total ε of μ-GDP (rounded up).
func gaussianSpent(mu float64, total dpkit.Budget) (float64, float64, error) {
	if mu == 0 {
		return 0, 0, nil
	}
	e, err := pld.GaussianEpsilon(mu, total.Delta)
	if err != nil {
		return 0, 0, err
	}
	d, err := pld.GaussianDelta(mu, total.Epsilon)
	return e, d, err
}

// ---- fixed, Gaussian ----

// fixedGaussianAccountant: K releases, each running a Gaussian with μ ≤ μ0; K of them
// compose to √K·μ0 ≤ μ. The decision is count < K and the release's μ.
type fixedGaussianAccountant struct {
	total dpkit.Budget
	k     int64
	mu0   float64
}

func (a *fixedGaussianAccountant) ChargeRelease(st Stats, r Release) (dpkit.Budget, error) {
	mu, err := releaseMu(r)
	switch {
	case err != nil:
		return dpkit.Budget{}, exceeded("fixed/gaussian", r.Cost, err.Error(), a.Remaining(st, r.Cost))
	case mu > a.mu0:
		return dpkit.Budget{}, exceeded("fixed/gaussian", r.Cost, fmt.Sprintf("the release is μ = %g-GDP; each release of this budget may be at most μ0 = %g", mu, a.mu0), a.Remaining(st, r.Cost))
	}
	return a.Charge(st, r.Cost)
}

func (a *fixedGaussianAccountant) Charge(st Stats, c dpkit.Budget) (dpkit.Budget, error) {
	if st.Count >= a.k {
		return dpkit.Budget{}, exceeded("fixed/gaussian", c, fmt.Sprintf("all %d planned releases are spent", a.k), a.Remaining(st, c))
	}
	return c, nil
}

func (a *fixedGaussianAccountant) Spent(st Stats) (float64, float64, error) {
	return gaussianSpent(a.SpentMu(st), a.total)
}

// SpentMu returns the μ of the releases so far: √n·μ0 rounded up (0 for none).
func (a *fixedGaussianAccountant) SpentMu(st Stats) float64 {
	if st.Count == 0 {
		return 0
	}
	return composedMu(a.mu0, st.Count)
}

func (a *fixedGaussianAccountant) Remaining(st Stats, c dpkit.Budget) Remaining {
	r := Remaining{Cost: c}
	if st.Count < a.k {
		r.Releases = a.k - st.Count
		r.NextAllowed, r.NextEpsilon = true, a.mu0
	}
	return r
}

// ---- adaptive, Gaussian filter ----

// gaussianAccountant is the Gaussian filter (GaussianFilter) with exact arithmetic: it
// accepts a release of μ_i (its descriptor's PLD, rounded up) iff Σ μ_j² + μ_i² ≤ μ²,
// compared in exact rationals. The statistics' SumEpsilon and SumEpsilonSq hold Σ μ_i and
// Σ μ_i² (Charge returns (μ_i, 0) as the charged amount).
type gaussianAccountant struct {
	total dpkit.Budget
	mu    float64
	mu2   *big.Rat
}

func newGaussianAccountant(total dpkit.Budget, mu float64) *gaussianAccountant {
	m := ratOf(mu)
	return &gaussianAccountant{total: total, mu: mu, mu2: m.Mul(m, m)}
}

func (a *gaussianAccountant) ChargeRelease(st Stats, r Release) (dpkit.Budget, error) {
	mu, err := releaseMu(r)
	if err != nil {
		return dpkit.Budget{}, exceeded("adaptive/gaussian", r.Cost, err.Error(), a.Remaining(st, r.Cost))
	}
	m := ratOf(mu)
	after := new(big.Rat).Add(st.SumEpsilonSq, m.Mul(m, m))
	if after.Cmp(a.mu2) > 0 {
		return dpkit.Budget{}, exceeded("adaptive/gaussian", r.Cost, fmt.Sprintf("the filter would need Σμ² = %s ≤ μ² = %s (μ = %g for the total %v; this release is μ = %g)",
			after.FloatString(12), a.mu2.FloatString(12), a.mu, a.total, mu), a.Remaining(st, dpkit.Budget{Epsilon: mu}))
	}
	return dpkit.Budget{Epsilon: mu}, nil
}

// Charge refuses: the filter needs the release's mechanism (ChargeRelease).
func (a *gaussianAccountant) Charge(st Stats, c dpkit.Budget) (dpkit.Budget, error) {
	return dpkit.Budget{}, exceeded("adaptive/gaussian", c, "the Gaussian filter needs the release's mechanism", a.Remaining(st, c))
}

// Spent returns the filter's level: ε at the total δ and δ at the total ε of
// √(Σ μ_i²)-GDP (rounded up).
func (a *gaussianAccountant) Spent(st Stats) (float64, float64, error) {
	return gaussianSpent(a.SpentMu(st), a.total)
}

// SpentMu returns the filter's level √(Σ μ_i²), rounded up (0 for no release).
func (a *gaussianAccountant) SpentMu(st Stats) float64 {
	v := ratUp(st.SumEpsilonSq)
	if v == 0 {
		return 0
	}
	return math.Nextafter(math.Sqrt(v), math.Inf(1))
}

// Remaining reads c.Epsilon as the μ of each further release: Releases is the largest n
// with Σ μ_j² + n·μ² ≤ μ_total² (capped at compose.MaxCount), NextEpsilon the largest μ
// one more release may have, √(μ_total² − Σ μ_j²) rounded down.
func (a *gaussianAccountant) Remaining(st Stats, c dpkit.Budget) Remaining {
	r := Remaining{Cost: c}
	left := new(big.Rat).Sub(a.mu2, st.SumEpsilonSq)
	if left.Sign() < 0 {
		return r
	}
	r.NextAllowed = true
	r.NextEpsilon = math.Max(0, math.Nextafter(math.Sqrt(ratDown(left)), 0))
	if c.Epsilon > 0 {
		m := ratOf(c.Epsilon)
		r.Releases = floorQuo(left, m.Mul(m, m))
	} else {
		r.Releases = compose.MaxCount
	}
	return r
}
