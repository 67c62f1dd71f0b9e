package query

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/sensitivity"
)

// Answer is a differentially private answer to a query.
type Answer struct {
	// Result is the noisy aggregate of an ungrouped query; nil for grouped answers.
	Result *float64
	// Groups are the noisy aggregates of a grouped query (GROUP BY or HISTOGRAM), one per
	// value of the declared domain, in declared order; nil for ungrouped answers.
	Groups []Group
	// Mechanism names the mechanism, e.g. "laplace (secure, snapped)".
	Mechanism string
	// Scale is the scale of the noise added to each value: the Laplace scale b (noise
	// density ∝ e^(−|z|/b)) in the units of the value, for AVG that of the noisy sum;
	// for MEDIAN/QUANTILE the exponential mechanism's 2Δu/ε, in ranks.
	Scale float64
	// CI95 is, for an ungrouped answer, an interval [lo, hi] containing the exact
	// aggregate with probability ≥ 95% over the noise; for a grouped answer, the interval
	// [−h, h] of the noise of each group (each group also carries its own interval).
	// It is computed from the released values only (post-processing). nil for
	// MEDIAN/QUANTILE, whose error depends on the data, and for grouped AVG, whose
	// groups have intervals of different widths (see Group.CI95).
	CI95 []float64
	// Charged is the privacy guarantee of this release: (ε, 0), pure ε-DP.
	Charged dpkit.Budget
}

// Group is the noisy aggregate of one group.
type Group struct {
	Key   string
	Value float64
	CI95  []float64 // as Answer.CI95 for an ungrouped answer; nil for quantiles
}

var secure = noise.Secure()

// Release computes the exact aggregate and returns it with noise calibrated to the plan's
// sensitivities, as an ε-differentially private release with ε = b.Epsilon (b.Delta is not
// used: every mechanism here is pure ε-DP, so Charged.Delta = 0). src supplies the
// randomness; nil means noise.Secure().
//
// Mechanisms, for the neighbouring relation and MaxRows of the plan:
//
//   - COUNT(*), HISTOGRAM, COUNT(*) GROUP BY: the discrete Laplace (two-sided geometric)
//     mechanism, P(Z = z) ∝ e^(−|z|·ε/Δ₁), on every count, Δ₁ the ℓ1 sensitivity of the
//     vector of counts (the lecture slides "Laplace mechanism" for integer-valued queries; exact
//     sampler noise.DiscreteLaplace). Counts stay integers; they may be negative.
//   - SUM: the secure Laplace mechanism (noise.SecureLaplace: value snapped to a power-of-
//     two grid g, exact discrete Laplace noise on the grid) with scale ≈ Δ₁/ε. For a
//     grouped sum the sensitivity given to it is Δ₁ + (groups changed)·g, since snapping
//     each group can add one grid step to its difference.
//   - AVG: ε/2 on the centred sum (SUM rule) and ε/2 on the count (COUNT rule); the
//     release is c + s̃/max(ñ, 1), clamped to [lo, hi] (post-processing). CI95 combines
//     the 97.5% intervals of both noises (union bound).
//   - MEDIAN, QUANTILE(p): the exponential mechanism (the lecture slides; McSherry–Talwar 2007) over
//     the grid points of [lo, hi] (the integers for Int columns, the multiples of γ for
//     Float columns) with utility u(y) = −|#{x_i < y} − p·n| and Δu from the plan, run in
//     Smith's (2011) form: the points between consecutive data values share a utility,
//     so a run is chosen with probability ∝ (its number of points)·e^(ε'u/(2Δu)) and a
//     point uniformly inside it. The set of outputs is the grid whatever the data. Each
//     group is released at the full ε' (one unit's rows move the utilities of all groups
//     by at most Δu in total). The choice of a run is computed in float64 (log-space);
//     to cover its rounding (relative errors of order n·2^-53 ≤ 2^-19 in the weights)
//     the mechanism runs at ε' = ε − (1+ε)·2^-16, and refuses ε' < ε/2
//     (*dpkit.InfeasibleError). This margin comes from an error analysis, not from an
//     exact sampler.
//
// b must have a finite ε > 0 (else *dpkit.ParamError).
func (p *Plan) Release(b dpkit.Budget, src noise.Source) (*Answer, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	if err := dpkit.CheckPositive("epsilon", b.Epsilon); err != nil {
		return nil, err
	}
	if src == nil {
		src = secure
	}
	gs := p.b.stats()
	eps := b.Epsilon
	a := &Answer{Charged: dpkit.Budget{Epsilon: eps}}
	if p.Groups != nil {
		a.Groups = make([]Group, len(gs))
		for i := range gs {
			a.Groups[i].Key = p.Groups[i]
		}
	}
	// set stores the released value (and its interval) of group i.
	set := func(i int, v float64, ci []float64) {
		if p.Groups == nil {
			a.Result, a.CI95 = &v, ci
			return
		}
		a.Groups[i].Value, a.Groups[i].CI95 = v, ci
	}
	c := p.Components[0]
	switch p.Query.Agg {
	case Count, Histogram:
		lap, h, err := countNoise(c.L1, eps, 0.05)
		if err != nil {
			return nil, err
		}
		a.Mechanism, a.Scale = "discrete laplace", 1/lap.Rate()
		for i := range gs {
			v := float64(gs[i].count + lap.Sample(src))
			set(i, v, []float64{v - h, v + h})
		}
		if p.Groups != nil {
			a.CI95 = []float64{-h, h}
		}
	case Sum:
		lap, h, err := p.sumNoise(c.L1, eps, 0.05)
		if err != nil {
			return nil, err
		}
		a.Mechanism, a.Scale = "laplace (secure, snapped)", lap.Scale()
		for i := range gs {
			s, _ := exactSum(&gs[i], p.b.agg.unitGrid()).Float64()
			v := lap.Add(src, s)
			set(i, v, []float64{v - h, v + h})
		}
		if p.Groups != nil {
			a.CI95 = []float64{-h, h}
		}
	case Avg:
		lo, hi := p.b.agg.decl.Min, p.b.agg.decl.Max
		lap, hs, err := p.sumNoise(c.L1, eps/2, 0.025)
		if err != nil {
			return nil, err
		}
		cnt, hc, err := countNoise(p.Components[1].L1, eps/2, 0.025)
		if err != nil {
			return nil, err
		}
		a.Mechanism, a.Scale = "laplace (secure, snapped) sum / discrete laplace count", lap.Scale()
		for i := range gs {
			s := centredSum(&gs[i], p.b.agg.unitGrid(), c.Centre)
			ns := lap.Add(src, s)
			nc := float64(gs[i].count + cnt.Sample(src))
			v := c.Centre + ns/math.Max(nc, 1)
			v = math.Max(lo, math.Min(hi, v))
			set(i, v, avgInterval(ns, nc, hs, hc, c.Centre, lo, hi))
		}
	case Median, Quantile:
		epsEM := eps - (1+eps)*0x1p-16
		if !(epsEM >= eps/2) {
			return nil, &dpkit.InfeasibleError{Msg: fmt.Sprintf(
				"ε = %g is too small for the quantile mechanism (needs ε − (1+ε)·2^-16 ≥ ε/2, ε ≳ 3.1e-5)", eps)}
		}
		a.Mechanism, a.Scale = "exponential (quantile)", 2*c.L1/epsEM
		for i := range gs {
			set(i, p.quantileEM(&gs[i], epsEM, c.L1, src), nil)
		}
	}
	return a, nil
}

// countNoise returns the discrete Laplace distribution with rate ≤ ε/Δ and the smallest
// integer h with P(|Z| > h) ≤ tail.
func countNoise(sens, eps, tail float64) (*noise.DiscreteLaplace, float64, error) {
	rate := eps / sens
	if math.FMA(rate, sens, -eps) > 0 { // rounded up: step down so that rate·Δ ≤ ε
		rate = math.Nextafter(rate, 0)
	}
	lap, err := noise.NewDiscreteLaplace(rate)
	if err != nil {
		return nil, 0, &dpkit.ParamError{Name: "epsilon", Value: eps,
			Want: fmt.Sprintf("ε/Δ in [%g, %g] for Δ = %g", noise.MinRate, noise.MaxRate, sens)}
	}
	return lap, geometricTail(lap.Rate(), tail), nil
}

// geometricTail returns the smallest integer h ≥ 0 with P(|Z| > h) ≤ tail for the
// discrete Laplace distribution of rate r: P(|Z| > h) = 2q^(h+1)/(1+q), q = e^(−r).
func geometricTail(r, tail float64) float64 {
	q := math.Exp(-r)
	h := math.Max(0, math.Ceil(math.Log(2/(tail*(1+q)))/r)-1)
	for h > 0 && 2*math.Exp(-r*h)/(1+q) <= tail { // h−1 would do (rounding)
		h--
	}
	for 2*math.Exp(-r*(h+1))/(1+q) > tail {
		h++
	}
	return h
}

// sumNoise returns the secure Laplace sampler for a (possibly grouped) sum with ℓ1
// sensitivity sens at privacy eps, and a half-width h with P(|error| > h) ≤ tail, the
// error including the snapping to the grid. For grouped sums the sensitivity is raised
// by one grid step per group one unit can change (see Release).
func (p *Plan) sumNoise(sens, eps, tail float64) (*noise.SecureLaplace, float64, error) {
	changed := 0
	if p.Groups != nil {
		changed = min(p.MaxRows, len(p.Groups))
		if p.Neighbour == sensitivity.ReplaceOne {
			changed = min(2*p.MaxRows, len(p.Groups))
		}
	}
	d := sens
	for range 4 {
		lap, err := noise.NewSecureLaplace(d, eps)
		if err != nil {
			return nil, 0, err
		}
		g := lap.Granularity()
		if need := sens + float64(changed)*g; changed == 0 || d >= need {
			t := lap.Scale() / g // grid scale, an integer
			k := geometricTail(1/t, tail)
			return lap, (k + 1) * g, nil
		}
		d = math.Nextafter(sens+float64(changed)*g, math.Inf(1))
	}
	return nil, 0, &dpkit.ParamError{Name: "epsilon", Value: eps, Want: "a value for which the grid of the sum's noise settles"}
}

// centredSum returns Σ(x_i − c) = Σx_i − n·c, computed exactly and rounded once.
func centredSum(g *groupStats, grid, c float64) float64 {
	s := exactSum(g, grid)
	nc := newFloat().SetInt64(g.count)
	nc.Mul(nc, newFloat().SetFloat64(c))
	f, _ := s.Sub(s, nc).Float64()
	return f
}

// avgInterval returns an interval containing the exact mean with probability ≥ 95%
// when the centred sum and the count are each within their 97.5% intervals
// [ns ± hs], [nc ± hc]: the mean is c + S/N for S, N in those boxes, N ≥ 1, and lies in
// [lo, hi] anyway.
func avgInterval(ns, nc, hs, hc, c, lo, hi float64) []float64 {
	nlo := math.Max(nc-hc, 1)
	nhi := nc + hc
	if nhi < 1 {
		return []float64{lo, hi}
	}
	a, b := math.Inf(1), math.Inf(-1)
	for _, s := range []float64{ns - hs, ns + hs} {
		for _, n := range []float64{nlo, nhi} {
			a, b = math.Min(a, s/n), math.Max(b, s/n)
		}
	}
	// S/N over the box is extreme at corners (monotone in each variable for fixed sign).
	return []float64{math.Max(lo, math.Nextafter(c+a, math.Inf(-1))), math.Min(hi, math.Nextafter(c+b, math.Inf(1)))}
}
