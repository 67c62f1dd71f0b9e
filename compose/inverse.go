package compose

import (
	"context"
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
)

// excess returns how far k releases of (eps0, delta0) overshoot total ε at total δ:
// the ε the exact composition reports at total δ (Curve.Epsilon, what Epsilon would
// print for this workload) minus total ε; +Inf when total δ is below the floor. A
// composition is within the budget iff excess ≤ 0: then Delta at total ε is within
// total δ too (Delta is non-increasing, and Epsilon's answer was checked against it).
func excess(ctx context.Context, k int64, eps0, delta0 float64, total dpkit.Budget) (float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	ms := []Mech{{Epsilon: eps0, Delta: delta0, Count: k}}
	c, err := newCurve(ctx, ms, nil, total.Delta)
	if err != nil {
		return 0, err
	}
	if total.Delta < c.Floor() {
		return math.Inf(1), nil
	}
	e, _, err := c.Epsilon(total.Delta)
	if err != nil {
		return 0, err
	}
	return e - total.Epsilon, nil
}

// MaxEpsilonPerQuery returns the largest per-query ε0 such that k releases, each
// (ε0, queryDelta)-DP, compose to at most total (ε, δ) by the exact optimal composition
// (KOV Thm 3.3). It is MaxEpsilonPerQueryContext without cancellation.
func MaxEpsilonPerQuery(k int64, queryDelta float64, total dpkit.Budget) (float64, error) {
	return MaxEpsilonPerQueryContext(context.Background(), k, queryDelta, total)
}

// MaxEpsilonPerQueryContext returns the largest per-query ε0 such that k releases, each
// (ε0, queryDelta)-DP, compose to at most total (ε, δ) by the exact optimal composition
// (KOV Thm 3.3). The answer is always on the feasible side, and by the composition's own
// reading: Epsilon(k × (ε0, δ0), total δ) ≤ total ε (hence Delta at total ε ≤ total δ),
// never above the budget; it is below the exact maximum by at most 1e-9 relative
// (measured: 1.7e-12 at k = 85533, total (5e-10, 2.4e-3), where the exact curve's own
// bracket is 2e-5 wide in ε; 4e-13 at k = 10^12; compose/testdata/extremes.json). The
// search starts from KOV's closed form (Thm 3.4, whose ε0 is feasible and close) and
// runs Brent's method on the exact ε (numeric.Brent): about ten curves, each ≤ 0.5 s at
// k = 10^12 (docs/benchmarks.md). It stops with ctx.Err() when ctx is done.
//
// It is infeasible (an error matching dpkit.ErrInfeasible) when 1 − (1 − queryDelta)^k
// already exceeds total δ.
func MaxEpsilonPerQueryContext(ctx context.Context, k int64, queryDelta float64, total dpkit.Budget) (float64, error) {
	if err := total.Validate(); err != nil {
		return 0, dpkit.InPackage("compose", err)
	}
	if err := dpkit.CheckCount("count", k, MaxCount); err != nil {
		return 0, dpkit.InPackage("compose", err)
	}
	if err := dpkit.CheckDelta("query_delta", queryDelta); err != nil {
		return 0, dpkit.InPackage("compose", err)
	}
	if floor := Floor([]Mech{{Delta: queryDelta, Count: k}}); floor > total.Delta {
		return 0, infeasible("%d queries with delta %g have delta floor 1 − (1 − δ0)^k = %v above the total delta %g; lower the per-query delta", k, queryDelta, floor, total.Delta)
	}
	f := func(eps0 float64) (float64, error) { return excess(ctx, k, eps0, queryDelta, total) }
	// Basic composition: loss ≤ ε surely, δ = floor. Only the rounding of the floor can
	// make it fail; step just below it.
	lo := total.Epsilon / float64(k)
	flo, err := f(lo)
	if err != nil {
		return 0, err
	}
	if flo > 0 {
		lo = math.Nextafter(lo, 0)
		if flo, err = f(lo); err != nil {
			return 0, err
		}
		if flo > 0 {
			return 0, infeasible("no per-query epsilon ≥ %g meets the total %v", lo, total)
		}
	}
	// KOV's closed form is a valid bound, so its ε0 is feasible for the exact one too.
	if kov, err := kovEpsilonPerQuery(k, queryDelta, total); err == nil && kov > lo {
		if fk, err := f(kov); err != nil {
			return 0, err
		} else if fk <= 0 {
			lo, flo = kov, fk
		}
	}
	// Grow until infeasible.
	hi, fhi := lo, flo
	for fhi <= 0 {
		if hi > 1e6 {
			return lo, nil // δ ≥ the floor is met by any ε0: no useful cap
		}
		lo, flo = hi, fhi
		hi = math.Max(2*hi, 1e-300)
		if fhi, err = f(hi); err != nil {
			return 0, err
		}
	}
	lo, _, err = numeric.Brent(lo, hi, flo, fhi, f, numeric.Stop{RelTol: 1e-12})
	return lo, err
}

// kovEpsilonPerQuery returns the largest ε0 whose k-fold composition KOV Thm 3.4 bounds by
// total ε at total δ (bisection on the closed form, which increases with ε0): a
// feasible start for the exact search.
func kovEpsilonPerQuery(k int64, queryDelta float64, total dpkit.Budget) (float64, error) {
	meets := func(e0 float64) (bool, error) {
		r, err := EpsilonBy(KOV, []Mech{{Epsilon: e0, Delta: queryDelta, Count: k}}, total.Delta, nil)
		if err != nil {
			return false, err
		}
		return r.Epsilon <= total.Epsilon, nil
	}
	lo := total.Epsilon / float64(k)
	if ok, err := meets(lo); err != nil || !ok {
		return 0, fmt.Errorf("compose: KOV start not feasible")
	}
	lo, hi, found, err := numeric.ExpandUp(lo, 2, total.Epsilon, meets)
	if err != nil || !found {
		return lo, err
	}
	lo, _, err = numeric.Bisect(lo, hi, meets, numeric.Stop{RelTol: 1e-6, Geometric: true})
	return lo, err
}

// MaxQueries returns the largest number k of (ε0, δ0)-DP releases whose exact optimal
// composition (KOV Thm 3.3) stays within total (ε, δ); 0 if not even one fits. It is
// MaxQueriesContext without cancellation.
func MaxQueries(query, total dpkit.Budget) (int64, error) {
	return MaxQueriesContext(context.Background(), query, total)
}

// MaxQueriesContext returns the largest number k of (ε0, δ0)-DP releases whose exact
// optimal composition (KOV Thm 3.3), read as Epsilon reads it at total δ, stays within
// total ε; 0 if not even one fits. The search (numeric.LargestInt: doubling, then
// bisection on k, the composition being monotone in k) is capped at MaxCount: a result
// equal to MaxCount means "at least MaxCount". It stops with ctx.Err() when ctx is done.
func MaxQueriesContext(ctx context.Context, query, total dpkit.Budget) (int64, error) {
	if err := query.Validate(); err != nil {
		return 0, dpkit.InPackage("compose", err)
	}
	if err := total.Validate(); err != nil {
		return 0, dpkit.InPackage("compose", err)
	}
	fits := func(k int64) (bool, error) {
		x, err := excess(ctx, k, query.Epsilon, query.Delta, total)
		return x <= 0, err
	}
	return numeric.LargestInt(MaxCount, fits)
}
