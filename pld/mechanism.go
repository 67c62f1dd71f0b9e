package pld

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
)

// Mechanism is a mechanism whose exact privacy-loss distribution dpkit knows. The
// implementations are the value types below; each validates its parameters in Validate
// and describes its dominating pair(s) to the lattice discretisation.
type Mechanism interface {
	// Validate reports a *dpkit.ParamError for a parameter outside its range.
	Validate() error
	// String describes the mechanism as in the CLI ("laplace:scale=2,sensitivity=1").
	String() string
	// specs returns the pair (symmetric) or the remove and add pairs.
	specs() []spec
}

// Gaussian adds N(0, σ²) noise to a query of ℓ2 sensitivity Δ; μ = Δ/σ. Its privacy curve
// is that of μ-Gaussian DP (Balle & Wang 2018, Thm 8):
//
//	δ(ε) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2)
//
// and compositions of Gaussians are Gaussian with μ² = Σ μ_i² (so Compose treats them in
// closed form).
type Gaussian struct{ Sigma, Sensitivity float64 }

// Laplace adds Lap(b) noise (density e^(−|x|/b)/2b, b = Scale) to a query of ℓ1
// sensitivity Δ: ε0 = Δ/b-DP, with the PLD of docs/errata.md, KOV item 10 (a density, not a rate).
type Laplace struct{ Scale, Sensitivity float64 }

// DiscreteLaplace adds two-sided geometric noise Pr[x] ∝ e^(−|x|/t) (t = Scale) to an
// integer query of sensitivity Δ (a positive integer): (Δ/t)-DP.
type DiscreteLaplace struct {
	Scale       float64
	Sensitivity int64
}

// RandomizedResponse reports the true one of K ≥ 2 categories with probability
// e^ε/(e^ε + K − 1) and each other one with probability 1/(e^ε + K − 1).
type RandomizedResponse struct {
	Epsilon float64
	K       int
}

// EpsilonDelta is any (ε, δ)-DP mechanism: its worst case is the canonical pair of KOV
// eq. (17)/(18), which dominates every (ε, δ)-DP mechanism (KOV Thm 2.4).
type EpsilonDelta struct{ Epsilon, Delta float64 }

// Exponential is the exponential mechanism with privacy parameter ε (ε-DP, e.g.
// sampling ∝ e^(ε·u/2Δu)). dpkit accounts for it by the canonical (ε, 0) pair, which
// dominates every ε-DP mechanism; the tighter bounded-range analysis of Dong, Durfee &
// Rogers (2020) is not used.
type Exponential struct{ Epsilon float64 }

// PoissonSubsampled runs Base on a Poisson subsample (each row kept independently with
// probability Rate) under add/remove neighbours. Its two directions are different pairs
// (Zhu, Dong & Wang 2022, Thm 11).
type PoissonSubsampled struct {
	Base Mechanism
	Rate float64
}

func (m Gaussian) Validate() error {
	if err := positive("sigma", m.Sigma); err != nil {
		return err
	}
	return positive("sensitivity", m.Sensitivity)
}
func (m Gaussian) String() string {
	return fmt.Sprintf("gaussian:sigma=%g,sensitivity=%g", m.Sigma, m.Sensitivity)
}

// Mu returns Δ/σ, the Gaussian-DP parameter.
func (m Gaussian) Mu() float64   { return m.Sensitivity / m.Sigma }
func (m Gaussian) specs() []spec { return []spec{gaussianSpec{m.Mu()}} }

func (m Laplace) Validate() error {
	if err := positive("scale", m.Scale); err != nil {
		return err
	}
	return positive("sensitivity", m.Sensitivity)
}
func (m Laplace) String() string {
	return fmt.Sprintf("laplace:scale=%g,sensitivity=%g", m.Scale, m.Sensitivity)
}

// specs: ε0 = Δ/b rounded up (a Laplace pair of larger ε0 dominates), so that the
// pair accounted is never less private than the one asked for.
func (m Laplace) specs() []spec { return []spec{laplaceSpec{quoUp(m.Sensitivity, m.Scale)}} }

// quoUp returns a/b (a, b > 0) rounded up: the float64 quotient, moved up an ulp when the
// exact remainder (by FMA) shows it was rounded down.
func quoUp(a, b float64) float64 {
	q := a / b
	if !math.IsInf(q, 0) && q > 0 && math.FMA(q, b, -a) < 0 {
		q = math.Nextafter(q, math.Inf(1))
	}
	return q
}

func (m DiscreteLaplace) Validate() error {
	if err := positive("scale", m.Scale); err != nil {
		return err
	}
	if m.Sensitivity < 1 || m.Sensitivity > 1<<53 {
		return paramErr("sensitivity", m.Sensitivity, "an integer in [1, 2^53]")
	}
	return nil
}
func (m DiscreteLaplace) String() string {
	return fmt.Sprintf("geometric:scale=%g,sensitivity=%d", m.Scale, m.Sensitivity)
}

// specs: see discreteLaplaceSpec.
func (m DiscreteLaplace) specs() []spec {
	return []spec{discreteLaplaceSpec{t: m.Scale, d: m.Sensitivity}}
}

func (m RandomizedResponse) Validate() error {
	if err := positive("epsilon", m.Epsilon); err != nil {
		return err
	}
	if m.K < 2 || m.K > 1<<30 {
		return paramErr("categories", m.K, "an integer in [2, 2^30]")
	}
	return nil
}
func (m RandomizedResponse) String() string {
	return fmt.Sprintf("rr:eps=%g,k=%d", m.Epsilon, m.K)
}

// specs: the true category is reported with probability hi = 1/(1 + (K−1)e^(−ε)) and
// each other one with lo = e^(−ε)·hi, written with e^(−ε) so that no term overflows
// (e^ε leaves float64 past ε ≈ 709; e^(−ε) underflows to 0 past ≈ 745, and then the
// atom at −ε has P-mass 0, which is its value to within 5e-324).
func (m RandomizedResponse) specs() []spec {
	e := m.Epsilon
	r := math.Exp(-e)
	hi := 1 / (1 + float64(m.K-1)*r)
	lo := r * hi
	lnHi := -math.Log1p(float64(m.K-1) * r)
	lnLo := lnHi - e
	var sp *atomSpec
	if m.K == 2 {
		sp = newAtomSpec([]float64{-e, e}, []float64{lo, hi}, []float64{lnHi, lnLo}, 0, 0, 4*u)
	} else {
		mid := float64(m.K-2) * r * hi
		lnMid := math.Log(float64(m.K-2)) + lnLo
		sp = newAtomSpec([]float64{-e, 0, e}, []float64{lo, mid, hi}, []float64{lnHi, lnMid, lnLo}, 0, 0, 4*u)
	}
	sp.unit = e
	return []spec{sp}
}

func (m EpsilonDelta) Validate() error {
	if err := dpkit.CheckEpsilon("epsilon", m.Epsilon); err != nil {
		return dpkit.InPackage("pld", err)
	}
	return dpkit.InPackage("pld", dpkit.CheckDelta("delta", m.Delta))
}
func (m EpsilonDelta) String() string {
	return fmt.Sprintf("%g,%g", m.Epsilon, m.Delta)
}

// specs: the canonical pair of KOV eq. (17)/(18): losses ±ε with P-masses
// (1−δ)·e^ε/(1+e^ε) and (1−δ)/(1+e^ε), and δ at +∞ (P) and at −∞ (Q).
//
// The log Q-masses are written with ln(1 + e^ε) = ε + log1p(e^(−ε)), so that they are
// exact at any ε.
func (m EpsilonDelta) specs() []spec {
	e, d := m.Epsilon, m.Delta
	pHi := (1 - d) / (1 + math.Exp(-e))
	pLo := (1 - d) / (1 + math.Exp(e)) // 0, its value to within 5e-324, once e^ε overflows
	lnKeep := math.Log1p(-d)
	lnHi := lnKeep - math.Log1p(math.Exp(-e))
	lnLo := lnHi - e
	if e == 0 {
		return []spec{newAtomSpec([]float64{0}, []float64{1 - d}, []float64{lnKeep}, d, d, 4*u)}
	}
	sp := newAtomSpec([]float64{-e, e}, []float64{pLo, pHi}, []float64{lnHi, lnLo}, d, d, 4*u)
	sp.unit = e
	return []spec{sp}
}

func (m Exponential) Validate() error { return positive("epsilon", m.Epsilon) }
func (m Exponential) String() string  { return fmt.Sprintf("exponential:eps=%g", m.Epsilon) }
func (m Exponential) specs() []spec   { return EpsilonDelta{m.Epsilon, 0}.specs() }

func (m PoissonSubsampled) Validate() error {
	if m.Base == nil {
		return paramErr("base", nil, "a mechanism")
	}
	if _, ok := m.Base.(PoissonSubsampled); ok {
		return paramErr("base", m.Base.String(), "a mechanism that is not itself subsampled")
	}
	if err := m.Base.Validate(); err != nil {
		return err
	}
	if math.IsNaN(m.Rate) || m.Rate <= 0 || m.Rate > 1 {
		return paramErr("rate", m.Rate, "a sampling rate in (0, 1]")
	}
	return nil
}
func (m PoissonSubsampled) String() string {
	return fmt.Sprintf("subsampled(%s,q=%g)", m.Base, m.Rate)
}
func (m PoissonSubsampled) specs() []spec {
	b := m.Base.specs()[0]
	if m.Rate == 1 {
		return m.Base.specs()
	}
	return []spec{subsampledSpec{base: b, rate: m.Rate}, subsampledSpec{base: b, rate: m.Rate, add: true}}
}
