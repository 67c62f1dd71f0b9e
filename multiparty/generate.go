package multiparty

import (
	"math"
	"slices"
	"sort"
)

// Parameters of the row and column generation (generate).
const (
	genInitRows = 512     // inputs the starting rule leaves worst
	genMaxRows  = 2048    // cap on the starting inputs
	genInitCols = 2000    // transcripts whose Bayes decision is nearest a tie
	genIPMCols  = 1000    // the same, after the interior point stage (a sharper prior)
	genInitEta  = 0.05    // relative margin below which a decision counts as near a tie
	genAddRows  = 32      // violated inputs added per round (the most violated)
	genAddCols  = 256     // violated transcripts added per round (largest reduced cost)
	genRounds   = 400     // cap on the rounds
	genWork     = 6e10    // cap on the tableau cell updates (about 30 s here)
	genBigPass  = 1 << 20 // above this many transcripts, rounds are capped at genBigRounds
	genBigRound = 10
)

// generate improves cert by row and column generation on the program of eq. (14),
// solved by the simplex method on a tableau kept across rounds ([tableau]):
//
//   - the rule is fixed, outside a set F of free transcripts, to the Bayes decision of the
//     best prior so far, and only the inputs of a set S are constrained;
//   - the restricted program is solved; its rule is a rule of the full game (Accuracy
//     candidate: min over all x of its accuracy) and its row duals a prior (UpperBound
//     candidate: its Bayes accuracy over all transcripts);
//   - inputs the rule leaves below the restricted optimum join S (dual simplex), fixed
//     transcripts on which the prior's Bayes decision beats the fixed one join F (primal
//     simplex); when neither exists, the restricted optimum is the full one.
//
// S starts with the inputs the best rule leaves worst and those the best prior weighs,
// F with the initCols transcripts whose Bayes decision under that prior is nearest a
// tie. Both bounds are certified whatever the state of the simplex method (every point
// it visits, clamped to [0, 1], is a rule, and non-negative duals normalized are a
// prior), so the work cap only widens the gap.
func generate(g game, cert *certificate, initCols int) {
	nx, nt, ny := g.size()
	q := bayesRule(g, cert.pi)
	acc := make([]float64, nx)
	sc := make([]float64, nt*ny)
	pi := make([]float64, nx)
	tab := tableau{budget: genWork}
	tab.addColumns([][]float64{{}}, []float64{1}, []float64{math.Inf(1)}, []bool{false}) // z
	var rowInput []int                                                                   // input of each row, −1 for a transcript row (|Y| > 2)
	inputRow := make([]bool, nx)                                                         // the input has a row
	freeCol := make([]int32, nt)                                                         // first column + 1 of a free transcript, 0 when fixed
	var freeList []int                                                                   // free transcripts in column order
	var scale []float64                                                                  // column scale of each free transcript

	// Input row x: z − Σ_{t∈F} a(x,t) Q(t, f(x)) ≤ c_x, written with Q(t, 0) eliminated
	// and the columns scaled; its slack is acc(x) − z at the current point.
	addInputs := func(xs []int) {
		z := tab.value(0)
		rows := make([][]float64, len(xs))
		vals := make([]float64, len(xs))
		for k, x := range xs {
			row := make([]float64, tab.w)
			row[0] = 1
			fx := g.answer(x)
			for j, t := range freeList {
				a := g.entry(x, t) / scale[j]
				if a == 0 {
					continue
				}
				c0 := int(freeCol[t]) - 1
				if fx == 0 {
					for y := 1; y < ny; y++ {
						row[c0+y-1] = a
					}
				} else {
					row[c0+fx-1] = -a
				}
			}
			rows[k], vals[k] = row, acc[x]-z
			inputRow[x] = true
			rowInput = append(rowInput, x)
		}
		tab.addRows(rows, vals)
	}
	// Free transcripts enter at their fixed (deterministic) decision, so that the
	// current point does not move.
	addTranscripts := func(ts []int) {
		var cols [][]float64
		var cost, upper []float64
		var start []bool
		first := len(scale)
		for _, t := range ts {
			s := 0.0
			for _, x := range rowInput {
				if x >= 0 {
					s = max(s, g.entry(x, t))
				}
			}
			if s == 0 {
				s = 1
			}
			freeCol[t] = int32(tab.w + len(cols) + 1)
			freeList = append(freeList, t)
			scale = append(scale, s)
			for y := 1; y < ny; y++ {
				col := make([]float64, tab.m)
				for i, x := range rowInput {
					if x < 0 {
						continue
					}
					switch fx := g.answer(x); {
					case fx == 0:
						col[i] = g.entry(x, t) / s
					case fx == y:
						col[i] = -g.entry(x, t) / s
					}
				}
				cols = append(cols, col)
				cost = append(cost, 0)
				upper = append(upper, s)
				start = append(start, q[t*ny+y] == 1)
			}
		}
		tab.addColumns(cols, cost, upper, start)
		if ny > 2 { // Σ_{y≥1} Q(t, y) ≤ 1, scaled by s
			rows := make([][]float64, len(ts))
			vals := make([]float64, len(ts))
			for k, t := range ts {
				row := make([]float64, tab.w)
				c0 := int(freeCol[t]) - 1
				for y := 1; y < ny; y++ {
					row[c0+y-1] = 1
				}
				rows[k] = row
				vals[k] = scale[first+k] * q[t*ny]
				rowInput = append(rowInput, -1)
			}
			tab.addRows(rows, vals)
		}
	}
	// extract reads the rule (clamped to a distribution) and the duals of the input rows.
	extract := func() {
		for j, t := range freeList {
			c0 := int(freeCol[t]) - 1
			rest := 1.0
			for y := 1; y < ny; y++ {
				v := min(max(tab.value(c0+y-1)/scale[j], 0), rest)
				q[t*ny+y] = v
				rest -= v
			}
			q[t*ny] = max(0, rest)
		}
		clear(pi)
		for i, x := range rowInput {
			if x >= 0 {
				pi[x] = tab.dual(i)
			}
		}
	}

	// Starting sets.
	g.accuracy(cert.q, acc)
	order := make([]int, nx)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return acc[order[a]] < acc[order[b]] })
	pmax := slices.Max(cert.pi)
	var start []int
	for r, x := range order {
		if r < genInitRows || cert.pi[x] > 1e-3*pmax {
			start = append(start, x)
		}
	}
	if len(start) > genMaxRows {
		sort.SliceStable(start, func(a, b int) bool { return cert.pi[start[a]] > cert.pi[start[b]] })
		start = start[:genMaxRows]
	}
	g.accuracy(q, acc)
	addInputs(start)
	g.scores(cert.pi, sc)
	type cand struct {
		t int
		v float64
	}
	var near []cand
	for t := range nt {
		row := sc[t*ny : (t+1)*ny]
		best, second := math.Inf(-1), math.Inf(-1)
		for y, v := range row {
			if q[t*ny+y] == 1 {
				best = v
			} else {
				second = max(second, v)
			}
		}
		if best > 0 && best-second <= genInitEta*best {
			near = append(near, cand{t, (best - second) / best})
		}
	}
	sort.SliceStable(near, func(a, b int) bool { return near[a].v < near[b].v })
	ts := make([]int, 0, min(len(near), initCols))
	for _, c := range near[:cap(ts)] {
		ts = append(ts, c.t)
	}
	addTranscripts(ts)

	rounds := genRounds
	if nt > genBigPass {
		rounds = genBigRound
	}
	for range rounds {
		tab.primal()
		extract()
		g.accuracy(q, acc)
		cert.offerRule(q, slices.Min(acc))
		g.scores(pi, sc)
		cert.offerPrior(pi, upperFromScores(sc, nt, ny))
		if cert.upper-cert.lower <= gapTol || tab.work >= tab.budget {
			return
		}
		z := tab.value(0)
		var vx []int
		for x := range nx {
			if !inputRow[x] && acc[x] < z-1e-13 {
				vx = append(vx, x)
			}
		}
		sort.SliceStable(vx, func(a, b int) bool { return acc[vx[a]] < acc[vx[b]] })
		var vt []cand
		for t := range nt {
			if freeCol[t] != 0 {
				continue
			}
			row := sc[t*ny : (t+1)*ny]
			best, cur := slices.Max(row), 0.0
			for y, v := range row {
				cur += q[t*ny+y] * v
			}
			if best-cur > 1e-13*best {
				vt = append(vt, cand{t, best - cur})
			}
		}
		if len(vx)+len(vt) == 0 {
			return // the restricted optimum is optimal for the full program
		}
		sort.SliceStable(vt, func(a, b int) bool { return vt[a].v > vt[b].v })
		if len(vx) > 0 {
			addInputs(vx[:min(len(vx), genAddRows)])
			tab.dualSimplex()
			extract()
		}
		ts = ts[:0]
		for _, c := range vt[:min(len(vt), genAddCols)] {
			ts = append(ts, c.t)
		}
		addTranscripts(ts)
	}
}
