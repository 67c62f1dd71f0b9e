package region

import (
	"math"

	"github.com/dpkit/dpkit"
)

// Implies reports whether every (ε, δ)-DP mechanism is also (ε̃, δ̃)-DP, where
// (ε, δ) = from and (ε̃, δ̃) = to (KOV Remark A.1(a)); that is, whether
// R(ε, δ) ⊆ R(ε̃, δ̃). This holds if and only if
//
//	δ̃ ≥ δ   and   (1−δ)/(1+e^ε) ≥ (1−δ̃)/(1+e^ε̃),
//
// the two conditions saying that the vertices (0, 1−δ) and (v, v) of [Boundary](from) lie
// in R(ε̃, δ̃); the canonical pair of from attains R(ε, δ), so the condition is also
// necessary. Equivalently δ̃ ≥ [ImpliedDelta](from, ε̃), which is how Implies evaluates
// it.
//
// Implies returns an error wrapping a *dpkit.ParamError naming "from.epsilon",
// "from.delta", "to.epsilon" or "to.delta" if a budget is invalid (ε finite and ≥ 0,
// δ in [0, 1]).
func Implies(from, to dpkit.Budget) (bool, error) {
	if err := checkBudget("from", from); err != nil {
		return false, err
	}
	if err := checkBudget("to", to); err != nil {
		return false, err
	}
	return to.Delta >= impliedDelta(from, to.Epsilon), nil
}

// ImpliedDelta returns the smallest δ̃ such that every (ε, δ)-DP mechanism is
// (ε̃, δ̃)-DP, ε = b.Epsilon, δ = b.Delta (KOV Remark A.1(a), solved for δ̃):
//
//	δ̃(ε̃) = max( δ,  1 − (1−δ)(1+e^ε̃)/(1+e^ε) )
//	      = δ + (1−δ)·(1 − e^(ε̃−ε))/(1 + e^(−ε))      for ε̃ < ε,
//	      = δ                                            for ε̃ ≥ ε.
//
// The second form is the one evaluated, with 1 − e^(ε̃−ε) = −expm1(ε̃−ε): it neither
// cancels when ε̃ is close to ε or when δ is small, nor overflows for large ε. It is the
// hockey-stick divergence of [Canonical](b) at ε̃, and ImpliedDelta(b, 0) is
// [TotalVariation](b).
//
// ImpliedDelta returns an error wrapping a *dpkit.ParamError if b is not a valid budget
// or epsTilde is not finite and ≥ 0.
func ImpliedDelta(b dpkit.Budget, epsTilde float64) (float64, error) {
	if err := b.Validate(); err != nil {
		return math.NaN(), wrap(err)
	}
	if err := dpkit.InPackage("region", dpkit.CheckEpsilon("epsTilde", epsTilde)); err != nil {
		return math.NaN(), wrap(err)
	}
	return impliedDelta(b, epsTilde), nil
}

func impliedDelta(b dpkit.Budget, epsTilde float64) float64 {
	if epsTilde >= b.Epsilon {
		return b.Delta
	}
	return b.Delta + (1-b.Delta)*(-math.Expm1(epsTilde-b.Epsilon))/(1+math.Exp(-b.Epsilon))
}

// TotalVariation returns the largest total-variation distance
// ‖M(D) − M(D')‖_TV = max_S P(M(D') ∈ S) − P(M(D) ∈ S) between the output distributions
// of an (ε, δ)-DP mechanism on neighbouring inputs, ε = b.Epsilon, δ = b.Delta (KOV
// Remark A.1(b); the bound is attained by [Canonical](b)):
//
//	TV(ε, δ) = 1 − 2(1−δ)/(1+e^ε) = δ + (1−δ)·tanh(ε/2).
//
// The second form is the one evaluated; it is accurate for small ε and does not overflow
// for large ε. TotalVariation returns an error wrapping a *dpkit.ParamError if b is not a
// valid budget.
func TotalVariation(b dpkit.Budget) (float64, error) {
	if err := b.Validate(); err != nil {
		return math.NaN(), wrap(err)
	}
	return b.Delta + (1-b.Delta)*math.Tanh(b.Epsilon/2), nil
}

// checkBudget validates b, naming its fields "<name>.epsilon" and "<name>.delta".
func checkBudget(name string, b dpkit.Budget) error {
	if err := dpkit.InPackage("region", dpkit.CheckEpsilon(name+".epsilon", b.Epsilon)); err != nil {
		return wrap(err)
	}
	return wrap(dpkit.InPackage("region", dpkit.CheckDelta(name+".delta", b.Delta)))
}
