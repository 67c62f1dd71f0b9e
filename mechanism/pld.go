package mechanism

import (
	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// PLD returns the mechanism's exact privacy loss distribution for package pld (and the
// ledger and CLI built on it). The secure release snaps values to a grid of spacing g
// and adds discrete Laplace noise of grid scale t: on the grid that is the discrete
// Laplace mechanism with sensitivity D = ⌈Δ/g⌉ and scale t exactly. Only the scalar
// mechanism is described (for a vector, the ℓ1 worst case concentrates the shift on one
// coordinate, which this is not shown to equal on the grid).
func (m *Laplace) PLD() (pld.Mechanism, error) {
	if m.Dimension() != 1 {
		return nil, &dpkit.ParamError{Name: "dimension", Value: m.Dimension(), Want: "1 (the PLD of a vector release is not provided)"}
	}
	s := m.Sampler()
	return pld.DiscreteLaplace{Scale: float64(s.GridScale()), Sensitivity: int64(s.GridSensitivity())}, nil
}

// PLD returns the geometric mechanism's privacy loss distribution: discrete Laplace noise
// of scale 1/Rate on an integer query of sensitivity Δ (KOV §4.2).
func (m *Geometric) PLD() (pld.Mechanism, error) {
	return pld.DiscreteLaplace{Scale: 1 / m.Rate(), Sensitivity: m.Sensitivity()}, nil
}

// PLD returns k-ary randomized response at the nominal ε; the sampler keeps the true
// category with a probability rounded down, which only adds privacy.
func (m *RandomizedResponse) PLD() (pld.Mechanism, error) {
	return pld.RandomizedResponse{Epsilon: m.Epsilon(), K: m.Categories()}, nil
}

// PLD returns the exponential mechanism's accounting pair: the canonical (ε, 0) pair,
// which dominates every ε-DP mechanism (see pld.Exponential).
func (m *Exponential) PLD() (pld.Mechanism, error) {
	return pld.Exponential{Epsilon: m.Epsilon()}, nil
}
