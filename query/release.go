package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
)

// Answer is a differentially private answer to a query.
type Answer struct {
	// Aggregates are the aggregates' texts in SELECT order, e.g. "COUNT(*)", "SUM(x)".
	Aggregates []string
	// GroupColumns are the grouping columns (HISTOGRAM: its column); nil if ungrouped.
	GroupColumns []string
	// Values are the noisy aggregates of an ungrouped query, one per aggregate, and
	// Intervals their 95% intervals (nil entries where the error depends on the data:
	// MEDIAN, QUANTILE). nil for grouped answers.
	Values    []float64
	Intervals [][]float64
	// Groups are the noisy aggregates of a grouped query: every declared group in order
	// (domains' product, first column slowest), or the keys kept by partition selection in
	// the order of their values; nil for ungrouped answers.
	Groups []Group

	// Result is the noisy value of an ungrouped query of one aggregate (Values[0]); nil
	// otherwise.
	Result *float64
	// Mechanism names the mechanisms, e.g. "laplace (secure, snapped)"; for several
	// aggregates, theirs joined by "; ".
	Mechanism string
	// Scale is the scale of the first aggregate's noise: the Laplace scale b (noise
	// density ∝ e^(−|z|/b)) or the Gaussian σ, in the units of the value, for AVG that of
	// the noisy sum; for MEDIAN/QUANTILE the exponential mechanism's 2Δu/ε, in ranks.
	Scale float64
	// CI95 is, for an ungrouped answer of one aggregate, an interval [lo, hi] containing
	// the exact aggregate with probability ≥ 95% over the noise; for a grouped answer of
	// one aggregate, the interval [−h, h] of the noise of each group (each group also
	// carries its own interval). It is computed from the released values only
	// (post-processing). nil for MEDIAN/QUANTILE, whose error depends on the data, for
	// grouped AVG, whose groups have intervals of different widths, and for several
	// aggregates (see Intervals).
	CI95 []float64
	// Charged is the privacy guarantee of a pure-ε release, (ε, 0), or (ε, δ) with
	// partition selection (which alone spends δ); zero for a Gaussian release, whose
	// guarantee is Mu.
	Charged dpkit.Budget
	// Mu is the Gaussian-DP parameter of a Gaussian release (0 otherwise).
	Mu float64
	// Descriptor describes the mechanisms the release ran (package mechanism), for the
	// ledger: one mechanism, or a composition.
	Descriptor mechanism.Descriptor
}

// Group is the noisy aggregates of one group.
type Group struct {
	Keys      []string    // one value per grouping column
	Values    []float64   // one per aggregate
	Intervals [][]float64 // one per aggregate; nil entries for quantiles

	Key   string    // Keys[0]
	Value float64   // Values[0]
	CI95  []float64 // Intervals[0]
}

var secure = noise.Secure()

// ReleaseOptions say which mechanisms a release runs and what it may spend.
type ReleaseOptions struct {
	// Gaussian selects Gaussian noise calibrated to the ℓ2 sensitivities (the discrete
	// Gaussian, rounded to integers, for counts; the secure grid Gaussian for sums) with
	// the release μ-GDP for μ = Mu. Otherwise the pure-ε mechanisms are used
	// (mechanism.Geometric, Laplace, Quantile) at ε = Budget.Epsilon, and partition
	// selection takes Budget.Delta.
	Gaussian bool
	Budget   dpkit.Budget
	Mu       float64
}

// Release is ReleaseWith(ReleaseOptions{Budget: b}): the pure-ε mechanisms at ε =
// b.Epsilon (δ = b.Delta is used only by partition selection, which needs δ > 0).
func (p *Plan) Release(b dpkit.Budget, src noise.Source) (*Answer, error) {
	return p.ReleaseWith(ReleaseOptions{Budget: b}, src)
}

// ReleaseWith computes the exact aggregates (the plan's exact steps) and returns them with
// noise from the mechanisms that Mechanisms(o) chooses, never computing with rows after
// that. src supplies the randomness; nil means noise.Secure().
//
// The split rule: every aggregate (and partition selection, when the plan has it) gets
// an equal share of the cost — of ε for pure-ε releases, of μ² for Gaussian ones — and
// AVG halves its share between its centred sum and its count. For either family this is
// the split that minimises Σ_i Var_i/Δ_i², the aggregates' noise variances in units of
// their sensitivities: with ε_i = Δ_i/b_i, Σ b_i²/Δ_i² = Σ 1/ε_i² subject to Σ ε_i = ε,
// and with μ_i = Δ_i/σ_i, Σ σ_i²/Δ_i² = Σ 1/μ_i² subject to Σ μ_i² = μ², are least at
// equal ε_i, resp. equal μ_i² (Lagrange; both objectives are convex). Shares are
// rounded down, so that the parts never add up to more than the whole.
//
// Mechanisms, for the neighbouring relation and bounds of the plan (ℓ1 sensitivities
// for the pure-ε family, ℓ2 for the Gaussian one):
//
//   - COUNT(*), HISTOGRAM, COUNT(*) GROUP BY: mechanism.Geometric (discrete Laplace,
//     P(Z = z) ∝ e^(−|z|·ε/Δ₁), exact) or the discrete Gaussian (Gaussian.ReleaseInt)
//     on every count. Counts stay integers; they may be negative.
//   - SUM: mechanism.Laplace or mechanism.Gaussian on a power-of-two grid. For a grouped
//     sum the sensitivity given to it is Δ + (groups changed)·g, since snapping each
//     group can add one grid step to its difference.
//   - AVG: the centred sum and the count as above; the release is c + s̃/max(ñ, 1),
//     clamped to [lo, hi] (post-processing). Its interval combines the 97.5% intervals
//     of both noises (union bound).
//   - MEDIAN, QUANTILE(p): mechanism.Quantile, the exact exponential mechanism over the
//     column's grid (pure ε only). Each group is released at the aggregate's full share
//     (one unit's rows move the utilities of all groups by at most Δu in total).
//   - Groups without a declared domain: mechanism.PartitionSelection keeps a key held
//     by n distinct units with the optimal probability of Desfontaines, Voss, Gipson and
//     Mandayam (pure-ε releases only; it needs δ > 0). Aggregates are computed for the
//     kept keys only; keys held by no unit never appear.
//
// The release is (Σ ε_i, δ)-DP (basic composition) for the pure-ε family, and μ-GDP
// (Σ μ_i² ≤ μ²) for the Gaussian one.
//
// ReleaseWith computes the exact aggregates on the plan's table (Prepare); a plan of
// PrepareSchema has none and is released with ReleaseFrom.
func (p *Plan) ReleaseWith(o ReleaseOptions, src noise.Source) (*Answer, error) {
	if p.table == nil {
		return nil, errNoTable
	}
	return p.ReleaseFrom(context.Background(), o, p.table, src)
}

var errNoTable = errors.New("query: the plan has no table (PrepareSchema): release it with ReleaseFrom and an Executor")

// ReleaseFrom is ReleaseWith with the exact aggregates computed by executor x (the
// in-memory Table, or the database holding the table), with contribution bounding keyed
// by a fresh random Seed. It checks o and builds the mechanisms before x runs (an
// invalid request touches no data), and it adds the noise to the statistics x emits as
// they come: with partition selection, only the kept keys are held, so that memory does
// not grow with the number of keys found. An error of x (cancellation, a failed
// database) is returned as is, and nothing is released.
func (p *Plan) ReleaseFrom(ctx context.Context, o ReleaseOptions, x Executor, src noise.Source) (*Answer, error) {
	ms, sel, err := p.Mechanisms(o)
	if err != nil {
		return nil, err
	}
	if src == nil {
		src = secure
	}
	a := &Answer{Aggregates: make([]string, len(p.Aggregates)), GroupColumns: p.GroupColumns, Descriptor: describe(ms, sel)}
	for i, ap := range p.Aggregates {
		a.Aggregates[i] = ap.Text
	}
	if o.Gaussian {
		a.Mu = o.Mu
	} else {
		a.Charged = dpkit.Budget{Epsilon: o.Budget.Epsilon}
		if sel != nil {
			a.Charged.Delta = o.Budget.Delta // δ is spent by partition selection only
		}
	}
	n := p.noisy(ms)
	add := func(g *GroupExact) error {
		vals, cis, err := n.group(g, src)
		if err != nil {
			return err
		}
		if g.Keys == nil {
			a.Values, a.Intervals = vals, cis
			return nil
		}
		a.Groups = append(a.Groups, Group{Keys: g.Keys, Values: vals, Intervals: cis, Key: g.Keys[0], Value: vals[0], CI95: cis[0]})
		return nil
	}
	if sel == nil {
		gs, err := p.collect(ctx, x, NewSeed())
		if err != nil {
			return nil, err
		}
		for _, g := range gs {
			if err := add(g); err != nil {
				return nil, err
			}
		}
	} else {
		err := x.Execute(ctx, p, NewSeed(), func(g *GroupExact) error {
			if err := p.checkGroup(g); err != nil {
				return err
			}
			if !sel.Keep(g.Units, src) {
				return nil
			}
			return add(g)
		})
		if err != nil {
			return nil, err
		}
		sortByKey(p, a.Groups, func(g Group) []string { return g.Keys })
	}
	n.describe(a)
	return a, nil
}

// Mechanisms returns the mechanism values a release with options o runs, one per
// component, in the order of Components, each at its share of the cost (see
// ReleaseWith), and the partition selection (nil when the plan has none).
//
// Refused (a *dpkit.ParamError naming the option): a cost that is not valid (ε finite
// > 0, δ in [0, 1]; μ finite > 0), partition selection with δ = 0 or with Gaussian noise,
// and quantiles with Gaussian noise (the exponential mechanism is pure ε-DP).
func (p *Plan) Mechanisms(o ReleaseOptions) ([]mechanism.Mechanism, *mechanism.PartitionSelection, error) {
	if err := p.checkOptions(o); err != nil {
		return nil, nil, err
	}
	ms := make([]mechanism.Mechanism, len(p.Components))
	for i, c := range p.Components {
		var err error
		switch {
		case o.Gaussian:
			mu := math.Sqrt(c.Share) * o.Mu * (1 - 0x1p-40) // Σ μ_i² ≤ μ² despite rounding
			ms[i], err = p.gaussianMechanism(c, mu)
		case c.kind == countComponent:
			ms[i], err = countMechanism(c.L1, shareOf(o.Budget.Epsilon, c.Share))
		case c.kind == sumComponent:
			ms[i], err = p.sumMechanism(c.L1, shareOf(o.Budget.Epsilon, c.Share))
		default:
			ms[i], err = p.quantileMechanism(&p.Aggregates[c.agg], c.L1, shareOf(o.Budget.Epsilon, c.Share))
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if !p.Selection {
		return ms, nil, nil
	}
	sel, err := mechanism.NewPartitionSelection(mechanism.PartitionSelectionOptions{
		Epsilon: shareOf(o.Budget.Epsilon, p.SelectionShare), Delta: o.Budget.Delta, MaxPartitions: int64(p.MaxGroups)})
	if err != nil {
		return nil, nil, dpkit.InPackage("query", err)
	}
	return ms, sel, nil
}

// checkOptions validates a release's options against the plan.
func (p *Plan) checkOptions(o ReleaseOptions) error {
	if !o.Gaussian {
		if err := dpkit.InPackage("query", o.Budget.Validate()); err != nil {
			return err
		}
		if err := dpkit.InPackage("query", dpkit.CheckPositive("epsilon", o.Budget.Epsilon)); err != nil {
			return err
		}
		if p.Selection && o.Budget.Delta == 0 {
			return &dpkit.ParamError{Pkg: "query", Name: "delta", Value: 0.0,
				Want: fmt.Sprintf("> 0: GROUP BY %s has no declared domain, so its keys are chosen by partition selection, which needs δ > 0 (or declare a domain)", strings.Join(p.GroupColumns, ", "))}
		}
		return nil
	}
	if err := dpkit.InPackage("query", dpkit.CheckPositive("mu", o.Mu)); err != nil {
		return err
	}
	if p.Selection {
		return &dpkit.ParamError{Pkg: "query", Name: "mechanism", Value: "gaussian",
			Want: fmt.Sprintf("laplace: GROUP BY %s has no declared domain and partition selection is pure (ε, δ) (or declare a domain)", strings.Join(p.GroupColumns, ", "))}
	}
	for _, ap := range p.Aggregates {
		if ap.Func == Median || ap.Func == Quantile {
			return &dpkit.ParamError{Pkg: "query", Name: "mechanism", Value: "gaussian",
				Want: fmt.Sprintf("laplace for %s: quantiles are released by the exponential mechanism, which is pure ε-DP", ap.Text)}
		}
	}
	return nil
}

// shareOf returns ε·share rounded down (share is 1/k or 1/(2k)): the parts never add up
// to more than ε.
func shareOf(eps, share float64) float64 {
	x := eps * share
	if math.FMA(share, eps, -x) < 0 {
		x = math.Nextafter(x, 0)
	}
	return x
}

// describe returns the descriptor of one release's mechanisms: the mechanism's own, or a
// composition of several (several aggregates, AVG, partition selection).
func describe(ms []mechanism.Mechanism, sel *mechanism.PartitionSelection) mechanism.Descriptor {
	if sel != nil {
		ms = append(append([]mechanism.Mechanism{}, ms...), sel)
	}
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
// grid step per group one unit can change (see ReleaseWith); its Interval(β) is then a
// half-width including the snapping to the grid.
func (p *Plan) sumMechanism(sens, eps float64) (*mechanism.Laplace, error) {
	changed := 0
	if p.GroupColumns != nil {
		changed = p.changedGroups()
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

// gaussianMechanism returns the Gaussian mechanism of a count or sum component at μ,
// calibrated to its ℓ2 sensitivity (for grouped sums raised by √(groups changed)·g, the
// ℓ2 norm of one grid step of snapping per changed group).
func (p *Plan) gaussianMechanism(c Component, mu float64) (*mechanism.Gaussian, error) {
	changed := 0
	if c.kind == sumComponent && p.GroupColumns != nil {
		changed = p.changedGroups()
	}
	d := c.L2
	for range 4 {
		m, err := mechanism.NewGaussianMu(mechanism.GaussianMuOptions{Mu: mu, Sensitivity: d})
		if err != nil {
			return nil, dpkit.InPackage("query", err)
		}
		step := math.Sqrt(float64(changed)) * m.Granularity()
		if need := c.L2 + step; changed == 0 || d >= need {
			return m, nil
		}
		d = math.Nextafter(math.Nextafter(c.L2+step, math.Inf(1)), math.Inf(1))
	}
	return nil, &dpkit.ParamError{Pkg: "query", Name: "mu", Value: mu, Want: "a value for which the grid of the sum's noise settles"}
}

// quantileMechanism returns the exact quantile mechanism over the aggregated column's
// grid with utility sensitivity du at ε.
func (p *Plan) quantileMechanism(ap *AggregatePlan, du, eps float64) (*mechanism.Quantile, error) {
	i := ap.index()
	lo, hi := p.bounds(i)
	return mechanism.NewQuantile(mechanism.QuantileOptions{Epsilon: eps, Sensitivity: du, P: ap.P,
		Lower: lo, Upper: hi, Step: p.Grid(i)})
}

// index returns the position of the aggregate in its plan (its components know it).
func (ap *AggregatePlan) index() int { return ap.Components[0].agg }

// centredSum returns Σ(x_i − c) = Σx_i − n·c for aggregate i, computed exactly and
// rounded once.
func (p *Plan) centredSum(i int, a *AggregateExact, c float64) float64 {
	s := p.exactSum(i, a)
	nc := newFloat().SetInt64(a.N)
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
