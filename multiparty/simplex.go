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

func (lp *boundedLP) solve(maxPivots int) lpResult {
	m, n := lp.m, lp.n
	w := n + m // columns: variables, then slacks
	tab := make([]float64, m*w)
	for r := range m {
		copy(tab[r*w:r*w+n], lp.g[r*n:(r+1)*n])
		tab[r*w+n+r] = 1
	}
	d := make([]float64, w) // reduced costs of the maximization
	copy(d, lp.c)
	upper := make([]float64, w)
	copy(upper, lp.u)
	for j := n; j < w; j++ {
		upper[j] = math.Inf(1)
	}
	basis := make([]int, m)
	xb := make([]float64, m)
	isBasic := make([]int, w) // row+1 when basic, 0 when nonbasic
	atUpper := make([]bool, w)
	for r := range m {
		basis[r] = n + r
		xb[r] = lp.h[r]
		isBasic[n+r] = r + 1
	}
	for j, up := range lp.start {
		if !up {
			continue
		}
		atUpper[j] = true
		for r := range m {
			xb[r] -= lp.g[r*n+j] * upper[j]
		}
	}
	const (
		dualTol  = 1e-13
		pivotTol = 1e-11
	)
	optimal := false
	degenerate := 0
	col := make([]float64, m)
	var nz []int
	pivots, flips := 0, 0
	for ; pivots < maxPivots; pivots++ {
		// Entering column.
		dir := 0.0
		enter := entering(w, func(j int) bool { return isBasic[j] != 0 }, d, atUpper, dualTol, degenerate > 50)
		if enter < 0 {
			optimal = true
			break
		}
		if atUpper[enter] {
			dir = -1
		} else {
			dir = 1
		}
		for r := range m {
			col[r] = tab[r*w+enter]
		}
		// Ratio test (Harris's two passes): the entering variable moves by θ in
		// direction dir and basic variable r by −dir·col[r]·θ. Pass 1 finds the
		// largest step with every bound relaxed by feasTol; pass 2 picks, among the
		// rows blocking within that step, the one with the largest |pivot|, which
		// keeps the tableau well conditioned on degenerate programs.
		const feasTol = 1e-12
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
		theta, leave, leaveUpper := upper[enter], -1, false
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
		if math.IsInf(theta, 1) {
			break // unbounded: cannot happen for the callers' programs
		}
		if theta < 1e-15 {
			degenerate++
		} else {
			degenerate = 0
		}
		for r := range m {
			xb[r] -= dir * col[r] * theta
		}
		if leave < 0 { // bound flip
			flips++
			atUpper[enter] = !atUpper[enter]
			continue
		}
		enterValue := theta
		if dir < 0 {
			enterValue = upper[enter] - theta
		}
		old := basis[leave]
		isBasic[old] = 0
		atUpper[old] = leaveUpper
		basis[leave] = enter
		isBasic[enter] = leave + 1
		atUpper[enter] = false
		xb[leave] = enterValue
		// Gauss–Jordan elimination on the pivot element.
		prow := tab[leave*w : (leave+1)*w]
		inv := 1 / prow[enter]
		for j := range prow {
			prow[j] *= inv
		}
		prow[enter] = 1
		eliminate(tab, w, m, leave, enter, prow, &nz)
		if f := d[enter]; f != 0 {
			for j, p := range prow {
				if p != 0 {
					d[j] -= f * p
				}
			}
			d[enter] = 0
		}
	}
	res := lpResult{v: make([]float64, n), duals: make([]float64, m), optimal: optimal, pivots: pivots, flips: flips}
	for j := range n {
		switch {
		case isBasic[j] != 0:
			res.v[j] = min(max(xb[isBasic[j]-1], 0), upper[j])
		case atUpper[j]:
			res.v[j] = upper[j]
		}
		res.value += lp.c[j] * res.v[j]
	}
	for r := range m {
		res.duals[r] = max(0, -d[n+r])
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
