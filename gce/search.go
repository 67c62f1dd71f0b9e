package gce

import (
	"slices"

	"github.com/dpkit/dpkit/compose"
)

// MaxSearchEvaluations bounds the number of compositions the subset search of AtMost
// evaluates. When it is reached the search stops and AtMost reports the decoupled upper
// bound (a valid guarantee; MembershipResult.Exhaustive is then false).
const MaxSearchEvaluations = 4096

// kind is one distinct (ε, δ) of a workload, with the number of steps n that use it.
type kind struct {
	eps, delta float64
	n          int64
}

// worstSubset finds the size-size sub-multiset of the workload whose optimal composition
// at the composer's δ has the largest ε (the worst differing set of "at most m of k").
//
// Algorithm: branch and bound over how many steps of each kind are chosen. Kinds are
// sorted by ε, then δ, decreasing.
//
//   - Bound. For any selection S of r steps out of a pool, δ_S(ε̃) = 1 − K_S + K_S·h_S(ε̃),
//     K_S = Π_{ℓ∈S}(1 − δ_ℓ) and h_S the pure-ε part of the curve (docs/errata.md, KOV
//     item 2). h_S is at most h of the r largest ε values of the pool (each canonical
//     pair dominates those with smaller ε), and K_S is at least K of the r largest δ
//     values, so δ_S(ε̃) ≤ 1 − K_top(1 − h_top)(ε̃). That is the curve of the "decoupled"
//     workload pairing the i-th largest ε with the i-th largest δ, which compose
//     evaluates like any other: a node whose decoupled bound is not above the best
//     selection found so far is pruned. When the kinds are ordered by dominance the
//     decoupled workload is itself a selection and the root bound is the answer.
//   - Exchange. If kind t dominates kind u (ε_t ≥ ε_u, δ_t ≥ δ_u) and a selection uses u
//     while leaving a step of kind t out, swapping them does not lower the composition;
//     so once a kind is not used in full, the later kinds it dominates are skipped.
//
// Cost: every node costs one composition (cached by multiset); the search visits at most
// Π_t (n_t + 1) selections but, in practice, a handful beyond the greedy one unless
// several kinds trade ε against δ. It stops after MaxSearchEvaluations compositions and
// returns the root bound (exhaustive = false).
func worstSubset(c *composer, kinds []kind, size int64) (best composed, worst []compose.Mech, exhaustive bool) {
	slices.SortFunc(kinds, func(a, b kind) int {
		if x := cmpDesc(a.eps, b.eps); x != 0 {
			return x
		}
		return cmpDesc(a.delta, b.delta)
	})
	s := &search{c: c, kinds: kinds, best: composed{upper: -1, lower: -1}}
	root := s.bound(nil, 0, size, -1)
	if root.err != nil {
		return root, nil, false
	}
	s.rootBound = root
	s.dfs(nil, 0, size, -1)
	if s.err != nil {
		return composed{err: s.err}, nil, false
	}
	if s.stopped {
		// The root bound is a valid guarantee; the best selection seen is a lower value.
		return composed{upper: root.upper, lower: max(s.best.lower, 0)}, decoupled(nil, available(kinds, 0, -1), size), false
	}
	return s.best, s.worst, true
}

type search struct {
	c         *composer
	kinds     []kind
	best      composed
	worst     []compose.Mech
	rootBound composed
	stopped   bool
	err       error
}

// available returns the kinds from index t on that are not blocked: a kind with δ ≤
// block is dominated by an earlier kind left partly unused.
func available(kinds []kind, t int, block float64) []kind {
	var out []kind
	for _, k := range kinds[t:] {
		if k.delta > block {
			out = append(out, k)
		}
	}
	return out
}

func capacity(ks []kind) int64 {
	var n int64
	for _, k := range ks {
		n += k.n
	}
	return n
}

// decoupled returns fixed plus the r steps that pair the i-th largest ε of pool with
// the i-th largest δ of pool.
func decoupled(fixed []compose.Mech, pool []kind, r int64) []compose.Mech {
	pool = slices.DeleteFunc(slices.Clone(pool), func(k kind) bool { return k.n == 0 })
	byEps := slices.Clone(pool) // already sorted by ε decreasing
	byDelta := slices.Clone(pool)
	slices.SortStableFunc(byDelta, func(a, b kind) int { return cmpDesc(a.delta, b.delta) })
	ms := slices.Clone(fixed)
	i, j := 0, 0
	ni, nj := int64(0), int64(0) // steps of byEps[i], byDelta[j] already used
	for r > 0 {
		n := min(byEps[i].n-ni, byDelta[j].n-nj, r)
		ms = append(ms, compose.Mech{Epsilon: byEps[i].eps, Delta: byDelta[j].delta, Count: n})
		ni, nj, r = ni+n, nj+n, r-n
		if ni == byEps[i].n {
			i, ni = i+1, 0
		}
		if nj == byDelta[j].n {
			j, nj = j+1, 0
		}
	}
	return canonical(ms)
}

// bound evaluates the decoupled bound of the node: fixed chosen, r more from kinds t…
func (s *search) bound(fixed []compose.Mech, t int, r int64, block float64) composed {
	pool := available(s.kinds, t, block)
	return s.c.epsilon(decoupled(fixed, pool, r))
}

func (s *search) dfs(fixed []compose.Mech, t int, r int64, block float64) {
	if s.err != nil || s.stopped {
		return
	}
	if s.c.calls >= MaxSearchEvaluations {
		s.stopped = true
		return
	}
	if r == 0 {
		ms := canonical(fixed)
		v := s.c.epsilon(ms)
		if v.err != nil {
			s.err = v.err
			return
		}
		if v.upper > s.best.upper {
			s.best.upper, s.worst = v.upper, ms
		}
		s.best.lower = max(s.best.lower, v.lower)
		return
	}
	pool := available(s.kinds, t, block)
	if capacity(pool) < r {
		return
	}
	if s.best.upper >= 0 && s.pruned(decoupled(fixed, pool, r)) {
		return
	}
	k := s.kinds[t]
	if k.delta <= block {
		s.dfs(fixed, t+1, r, block)
		return
	}
	// All n_t steps of kind t (the greedy choice; blocks nothing).
	if k.n <= r && capacity(available(s.kinds, t+1, block)) >= r-k.n {
		s.dfs(with(fixed, k, k.n), t+1, r-k.n, block)
	}
	// a < n_t steps of kind t: the later kinds it dominates are blocked.
	nb := max(block, k.delta)
	hi, lo := min(k.n-1, r), max(0, r-capacity(available(s.kinds, t+1, nb)))
	if lo <= hi {
		s.ranges(fixed, t, r, nb, lo, hi)
	}
}

// ranges explores the choices a ∈ [lo, hi] of kind t by halving the interval. Every
// selection in it is lo steps of kind t plus r − lo steps from the pool of hi − lo more
// steps of kind t and the later unblocked kinds, so the decoupled bound of that pool
// bounds the whole interval (and is tight when the interval is one choice).
func (s *search) ranges(fixed []compose.Mech, t int, r int64, nb float64, lo, hi int64) {
	if s.err != nil || s.stopped {
		return
	}
	k := s.kinds[t]
	if lo == hi {
		s.dfs(with(fixed, k, lo), t+1, r-lo, nb)
		return
	}
	if s.c.calls >= MaxSearchEvaluations {
		s.stopped = true
		return
	}
	pool := append([]kind{{eps: k.eps, delta: k.delta, n: hi - lo}}, available(s.kinds, t+1, nb)...)
	if s.best.upper >= 0 && s.pruned(decoupled(with(fixed, k, lo), pool, r-lo)) {
		return
	}
	mid := lo + (hi-lo)/2
	s.ranges(fixed, t, r, nb, mid+1, hi)
	s.ranges(fixed, t, r, nb, lo, mid)
}

// pruned evaluates a bounding workload and reports whether it is not above the best
// selection found (so nothing it bounds can be worse). A bound whose floor exceeds δ
// makes the whole analysis infeasible, rightly: its δ values are those of a real
// selection (the node's fixed steps plus the pool's r largest δ), which then has no
// finite ε either.
func (s *search) pruned(bound []compose.Mech) bool {
	b := s.c.epsilon(bound)
	if b.err != nil {
		s.err = b.err
		return true
	}
	return b.upper <= s.best.upper
}

// with returns fixed plus n steps of kind k (a new slice; fixed unchanged).
func with(fixed []compose.Mech, k kind, n int64) []compose.Mech {
	if n == 0 {
		return fixed
	}
	return append(slices.Clone(fixed), compose.Mech{Epsilon: k.eps, Delta: k.delta, Count: n})
}
