package multiparty

import (
	"math"

	"gonum.org/v1/gonum/floats"
)

// boundedLP is the linear program
//
//	maximize c·v  subject to  G v ≤ h,  0 ≤ v ≤ u,
//
// with h ≥ 0 (so v = 0 is feasible) and u_j ∈ (0, +Inf]. It is solved by the primal
// simplex method for bounded variables (Dantzig's rule; Bland's rule after a run of
// degenerate pivots) on a dense tableau: one slack per row, every variable nonbasic at
// its lower or upper bound or basic. Each pivot costs O(m (n + m)) for m rows and n
// variables. The solver is only a heuristic for the callers, who certify its answers
// independently: a wrong or early answer widens the certified gap, it never makes a
// reported bound unsound.
type boundedLP struct {
	m, n int
	g    []float64 // m × n, row-major
	h    []float64
	c    []float64
	u    []float64
	// start marks the variables that start at their (finite) upper bound instead of 0;
	// the caller guarantees that the start is feasible (h − G v ≥ 0).
	start []bool
}

// lpResult is a basic solution: the variables v, the value c·v, and the row duals
// y ≥ 0 (the negated reduced costs of the slacks).
type lpResult struct {
	v       []float64
	value   float64
	duals   []float64
	optimal bool
	pivots  int
	flips   int
}

// solve runs the simplex method for at most maxPivots pivots: choose the entering
// column, run the ratio test, then flip its bound or pivot it into the basis.
func (lp *boundedLP) solve(maxPivots int) lpResult {
	s := newDenseSimplex(lp)
	const dualTol = 1e-13
	optimal := false
	degenerate := 0
	pivots, flips := 0, 0
	for ; pivots < maxPivots; pivots++ {
		enter := entering(s.w, func(j int) bool { return s.isBasic[j] != 0 }, s.d, s.atUpper, dualTol, degenerate > 50)
		if enter < 0 {
			optimal = true
			break
		}
		dir := 1.0
		if s.atUpper[enter] {
			dir = -1
		}
		theta, leave, leaveUpper := s.ratioTest(enter, dir)
		if math.IsInf(theta, 1) {
			break // unbounded: cannot happen for the callers' programs
		}
		if theta < 1e-15 {
			degenerate++
		} else {
			degenerate = 0
		}
		for r := range s.m {
			s.xb[r] -= dir * s.col[r] * theta
		}
		if leave < 0 { // bound flip
			flips++
			s.atUpper[enter] = !s.atUpper[enter]
			continue
		}
		s.pivot(enter, leave, dir, theta, leaveUpper)
	}
	return s.result(optimal, pivots, flips)
}

// denseSimplex is the state of boundedLP.solve: the m × (n + m) tableau (variables, then
// slacks), the reduced costs d of the maximization, the bounds, the basis and the basic
// values xb.
type denseSimplex struct {
	lp         *boundedLP
	m, n, w    int
	tab, d, xb []float64
	upper      []float64
	basis      []int
	isBasic    []int // row+1 when basic, 0 when nonbasic
	atUpper    []bool
	col        []float64 // the entering column, filled by ratioTest
	nz         []int     // scratch of eliminate
}

// newDenseSimplex sets up the slack basis, with the variables of lp.start at their upper
// bounds.
func newDenseSimplex(lp *boundedLP) *denseSimplex {
	m, n := lp.m, lp.n
	w := n + m
	s := &denseSimplex{lp: lp, m: m, n: n, w: w, tab: make([]float64, m*w), d: make([]float64, w),
		xb: make([]float64, m), upper: make([]float64, w), basis: make([]int, m), isBasic: make([]int, w),
		atUpper: make([]bool, w), col: make([]float64, m)}
	for r := range m {
		copy(s.tab[r*w:r*w+n], lp.g[r*n:(r+1)*n])
		s.tab[r*w+n+r] = 1
	}
	copy(s.d, lp.c)
	copy(s.upper, lp.u)
	for j := n; j < w; j++ {
		s.upper[j] = math.Inf(1)
	}
	for r := range m {
		s.basis[r] = n + r
		s.xb[r] = lp.h[r]
		s.isBasic[n+r] = r + 1
	}
	for j, up := range lp.start {
		if !up {
			continue
		}
		s.atUpper[j] = true
		for r := range m {
			s.xb[r] -= lp.g[r*n+j] * s.upper[j]
		}
	}
	return s
}

// ratioTest (Harris's two passes) returns the step θ of the entering column, which moves
// in direction dir while basic variable r moves by −dir·col[r]·θ, and the row that leaves
// (−1 for a bound flip) and whether it leaves at its upper bound. Pass 1 finds the
// largest step with every bound relaxed by feasTol; pass 2 picks, among the rows blocking
// within that step, the one with the largest |pivot|, which keeps the tableau well
// conditioned on degenerate programs. θ is +Inf when nothing blocks.
func (s *denseSimplex) ratioTest(enter int, dir float64) (theta float64, leave int, leaveUpper bool) {
	const (
		pivotTol = 1e-11
		feasTol  = 1e-12
	)
	m, w, xb, upper, basis, col := s.m, s.w, s.xb, s.upper, s.basis, s.col
	for r := range m {
		col[r] = s.tab[r*w+enter]
	}
	limit := upper[enter]
	for r := range m {
		a := dir * col[r]
		switch {
		case a > pivotTol:
			limit = min(limit, (max(xb[r], 0)+feasTol)/a)
		case a < -pivotTol && !math.IsInf(upper[basis[r]], 1):
			limit = min(limit, (max(upper[basis[r]]-xb[r], 0)+feasTol)/-a)
		}
	}
	theta, leave = upper[enter], -1
	bestPivot := 0.0
	for r := range m {
		a := dir * col[r]
		var t float64
		var up bool
		switch {
		case a > pivotTol:
			t = max(xb[r], 0) / a
		case a < -pivotTol && !math.IsInf(upper[basis[r]], 1):
			t, up = max(upper[basis[r]]-xb[r], 0)/-a, true
		default:
			continue
		}
		if t <= limit && math.Abs(a) > bestPivot {
			theta, leave, leaveUpper, bestPivot = t, r, up, math.Abs(a)
		}
	}
	if leave >= 0 && upper[enter] <= theta {
		theta, leave = upper[enter], -1 // the bound flip comes first
	}
	return theta, leave, leaveUpper
}

// pivot brings column enter into the basis in place of row leave's variable (which
// leaves at its upper bound if leaveUpper), after a step θ in direction dir: the basis
// bookkeeping, then Gauss–Jordan elimination on the pivot element and the reduced costs.
func (s *denseSimplex) pivot(enter, leave int, dir, theta float64, leaveUpper bool) {
	enterValue := theta
	if dir < 0 {
		enterValue = s.upper[enter] - theta
	}
	old := s.basis[leave]
	s.isBasic[old] = 0
	s.atUpper[old] = leaveUpper
	s.basis[leave] = enter
	s.isBasic[enter] = leave + 1
	s.atUpper[enter] = false
	s.xb[leave] = enterValue
	w := s.w
	prow := s.tab[leave*w : (leave+1)*w]
	inv := 1 / prow[enter]
	for j := range prow {
		prow[j] *= inv
	}
	prow[enter] = 1
	eliminate(s.tab, w, s.m, leave, enter, prow, &s.nz)
	if f := s.d[enter]; f != 0 {
		for j, p := range prow {
			if p != 0 {
				s.d[j] -= f * p
			}
		}
		s.d[enter] = 0
	}
}

// result reads the basic solution: the variables (basic ones clamped to their bounds),
// the value and the row duals.
func (s *denseSimplex) result(optimal bool, pivots, flips int) lpResult {
	m, n := s.m, s.n
	res := lpResult{v: make([]float64, n), duals: make([]float64, m), optimal: optimal, pivots: pivots, flips: flips}
	for j := range n {
		switch {
		case s.isBasic[j] != 0:
			res.v[j] = min(max(s.xb[s.isBasic[j]-1], 0), s.upper[j])
		case s.atUpper[j]:
			res.v[j] = s.upper[j]
		}
		res.value += s.lp.c[j] * res.v[j]
	}
	for r := range m {
		res.duals[r] = max(0, -s.d[n+r])
	}
	return res
}

// eliminate subtracts multiples of the pivot row prow from the other rows of the m × w
// tableau so that column enter becomes a unit vector. A sparse pivot row (common in
// the first pivots, when the slack columns are still mostly zero) is applied through
// its nonzero positions; a dense one by vectorized axpy, split over two goroutines for
// large tableaus.
func eliminate(tab []float64, w, m, leave, enter int, prow []float64, nz *[]int) {
	idx := (*nz)[:0]
	for j, p := range prow {
		if p != 0 {
			idx = append(idx, j)
		}
	}
	*nz = idx
	sparse := 4*len(idx) < w
	work := func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if r == leave {
				continue
			}
			subtractPivot(tab[r*w:(r+1)*w], prow, idx, sparse, enter)
		}
	}
	if m*w < 1<<18 {
		work(0, m)
		return
	}
	split(m, work)
}

// entering returns the non-basic column of w to enter the basis, or −1 at optimality:
// the largest gain (Dantzig) or, with bland, the first improving one (Bland's rule,
// which cannot cycle).
func entering(w int, basic func(int) bool, d []float64, atUpper []bool, tol float64, bland bool) int {
	enter, best := -1, 0.0
	for j := range w {
		if basic(j) {
			continue
		}
		gain, ok := reducedGain(d[j], atUpper[j], tol)
		if !ok {
			continue
		}
		if bland {
			return j
		}
		if gain > best {
			best, enter = gain, j
		}
	}
	return enter
}

// reducedGain returns how much entering a non-basic column with reduced cost d improves
// the objective per unit (at its lower bound it may rise, at its upper bound fall), and
// whether it improves at all beyond tol.
func reducedGain(d float64, atUpper bool, tol float64) (float64, bool) {
	switch {
	case !atUpper && d > tol:
		return d, true
	case atUpper && d < -tol:
		return -d, true
	}
	return 0, false
}

// subtractPivot eliminates the entering column from one tableau row: row −= f·prow with
// f = row[enter], over the non-zeros idx of the pivot row when sparse, and sets the
// entry exactly to 0.
func subtractPivot(row, prow []float64, idx []int, sparse bool, enter int) {
	f := row[enter]
	if f == 0 {
		return
	}
	if sparse {
		for _, j := range idx {
			row[j] -= f * prow[j]
		}
	} else {
		floats.AddScaled(row, -f, prow)
	}
	row[enter] = 0
}
