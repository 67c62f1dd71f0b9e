package query

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/mechanism"
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
	// Descriptor describes the mechanism(s) the release ran (package mechanism), for the
	// ledger: one mechanism, or a composition (AVG's sum and count).
	Descriptor mechanism.Descriptor
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
// randomness; nil means noise.Secure(). The noise is added by the mechanism values of
// package mechanism that Mechanisms returns for b; Answer.Descriptor describes them.
//
// Mechanisms, for the neighbouring relation and MaxRows of the plan:
//
//   - COUNT(*), HISTOGRAM, COUNT(*) GROUP BY: mechanism.Geometric, the discrete Laplace
//     (two-sided geometric) mechanism, P(Z = z) ∝ e^(−|z|·ε/Δ₁), on every count, Δ₁
//     the ℓ1 sensitivity of the vector of counts (the lecture slides "Laplace mechanism"
//     for integer-valued queries; exact sampler). Counts stay integers; they may be
//     negative.
//   - SUM: mechanism.Laplace, the secure Laplace mechanism (value snapped to a
//     power-of-two grid g, exact discrete Laplace noise on the grid) with scale ≈ Δ₁/ε.
//     For a grouped sum the sensitivity given to it is Δ₁ + (groups changed)·g, since
//     snapping each group can add one grid step to its difference.
//   - AVG: ε/2 on the centred sum (SUM rule) and ε/2 on the count (COUNT rule); the
//     release is c + s̃/max(ñ, 1), clamped to [lo, hi] (post-processing). CI95 combines
//     the 97.5% intervals of both noises (union bound).
//   - MEDIAN, QUANTILE(p): mechanism.Quantile, the exponential mechanism (the lecture
//     slides; McSherry–Talwar 2007) over the grid points of [lo, hi] (the integers for
//     Int columns, the multiples of γ for Float columns) with utility
//     u(y) = −|#{x_i < y} − p·n| and Δu from the plan, in Smith's (2011) form (a run of
//     points between data values, then a point inside it), sampled exactly: no
//     floating-point margin on ε. The set of outputs is the grid whatever the data.
//     Each group is released at the full ε (one unit's rows move the utilities of all
//     groups by at most Δu in total).
//
// b must have a finite ε > 0 (else *dpkit.ParamError).
func (p *Plan) Release(b dpkit.Budget, src noise.Source) (*Answer, error) {
	ms, err := p.Mechanisms(b)
	if err != nil {
		return nil, err
	}
	if src == nil {
		src = secure
	}
	gs := p.b.stats()
	a := &Answer{Charged: dpkit.Budget{Epsilon: b.Epsilon}, Descriptor: describe(ms)}
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
	switch p.Query.Agg {
	case Count, Histogram:
		geo := ms[0].(*mechanism.Geometric)
		h := countHalfWidth(geo, 0.05)
		a.Mechanism, a.Scale = "discrete laplace", 1/geo.Rate()
		for i := range gs {
			v := float64(geo.Release(gs[i].count, src))
			set(i, v, []float64{v - h, v + h})
		}
		if p.Groups != nil {
			a.CI95 = []float64{-h, h}
		}
	case Sum:
		lap := ms[0].(*mechanism.Laplace)
		h, _ := lap.Interval(0.05)
		a.Mechanism, a.Scale = "laplace (secure, snapped)", lap.NoiseScale()
		for i := range gs {
			s, _ := exactSum(&gs[i], p.b.agg.unitGrid()).Float64()
			v, err := lap.Release(s, src)
			if err != nil {
				return nil, err
			}
			set(i, v, []float64{v - h, v + h})
		}
		if p.Groups != nil {
			a.CI95 = []float64{-h, h}
		}
	case Avg:
		if err := p.releaseAvg(a, gs, ms, src, set); err != nil {
			return nil, err
		}
	case Median, Quantile:
		qm := ms[0].(*mechanism.Quantile)
		a.Mechanism, a.Scale = "exponential (quantile)", qm.Scale()
		for i := range gs {
			v, err := qm.ReleaseSorted(gs[i].values, src)
			if err != nil {
				return nil, err
			}
			set(i, v, nil)
		}
	}
	return a, nil
}

// releaseAvg releases c + s̃/max(ñ, 1) per group (see Release).
func (p *Plan) releaseAvg(a *Answer, gs []groupStats, ms []mechanism.Mechanism, src noise.Source, set func(int, float64, []float64)) error {
	c := p.Components[0]
	lo, hi := p.b.agg.decl.Min, p.b.agg.decl.Max
	lap, cnt := ms[0].(*mechanism.Laplace), ms[1].(*mechanism.Geometric)
	hs, _ := lap.Interval(0.025)
	hc := countHalfWidth(cnt, 0.025)
	a.Mechanism, a.Scale = "laplace (secure, snapped) sum / discrete laplace count", lap.NoiseScale()
	for i := range gs {
		s := centredSum(&gs[i], p.b.agg.unitGrid(), c.Centre)
		ns, err := lap.Release(s, src)
		if err != nil {
			return err
		}
		nc := float64(cnt.Release(gs[i].count, src))
		v := c.Centre + ns/math.Max(nc, 1)
		v = math.Max(lo, math.Min(hi, v))
		set(i, v, avgInterval(ns, nc, hs, hc, c.Centre, lo, hi))
	}
	return nil
}

// Mechanisms returns the mechanism values a release of the plan under b runs, one per
// component, in the order of Components: mechanism.Geometric for counts,
// mechanism.Laplace for (centred) sums, mechanism.Quantile for quantiles, each at its
// share of ε. b must have a finite ε > 0.
func (p *Plan) Mechanisms(b dpkit.Budget) ([]mechanism.Mechanism, error) {
	if err := dpkit.InPackage("query", b.Validate()); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("query", dpkit.CheckPositive("epsilon", b.Epsilon)); err != nil {
		return nil, err
	}
	ms := make([]mechanism.Mechanism, len(p.Components))
	for i, c := range p.Components {
		eps := b.Epsilon * c.Share // Share is 1 or ½: exact
		var err error
		switch c.kind {
		case countComponent:
			ms[i], err = countMechanism(c.L1, eps)
		case sumComponent:
			ms[i], err = p.sumMechanism(c.L1, eps)
		case rankComponent:
			ms[i], err = p.quantileMechanism(c.L1, eps)
		}
		if err != nil {
			return nil, err
		}
	}
	return ms, nil
}

// describe returns the descriptor of one release's mechanisms: the mechanism's own, or a
// composition of several (AVG).
func describe(ms []mechanism.Mechanism) mechanism.Descriptor {
	if len(ms) == 1 {
		return ms[0].Descriptor()
	}
	c, err := mechanism.NewComposition(ms...)
	if err != nil {
		return mechanism.Descriptor{}
	}
	return c.Descriptor()
}

// countMechanism returns the geometric mechanism for a count of (integer) sensitivity
// sens at ε: rate ≤ ε/Δ (mechanism.Geometric rounds down).
func countMechanism(sens, eps float64) (*mechanism.Geometric, error) {
	m, err := mechanism.NewGeometric(mechanism.GeometricOptions{Epsilon: eps, Sensitivity: int64(sens)})
	if err != nil {
		return nil, &dpkit.ParamError{Pkg: "query", Name: "epsilon", Value: eps,
			Want: fmt.Sprintf("ε/Δ in [%g, %g] for Δ = %g", noise.MinRate, noise.MaxRate, sens)}
	}
	return m, nil
}

// countHalfWidth returns the smallest integer h with P(|Z| > h) ≤ tail for the
// geometric mechanism's noise: its Interval (the smallest w with P(|Z| ≥ w) ≤ tail)
// minus one.
func countHalfWidth(m *mechanism.Geometric, tail float64) float64 {
	w, _ := m.Interval(tail)
	return float64(w - 1)
}

// sumMechanism returns the secure Laplace mechanism for a (possibly grouped) sum with ℓ1
// sensitivity sens at privacy eps. For grouped sums the sensitivity is raised by one
// grid step per group one unit can change (see Release); its Interval(β) is then a
// half-width including the snapping to the grid.
func (p *Plan) sumMechanism(sens, eps float64) (*mechanism.Laplace, error) {
	changed := 0
	if p.Groups != nil {
		changed = min(p.MaxRows, len(p.Groups))
		if p.Neighbour == sensitivity.ReplaceOne {
			changed = min(2*p.MaxRows, len(p.Groups))
		}
	}
	d := sens
	for range 4 {
		lap, err := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: eps, Sensitivity: d})
		if err != nil {
			return nil, err
		}
		g := lap.Granularity()
		if need := sens + float64(changed)*g; changed == 0 || d >= need {
			return lap, nil
		}
		d = math.Nextafter(sens+float64(changed)*g, math.Inf(1))
	}
	return nil, &dpkit.ParamError{Pkg: "query", Name: "epsilon", Value: eps, Want: "a value for which the grid of the sum's noise settles"}
}

// quantileMechanism returns the exact quantile mechanism over the aggregated column's
// grid with utility sensitivity du at ε.
func (p *Plan) quantileMechanism(du, eps float64) (*mechanism.Quantile, error) {
	c := p.b.agg
	return mechanism.NewQuantile(mechanism.QuantileOptions{Epsilon: eps, Sensitivity: du, P: p.Query.P,
		Lower: c.decl.Min, Upper: c.decl.Max, Step: c.unitGrid()})
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
