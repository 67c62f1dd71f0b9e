package mechanism

import (
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/sensitivity"
)

// MedianOptions configures the smooth-sensitivity median.
type MedianOptions struct {
	Epsilon float64 // required, finite and > 0
	// Delta = 0 gives ε-DP with heavy-tailed noise ∝ 1/(1+|z|^γ); Delta in (0, 1) gives
	// (ε, δ)-DP with Laplace noise.
	Delta        float64
	Lower, Upper float64 // declared bounds of the values (public); values are clamped
	Gamma        float64 // tail exponent for Delta = 0; 0 means 4 (finite variance)
}

// Median releases the median of values in [Lower, Upper] with noise calibrated to its
// smooth sensitivity (Nissim, Raskhodnikova and Smith 2007; seed 002 with docs/errata.md
// 002 items 2–3), for datasets of a public size under replace-one neighbours:
//
//	δ = 0:  med + (S*_β(D)/α)·η,  η ∝ 1/(1+|z|^γ),  α = β = ε/(2(γ+1))
//	δ > 0:  med + (S*_β(D)/α)·η,  η ~ Lap(1),        α = ε/2, β = ε/(2 ln(2/δ))
//
// with S*_β the β-smooth sensitivity of sensitivity.SmoothMedian.
//
// The noise η is sampled in floating point (53-bit uniforms); the sum is rounded to a
// fixed grid of spacing Granularity() = 2^(⌊log2(Upper−Lower)⌋−40), which does not depend
// on the data, and clamped to [Lower, Upper] (post-processing). Unlike the Laplace and
// Gaussian mechanisms, this release is not exact to the last bit: its guarantee holds
// for the ideal real-valued noise. Releasing the smooth sensitivity itself is not
// private, so Release returns only the value.
type Median struct {
	eps, delta, lower, upper float64
	gamma, alpha, beta       float64
	heavy                    *noise.HeavyTail
}

// NewMedian validates o.
func NewMedian(o MedianOptions) (*Median, error) {
	if err := checkEpsilonPositive(o.Epsilon); err != nil {
		return nil, err
	}
	if math.IsNaN(o.Delta) || o.Delta < 0 || o.Delta >= 1 {
		return nil, &dpkit.ParamError{Name: "Delta", Value: o.Delta, Want: "in [0, 1)"}
	}
	if err := checkValue("Lower", o.Lower); err != nil {
		return nil, err
	}
	if err := checkValue("Upper", o.Upper); err != nil {
		return nil, err
	}
	if !(o.Upper > o.Lower) || math.IsInf(o.Upper-o.Lower, 0) {
		return nil, &dpkit.ParamError{Name: "Upper", Value: o.Upper, Want: "> Lower, with Upper − Lower finite"}
	}
	m := &Median{eps: o.Epsilon, delta: o.Delta, lower: o.Lower, upper: o.Upper}
	var err error
	if o.Delta == 0 {
		m.gamma = o.Gamma
		if m.gamma == 0 {
			m.gamma = 4
		}
		if m.heavy, err = noise.NewHeavyTail(m.gamma); err != nil {
			return nil, &dpkit.ParamError{Name: "Gamma", Value: o.Gamma, Want: "0 (meaning 4) or a finite number > 1"}
		}
		m.alpha, m.beta, err = sensitivity.HeavyTailCalibration(o.Epsilon, m.gamma)
	} else {
		if o.Gamma != 0 {
			return nil, &dpkit.ParamError{Name: "Gamma", Value: o.Gamma, Want: "0 when Delta > 0 (Laplace noise)"}
		}
		m.alpha, m.beta, err = sensitivity.LaplaceCalibration(o.Epsilon, o.Delta)
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// Guarantee returns (ε, δ).
func (m *Median) Guarantee() dpkit.Budget { return dpkit.Budget{Epsilon: m.eps, Delta: m.delta} }

// Alpha and Beta return the calibration (noise = S*_β/α · η); Gamma the tail exponent
// (0 for Laplace noise).
func (m *Median) Alpha() float64 { return m.alpha }
func (m *Median) Beta() float64  { return m.beta }
func (m *Median) Gamma() float64 { return m.gamma }

// Granularity returns the spacing of the output grid.
func (m *Median) Granularity() float64 {
	_, e := math.Frexp(m.upper - m.lower)
	return math.Ldexp(1, e-1-40)
}

// Release returns the noisy median of values (clamped to [Lower, Upper]; NaN values are
// an error). values is not modified.
func (m *Median) Release(values []float64, src noise.Source) (float64, error) {
	med, err := sensitivity.Median(values, m.lower, m.upper)
	if err != nil {
		return 0, err
	}
	s, err := sensitivity.SmoothMedian(values, m.lower, m.upper, m.beta)
	if err != nil {
		return 0, err
	}
	src = sourceOr(src)
	var eta float64
	if m.heavy != nil {
		eta = m.heavy.Sample(src)
	} else {
		u := 1 - noise.Float64(src) // (0, 1]
		eta = -math.Log(u)
		if src.Uint64()&1 == 1 {
			eta = -eta
		}
	}
	y := med + s/m.alpha*eta
	g := m.Granularity()
	y = math.Round(y/g) * g
	return math.Max(m.lower, math.Min(m.upper, y)), nil
}
