package compose

import (
	"math"

	"github.com/dpkit/dpkit"
)

// feasible reports whether k releases of (eps0, delta0) meet total (ε, δ) by the
// certified upper curve of the exact composition.
func feasible(k int64, eps0, delta0 float64, total dpkit.Budget) (bool, error) {
	ms := []Mech{{Epsilon: eps0, Delta: delta0, Count: k}}
	c, err := newCurve(ms, nil, total.Delta)
	if err != nil {
		return false, err
	}
	if total.Delta < c.floor {
		return false, nil
	}
	d, _, err := c.Delta(total.Epsilon)
	return d <= total.Delta, err
}

// MaxEpsilonPerQuery returns the largest per-query ε0 such that k releases, each
// (ε0, queryDelta)-DP, compose to at most total (ε, δ) by the exact optimal composition
// (KOV Thm 3.3). The result is found by bisection on ε0 and is always on the feasible
// side: its certified upper curve meets the total, so it never exceeds the exact maximum
// (and is below it by at most 1e-12 relative).
//
// It is infeasible (an error matching dpkit.ErrInfeasible) when 1 − (1 − queryDelta)^k
// already exceeds total δ.
func MaxEpsilonPerQuery(k int64, queryDelta float64, total dpkit.Budget) (float64, error) {
	if err := total.Validate(); err != nil {
		return 0, err
	}
	if err := dpkit.CheckCount("k", k, MaxCount); err != nil {
		return 0, err
	}
	if err := dpkit.CheckDelta("query delta", queryDelta); err != nil {
		return 0, err
	}
	floor, _ := floorKeep([]Mech{{Delta: queryDelta, Count: k}})
	if floor > total.Delta {
		return 0, infeasible("%d queries with delta %g have delta floor 1 − (1 − δ0)^k = %v above the total delta %g; lower the per-query delta", k, queryDelta, floor, total.Delta)
	}
	lo := total.Epsilon / float64(k) // basic composition: loss ≤ ε surely, δ = floor
	if ok, err := feasible(k, lo, queryDelta, total); err != nil || !ok {
		// Only rounding of the floor can make the basic split fail; step just below it.
		lo = math.Nextafter(lo, 0)
		if ok, err = feasible(k, lo, queryDelta, total); err != nil || !ok {
			return 0, infeasible("no per-query epsilon ≥ %g meets the total %v", lo, total)
		}
	}
	hi := math.Max(2*lo, 1e-300)
	for {
		ok, err := feasible(k, hi, queryDelta, total)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, hi = hi, 2*hi
		if hi > 1e6 {
			return lo, nil // δ ≥ 1 − (1 − δ0)^k·… is met by any ε0: no useful cap
		}
	}
	for i := 0; i < 200 && hi-lo > lo*1e-15; i++ {
		mid := lo + (hi-lo)/2
		ok, err := feasible(k, mid, queryDelta, total)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// MaxQueries returns the largest number k of (ε0, δ0)-DP releases whose exact optimal
// composition (KOV Thm 3.3) stays within total (ε, δ); 0 if not even one fits. The
// search is capped at MaxCount: a result equal to MaxCount means "at least MaxCount".
func MaxQueries(query, total dpkit.Budget) (int64, error) {
	if err := query.Validate(); err != nil {
		return 0, err
	}
	if err := total.Validate(); err != nil {
		return 0, err
	}
	fits := func(k int64) (bool, error) { return feasible(k, query.Epsilon, query.Delta, total) }
	ok, err := fits(1)
	if err != nil || !ok {
		return 0, err
	}
	lo, hi := int64(1), int64(2)
	for {
		if hi > MaxCount {
			hi = MaxCount
		}
		ok, err := fits(hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		if hi == MaxCount {
			return MaxCount, nil
		}
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		ok, err := fits(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}
