package gce

import (
	"errors"
	"fmt"
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/internal/numeric"
)

// Rule names how the guarantees of matched pairs of membership vectors are combined into
// a guarantee for a pair of composite hypotheses.
type Rule string

const (
	// PointMass is the rule for a pair in which one hypothesis is a point mass
	// (docs/errata.md, HBW item 1): ε = ln Σ w_i e^{ε_i}, with every pair at the
	// same δ, which is then the δ of the guarantee.
	PointMass Rule = "point-mass"
	// General is the rule for any pair: the guarantee curve is the weighted sum of the
	// pairs' curves, δ(ε) = Σ w_i δ_i(ε) (joint convexity of the hockey-stick
	// divergence), read at the total δ. It is the errata's safe rule "ε = max ε_i,
	// δ = Σ w_i δ_i" with the δ_i chosen optimally.
	General Rule = "general"
)

// Pair is one matched pair of RefineTuples: membership vectors B0 (of p0) and B1 (of p1)
// with weight W, and Epsilon, the optimal ε at the total δ of the composition of the
// steps where they differ (0 when they agree; +Inf when that δ is below the pair's
// floor 1 − Π(1 − δ_ℓ)).
type Pair struct {
	B0, B1  Vector
	W       *big.Rat
	Epsilon float64
}

// HDPResult is an (Epsilon, Delta)-hypothesis-DP guarantee (HBW, Def. 3) for a pair
// of hypotheses: both inequalities (1) and (2) hold. Delta is the total δ asked for;
// Epsilon is never below the value of the Rule that produced it.
type HDPResult struct {
	Epsilon float64
	Delta   float64
	Rule    Rule
	Pairs   []Pair // the coupling found by RefineTuples, in its order
}

// HDP returns an (ε, δ)-hypothesis-DP guarantee (HBW, Def. 3) at total δ = delta
// for the sequence of mechanisms ms (entry ℓ stands for Count consecutive steps, k steps
// in all, k ≤ MaxSteps) against an adversary testing hypothesis p0 against p1,
// distributions over membership vectors of length k.
//
// The hypotheses are coupled by RefineTuples (Alg. 3) into pairs (b0ⁱ, b1ⁱ) of weight
// wⁱ. A pair's views differ only at the steps b0ⁱ ⊕ b1ⁱ (§V-B), whose optimal
// composition (compose, KOV Thm 3.3; adaptive choice of mechanisms allowed, parameters
// fixed in advance) gives its guarantee. Pairs are combined soundly
// (docs/errata.md, HBW item 1 — the paper's general recipe ε = ln Σ wⁱ e^{εⁱ} is
// unsound when neither hypothesis is a point mass):
//
//	general (always valid):  ε = min{ ε : Σ_i wⁱ δ_{b0ⁱ⊕b1ⁱ}(ε) ≤ δ }
//	point mass (p0 or p1 has one vector; Def. 3 is symmetric):
//	                         ε = ln Σ_i wⁱ e^{ε_{b0ⁱ⊕b1ⁱ}(δ)}
//
// and the smaller ε of the valid rules is returned. In the point-mass rule every pair
// is at δ, so both of the errata's δ terms, Σ wⁱδⁱ and Σ wⁱe^{−εⁱ}δⁱ / Σ wⁱe^{−εⁱ},
// equal δ. The result is a valid guarantee, not necessarily the optimal one: another
// coupling, or per-pair δ values chosen differently, can give a smaller ε.
//
// Rounding: the composed ε values are upper values of compose (see its Soundness
// section); the combination is computed in float64 and moved up by a relative 1e-12.
// Infeasible (an error matching dpkit.ErrInfeasible) when no rule reaches delta.
func HDP(ms []compose.Mech, p0, p1 Hypothesis, delta float64, opts *compose.Options) (HDPResult, error) {
	k, err := validateSteps(ms, MaxSteps)
	if err != nil {
		return HDPResult{}, err
	}
	if err := dpkit.InPackage("gce", dpkit.CheckDelta("delta", delta)); err != nil {
		return HDPResult{}, err
	}
	if err := p0.Validate("p0", int(k)); err != nil {
		return HDPResult{}, err
	}
	if err := p1.Validate("p1", int(k)); err != nil {
		return HDPResult{}, err
	}
	u0, u1, err := RefineTuples(p0, p1)
	if err != nil {
		return HDPResult{}, err
	}
	steps := expand(ms)

	// Group the pairs by the multiset of mechanisms at the differing steps.
	type group struct {
		ms []compose.Mech
		w  *big.Rat
	}
	var groups []*group
	byKey := map[string]*group{}
	pairGroup := make([]*group, len(u0))
	for i := range u0 {
		d := pick(steps, Differ(u0[i].B, u1[i].B))
		kk := key(d)
		g, ok := byKey[kk]
		if !ok {
			g = &group{ms: d, w: new(big.Rat)}
			byKey[kk] = g
			groups = append(groups, g)
		}
		g.w.Add(g.w, u0[i].W)
		pairGroup[i] = g
	}
	ws := make([]float64, len(groups))
	for i, g := range groups {
		ws[i] = ratUp(g.w)
	}

	c := newComposer(delta, opts)
	res := HDPResult{Epsilon: math.Inf(1), Delta: delta}

	// Point-mass rule.
	if len(p0) == 1 || len(p1) == 1 {
		eps := make([]float64, len(groups))
		ok := true
		for i, g := range groups {
			r := c.epsilon(g.ms)
			if r.err != nil {
				if !errors.Is(r.err, dpkit.ErrInfeasible) {
					return HDPResult{}, r.err
				}
				ok = false
				break
			}
			eps[i] = r.upper
		}
		if ok {
			res.Epsilon, res.Rule = weightedLogMeanExp(eps, ws), PointMass
		}
	}

	// General rule.
	gms := make([][]compose.Mech, len(groups))
	for i, g := range groups {
		gms[i] = g.ms
	}
	if eps, err := mixtureEpsilon(gms, ws, delta, opts); err == nil {
		if eps < res.Epsilon {
			res.Epsilon, res.Rule = eps, General
		}
	} else if !errors.Is(err, dpkit.ErrInfeasible) {
		return HDPResult{}, err
	}
	if math.IsInf(res.Epsilon, 1) {
		return HDPResult{}, &dpkit.InfeasibleError{Msg: fmt.Sprintf("total delta %g is below what the coupled pairs of hypotheses can reach (the weighted floors Σ wⁱ(1 − Π(1 − δ_ℓ)) of their differing steps)", delta)}
	}

	res.Pairs = make([]Pair, len(u0))
	for i := range u0 {
		e := c.epsilon(pairGroup[i].ms)
		eps := e.upper
		if e.err != nil {
			eps = math.Inf(1)
		}
		res.Pairs[i] = Pair{B0: u0[i].B, B1: u1[i].B, W: u0[i].W, Epsilon: eps}
	}
	return res, nil
}

// ratUp returns r as a float64 rounded up.
func ratUp(r *big.Rat) float64 {
	f, exact := r.Float64()
	if !exact && new(big.Rat).SetFloat64(f).Cmp(r) < 0 {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// weightedLogMeanExp returns ln Σ w_i e^{ε_i} (weights summing to about 1, rounded up),
// moved up by relUp. For ε_i ≤ 700 it is computed as log1p(Σ w_i expm1(ε_i)), which
// keeps its relative accuracy when every ε_i is tiny.
func weightedLogMeanExp(eps, ws []float64) float64 {
	mx := 0.0
	for _, e := range eps {
		mx = math.Max(mx, e)
	}
	if mx <= 700 {
		s := 0.0
		for i, e := range eps {
			s += ws[i] * math.Expm1(e)
		}
		return up(math.Log1p(s))
	}
	lw := make([]float64, len(ws))
	for i, w := range ws {
		lw[i] = math.Log(w)
	}
	return up(logSumExp(eps, lw))
}

// mixtureEpsilon returns the smallest ε (up to a relative 1e-13, on the valid side) at
// which Σ_i w_i δ_i(ε) ≤ delta, where δ_i is the optimal composition curve of ms[i] (an
// empty set has δ_i ≡ 0). The sum uses compose's upper curves and is moved up by relUp.
func mixtureEpsilon(ms [][]compose.Mech, ws []float64, delta float64, opts *compose.Options) (float64, error) {
	var curves []*compose.Curve
	var cw []float64
	hi := 0.0
	for i, m := range ms {
		if len(m) == 0 {
			continue
		}
		cv, err := compose.NewCurve(m, opts)
		if err != nil {
			return 0, err
		}
		curves = append(curves, cv)
		cw = append(cw, ws[i])
		hi = math.Max(hi, cv.MaxEpsilon())
	}
	f := func(eps float64) (float64, error) {
		s := 0.0
		for i, cv := range curves {
			d, _, err := cv.Delta(math.Min(eps, cv.MaxEpsilon()))
			if err != nil {
				return 0, err
			}
			s += cw[i] * d
		}
		return s * (1 + relUp), nil
	}
	if d, err := f(0); err != nil {
		return 0, err
	} else if d <= delta {
		return 0, nil
	}
	if d, err := f(hi); err != nil {
		return 0, err
	} else if d > delta {
		return 0, &dpkit.InfeasibleError{Msg: fmt.Sprintf("total delta %g is below the weighted floor %g of the coupled pairs", delta, d)}
	}
	// f(0) > δ ≥ f(hi): bisect "δ(ε) is still above the target", returning the side
	// that met it.
	above := func(e float64) (bool, error) {
		d, err := f(e)
		return d > delta, err
	}
	_, hi, err := numeric.Bisect(0, hi, above, numeric.Stop{RelTol: 1e-13, MaxIter: 200})
	if err != nil {
		return 0, err
	}
	return hi, nil
}
