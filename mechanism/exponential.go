package mechanism

import (
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
)

// ExponentialOptions configures an exponential mechanism.
type ExponentialOptions struct {
	Epsilon     float64 // required, finite and > 0
	Sensitivity float64 // of the utility u(D, r) in D, for every r; required, > 0
	// Monotonic declares that for neighbours D, D' all utilities move in the same
	// direction; the mechanism may then use ε·u/Δ instead of ε·u/(2Δ) (McSherry–Talwar).
	Monotonic bool
}

// Exponential is the exponential mechanism (McSherry and Talwar 2007; seed 002,
// "Exponential mechanism"): it selects r with probability ∝ exp(ε u(D, r)/(2Δu)) and is
// ε-DP. Probabilities are computed stably (utilities shifted by their maximum, a
// log-sum-exp), so large utilities do not overflow.
//
// Sampling is by exact rejection: a uniform candidate r is accepted with probability
// exp(−γ_r), γ_r = ε(u_max − u_r)/(cΔ) (c = 2, or 1 when monotonic), using the exact
// Bernoulli of package noise. γ_r is computed in float64, so the sampled distribution
// is that of utilities perturbed by a relative 2^−51 of (u_max − u_r); Guarantee does
// not include this rounding. The expected number of candidates is at most n.
type Exponential struct {
	eps, sens float64
	mono      bool
}

// NewExponential validates o.
func NewExponential(o ExponentialOptions) (*Exponential, error) {
	if err := checkEpsilonPositive(o.Epsilon); err != nil {
		return nil, err
	}
	if err := dpkit.CheckPositive("Sensitivity", o.Sensitivity); err != nil {
		return nil, err
	}
	return &Exponential{eps: o.Epsilon, sens: o.Sensitivity, mono: o.Monotonic}, nil
}

// Guarantee returns (ε, 0).
func (m *Exponential) Guarantee() dpkit.Budget { return dpkit.Budget{Epsilon: m.eps} }

// Epsilon returns ε; Sensitivity Δu.
func (m *Exponential) Epsilon() float64     { return m.eps }
func (m *Exponential) Sensitivity() float64 { return m.sens }

// factor returns ε/(2Δu), or ε/Δu when monotonic.
func (m *Exponential) factor() float64 {
	if m.mono {
		return m.eps / m.sens
	}
	return m.eps / (2 * m.sens)
}

func checkUtilities(u []float64) (float64, error) {
	if len(u) == 0 {
		return 0, &dpkit.ParamError{Name: "utilities", Value: "[]", Want: "at least one candidate"}
	}
	umax := math.Inf(-1)
	for i, x := range u {
		if err := checkValue(indexName("utilities", i), x); err != nil {
			return 0, err
		}
		umax = math.Max(umax, x)
	}
	return umax, nil
}

// Probabilities returns the selection probabilities, exp(f·(u_r − u_max)) / Σ_s
// exp(f·(u_s − u_max)) with f = ε/(2Δu) (log-sum-exp: no overflow for large utilities).
func (m *Exponential) Probabilities(utilities []float64) ([]float64, error) {
	umax, err := checkUtilities(utilities)
	if err != nil {
		return nil, err
	}
	f := m.factor()
	p := make([]float64, len(utilities))
	sum := 0.0
	for i, u := range utilities {
		p[i] = math.Exp(f * (u - umax))
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p, nil
}

// UtilityBound returns the accuracy bound of seed 002 ("Accuracy of the exponential
// mechanism"): with probability at least 1 − β the selected r has
//
//	u(D, r) > OPT − (2Δu/ε)(ln n + ln(1/β))
//
// for n candidates (Δu/ε instead of 2Δu/ε when monotonic). It returns the gap
// (2Δu/ε)(ln n + ln(1/β)).
func (m *Exponential) UtilityBound(n int, beta float64) (float64, error) {
	if err := checkBeta(beta); err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, &dpkit.ParamError{Name: "n", Value: n, Want: "an integer ≥ 1"}
	}
	return (math.Log(float64(n)) + math.Log(1/beta)) / m.factor(), nil
}

// Select returns the index of the selected candidate.
func (m *Exponential) Select(utilities []float64, src noise.Source) (int, error) {
	umax, err := checkUtilities(utilities)
	if err != nil {
		return 0, err
	}
	src = sourceOr(src)
	f := m.factor()
	n := uint64(len(utilities))
	for {
		i := noise.Uniform(src, n)
		gamma := f * (umax - utilities[i])
		if gamma >= 0x1p61 {
			continue // acceptance probability below exp(−2^61)
		}
		if ok, _ := noise.BernoulliExpFloat(src, gamma); ok {
			return int(i), nil
		}
	}
}

// ReportNoisyMax returns argmax_r (u_r + G_r) with G_r i.i.d. Gumbel noise of scale
// 2Δu/ε (Δu/ε when monotonic). By the Gumbel-max identity its output distribution is
// exactly the exponential mechanism's, so it is ε-DP and is sampled with Select's exact
// sampler (no ties, no floating-point noise).
func (m *Exponential) ReportNoisyMax(utilities []float64, src noise.Source) (int, error) {
	return m.Select(utilities, src)
}
