package dpkit

import (
	"errors"
	"fmt"
	"math"
)

// Budget is an (ε, δ) differential-privacy guarantee: for all neighbouring inputs D, D'
// and all sets S, Pr[M(D) ∈ S] ≤ e^ε Pr[M(D') ∈ S] + δ (KOV eq. 1).
type Budget struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// Validate reports whether b is a valid guarantee: ε finite and ≥ 0, δ in [0, 1].
func (b Budget) Validate() error {
	if err := CheckEpsilon("epsilon", b.Epsilon); err != nil {
		return err
	}
	return CheckDelta("delta", b.Delta)
}

func (b Budget) String() string { return fmt.Sprintf("(ε=%g, δ=%g)", b.Epsilon, b.Delta) }

// ParamError reports an invalid parameter: which one, its value, and the valid range.
type ParamError struct {
	Name  string // parameter name as the caller knows it, e.g. "delta" or "mech[2].epsilon"
	Value any    // the offending value
	Want  string // the valid range, e.g. "in [0, 1]"
}

func (e *ParamError) Error() string {
	return fmt.Sprintf("dpkit: invalid %s = %v: want %s", e.Name, e.Value, e.Want)
}

// ErrInfeasible is matched (errors.Is) by every error that reports a request no
// guarantee can satisfy, such as a target δ below the floor 1 − Π(1 − δ_ℓ).
var ErrInfeasible = errors.New("dpkit: infeasible")

// InfeasibleError reports a well-formed request that cannot be met, and why.
type InfeasibleError struct {
	Msg string
}

func (e *InfeasibleError) Error() string        { return "dpkit: infeasible: " + e.Msg }
func (e *InfeasibleError) Is(target error) bool { return target == ErrInfeasible }

// CheckEpsilon returns a *ParamError unless v is finite and ≥ 0.
func CheckEpsilon(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return &ParamError{Name: name, Value: v, Want: "a finite number ≥ 0"}
	}
	return nil
}

// CheckDelta returns a *ParamError unless v is in [0, 1].
func CheckDelta(name string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > 1 {
		return &ParamError{Name: name, Value: v, Want: "in [0, 1]"}
	}
	return nil
}

// CheckPositive returns a *ParamError unless v is finite and > 0.
func CheckPositive(name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return &ParamError{Name: name, Value: v, Want: "a finite number > 0"}
	}
	return nil
}

// CheckCount returns a *ParamError unless 1 ≤ k ≤ max.
func CheckCount(name string, k, max int64) error {
	if k < 1 || k > max {
		return &ParamError{Name: name, Value: k, Want: fmt.Sprintf("an integer in [1, %d]", max)}
	}
	return nil
}
