package mechanism

import (
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
)

// Cost selects the accuracy objective for which the staircase γ is optimal.
type Cost int

const (
	// CostL2 minimises the variance (Geng–Viswanath Thm 5).
	CostL2 Cost = iota
	// CostL1 minimises E|X| (Geng–Viswanath Thm 4; thesis §2.3, d = 1): γ = 1/(1+e^(ε/2)).
	CostL1
)

// StaircaseOptions configures a staircase mechanism.
type StaircaseOptions struct {
	Epsilon     float64 `json:"epsilon"`        // required, in [2^-12, 2^20]
	Sensitivity float64 `json:"sensitivity"`    // required, > 0
	Cost        Cost    `json:"cost,omitempty"` // objective for γ (default CostL2)
}

func (StaircaseOptions) kind() string                { return "staircase" }
func (o StaircaseOptions) build() (Mechanism, error) { return NewStaircase(o) }

func init() { register[StaircaseOptions]("staircase", "epsilon", "sensitivity") }

// MarshalText writes "l2" or "l1".
func (c Cost) MarshalText() ([]byte, error) {
	switch c {
	case CostL2:
		return []byte("l2"), nil
	case CostL1:
		return []byte("l1"), nil
	}
	return nil, perr("cost", int(c), "CostL2 or CostL1")
}

// UnmarshalText reads "l2" or "l1".
func (c *Cost) UnmarshalText(b []byte) error {
	switch string(b) {
	case "l2":
		*c = CostL2
	case "l1":
		*c = CostL1
	default:
		return perr("cost", string(b), `"l2" or "l1"`)
	}
	return nil
}

// Staircase is the staircase mechanism (Geng and Viswanath 2012; KOV §4.1; thesis
// §2.3, eq. (2.8)): the optimal ε-DP noise for a real query of sensitivity Δ, with a
// piecewise-constant density whose steps decay by e^(−ε) every Δ. It beats Laplace noise
// for large ε (variance Θ(e^(−2ε/3)) against 2/ε², thesis Cor 2.3.2). Noise is exact on a
// power-of-two grid (noise.Staircase).
type Staircase struct {
	eps, sens float64
	cost      Cost
	s         *noise.Staircase
}

// NewStaircase validates o and returns the mechanism.
func NewStaircase(o StaircaseOptions) (*Staircase, error) {
	if err := checkEpsilonPositive(o.Epsilon); err != nil {
		return nil, err
	}
	if err := dpkit.CheckPositive("Sensitivity", o.Sensitivity); err != nil {
		return nil, err
	}
	var gamma float64
	switch o.Cost {
	case CostL2:
		gamma = noise.StaircaseGammaL2(o.Epsilon)
	case CostL1:
		gamma = noise.StaircaseGammaL1(o.Epsilon)
	default:
		return nil, &dpkit.ParamError{Name: "Cost", Value: int(o.Cost), Want: "CostL2 or CostL1"}
	}
	s, err := noise.NewStaircase(o.Epsilon, o.Sensitivity, gamma)
	if err != nil {
		return nil, err
	}
	return &Staircase{eps: o.Epsilon, sens: o.Sensitivity, cost: o.Cost, s: s}, nil
}

// Descriptor returns {"kind":"staircase","version":1,"epsilon":…,"sensitivity":…} (and
// "cost":"l1" where chosen).
func (m *Staircase) Descriptor() Descriptor {
	return Describe(StaircaseOptions{Epsilon: m.eps, Sensitivity: m.sens, Cost: m.cost})
}

// Guarantee returns (ε, 0).
func (m *Staircase) Guarantee() dpkit.Budget { return dpkit.Budget{Epsilon: m.eps} }

// Epsilon returns ε; Sensitivity Δ; Gamma the γ of the grid distribution; Granularity
// the output grid spacing.
func (m *Staircase) Epsilon() float64     { return m.eps }
func (m *Staircase) Sensitivity() float64 { return m.sens }
func (m *Staircase) Gamma() float64       { return m.s.Gamma() }
func (m *Staircase) Granularity() float64 { return m.s.Granularity() }

// Scale returns the period of the staircase (≥ Δ), the natural scale of the noise.
func (m *Staircase) Scale() float64 { return m.s.Period() }

// Variance returns the staircase variance (thesis §2.3, d = 1; noise.StaircaseMoment)
// for the grid distribution's ε, period and γ.
func (m *Staircase) Variance() float64 {
	return noise.StaircaseMoment(m.s.Epsilon(), m.s.Period(), m.s.Gamma(), 2)
}

// Interval returns w with Pr[|X| ≥ w] ≤ β for the continuous staircase: P(|X| ≥ kΔ) =
// b^k, and within a period the mass falls linearly on each step; plus one grid step for
// the grid distribution. w is rounded up by 1e-12 relative.
func (m *Staircase) Interval(beta float64) (float64, error) {
	if err := checkBeta(beta); err != nil {
		return 0, err
	}
	eps, period, gamma := m.s.Epsilon(), m.s.Period(), m.s.Gamma()
	k := math.Floor(math.Log(beta) / -eps) // b^k ≥ β > b^(k+1)
	rem := beta / math.Exp(-eps*k)         // tail fraction of period k still allowed, in (b, 1]
	b := math.Exp(-eps)
	mass := gamma + (1-gamma)*b
	// Period k holds mass b^k(1−b); the fraction of it below kΔ + sΔ is F(s) = s/mass on
	// [0, γ] and (γ + (s−γ)b)/mass beyond. The tail b^k(1 − (1−b)F(s)) is ≤ β when
	// F(s) ≥ (1 − rem)/(1 − b).
	need := (1 - rem) / -math.Expm1(-eps) * mass
	var s float64
	if need <= gamma {
		s = need
	} else {
		s = gamma + (need-gamma)/b
	}
	return (k+math.Min(s, 1))*period*(1+1e-12) + m.s.Granularity(), nil
}

// PLD returns the staircase's exact privacy loss distribution on its grid: three losses
// −ε, 0 and ε whose worst shift is one full period (pld.Staircase), with the grid
// distribution's ε (never above the ε asked for), period and central step.
func (m *Staircase) PLD() (pld.Mechanism, error) {
	return pld.Staircase{Epsilon: m.s.Epsilon(), Period: m.s.GridPeriod(), Step: m.s.GridStep()}, nil
}

// Release returns value plus staircase noise; value must be finite.
func (m *Staircase) Release(value float64, src noise.Source) (float64, error) {
	if err := checkValue("value", value); err != nil {
		return 0, err
	}
	return m.s.Add(sourceOr(src), value), nil
}
