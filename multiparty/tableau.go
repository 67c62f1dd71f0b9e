package multiparty

import (
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/floats"
)

// tableau is a dense simplex tableau for the linear program
//
//	maximize c·v  subject to  G v ≤ h,  0 ≤ v ≤ u,
//
// kept in canonical form B⁻¹[G I] while rows (constraints) and columns (variables) are
// added: a new row enters with its slack basic and, when the current point violates it,
// primal feasibility is restored by the bounded dual simplex method; a new column enters
// nonbasic at one of its bounds and, when its reduced cost has the wrong sign, the
// bounded primal simplex method pivots it in. Columns are numbered in creation order,
// variables and slacks mixed (slack[i] is the column of row i's slack). Each pivot costs
// O(m w) for m rows and w columns, through vectorized row operations.
//
// Like boundedLP, the tableau is only a heuristic for its callers, who certify the
// answers independently: accumulated rounding widens the certified gap, it never makes a
// reported bound unsound.
type tableau struct {
	m, w    int
	stride  int
	a       []float64 // m × stride, row-major
	xb      []float64 // value of the basic variable of each row
	basis   []int     // basic column of each row
	rowOf   []int     // row of a basic column, −1 when nonbasic
	d       []float64 // reduced costs c_j − c_B B⁻¹ a_j (maximization)
	upper   []float64
	atUpper []bool
	slack   []int
	nz      []int
	pivots  int
	// work counts tableau cell updates (m·w per pivot); the simplex methods stop when
	// it reaches budget.
	work, budget float64
}

const (
	tabDualTol  = 1e-13 // reduced costs within it count as zero
	tabPivotTol = 1e-11 // smallest pivot element
	tabFeasTol  = 1e-12 // primal bound violation tolerated
)

// grow makes room for w columns.
func (t *tableau) grow(w int) {
	if w <= t.stride {
		return
	}
	ns := max(w, 2*t.stride, 64)
	na := make([]float64, t.m*ns, max(t.m, 64)*ns)
	for r := range t.m {
		copy(na[r*ns:r*ns+t.w], t.a[r*t.stride:r*t.stride+t.w])
	}
	t.a, t.stride = na, ns
}

func (t *tableau) row(r int) []float64 { return t.a[r*t.stride : r*t.stride+t.w] }

// value returns the current value of column j.
func (t *tableau) value(j int) float64 {
	switch {
	case t.rowOf[j] >= 0:
		return t.xb[t.rowOf[j]]
	case t.atUpper[j]:
		return t.upper[j]
	}
	return 0
}

// dual returns the dual value y_i ≥ 0 of row i (−d of its slack).
func (t *tableau) dual(i int) float64 { return max(0, -t.d[t.slack[i]]) }

// addColumns appends variables: cols[c][i] is the coefficient of the new variable in
// row i (creation order), cost[c] its objective coefficient, upper[c] its bound and
// start[c] whether it starts at its upper bound. The basic values are left unchanged:
// the caller moves the new variables' starting contribution from h into the variables.
func (t *tableau) addColumns(cols [][]float64, cost, upper []float64, start []bool) {
	nc := len(cols)
	if nc == 0 {
		return
	}
	w0 := t.widen(nc)
	if t.m > 0 {
		// B⁻¹ is the tableau's slack columns; new tableau columns are B⁻¹ a.
		m := t.m
		binv := make([]float64, m*m)
		for r := range m {
			row := t.a[r*t.stride:]
			for i, s := range t.slack {
				binv[r*m+i] = row[s]
			}
		}
		an := make([]float64, m*nc)
		for c, col := range cols {
			for i := range m {
				an[i*nc+c] = col[i]
			}
		}
		out := blas64.General{Rows: m, Cols: nc, Stride: t.stride, Data: t.a[w0:]}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, 1,
			blas64.General{Rows: m, Cols: m, Stride: m, Data: binv},
			blas64.General{Rows: m, Cols: nc, Stride: nc, Data: an}, 0, out)
	}
	for c, col := range cols {
		dj := cost[c]
		for i, s := range t.slack {
			dj += t.d[s] * col[i]
		}
		t.appendColumn(dj, upper[c], start[c])
	}
}

// widen adds n columns to the tableau's width and returns the first new one.
func (t *tableau) widen(n int) int {
	w0 := t.w
	t.grow(t.w + n)
	t.w += n
	return w0
}

// appendColumn records a new nonbasic column's reduced cost, bound and starting side.
func (t *tableau) appendColumn(d, upper float64, atUpper bool) {
	t.d = append(t.d, d)
	t.upper = append(t.upper, upper)
	t.atUpper = append(t.atUpper, atUpper)
	t.rowOf = append(t.rowOf, -1)
}

// addRows appends constraints: rows[k][j] is the coefficient of column j < w (slack
// columns 0) and slackValue[k] the value h_k − G_k v of the new slack at the current
// point, which becomes basic.
func (t *tableau) addRows(rows [][]float64, slackValue []float64) {
	nr := len(rows)
	if nr == 0 {
		return
	}
	w0 := t.widen(nr)
	for range nr {
		t.appendColumn(0, math.Inf(1), false) // the new slack (made basic below)
	}
	m0 := t.m
	// Rows in terms of the current basis: R − R_B T, R_B the entries at basic columns.
	nrw := make([]float64, nr*t.stride)
	for k, r := range rows {
		copy(nrw[k*t.stride:], r[:w0])
	}
	if m0 > 0 {
		rb := make([]float64, nr*m0)
		for k := range nr {
			for r, j := range t.basis {
				rb[k*m0+r] = nrw[k*t.stride+j]
			}
		}
		blas64.Gemm(blas.NoTrans, blas.NoTrans, -1,
			blas64.General{Rows: nr, Cols: m0, Stride: m0, Data: rb},
			blas64.General{Rows: m0, Cols: t.w, Stride: t.stride, Data: t.a},
			1, blas64.General{Rows: nr, Cols: t.w, Stride: t.stride, Data: nrw})
		for k := range nr {
			for _, j := range t.basis {
				nrw[k*t.stride+j] = 0
			}
		}
	}
	t.a = append(t.a[:m0*t.stride], nrw...)
	for k := range nr {
		s := w0 + k
		t.a[(m0+k)*t.stride+s] = 1
		t.slack = append(t.slack, s)
		t.basis = append(t.basis, s)
		t.rowOf[s] = m0 + k
		t.xb = append(t.xb, slackValue[k])
	}
	t.m += nr
}

// pivot makes column enter basic in row leave (Gauss–Jordan on the tableau and the
// reduced costs); the caller updates xb, the bound flags and the basis bookkeeping.
func (t *tableau) pivot(leave, enter int) {
	w := t.w
	prow := t.row(leave)
	inv := 1 / prow[enter]
	floats.Scale(inv, prow)
	prow[enter] = 1
	idx := t.nz[:0]
	for j, p := range prow {
		if p != 0 {
			idx = append(idx, j)
		}
	}
	t.nz = idx
	sparse := 4*len(idx) < w
	work := func(lo, hi int) {
		for r := lo; r < hi; r++ {
			if r == leave {
				continue
			}
			subtractPivot(t.a[r*t.stride:r*t.stride+w], prow, idx, sparse, enter)
		}
	}
	if t.m*w < 1<<17 {
		work(0, t.m)
	} else {
		split(t.m, work)
	}
	if f := t.d[enter]; f != 0 {
		if sparse {
			for _, j := range idx {
				t.d[j] -= f * prow[j]
			}
		} else {
			floats.AddScaled(t.d[:w], -f, prow)
		}
		t.d[enter] = 0
	}
	old := t.basis[leave]
	t.rowOf[old] = -1
	t.basis[leave] = enter
	t.rowOf[enter] = leave
	t.pivots++
	t.work += float64(t.m) * float64(w)
}

// primal runs the bounded primal simplex method (Dantzig pricing, Bland's rule after a
// run of degenerate steps, Harris's ratio test) from a primal feasible basis; it reports
// whether an optimal basis was reached within the work budget. Every step keeps the
// point primal feasible.
func (t *tableau) primal() bool {
	degenerate := 0
	col := make([]float64, t.m)
	for t.work < t.budget {
		enter := entering(t.w, func(j int) bool { return t.rowOf[j] >= 0 }, t.d, t.atUpper, tabDualTol, degenerate > 50)
		if enter < 0 {
			return true
		}
		dir := 1.0
		if t.atUpper[enter] {
			dir = -1
		}
		for r := range t.m {
			col[r] = t.a[r*t.stride+enter]
		}
		limit := t.upper[enter]
		for r := range t.m {
			a := dir * col[r]
			up := t.upper[t.basis[r]]
			switch {
			case a > tabPivotTol:
				limit = min(limit, (max(t.xb[r], 0)+tabFeasTol)/a)
			case a < -tabPivotTol && !math.IsInf(up, 1):
				limit = min(limit, (max(up-t.xb[r], 0)+tabFeasTol)/-a)
			}
		}
		theta, leave, leaveUpper, bestPivot := t.upper[enter], -1, false, 0.0
		for r := range t.m {
			a := dir * col[r]
			up := t.upper[t.basis[r]]
			var s float64
			var toUpper bool
			switch {
			case a > tabPivotTol:
				s = max(t.xb[r], 0) / a
			case a < -tabPivotTol && !math.IsInf(up, 1):
				s, toUpper = max(up-t.xb[r], 0)/-a, true
			default:
				continue
			}
			if s <= limit && math.Abs(a) > bestPivot {
				theta, leave, leaveUpper, bestPivot = s, r, toUpper, math.Abs(a)
			}
		}
		if leave >= 0 && t.upper[enter] <= theta {
			theta, leave = t.upper[enter], -1
		}
		if math.IsInf(theta, 1) {
			return false // unbounded: not for the callers' programs
		}
		if theta < 1e-15 {
			degenerate++
		} else {
			degenerate = 0
		}
		for r := range t.m {
			t.xb[r] -= dir * col[r] * theta
		}
		if leave < 0 {
			t.atUpper[enter] = !t.atUpper[enter]
			t.work += float64(t.m)
			continue
		}
		enterValue := theta
		if dir < 0 {
			enterValue = t.upper[enter] - theta
		}
		old := t.basis[leave]
		t.pivot(leave, enter)
		t.atUpper[old] = leaveUpper
		t.atUpper[enter] = false
		t.xb[leave] = enterValue
	}
	return false
}

// dualSimplex runs the bounded dual simplex method from a dual feasible basis (every
// reduced cost of the right sign for its bound): the most infeasible basic variable
// leaves to its violated bound, the entering column is chosen by the dual ratio test
// (Harris's two passes with tolerance tabDualTol). It reports whether primal
// feasibility was reached within the work budget.
func (t *tableau) dualSimplex() bool {
	col := make([]float64, t.m)
	for t.work < t.budget {
		leave, worst, below := -1, tabFeasTol, false
		for r := range t.m {
			up := t.upper[t.basis[r]]
			if v := -t.xb[r]; v > worst {
				leave, worst, below = r, v, true
			}
			if v := t.xb[r] - up; v > worst {
				leave, worst, below = r, v, false
			}
		}
		if leave < 0 {
			return true
		}
		prow := t.row(leave)
		// Eligible: moving x_j in its feasible direction moves x_B[leave] towards the bound.
		// below: need α < 0 at lower, α > 0 at upper; above: the opposite.
		eligible := func(j int) (float64, bool) {
			if t.rowOf[j] >= 0 {
				return 0, false
			}
			a := prow[j]
			if !below {
				a = -a
			}
			switch {
			case !t.atUpper[j] && a < -tabPivotTol:
				return -a, true
			case t.atUpper[j] && a > tabPivotTol && !math.IsInf(t.upper[j], 1):
				return a, true
			}
			return 0, false
		}
		limit := math.Inf(1)
		for j := range t.w {
			if a, ok := eligible(j); ok {
				limit = min(limit, (math.Abs(t.d[j])+tabDualTol)/a)
			}
		}
		if math.IsInf(limit, 1) {
			return false // primal infeasible: not for the callers' programs
		}
		enter, bestPivot := -1, 0.0
		for j := range t.w {
			if a, ok := eligible(j); ok && math.Abs(t.d[j])/a <= limit && a > bestPivot {
				enter, bestPivot = j, a
			}
		}
		target := 0.0
		if !below {
			target = t.upper[t.basis[leave]]
		}
		for r := range t.m {
			col[r] = t.a[r*t.stride+enter]
		}
		delta := (t.xb[leave] - target) / col[leave]
		enterValue := delta
		if t.atUpper[enter] {
			enterValue = t.upper[enter] + delta
		}
		for r := range t.m {
			t.xb[r] -= col[r] * delta
		}
		old := t.basis[leave]
		t.pivot(leave, enter)
		t.atUpper[old] = !below
		t.atUpper[enter] = false
		t.xb[leave] = enterValue
	}
	return false
}
