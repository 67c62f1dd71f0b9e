package dpkit

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
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

// ParamError reports an invalid parameter: which package refused it, which parameter,
// its value, and the valid range.
//
// Name is the name the caller knows the parameter by: the JSON field or option field in
// snake_case ("epsilon", "delta", "sensitivity", "count", "columns[salary].min",
// "mech[2].epsilon"). Command-line front ends translate it to their flag names. Names are
// spelled the same way in every package, so that callers can match on them.
type ParamError struct {
	Pkg   string // the package that refused it, e.g. "mechanism"; empty means "dpkit"
	Name  string // parameter name as the caller knows it, e.g. "delta" or "mech[2].epsilon"
	Value any    // the offending value; nil when the parameter is missing
	Want  string // the valid range, e.g. "in [0, 1]"
}

func (e *ParamError) Error() string {
	pkg := e.Pkg
	if pkg == "" {
		pkg = "dpkit"
	}
	if e.Value == nil {
		return fmt.Sprintf("%s: missing %s: want %s", pkg, e.Name, e.Want)
	}
	return fmt.Sprintf("%s: invalid %s = %s: want %s", pkg, e.Name, FormatValue(e.Value), e.Want)
}

// FormatValue formats a parameter value for a message: floats in the shortest form that
// reads back to the same float64 (0.03, not 0.029999999999999999), strings quoted when
// they are empty or contain spaces, everything else as fmt's %v.
func FormatValue(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	case string:
		if x == "" || strings.ContainsAny(x, " \t\n\"") {
			return strconv.Quote(x)
		}
		return x
	}
	return fmt.Sprint(v)
}

// InPackage attributes err to package pkg and returns it: the first *ParamError in err's
// chain that names no package is set to name pkg (errors from the shared checks,
// CheckEpsilon and the like, are fresh values, so this changes no one else's error).
// Packages call it on those errors so that the message's prefix names the package that
// refused the input. Call it before wrapping: a wrapper's message is formatted when
// the wrapper is made.
func InPackage(pkg string, err error) error {
	var pe *ParamError
	if errors.As(err, &pe) && pe.Pkg == "" {
		pe.Pkg = pkg
	}
	return err
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
