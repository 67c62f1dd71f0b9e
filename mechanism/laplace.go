package mechanism

import (
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
)

// MinLaplaceEpsilon is the smallest ε of a Laplace mechanism: its grid noise has scale
// t ≥ 1/ε grid steps, at most 2^48.
const MinLaplaceEpsilon = 0x1p-48

// LaplaceOptions configures a Laplace mechanism.
type LaplaceOptions struct {
	Epsilon     float64 `json:"epsilon"`             // required, finite and > 0
	Sensitivity float64 `json:"sensitivity"`         // ℓ1 sensitivity of the released value or vector; required, > 0
	Dimension   int     `json:"dimension,omitempty"` // number of coordinates released together; 0 means 1
}

func (LaplaceOptions) kind() string                { return "laplace" }
func (o LaplaceOptions) build() (Mechanism, error) { return NewLaplace(o) }

// Laplace is the Laplace mechanism (the lecture slides, "Laplace mechanism"): f(D) + (Y_1, …, Y_k)
// with Y_i i.i.d. Lap(b), b = Δf/ε, where Δf is the ℓ1 sensitivity of f. It is ε-DP.
// Noise is generated securely (package noise, SecureLaplace): the release lies on a grid
// of spacing Granularity(), and the grid noise has scale NoiseScale() ≥ b.
type Laplace struct {
	eps, sens float64
	dim       int
	s         *noise.SecureLaplace
}

// NewLaplace validates o and returns the mechanism.
func NewLaplace(o LaplaceOptions) (*Laplace, error) {
	if err := checkEpsilonPositive(o.Epsilon); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("mechanism", dpkit.CheckPositive("sensitivity", o.Sensitivity)); err != nil {
		return nil, err
	}
	if o.Epsilon < MinLaplaceEpsilon {
		// The grid noise has scale t ≥ 1/ε grid steps and t ≤ 2^48 (noise.SecureLaplace):
		// a smaller ε could not be answered (and is refused before the sampler's search).
		return nil, perr("epsilon", o.Epsilon, "≥ 2^-48 (the noise scale is at most 2^48 grid steps)")
	}
	dim := o.Dimension
	if dim == 0 {
		dim = 1
	}
	if dim < 0 || dim > 1<<20 {
		return nil, perr("dimension", o.Dimension, "an integer in [0, 2^20]")
	}
	s, err := noise.NewSecureLaplaceL1(o.Sensitivity, o.Epsilon, dim)
	if err != nil {
		return nil, err
	}
	return &Laplace{eps: o.Epsilon, sens: o.Sensitivity, dim: dim, s: s}, nil
}

// Guarantee returns (ε, 0). The grid mechanism's exact ε is Sampler().Epsilon() ≤ ε.
func (m *Laplace) Guarantee() dpkit.Budget { return dpkit.Budget{Epsilon: m.eps} }

// Descriptor returns {"kind":"laplace","version":1,"epsilon":…,"sensitivity":…} (and
// "dimension" for vectors).
func (m *Laplace) Descriptor() Descriptor {
	o := LaplaceOptions{Epsilon: m.eps, Sensitivity: m.sens}
	if m.dim > 1 {
		o.Dimension = m.dim
	}
	return Describe(o)
}

// Epsilon returns ε.
func (m *Laplace) Epsilon() float64 { return m.eps }

// Sensitivity returns the ℓ1 sensitivity Δf.
func (m *Laplace) Sensitivity() float64 { return m.sens }

// Dimension returns the number of coordinates k.
func (m *Laplace) Dimension() int { return m.dim }

// Scale returns the nominal scale b = Δf/ε.
func (m *Laplace) Scale() float64 { return m.sens / m.eps }

// NoiseScale returns the scale t·g of the noise actually added (≥ b, by a relative
// 2^−39 or less in ordinary cases).
func (m *Laplace) NoiseScale() float64 { return m.s.Scale() }

// Granularity returns the spacing of the output grid.
func (m *Laplace) Granularity() float64 { return m.s.Granularity() }

// Sampler returns the secure sampler (its exact grid parameters).
func (m *Laplace) Sampler() *noise.SecureLaplace { return m.s }

// Variance returns the variance of each coordinate's noise. For the grid noise it is
// g²·2q/(1−q)² with q = e^(−1/t), within 2^−38 relative of 2b².
func (m *Laplace) Variance() float64 { return m.s.Variance() }

// Interval returns the half-width w of the (1−β) interval of one coordinate's noise:
// Pr[|Y| ≥ w] ≤ β. For Lap(b), Pr[|Y| ≥ t·b] = e^(−t) (the lecture slides), so w = b·ln(1/β);
// for the grid noise the exact discrete tail P(|Z| ≥ m) = 2q^m/(1+q) is used, which
// gives w = m·g with m the smallest integer meeting β.
func (m *Laplace) Interval(beta float64) (float64, error) {
	if err := checkBeta(beta); err != nil {
		return 0, err
	}
	return m.tail(beta), nil
}

func (m *Laplace) tail(beta float64) float64 {
	return tailSteps(1/float64(m.s.GridScale()), beta) * m.s.Granularity()
}

// tailSteps returns the smallest integer m ≥ 1 with P(|Z| ≥ m) = 2q^m/(1+q) ≤ β for the
// discrete Laplace distribution of rate r (q = e^(−r)), as a float64 (integer-valued;
// beyond 2^53, the next float64 that passes). The start is the closed form
// ⌈(ln 2 − ln(1+q) − ln β)/r⌉, corrected by a bounded number of steps each way. The
// test is 2e^(−rm)/(1+q) ≤ β for β ≥ 1e-280 and, below (where e^(−rm) would
// underflow), its logarithm with a margin of 1e-12·(1 + |ln β|) covering the rounding
// of r·m (≤ 2^−52 of it) and of the logarithms, so that the tail is never above β.
func tailSteps(rate, beta float64) float64 {
	q := math.Exp(-rate)
	lb := math.Log(beta)
	pass := func(m float64) bool {
		if beta >= 1e-280 {
			return 2*math.Exp(-rate*m)/(1+q) <= beta
		}
		return math.Ln2-rate*m-math.Log1p(q) <= lb-1e-12*(1-lb)
	}
	m := math.Max(1, math.Ceil((math.Ln2-math.Log1p(q)-lb)/rate))
	for i := 0; i < 4 && m > 1 && pass(m-1); i++ {
		m-- // the closed form rounded up past the smallest passing m
	}
	for i := 0; i < 64 && !pass(m); i++ {
		m = math.Max(m+1, math.Nextafter(m, math.Inf(1)))
	}
	return m
}

// VectorBound returns w such that Pr[max_i |Y_i| ≥ w] ≤ β for the k coordinates: the
// union bound of the lecture slides, w = b·ln(k/β) (each coordinate at level β/k).
func (m *Laplace) VectorBound(beta float64) (float64, error) {
	if err := checkBeta(beta); err != nil {
		return 0, err
	}
	return m.tail(beta / float64(m.dim)), nil
}

// Release returns value plus noise. It is for Dimension 1; value must be finite.
func (m *Laplace) Release(value float64, src noise.Source) (float64, error) {
	return release(m, m.dim, value, src)
}

// ReleaseVector returns values plus independent noise per coordinate; len(values) must
// equal Dimension and every value must be finite.
func (m *Laplace) ReleaseVector(values []float64, src noise.Source) ([]float64, error) {
	return releaseVector(m, m.dim, values, src)
}

func (m *Laplace) gridExp() int { return math.Ilogb(m.s.Granularity()) }
func (m *Laplace) sample(src noise.Source) int64 {
	return noise.DiscreteLaplaceScale(src, m.s.GridScale())
}
