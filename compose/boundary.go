package compose

import (
	"math"

	"github.com/dpkit/dpkit"
)

// MaxBreakpoints bounds the number of (ε, δ) pairs Breakpoints and Region return.
const MaxBreakpoints = 1_000_000

// Breakpoints returns the exact privacy region of the composition as a finite set of
// (ε_j, δ_j) pairs: R = ∩_j R(ε_j, δ_j) (KOV Thm 3.3 with Remark 6.1). The ε_j are the
// values ≥ 0 the privacy loss can take: for k copies of one (ε, δ) these are the
// ⌊k/2⌋+1 grid points (k − 2i)ε, i = 0..⌊k/2⌋ (docs/errata.md item 5), with
//
//	δ_i = 1 − (1−δ)^k (1 − δ'_i),  δ'_i = Σ_{ℓ<i} C(k,ℓ)(e^((k−ℓ)ε) − e^((k−2i+ℓ)ε))/(1+e^ε)^k
//
// (KOV eq. 5–6), computed in log space. For heterogeneous workloads they are the sums
// Σ ±ε_ℓ ≥ 0 with non-negligible probability. δ_j are upper values (Curve.Delta). Pairs
// are ordered by decreasing ε. More than MaxBreakpoints pairs is an error.
func (c *Curve) Breakpoints() ([]dpkit.Budget, error) {
	var eps []float64
	if g := c.mechs; len(g) == 1 && g[0].Epsilon > 0 {
		k := g[0].Count
		if k/2+1 > MaxBreakpoints {
			return nil, &dpkit.ParamError{Pkg: "compose", Name: "count", Value: k, Want: "at most 2·10^6 releases for a full boundary"}
		}
		for i := int64(0); i <= k/2; i++ {
			eps = append(eps, float64(k-2*i)*g[0].Epsilon)
		}
	} else {
		for i := len(c.upper.Loss) - 1; i >= 0 && c.upper.Loss[i] > 0; i-- {
			eps = append(eps, c.upper.Loss[i])
		}
		if len(eps) > MaxBreakpoints {
			return nil, &dpkit.ParamError{Pkg: "compose", Name: "mechanisms", Value: len(eps), Want: "a privacy-loss support of at most 10^6 points for a full boundary"}
		}
		eps = append(eps, 0)
	}
	out := make([]dpkit.Budget, 0, len(eps))
	for _, e := range eps {
		d, _, err := c.Delta(e)
		if err != nil {
			return nil, err
		}
		out = append(out, dpkit.Budget{Epsilon: e, Delta: d})
	}
	return out, nil
}

// Region returns (ε, δ) pairs whose intersection ∩ R(ε_j, δ_j) is the privacy region
// that theorem th guarantees for the workload: the exact Breakpoints for Exact; the single
// pair (Σ ε_ℓ, Σ δ_ℓ) for Basic; for DRV and KOV, the theorem evaluated at 200 values of
// its slack δ̃ spaced logarithmically in [1e-15, 1] (the theorems' regions are the
// intersections over all δ̃; the sampled intersection is a slightly larger region that
// converges to it).
func Region(th Theorem, ms []Mech, opts *Options) ([]dpkit.Budget, error) {
	if th == Exact {
		c, err := NewCurve(ms, opts)
		if err != nil {
			return nil, err
		}
		return c.Breakpoints()
	}
	if err := validate(ms); err != nil {
		return nil, err
	}
	s := newStats(ms)
	if th == Basic {
		return []dpkit.Budget{{Epsilon: sumEps(ms), Delta: math.Min(1, s.sumDelta)}}, nil
	}
	var out []dpkit.Budget
	for i := 0; i < 200; i++ {
		dt := math.Pow(10, -15+15*float64(i)/199)
		var total float64
		switch th {
		case DRV:
			total = s.up(s.sumDelta + dt)
		case KOV:
			total = s.up(s.ev.floorUp + s.ev.keepUp*dt)
		default:
			return nil, unknownTheorem(th)
		}
		if total > 1 {
			continue
		}
		r, err := EpsilonBy(th, ms, total, opts)
		if err != nil {
			continue
		}
		out = append(out, dpkit.Budget{Epsilon: r.Epsilon, Delta: total})
	}
	return out, nil
}
