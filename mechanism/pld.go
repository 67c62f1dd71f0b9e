package mechanism

import (
	"math"

	"github.com/dpkit/dpkit/pld"
)

// PLD returns the mechanism's exact privacy loss distribution for package pld (and the
// ledger and CLI built on it). The secure release snaps values to a grid of spacing g
// and adds discrete Laplace noise of grid scale t: on the grid that is the discrete
// Laplace mechanism with sensitivity D = ⌈Δ/g⌉ and scale t exactly. For a vector
// (Dimension ≥ 2) it is the canonical (ε', 0) pair of the grid mechanism's exact ε' =
// D/t (Sampler().Epsilon(), ≤ ε), which dominates every ε'-DP mechanism (KOV Thm 2.4):
// the ℓ1 worst case of the grid vector mechanism is not shown to be the scalar one.
func (m *Laplace) PLD() (pld.Mechanism, error) {
	s := m.Sampler()
	if m.Dimension() != 1 {
		return pld.EpsilonDelta{Epsilon: s.Epsilon()}, nil
	}
	return pld.DiscreteLaplace{Scale: float64(s.GridScale()), Sensitivity: int64(s.GridSensitivity())}, nil
}

// PLD returns the geometric mechanism's privacy loss distribution: discrete Laplace noise
// of scale 1/Rate on an integer query of sensitivity Δ (KOV §4.2).
func (m *Geometric) PLD() (pld.Mechanism, error) {
	return pld.DiscreteLaplace{Scale: 1 / m.Rate(), Sensitivity: m.Sensitivity()}, nil
}

// PLD returns k-ary randomized response at the nominal ε; the sampler keeps the true
// category with a probability rounded down, which only adds privacy. At ε = 0 the
// output does not depend on the input: the (0, 0) pair, a single atom at loss 0
// (pld.RandomizedResponse, whose losses are ±ε, wants ε > 0).
func (m *RandomizedResponse) PLD() (pld.Mechanism, error) {
	if m.Epsilon() == 0 {
		return pld.EpsilonDelta{}, nil
	}
	return pld.RandomizedResponse{Epsilon: m.Epsilon(), K: m.Categories()}, nil
}

// PLD returns the exponential mechanism's accounting pair: the canonical (ε, 0) pair,
// which dominates every ε-DP mechanism (see pld.Exponential).
func (m *Exponential) PLD() (pld.Mechanism, error) {
	return pld.Exponential{Epsilon: m.Epsilon()}, nil
}

// PLD returns a continuous Gaussian that dominates the grid mechanism actually run:
// pld.Gaussian with σ' = S·g and Δ' = (D + 1)·g, S the grid noise parameter, g the
// granularity and D = ⌈Δ/g⌉ the grid sensitivity. Since S ≥ σ/g ≥ 2^30 (the grid of
// noise.NewSecureGaussian), μ' = (D+1)/S ≤ Δ/σ + 2^−29: a relative 2^−29/μ, below 10^−5
// for μ ≥ 2·10^−4 (σ ≤ 5000Δ). Vectors use D₂ + √d for D + 1 (D₂ = Δ/g + √d, see
// noise.NewSecureGaussianL2).
//
// Why it dominates. For Y ~ N_ℤ(0, S²), f(y) = e^(−y²/2S²) and F(c) = P[Y ≤ c], the
// loss between N_ℤ(0, S²) and N_ℤ(D, S²) decreases in y, so δ(ε) = max_c F(c) −
// e^ε F(c − D) over integers c. With the normaliser Z = √(2π)·S·θ, θ = 1 + 2Σ_k
// e^(−2π²S²k²) ≥ 1 (Poisson summation), and f increasing on y ≤ 0:
//
//	F(c) ≤ Φ((c+1)/S)/θ for c ≤ −1 (f(y) ≤ ∫_y^(y+1) f), so by symmetry
//	F(c) ≤ Φ((c+1)/S) + (1 − 1/θ) for every c, and likewise
//	F(m) ≥ Φ(m/S)/θ for every m,
//
// hence F(c) − e^ε F(c−D) ≤ Φ((c+1)/S) − e^ε Φ((c−D)/S) + (1 + e^ε)(1 − 1/θ), and the
// first two terms are the continuous Gaussian pair N(0, S²), N(D+1, S²) at threshold
// c + 1. So the grid mechanism's δ(ε) is at most that of pld.Gaussian{S, D+1} plus
// (1 + e^ε)·3e^(−2π²S²) per coordinate — with S ≥ 2^30 below e^(ε − 2^63), zero in
// every floating-point number for any ε the accounting evaluates (it is not added).
// Products of coordinates: the per-coordinate pairs N(0, S²), N(|v_i| + 1, S²) compose
// to the Gaussian with μ = ‖|v| + 1‖₂/S ≤ (‖v‖₂ + √d)/S.
func (m *Gaussian) PLD() (pld.Mechanism, error) {
	s := m.s
	g := s.Granularity()
	sens := upInt(s.GridSensitivity() + 1)
	if m.dim > 1 {
		sens = math.Nextafter(s.GridL2Sensitivity()+math.Nextafter(math.Sqrt(float64(m.dim)), math.Inf(1)), math.Inf(1))
	}
	return pld.Gaussian{Sigma: float64(s.GridSigma()) * g, Sensitivity: sens * g}, nil
}

// upInt returns a float64 ≥ n.
func upInt(n uint64) float64 {
	f := float64(n)
	if f < 0x1p64 && uint64(f) < n {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}
