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
	gen := newGenerator(g, cert)
	gen.addInputs(gen.startInputs(cert))
	gen.addTranscripts(gen.startTranscripts(cert, initCols))
	rounds := genRounds
	if gen.nt > genBigPass {
		rounds = genBigRound
	}
	for range rounds {
		gen.tab.primal()
		gen.extract()
		gen.g.accuracy(gen.q, gen.acc)
		cert.offerRule(gen.q, slices.Min(gen.acc))
		gen.g.scores(gen.pi, gen.sc)
		cert.offerPrior(gen.pi, upperFromScores(gen.sc, gen.nt, gen.ny))
		if cert.upper-cert.lower <= gapTol || gen.tab.work >= gen.tab.budget {
			return
		}
		vx, vt := gen.violated()
		if len(vx)+len(vt) == 0 {
			return // the restricted optimum is optimal for the full program
		}
		if len(vx) > 0 {
			gen.addInputs(vx[:min(len(vx), genAddRows)])
			gen.tab.dualSimplex()
			gen.extract()
		}
		gen.addTranscripts(vt[:min(len(vt), genAddCols)])
	}
}

// generator is the state of generate: the restricted program's tableau and how its rows
// and columns map to inputs and transcripts, the current rule q, its accuracies, the
// prior pi read from the duals and its scores.
type generator struct {
	g          game
	nx, nt, ny int
	q          []float64 // the rule, nt × ny
	acc        []float64 // accuracy of each input under q
	sc         []float64 // scores of the transcripts under pi, nt × ny
	pi         []float64 // the prior from the input rows' duals
	tab        tableau
	rowInput   []int     // input of each row, −1 for a transcript row (|Y| > 2)
	inputRow   []bool    // the input has a row
	freeCol    []int32   // first column + 1 of a free transcript, 0 when fixed
	freeList   []int     // free transcripts in column order
	scale      []float64 // column scale of each free transcript
}

func newGenerator(g game, cert *certificate) *generator {
	nx, nt, ny := g.size()
	gen := &generator{g: g, nx: nx, nt: nt, ny: ny, q: bayesRule(g, cert.pi),
		acc: make([]float64, nx), sc: make([]float64, nt*ny), pi: make([]float64, nx),
		tab: tableau{budget: genWork}, inputRow: make([]bool, nx), freeCol: make([]int32, nt)}
	gen.tab.addColumns([][]float64{{}}, []float64{1}, []float64{math.Inf(1)}, []bool{false}) // z
	return gen
}

// addInputs adds the row of each input x: z − Σ_{t∈F} a(x,t) Q(t, f(x)) ≤ c_x, written
// with Q(t, 0) eliminated and the columns scaled; its slack is acc(x) − z at the current
// point.
func (gen *generator) addInputs(xs []int) {
	z := gen.tab.value(0)
	rows := make([][]float64, len(xs))
	vals := make([]float64, len(xs))
	for k, x := range xs {
		row := make([]float64, gen.tab.w)
		row[0] = 1
		fx := gen.g.answer(x)
		for j, t := range gen.freeList {
			a := gen.g.entry(x, t) / gen.scale[j]
			if a == 0 {
				continue
			}
			c0 := int(gen.freeCol[t]) - 1
			if fx == 0 {
				for y := 1; y < gen.ny; y++ {
					row[c0+y-1] = a
				}
			} else {
				row[c0+fx-1] = -a
			}
		}
		rows[k], vals[k] = row, gen.acc[x]-z
		gen.inputRow[x] = true
		gen.rowInput = append(gen.rowInput, x)
	}
	gen.tab.addRows(rows, vals)
}

// addTranscripts frees the transcripts ts: they enter at their fixed (deterministic)
// decision, so that the current point does not move.
func (gen *generator) addTranscripts(ts []int) {
	ny := gen.ny
	var cols [][]float64
	var cost, upper []float64
	var start []bool
	first := len(gen.scale)
	for _, t := range ts {
		s := 0.0
		for _, x := range gen.rowInput {
			if x >= 0 {
				s = max(s, gen.g.entry(x, t))
			}
		}
		if s == 0 {
			s = 1
		}
		gen.freeCol[t] = int32(gen.tab.w + len(cols) + 1)
		gen.freeList = append(gen.freeList, t)
		gen.scale = append(gen.scale, s)
		for y := 1; y < ny; y++ {
			col := make([]float64, gen.tab.m)
			for i, x := range gen.rowInput {
				if x < 0 {
					continue
				}
				switch fx := gen.g.answer(x); {
				case fx == 0:
					col[i] = gen.g.entry(x, t) / s
				case fx == y:
					col[i] = -gen.g.entry(x, t) / s
				}
			}
			cols = append(cols, col)
			cost = append(cost, 0)
			upper = append(upper, s)
			start = append(start, gen.q[t*ny+y] == 1)
		}
	}
	gen.tab.addColumns(cols, cost, upper, start)
	if ny > 2 { // Σ_{y≥1} Q(t, y) ≤ 1, scaled by s
		rows := make([][]float64, len(ts))
		vals := make([]float64, len(ts))
		for k, t := range ts {
			row := make([]float64, gen.tab.w)
			c0 := int(gen.freeCol[t]) - 1
			for y := 1; y < ny; y++ {
				row[c0+y-1] = 1
			}
			rows[k] = row
			vals[k] = gen.scale[first+k] * gen.q[t*ny]
			gen.rowInput = append(gen.rowInput, -1)
		}
		gen.tab.addRows(rows, vals)
	}
}

// extract reads the rule (clamped to a distribution) and the duals of the input rows.
func (gen *generator) extract() {
	ny := gen.ny
	for j, t := range gen.freeList {
		c0 := int(gen.freeCol[t]) - 1
		rest := 1.0
		for y := 1; y < ny; y++ {
			v := min(max(gen.tab.value(c0+y-1)/gen.scale[j], 0), rest)
			gen.q[t*ny+y] = v
			rest -= v
		}
		gen.q[t*ny] = max(0, rest)
	}
	clear(gen.pi)
	for i, x := range gen.rowInput {
		if x >= 0 {
			gen.pi[x] = gen.tab.dual(i)
		}
	}
}

// startInputs returns the starting set S: the genInitRows inputs the certificate's rule
// leaves worst and those its prior weighs (at least 1e-3 of the heaviest), at most
// genMaxRows (the heaviest kept). It leaves acc at the accuracies of the starting rule.
func (gen *generator) startInputs(cert *certificate) []int {
	gen.g.accuracy(cert.q, gen.acc)
	order := make([]int, gen.nx)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return gen.acc[order[a]] < gen.acc[order[b]] })
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
	gen.g.accuracy(gen.q, gen.acc)
	return start
}

// genCand is a transcript with a sort key.
type genCand struct {
	t int
	v float64
}

// startTranscripts returns the starting set F: the initCols transcripts whose Bayes
// decision under the certificate's prior is nearest a tie (relative margin at most
// genInitEta).
func (gen *generator) startTranscripts(cert *certificate, initCols int) []int {
	ny := gen.ny
	gen.g.scores(cert.pi, gen.sc)
	var near []genCand
	for t := range gen.nt {
		row := gen.sc[t*ny : (t+1)*ny]
		best, second := math.Inf(-1), math.Inf(-1)
		for y, v := range row {
			if gen.q[t*ny+y] == 1 {
				best = v
			} else {
				second = max(second, v)
			}
		}
		if best > 0 && best-second <= genInitEta*best {
			near = append(near, genCand{t, (best - second) / best})
		}
	}
	sort.SliceStable(near, func(a, b int) bool { return near[a].v < near[b].v })
	ts := make([]int, 0, min(len(near), initCols))
	for _, c := range near[:cap(ts)] {
		ts = append(ts, c.t)
	}
	return ts
}

// violated returns the inputs without a row that the rule leaves below the restricted
// optimum z (most violated first) and the fixed transcripts on which the prior's Bayes
// decision beats the fixed one (largest reduced cost first).
func (gen *generator) violated() (vx, vt []int) {
	ny := gen.ny
	z := gen.tab.value(0)
	for x := range gen.nx {
		if !gen.inputRow[x] && gen.acc[x] < z-1e-13 {
			vx = append(vx, x)
		}
	}
	sort.SliceStable(vx, func(a, b int) bool { return gen.acc[vx[a]] < gen.acc[vx[b]] })
	var cands []genCand
	for t := range gen.nt {
		if gen.freeCol[t] != 0 {
			continue
		}
		row := gen.sc[t*ny : (t+1)*ny]
		best, cur := slices.Max(row), 0.0
		for y, v := range row {
			cur += gen.q[t*ny+y] * v
		}
		if best-cur > 1e-13*best {
			cands = append(cands, genCand{t, best - cur})
		}
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].v > cands[b].v })
	vt = make([]int, len(cands))
	for i, c := range cands {
		vt[i] = c.t
	}
	return vx, vt
}
