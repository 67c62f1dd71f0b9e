package compose

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
)

// stats holds the sums the closed-form theorems need.
type stats struct {
	sumEps, sumDelta, sumEps2, drvDrift, kovDrift float64
	floor, keep                                   float64
}

func newStats(ms []Mech) stats {
	var s stats
	for _, m := range ms {
		c := float64(m.Count)
		s.sumEps += c * m.Epsilon
		s.sumDelta += c * m.Delta
		s.sumEps2 += c * m.Epsilon * m.Epsilon
		s.drvDrift += c * m.Epsilon * math.Expm1(m.Epsilon)
		s.kovDrift += c * m.Epsilon * math.Tanh(m.Epsilon/2) // (e^ε−1)/(e^ε+1) = tanh(ε/2)
	}
	s.floor, s.keep = floorKeep(ms)
	return s
}

// up rounds a closed-form value up by a few ulps, so that float evaluation of the
// formula never reports less than its exact value.
func up(x float64) float64 {
	if math.IsInf(x, 0) || x == 0 {
		return x
	}
	return x + math.Abs(x)*0x1p-49
}

// EpsilonBy returns the total ε that theorem th guarantees at total δ:
//
//	basic (KOV Thm 3.1):  ε = Σ ε_ℓ,  valid when δ ≥ Σ δ_ℓ
//	drv   (KOV Thm 3.2, DRV10 Thm III.3, heterogeneous form):
//	      ε = Σ ε_ℓ (e^ε_ℓ − 1) + √(2 Σ ε_ℓ² · ln(1/δ̃)),  δ̃ = δ − Σ δ_ℓ > 0
//	kov   (KOV Thm 3.5, which is Thm 3.4 when all ε_ℓ are equal):
//	      ε = min{ Σ ε_ℓ,  A + √(2S · ln(e + √S/δ̃)),  A + √(2S · ln(1/δ̃)) },
//	      A = Σ ε_ℓ (e^ε_ℓ − 1)/(e^ε_ℓ + 1),  S = Σ ε_ℓ²,  δ̃ = 1 − (1 − δ)/Π(1 − δ_ℓ)
//	exact (KOV Thm 3.3): Epsilon.
//
// A δ that the theorem cannot reach is reported as an error matching dpkit.ErrInfeasible.
func EpsilonBy(th Theorem, ms []Mech, delta float64, opts *Options) (Result, error) {
	if th == Exact {
		return Epsilon(ms, delta, opts)
	}
	if err := validate(ms); err != nil {
		return Result{}, err
	}
	if err := dpkit.CheckDelta("delta", delta); err != nil {
		return Result{}, err
	}
	s := newStats(ms)
	var eps float64
	switch th {
	case Basic:
		if delta < s.sumDelta {
			return Result{}, infeasible("basic composition needs delta ≥ Σ δ_ℓ = %v (got %g)", s.sumDelta, delta)
		}
		eps = s.sumEps
	case DRV:
		dt := delta - s.sumDelta
		if dt <= 0 {
			return Result{}, infeasible("DRV advanced composition needs delta > Σ δ_ℓ = %v (got %g)", s.sumDelta, delta)
		}
		eps = up(s.drvDrift + math.Sqrt(2*s.sumEps2*math.Log(1/math.Min(dt, 1))))
	case KOV:
		if delta < s.floor {
			return Result{}, infeasible("total delta %g is below the floor 1 − Π(1 − δ_ℓ) = %v", delta, s.floor)
		}
		eps = s.sumEps
		if dt := (delta - s.floor) / s.keep; dt > 0 && s.keep > 0 {
			dt = math.Min(dt, 1)
			a := s.kovDrift + math.Sqrt(2*s.sumEps2*math.Log(math.E+math.Sqrt(s.sumEps2)/dt))
			b := s.kovDrift + math.Sqrt(2*s.sumEps2*math.Log(1/dt))
			eps = math.Min(eps, up(math.Min(a, b)))
		}
	default:
		return Result{}, unknownTheorem(th)
	}
	return Result{Theorem: th, Epsilon: eps, Delta: delta, Lower: eps, Exact: false}, nil
}

// DeltaBy returns the smallest total δ that theorem th guarantees at total ε (the
// inverse of EpsilonBy, solved in closed form). When the theorem gives nothing at this ε
// the answer is the trivial δ = 1.
func DeltaBy(th Theorem, ms []Mech, eps float64, opts *Options) (Result, error) {
	if th == Exact {
		return Delta(ms, eps, opts)
	}
	if err := validate(ms); err != nil {
		return Result{}, err
	}
	if err := dpkit.CheckEpsilon("epsilon", eps); err != nil {
		return Result{}, err
	}
	s := newStats(ms)
	delta := 1.0
	switch th {
	case Basic:
		if eps >= s.sumEps {
			delta = math.Min(1, up(s.sumDelta))
		}
	case DRV:
		if x := eps - s.drvDrift; x > 0 && s.sumEps2 > 0 {
			delta = math.Min(1, up(s.sumDelta+math.Exp(-x*x/(2*s.sumEps2))))
		} else if s.sumEps2 == 0 {
			delta = math.Min(1, up(s.sumDelta))
		}
	case KOV:
		dt := 1.0
		switch x := eps - s.kovDrift; {
		case eps >= s.sumEps:
			dt = 0
		case x > 0:
			X := x * x / (2 * s.sumEps2)
			dt = math.Exp(-X) // third term: ln(1/δ̃) ≤ X
			if X > 1 {        // second term: ln(e + √S/δ̃) ≤ X
				dt = math.Min(dt, math.Sqrt(s.sumEps2)/(math.Exp(X)-math.E))
			}
			dt = math.Min(1, up(dt))
		}
		delta = math.Min(1, up(s.floor+s.keep*dt))
	default:
		return Result{}, unknownTheorem(th)
	}
	return Result{Theorem: th, Epsilon: eps, Delta: delta, Lower: delta, Exact: false}, nil
}

// ParseTheorem returns the theorem named s ("basic", "drv", "kov" or "exact").
func ParseTheorem(s string) (Theorem, error) {
	for _, t := range Theorems {
		if string(t) == s {
			return t, nil
		}
	}
	return "", unknownTheorem(Theorem(s))
}

func unknownTheorem(th Theorem) error {
	return &dpkit.ParamError{Name: "theorem", Value: string(th), Want: "one of basic, drv, kov, exact"}
}

func infeasible(format string, args ...any) error {
	return &dpkit.InfeasibleError{Msg: fmt.Sprintf(format, args...)}
}
