package gce

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// validateSteps checks a workload: at least one entry, each a valid compose.Mech, and a
// total count k ≤ max. It returns k.
func validateSteps(ms []compose.Mech, max int64) (int64, error) {
	if len(ms) == 0 {
		return 0, &dpkit.ParamError{Pkg: "gce", Name: "mechanisms", Value: 0, Want: "at least one (ε, δ) mechanism"}
	}
	var k int64
	for i, m := range ms {
		if err := m.Validate(fmt.Sprintf("mech[%d]", i)); err != nil {
			return 0, err
		}
		k += m.Count
		if k > max {
			return 0, &dpkit.ParamError{Pkg: "gce", Name: "total count", Value: k, Want: fmt.Sprintf("at most %d steps", max)}
		}
	}
	return k, nil
}

// expand lists the mechanism of every step, in order: entry ℓ of ms stands for Count
// consecutive steps.
func expand(ms []compose.Mech) []compose.Mech {
	var out []compose.Mech
	for _, m := range ms {
		for range m.Count {
			out = append(out, compose.Mech{Epsilon: m.Epsilon, Delta: m.Delta, Count: 1})
		}
	}
	return out
}

// pick returns the grouped mechanisms of the steps idx (a differing set).
func pick(steps []compose.Mech, idx []int) []compose.Mech {
	ms := make([]compose.Mech, len(idx))
	for j, i := range idx {
		ms[j] = steps[i]
	}
	return canonical(ms)
}

// canonical groups ms and sorts the groups, so that equal multisets of mechanisms get
// equal slices (a cache key) and compose sees each distinct (ε, δ) once.
func canonical(ms []compose.Mech) []compose.Mech {
	g := compose.Group(ms)
	slices.SortFunc(g, func(a, b compose.Mech) int {
		if c := cmpDesc(a.Epsilon, b.Epsilon); c != 0 {
			return c
		}
		return cmpDesc(a.Delta, b.Delta)
	})
	return g
}

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

func key(ms []compose.Mech) string { return fmt.Sprint(ms) }

// composer evaluates the optimal composition (compose.Epsilon) of differing sets at one
// total δ, caching results by multiset.
type composer struct {
	delta float64
	opts  *compose.Options
	cache map[string]composed
	calls int
}

type composed struct {
	upper, lower float64 // a valid ε (never below the optimum) and a certified lower value
	err          error
}

func newComposer(delta float64, opts *compose.Options) *composer {
	return &composer{delta: delta, opts: opts, cache: map[string]composed{}}
}

// epsilon returns the optimal ε of the composition of ms at total δ: (0, 0) for an empty
// set (the two views then have the same distribution).
func (c *composer) epsilon(ms []compose.Mech) composed {
	if len(ms) == 0 {
		return composed{}
	}
	k := key(ms)
	if r, ok := c.cache[k]; ok {
		return r
	}
	c.calls++
	// A δ clearly below the floor is refused here, with the workload in the message.
	// (Near the floor compose decides.)
	if f := compose.Floor(ms); f > c.delta*(1+1e-9) {
		out := composed{err: &dpkit.InfeasibleError{Msg: fmt.Sprintf("total delta %g is below the floor 1 − Π(1 − δ_ℓ) = %g of %v that no epsilon can reach", c.delta, f, ms)}}
		c.cache[k] = out
		return out
	}
	r, err := compose.Epsilon(ms, c.delta, c.opts)
	out := composed{upper: r.Epsilon, lower: r.Lower, err: err}
	c.cache[k] = out
	return out
}

// Rounding. Closed forms evaluated here in float64 (log-sum-exp, log1p, expm1) are
// accurate to a few units in the last place; results are moved up by relUp so that a
// reported ε or δ is never below the exact value of the formula.
const relUp = 1e-12

// up returns x moved up by the relative margin relUp (0 stays 0: it only arises from
// exact zeros).
func up(x float64) float64 {
	if x <= 0 || math.IsInf(x, 1) {
		return x
	}
	return x * (1 + relUp)
}

// mulUp returns a·b rounded up (a, b ≥ 0, finite).
func mulUp(a, b float64) float64 {
	p := a * b
	if math.FMA(a, b, -p) > 0 {
		p = math.Nextafter(p, math.Inf(1))
	}
	return p
}

// logSumExp returns ln Σ exp(x_i + lw_i) (the log of a weighted sum of e^{x_i} with
// log-weights lw_i), stably.
func logSumExp(x, lw []float64) float64 {
	mx := math.Inf(-1)
	for i := range x {
		mx = math.Max(mx, x[i]+lw[i])
	}
	if math.IsInf(mx, -1) {
		return mx
	}
	s := 0.0
	for i := range x {
		s += math.Exp(x[i] + lw[i] - mx)
	}
	return mx + math.Log(s)
}
