package gce

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// Subsample returns the guarantee of S_q(m): the mechanism m run on a Poisson subsample
// that keeps each record with probability q ∈ (0, 1] (Balle–Barthe–Gaboardi 2018, Thm 8;
// docs/errata.md, HBW item 6):
//
//	(ε, δ) → (ln(1 + q(e^ε − 1)), qδ)
//
// Both directions of the pair (subsampled on x⁰ ∪ {x}, on x⁰) meet it. ε' is computed as
// log1p(q·expm1(ε)) and moved up by a relative 1e-12; qδ is rounded up. The Count is
// kept. With q = ½ this is the uniform-prior step of HBW §V-B:
// (ln((1 + e^ε)/2), δ/2).
func Subsample(m compose.Mech, q float64) (compose.Mech, error) {
	if err := m.Validate("mech"); err != nil {
		return compose.Mech{}, err
	}
	if math.IsNaN(q) || q <= 0 || q > 1 {
		return compose.Mech{}, &dpkit.ParamError{Pkg: "gce", Name: "q", Value: q, Want: "a sampling probability in (0, 1]"}
	}
	if q == 1 {
		return m, nil
	}
	return compose.Mech{Epsilon: up(math.Log1p(q * math.Expm1(m.Epsilon))), Delta: mulUp(q, m.Delta), Count: m.Count}, nil
}

// half is S_{1/2}(m) (m valid).
func half(m compose.Mech) compose.Mech {
	s, _ := Subsample(m, 0.5)
	return s
}

// explicitComponents is the number of leading components of Theorem 3 composed one by
// one; the remaining ones (total weight < 2^−64) share one dominating bound.
const explicitComponents = 64

// UniformResult is the guarantee against the uniform-prior adversary of HBW §V-B:
// hypotheses p0 = δ_0⃗ (the target is in no database) and p1 = U(B \ {0⃗}) (in at least
// one, no other knowledge), at total δ = Delta.
type UniformResult struct {
	// Epsilon is the smaller of Theorem3 and WorstCase (both are valid guarantees).
	Epsilon float64
	Delta   float64
	// Theorem3 is HBW Thm 3 with the exact composition as CompGuarantee.
	Theorem3 float64
	// WorstCase is the classic composition of all k steps (valid for every pair of
	// hypotheses, HBW Thm 1); +Inf when Delta is below its floor.
	WorstCase float64
}

// UniformPrior returns the (ε, δ)-HDP guarantee at total δ = delta of the steps ms
// (entry ℓ stands for Count consecutive steps, in order) against the uniform-prior
// adversary (HBW §V-B), by Theorem 3 with the exact optimal composition:
//
//	ε = ln[ 1/(2^k − 1) · Σ_{i=1}^k 2^{k−i} e^{ε̂_i} ],
//	ε̂_i = CompGuarantee(M_i, S_½(M_{i+1}), …, S_½(M_k)) at δ,
//
// (S_½: Subsample with q = ½). The proof splits B \ {0⃗} into B_i = {b : b_j = 0 for
// j < i, b_i = 1}; under U(B_i) the steps before i agree with 0⃗, step i differs, and
// the steps after i are subsampled. Every component is read at the same δ, so both δ
// terms of the point-mass rule (docs/errata.md, HBW items 1–2, which complete the
// truncated proof) equal δ.
//
// The first 64 components are composed one by one; the others (weight (2^{k−64} −
// 1)/(2^k − 1) < 2^−64 together) are bounded by the composition of one step with the
// largest ε and the largest δ among them with the subsampled steps after step 65, which
// contains each of them up to dominance. The result depends on the order of the steps.
// Rounding as in HDP (compose's upper values, combination moved up by 1e-12 relative).
// Infeasible when δ is below the floor of component 1.
func UniformPrior(ms []compose.Mech, delta float64, opts *compose.Options) (UniformResult, error) {
	k, err := validateSteps(ms, compose.MaxCount)
	if err != nil {
		return UniformResult{}, err
	}
	if err := dpkit.InPackage("gce", dpkit.CheckDelta("delta", delta)); err != nil {
		return UniformResult{}, err
	}
	c := newComposer(delta, opts)
	eps, err := uniformCombine(ms, k, func(step compose.Mech, rest []compose.Mech) (float64, error) {
		r := c.epsilon(canonical(append(subsampled(rest), step)))
		return r.upper, r.err
	})
	if err != nil {
		return UniformResult{}, err
	}
	worst, err := classic(c, ms)
	if err != nil {
		return UniformResult{}, err
	}
	return UniformResult{Epsilon: min(eps, worst), Delta: delta, Theorem3: eps, WorstCase: worst}, nil
}

// Corollary6 returns HBW Cor. 6 at total δ = delta: Theorem 3 with M_i composed
// simply with the rest,
//
//	ε = ln[ 1/(2^k − 1) · Σ_i 2^{k−i} e^{ε_i + ε̂_i} ],  ε̂_i = CompGuarantee(S_½(M_{i+1}), …, S_½(M_k)),
//
// where ε̂_i is the exact composition at δ̂_i = δ − δ_i, so that every component is at
// total δ (point-mass rule). It is never better than UniformPrior and is provided for
// comparison. Infeasible when some δ − δ_i is below the floor of the subsampled rest.
func Corollary6(ms []compose.Mech, delta float64, opts *compose.Options) (dpkit.Budget, error) {
	k, err := validateSteps(ms, compose.MaxCount)
	if err != nil {
		return dpkit.Budget{}, err
	}
	if err := dpkit.InPackage("gce", dpkit.CheckDelta("delta", delta)); err != nil {
		return dpkit.Budget{}, err
	}
	eps, err := uniformCombine(ms, k, func(step compose.Mech, rest []compose.Mech) (float64, error) {
		if step.Delta > delta {
			return 0, &dpkit.InfeasibleError{Msg: fmt.Sprintf("total delta %g is below a step's delta %g (Cor. 6 composes each step simply)", delta, step.Delta)}
		}
		if len(rest) == 0 {
			return step.Epsilon, nil
		}
		r, err := compose.Epsilon(canonical(subsampled(rest)), delta-step.Delta, opts)
		if err != nil {
			return 0, err
		}
		return step.Epsilon + r.Epsilon, nil
	})
	if err != nil {
		return dpkit.Budget{}, err
	}
	return dpkit.Budget{Epsilon: up(eps), Delta: delta}, nil
}

func subsampled(ms []compose.Mech) []compose.Mech {
	out := make([]compose.Mech, len(ms))
	for i, m := range ms {
		out[i] = half(m)
	}
	return out
}

// uniformCombine evaluates ln Σ_i w_i e^{ε̂_i}, w_i = 2^{k−i}/(2^k − 1), where
// ε̂_i = comp(M_i, [M_{i+1}, …, M_k]) must be non-decreasing under dominance of M_i and
// under adding steps to the rest (true of every composition bound used here).
func uniformCombine(ms []compose.Mech, k int64, comp func(step compose.Mech, rest []compose.Mech) (float64, error)) (float64, error) {
	// rest(i) lists steps i+1..k (1-based) as grouped entries.
	rest := func(i int64) (compose.Mech, []compose.Mech) {
		var step compose.Mech
		var out []compose.Mech
		var pos int64 // steps before the current entry
		for _, m := range ms {
			lo, hi := pos+1, pos+m.Count // this entry's steps
			pos = hi
			if hi < i {
				continue
			}
			if lo <= i {
				step = compose.Mech{Epsilon: m.Epsilon, Delta: m.Delta, Count: 1}
				if n := hi - i; n > 0 {
					out = append(out, compose.Mech{Epsilon: m.Epsilon, Delta: m.Delta, Count: n})
				}
				continue
			}
			out = append(out, m)
		}
		return step, out
	}
	n := min(k, explicitComponents)
	eps := make([]float64, 0, n+1)
	ws := make([]float64, 0, n+1)
	norm := -math.Expm1(float64(k) * -math.Ln2) // 1 − 2^−k
	for i := int64(1); i <= n; i++ {
		step, r := rest(i)
		e, err := comp(step, r)
		if err != nil {
			return 0, err
		}
		eps = append(eps, e)
		ws = append(ws, math.Ldexp(1, -int(i))/norm)
	}
	if k > n {
		// Components n+1..k: M_i is dominated by (max ε, max δ) over steps > n, and the
		// rest of each is contained in the steps after n+1.
		dom := compose.Mech{Count: 1}
		_, tail := rest(n)
		for _, m := range tail {
			dom.Epsilon, dom.Delta = max(dom.Epsilon, m.Epsilon), max(dom.Delta, m.Delta)
		}
		_, r := rest(n + 1)
		e, err := comp(dom, r)
		if err != nil {
			return 0, err
		}
		eps = append(eps, e)
		// (2^−n − 2^−k)/(1 − 2^−k), rounded up.
		ws = append(ws, (math.Ldexp(1, -int(n))-math.Exp(float64(k)*-math.Ln2))/norm*(1+relUp))
	}
	return weightedLogMeanExp(eps, ws), nil
}

// UniformPriorSimple returns the guarantee of HBW eq. (3)/(4) against the uniform
// prior: each vector b is compared with 0⃗ by simple composition, (ε_b, δ_b) =
// (Σ_{i∈b} ε_i, Σ_{i∈b} δ_i), and combined by the point-mass rule (docs/errata.md,
// HBW item 1):
//
//	ε = ln[ (Π_i (1 + e^{ε_i}) − 1) / (2^k − 1) ]                   (eq. 4 for equal ε_i)
//	δ = max( Σ_i δ_i · 2^{k−1}/(2^k − 1),
//	         Σ_i δ_i/(1 + e^{ε_i}) / (1 − Π_i (1 + e^{−ε_i})^{−1}) )
//
// The second δ term (the reverse inequality) is at most the first when all ε_i are
// equal, which is the paper's δ = k 2^{k−1} δ'/(2^k − 1); it can exceed it otherwise.
// ε is computed as log1p(c·expm1(S)), S = Σ ln((1 + e^{ε_i})/2), c = 2^k/(2^k − 1),
// and both values are moved up by a relative 1e-12; δ is capped at 1 (an (ε, 1)
// guarantee holds trivially).
func UniformPriorSimple(ms []compose.Mech) (dpkit.Budget, error) {
	k, err := validateSteps(ms, compose.MaxCount)
	if err != nil {
		return dpkit.Budget{}, err
	}
	var s, p, d1, d2 float64
	for _, m := range ms {
		n := float64(m.Count)
		s += n * math.Log1p(math.Expm1(m.Epsilon)/2)
		p += n * math.Log1p(math.Exp(-m.Epsilon))
		d1 += n * m.Delta
		d2 += n * m.Delta / (1 + math.Exp(m.Epsilon))
	}
	norm := -math.Expm1(float64(k) * -math.Ln2) // 1 − 2^−k
	var eps float64
	if s <= 700 {
		eps = math.Log1p(math.Expm1(s) / norm)
	} else {
		eps = s - math.Log(norm) // drops −log1p((c−1)e^{−S}/c) < 0: an over-statement
	}
	delta := max(d1/(2*norm), d2/(-math.Expm1(-p)))
	return dpkit.Budget{Epsilon: up(eps), Delta: min(1, up(delta))}, nil
}

// Corollary7 returns HBW Cor. 7, the uniform-prior guarantee of k steps, each
// (eps, delta)-DP, by simple composition and subsampling with q = ½:
//
//	ε = ln[ ((e^ε' + 1)^k − 1) / (2^k − 1) ],   δ = 2^{k−1}/(2^k − 1) · k δ'
//
// (equal to eq. (4)); computed as UniformPriorSimple.
func Corollary7(eps, delta float64, k int64) (dpkit.Budget, error) {
	return UniformPriorSimple([]compose.Mech{{Epsilon: eps, Delta: delta, Count: k}})
}
