package mechanism

import (
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/region"
)

// GeometricOptions configures a geometric mechanism.
type GeometricOptions struct {
	Epsilon     float64 `json:"epsilon"`     // required, > 0, with ε/Sensitivity in [noise.MinRate, noise.MaxRate]
	Sensitivity int64   `json:"sensitivity"` // of the integer query; required, ≥ 1
}

func (GeometricOptions) kind() string                { return "geometric" }
func (o GeometricOptions) build() (Mechanism, error) { return NewGeometric(o) }

// Geometric is the geometric mechanism (Ghosh, Roughgarden and Sundararajan 2009; seed
// 000 Thm 4.4): an integer query plus two-sided geometric noise
// P(Z = z) ∝ e^(−ε|z|/Δ), sampled exactly. It is ε-DP; the rate is rounded down to a
// multiple of 2^−63, so the exact ε is Rate()·Δ ≤ ε.
type Geometric struct {
	eps  float64
	sens int64
	d    *noise.DiscreteLaplace
}

// NewGeometric validates o and returns the mechanism.
func NewGeometric(o GeometricOptions) (*Geometric, error) {
	if err := checkEpsilonPositive(o.Epsilon); err != nil {
		return nil, err
	}
	if o.Sensitivity < 1 || o.Sensitivity > 1<<40 {
		return nil, perr("sensitivity", o.Sensitivity, "an integer in [1, 2^40]")
	}
	rate := o.Epsilon / float64(o.Sensitivity) // Δ ≤ 2^40 is exact
	if math.FMA(rate, float64(o.Sensitivity), -o.Epsilon) > 0 {
		rate = math.Nextafter(rate, 0) // rounded up: step down so that rate·Δ ≤ ε
	}
	d, err := noise.NewDiscreteLaplace(rate)
	if err != nil {
		return nil, perr("epsilon", o.Epsilon, "epsilon/sensitivity in [2^-40, 2^20]")
	}
	return &Geometric{eps: o.Epsilon, sens: o.Sensitivity, d: d}, nil
}

// Guarantee returns (ε, 0).
func (m *Geometric) Guarantee() dpkit.Budget { return dpkit.Budget{Epsilon: m.eps} }

// Descriptor returns {"kind":"geometric","version":1,"epsilon":…,"sensitivity":…}.
func (m *Geometric) Descriptor() Descriptor {
	return Describe(GeometricOptions{Epsilon: m.eps, Sensitivity: m.sens})
}

// Epsilon returns ε; Sensitivity the integer sensitivity Δ; Rate the noise rate used.
func (m *Geometric) Epsilon() float64   { return m.eps }
func (m *Geometric) Sensitivity() int64 { return m.sens }
func (m *Geometric) Rate() float64      { return m.d.Rate() }

// Variance returns 2q/(1−q)², q = e^(−rate).
func (m *Geometric) Variance() float64 { return m.d.Variance() }

// Interval returns the smallest integer w ≥ 1 with Pr[|Z| ≥ w] = 2q^w/(1+q) ≤ β
// (q = e^(−rate); see tailSteps for how it is found at every β, subnormal included).
func (m *Geometric) Interval(beta float64) (int64, error) {
	if err := checkBeta(beta); err != nil {
		return 0, err
	}
	return int64(tailSteps(m.d.Rate(), beta)), nil
}

// Release returns value plus noise, saturating at the int64 range (post-processing).
func (m *Geometric) Release(value int64, src noise.Source) int64 {
	z := m.d.Sample(sourceOr(src))
	sum := value + z
	// overflow: both of one sign and the sum of the other
	if (value > 0 && z > 0 && sum < 0) || (value < 0 && z < 0 && sum >= 0) {
		if value > 0 {
			return math.MaxInt64
		}
		return math.MinInt64
	}
	return sum
}

// Pair returns the pair of output distributions that defines the mechanism's privacy
// region when Δ = 1: by KOV Thm 4.4 (App. C) it is the region of the canonical
// binary pair with (ε, 0), region.Canonical. For Δ > 1 it returns a *dpkit.ParamError.
func (m *Geometric) Pair() (*region.Pair, error) {
	if m.sens != 1 {
		return nil, perr("sensitivity", m.sens, "1 for Pair")
	}
	return region.Canonical(dpkit.Budget{Epsilon: m.d.Rate()})
}
