package multiparty

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// ipmGame is the worst-case program of a two-output function written for the interior
// point method: with the rule Q(τ, 1) = (1 + v_τ)/2, Q(τ, 0) = (1 − v_τ)/2 and the
// sign s_x = +1 when f(x) = 1, −1 when f(x) = 0, the accuracy on input x is
// ½ + ½ s_x (P v)_x (each row of P is a distribution), so eq. (14) becomes
//
//	maximize θ  subject to  A v ≥ θ·1,  −1 ≤ v ≤ 1,   A = diag(s) P,
//
// with value (1 + θ*)/2; its dual is min over priors π of ‖Aᵀπ‖₁, and ½(1 + ‖Aᵀπ‖₁) is
// the Bayes accuracy of π. Inputs are indexed row-major by party like the transcripts
// (kronGame.rev maps a bit mask to that index). P, Pᵀ and (P∘P)ᵀ are applied through
// their Kronecker factors.
type ipmGame struct {
	kg           *kronGame
	nx, nt       int
	s            []float64 // s_x, row-major input index
	ns, two      []int     // symbols per party, and 2 (bits per party)
	p, pt, pt2   [][]float64
	bufA, bufB   []float64
	tmpX         []float64
	matvecs      int
	cgIterations int
	cgMax        int
	direct       *ipmDirect // exact Newton solves (nil: conjugate gradients)
	// rg, when set, restricts the program to its inputs and free transcripts
	// (ipmReveal), and offset[x] is the fixed transcripts' part of (A v)_x: the
	// constraints read A v + offset ≥ θ·1.
	rg     *revealGame
	offset []float64
}

func newIPMGame(kg *kronGame) *ipmGame {
	g := &ipmGame{kg: kg, nx: kg.nx, nt: kg.nt, s: make([]float64, kg.nx), cgMax: 500}
	for x := range kg.nx {
		g.s[kg.rev[x]] = float64(2*kg.f[x] - 1)
	}
	g.p, g.pt, g.ns, g.two = kg.toBits, kg.toSyms, kg.ns, kg.two
	for _, pt := range kg.toSyms {
		pt2 := make([]float64, len(pt))
		for j, v := range pt {
			pt2[j] = v * v
		}
		g.pt2 = append(g.pt2, pt2)
	}
	n := max(g.nx, g.nt)
	g.bufA, g.bufB = make([]float64, n), make([]float64, n)
	g.tmpX = make([]float64, g.nx)
	return g
}

// mulA sets out = A v (length nx).
func (g *ipmGame) mulA(v, out []float64) {
	g.matvecs++
	if g.rg != nil {
		g.rg.mulA(v, out)
		return
	}
	r := kronMul(g.p, g.two, g.ns, v, g.bufA, g.bufB)
	for x := range out {
		out[x] = g.s[x] * r[x]
	}
}

// mulAT sets out = Aᵀ u (length nt).
func (g *ipmGame) mulAT(u, out []float64) {
	g.matvecs++
	if g.rg != nil {
		g.rg.mulT(u, out, true, false)
		return
	}
	for x := range u {
		g.tmpX[x] = g.s[x] * u[x]
	}
	copy(out, kronMul(g.pt, g.ns, g.two, g.tmpX, g.bufA, g.bufB))
}

// diagATDA sets out = diag(Aᵀ D A) = (P∘P)ᵀ d.
func (g *ipmGame) diagATDA(d, out []float64) {
	if g.rg != nil {
		g.rg.mulT(d, out, false, true)
		return
	}
	copy(out, kronMul(g.pt2, g.ns, g.two, d, g.bufA, g.bufB))
}

// newtonMul sets y = (Aᵀ D₁ A + D₂ − b bᵀ/c)·x, the reduced Newton operator that the
// conjugate gradients invert and ipmDirect factors; tmp is an input-sized buffer.
func (g *ipmGame) newtonMul(d1, d2, b []float64, c float64, x, y, tmp []float64) {
	g.mulA(x, tmp)
	for i := range tmp {
		tmp[i] *= d1[i]
	}
	g.mulAT(tmp, y)
	bx := 0.0
	for j := range x {
		bx += b[j] * x[j]
	}
	for j := range y {
		y[j] += d2[j]*x[j] - b[j]*bx/c
	}
}

// ipmState is the iterate of the primal–dual interior point method: the rule v with
// its bound slacks g = 1 + v, h = 1 − v, the level θ with the slacks w = A v − θ·1,
// the prior π (duals of A v ≥ θ) and the bound duals zg, zh.
type ipmState struct {
	v, g, h, zg, zh []float64
	w, pi           []float64
	theta           float64
}

// interiorPoint runs Mehrotra's predictor–corrector method on the program of ipmGame
// (Wright, Primal-Dual Interior-Point Methods, 1997, ch. 10; bounds as separate slacks)
// from the centred point v = 0, θ = −1, π uniform. Each Newton system is reduced to
//
//	(Aᵀ D₁ A + D₂ − b bᵀ/c) Δv = r,   D₁ = π/w,  D₂ = zg/g + zh/h,  b = Aᵀ D₁ 1, c = 1ᵀ D₁ 1
//
// (θ eliminated) and solved by conjugate gradients preconditioned by the diagonal, each
// product costing two Kronecker products. The primal iterate stays feasible (w is
// updated with A Δv); every iterate is given to offer, which returns whether to stop.
// It also stops after maxIter iterations or when the steps stall, and returns the
// last iterate.
func (g *ipmGame) interiorPoint(maxIter int, offer func(st *ipmState) bool) *ipmState {
	r := newIPMRun(g)
	for range maxIter {
		if offer(r.st) {
			return r.st
		}
		mu := r.mu()
		rtheta, c := r.reduce()
		ap, ad := r.predictorCorrector(mu, rtheta, c)
		if ap < 1e-12 && ad < 1e-12 {
			return r.st
		}
		r.move(ap, ad)
	}
	offer(r.st)
	return r.st
}

// ipmDir is a Newton direction of the interior point method.
type ipmDir struct {
	v, w, pi, zg, zh []float64
	theta            float64
}

func newIPMDir(nx, nt int) ipmDir {
	return ipmDir{v: make([]float64, nt), w: make([]float64, nx), pi: make([]float64, nx),
		zg: make([]float64, nt), zh: make([]float64, nt)}
}

// ipmRun is one run of interiorPoint: the iterate, the reduced system's diagonals (d1,
// d2, b), the residuals (rv and the complementarity right sides rpi, rg, rh), the
// affine-scaling and the combined directions, and scratch space.
type ipmRun struct {
	g                     *ipmGame
	st                    *ipmState
	d1, d2, b, rv, atpi   []float64
	rpi, rg, rh           []float64
	rhs, tmpX, tmpT, prec []float64
	cg                    *cgSolver
	aff, dir              ipmDir
}

// newIPMRun starts at the centred point v = 0, θ = −1 (θ = min offset − 1 with an
// offset), π uniform, every bound slack and dual 1 (1/nx for the duals).
func newIPMRun(g *ipmGame) *ipmRun {
	nx, nt := g.nx, g.nt
	st := &ipmState{
		v: make([]float64, nt), g: make([]float64, nt), h: make([]float64, nt),
		zg: make([]float64, nt), zh: make([]float64, nt),
		w: make([]float64, nx), pi: make([]float64, nx), theta: -1,
	}
	for j := range nt {
		st.g[j], st.h[j] = 1, 1
		st.zg[j], st.zh[j] = 1/float64(nx), 1/float64(nx)
	}
	for x := range nx {
		st.w[x], st.pi[x] = 1, 1/float64(nx)
	}
	if g.offset != nil { // v = 0: w = offset − θ
		st.theta = slices.Min(g.offset) - 1
		for x := range nx {
			st.w[x] = g.offset[x] - st.theta
		}
	}
	return &ipmRun{g: g, st: st,
		d1: make([]float64, nx), d2: make([]float64, nt), b: make([]float64, nt),
		rv: make([]float64, nt), atpi: make([]float64, nt),
		rpi: make([]float64, nx), rg: make([]float64, nt), rh: make([]float64, nt),
		rhs: make([]float64, nt), tmpX: make([]float64, nx), tmpT: make([]float64, nt),
		prec: make([]float64, nt), cg: newCGSolver(nt),
		aff: newIPMDir(nx, nt), dir: newIPMDir(nx, nt)}
}

// mu returns the average complementarity product.
func (r *ipmRun) mu() float64 {
	st, mu := r.st, 0.0
	for x := range r.g.nx {
		mu += st.pi[x] * st.w[x]
	}
	for j := range r.g.nt {
		mu += st.zg[j]*st.g[j] + st.zh[j]*st.h[j]
	}
	return mu / float64(r.g.nx+2*r.g.nt)
}

// reduce computes the residuals and the reduced matrix's parts (d1, d2, b, c), and its
// factor (direct solves) or diagonal preconditioner (conjugate gradients); it returns
// r_θ = 1 − Σπ and c.
func (r *ipmRun) reduce() (rtheta, c float64) {
	g, st := r.g, r.st
	rtheta = 1.0
	for x := range g.nx {
		rtheta -= st.pi[x]
		r.d1[x] = st.pi[x] / st.w[x]
		c += r.d1[x]
	}
	g.mulAT(st.pi, r.atpi)
	for j := range g.nt {
		r.rv[j] = st.zh[j] - st.zg[j] - r.atpi[j]
		r.d2[j] = st.zg[j]/st.g[j] + st.zh[j]/st.h[j]
	}
	g.mulAT(r.d1, r.b)
	if g.direct != nil {
		g.direct.factor(r.d1, r.d2, r.b, c)
	}
	if g.direct == nil || !g.direct.ok {
		g.diagATDA(r.d1, r.prec)
		for j := range g.nt {
			r.prec[j] = 1 / max(r.prec[j]+r.d2[j]-r.b[j]*r.b[j]/c, 1e-300)
		}
	}
	return rtheta, c
}

// predictorCorrector computes the affine-scaling (predictor) direction, the centring
// parameter σ = (μ_aff/μ)³ and the combined (corrector) direction r.dir, and returns
// its primal and dual steps, 0.995 of the largest that keep the iterate positive.
func (r *ipmRun) predictorCorrector(mu, rtheta, c float64) (ap, ad float64) {
	st, nx, nt := r.st, r.g.nx, r.g.nt
	for x := range nx {
		r.rpi[x] = -st.pi[x] * st.w[x]
	}
	for j := range nt {
		r.rg[j] = -st.zg[j] * st.g[j]
		r.rh[j] = -st.zh[j] * st.h[j]
	}
	a := &r.aff
	r.newton(a, rtheta, c)
	ap, ad = r.steps(a)
	muAff := 0.0
	for x := range nx {
		muAff += (st.pi[x] + ad*a.pi[x]) * (st.w[x] + ap*a.w[x])
	}
	for j := range nt {
		muAff += (st.zg[j]+ad*a.zg[j])*(st.g[j]+ap*a.v[j]) + (st.zh[j]+ad*a.zh[j])*(st.h[j]-ap*a.v[j])
	}
	muAff /= float64(nx + 2*nt)
	sigma := math.Pow(muAff/mu, 3)
	for x := range nx {
		r.rpi[x] = sigma*mu - st.pi[x]*st.w[x] - a.pi[x]*a.w[x]
	}
	for j := range nt {
		r.rg[j] = sigma*mu - st.zg[j]*st.g[j] - a.zg[j]*a.v[j]
		r.rh[j] = sigma*mu - st.zh[j]*st.h[j] + a.zh[j]*a.v[j]
	}
	r.newton(&r.dir, rtheta, c)
	ap, ad = r.steps(&r.dir)
	return min(1, 0.995*ap), min(1, 0.995*ad)
}

// newton solves the Newton system for the right sides rpi, rg, rh (complementarity)
// and the current dual residuals, into d.
func (r *ipmRun) newton(d *ipmDir, rtheta, c float64) {
	g, st, nx, nt := r.g, r.st, r.g.nx, r.g.nt
	// R1 = −(r_v − Aᵀ(r_π/w) + r_h/h − r_g/g), R2 = r_θ − 1ᵀ(r_π/w).
	for x := range nx {
		r.tmpX[x] = r.rpi[x] / st.w[x]
	}
	r2 := rtheta
	for x := range nx {
		r2 -= r.tmpX[x]
	}
	g.mulAT(r.tmpX, r.tmpT)
	for j := range nt {
		r.rhs[j] = -(r.rv[j] - r.tmpT[j] + r.rh[j]/st.h[j] - r.rg[j]/st.g[j]) + r.b[j]*r2/c
	}
	if g.direct != nil && g.direct.ok {
		g.direct.solve(r.b, r.rhs, d.v)
	} else {
		r.cg.solve(func(x, y []float64) { g.newtonMul(r.d1, r.d2, r.b, c, x, y, r.tmpX) }, r.prec, r.rhs, d.v, 1e-10, g.cgMax)
		g.cgIterations += r.cg.iterations
	}
	bdv := 0.0
	for j := range nt {
		bdv += r.b[j] * d.v[j]
	}
	d.theta = (r2 + bdv) / c
	g.mulA(d.v, d.w)
	for x := range nx {
		d.w[x] -= d.theta
		d.pi[x] = r.rpi[x]/st.w[x] - r.d1[x]*d.w[x]
	}
	for j := range nt {
		d.zg[j] = (r.rg[j] - st.zg[j]*d.v[j]) / st.g[j]
		d.zh[j] = (r.rh[j] + st.zh[j]*d.v[j]) / st.h[j]
	}
}

// steps returns the largest primal and dual steps in (0, 1] keeping the iterate
// positive along d.
func (r *ipmRun) steps(d *ipmDir) (ap, ad float64) {
	st := r.st
	ap, ad = 1, 1
	for x := range r.g.nx {
		if d.w[x] < 0 {
			ap = min(ap, -st.w[x]/d.w[x])
		}
		if d.pi[x] < 0 {
			ad = min(ad, -st.pi[x]/d.pi[x])
		}
	}
	for j := range r.g.nt {
		if d.v[j] < 0 {
			ap = min(ap, -st.g[j]/d.v[j])
		} else if d.v[j] > 0 {
			ap = min(ap, st.h[j]/d.v[j])
		}
		if d.zg[j] < 0 {
			ad = min(ad, -st.zg[j]/d.zg[j])
		}
		if d.zh[j] < 0 {
			ad = min(ad, -st.zh[j]/d.zh[j])
		}
	}
	return ap, ad
}

// move takes the primal step ap and the dual step ad along r.dir.
func (r *ipmRun) move(ap, ad float64) {
	st, d := r.st, &r.dir
	for j := range r.g.nt {
		st.v[j] += ap * d.v[j]
		st.g[j] += ap * d.v[j]
		st.h[j] -= ap * d.v[j]
		st.zg[j] += ad * d.zg[j]
		st.zh[j] += ad * d.zh[j]
	}
	st.theta += ap * d.theta
	for x := range r.g.nx {
		st.w[x] += ap * d.w[x]
		st.pi[x] += ad * d.pi[x]
	}
}

// cgSolver is the preconditioned conjugate gradient method for a symmetric positive
// definite operator.
type cgSolver struct {
	r, z, p, ap []float64
	iterations  int
}

func newCGSolver(n int) *cgSolver {
	return &cgSolver{r: make([]float64, n), z: make([]float64, n), p: make([]float64, n), ap: make([]float64, n)}
}

// solve sets x ≈ M⁻¹ b for the operator mul (y = M x) with the diagonal
// preconditioner prec (an approximation of diag(M)⁻¹), from x = 0, until
// ‖r‖ ≤ tol ‖b‖ or maxIter iterations.
func (s *cgSolver) solve(mul func(x, y []float64), prec, b, x []float64, tol float64, maxIter int) {
	clear(x)
	copy(s.r, b)
	bn := 0.0
	for _, v := range b {
		bn += v * v
	}
	s.iterations = 0
	if bn == 0 {
		return
	}
	rz := 0.0
	for i := range s.r {
		s.z[i] = prec[i] * s.r[i]
		rz += s.r[i] * s.z[i]
	}
	copy(s.p, s.z)
	for s.iterations < maxIter {
		s.iterations++
		mul(s.p, s.ap)
		pap := 0.0
		for i := range s.p {
			pap += s.p[i] * s.ap[i]
		}
		if !(pap > 0) {
			return
		}
		alpha := rz / pap
		rn := 0.0
		for i := range x {
			x[i] += alpha * s.p[i]
			s.r[i] -= alpha * s.ap[i]
			rn += s.r[i] * s.r[i]
		}
		if rn <= tol*tol*bn {
			return
		}
		rzNew := 0.0
		for i := range s.r {
			s.z[i] = prec[i] * s.r[i]
			rzNew += s.r[i] * s.z[i]
		}
		beta := rzNew / rz
		rz = rzNew
		for i := range s.p {
			s.p[i] = s.z[i] + beta*s.p[i]
		}
	}
}

// crossover returns the vertex of the program suggested by the iterate st: inputs
// whose dual exceeds their slack are taken as tight (T), transcripts whose bound slacks
// both exceed their duals as free (F), the others at the bound their slack is nearest.
// The rule solves A_{T,F} v_F − θ 1 = −A_{T,B} v_B and the prior π_T solves
// A_{T,F}ᵀ π_T = 0, 1ᵀπ_T = 1 (least squares when |T| ≠ |F| + 1); both are only
// candidates for the caller's certificate.
func (g *ipmGame) crossover(st *ipmState, tightTol, boundTol float64) (v, pi []float64, ok bool) {
	var T, F []int
	g.mulA(st.v, g.tmpX)
	lo := math.Inf(1)
	for x := range g.nx {
		lo = min(lo, g.tmpX[x])
	}
	for x := range g.nx {
		if g.tmpX[x]-lo <= tightTol {
			T = append(T, x)
		}
	}
	v = make([]float64, g.nt)
	for j := range g.nt {
		switch {
		case st.v[j] <= -1+boundTol:
			v[j] = -1
		case st.v[j] >= 1-boundTol:
			v[j] = 1
		default:
			F = append(F, j)
		}
	}
	if len(T) == 0 {
		return nil, nil, false
	}
	entry := func(x, j int) float64 { return g.s[x] * g.kg.entry(g.kg.rev[x], j) }
	// Primal: unknowns (v_F, θ).
	m, n := len(T), len(F)+1
	a := mat.NewDense(m, n, nil)
	rhs := mat.NewVecDense(m, nil)
	for r, x := range T {
		for c, j := range F {
			a.Set(r, c, entry(x, j))
		}
		a.Set(r, n-1, -1)
	}
	// −A_{T,B} v_B: A v_B with v zero on F.
	g.mulA(v, g.tmpX)
	for r, x := range T {
		rhs.SetVec(r, -g.tmpX[x])
	}
	var sol mat.VecDense
	if err := sol.SolveVec(a, rhs); err == nil {
		for c, j := range F {
			v[j] = min(max(sol.AtVec(c), -1), 1)
		}
	}
	// Dual: A_{T,F}ᵀ π_T = 0, 1ᵀ π_T = 1.
	at := mat.NewDense(n, m, nil)
	e := mat.NewVecDense(n, nil)
	e.SetVec(n-1, 1)
	for r := range m {
		for c := range n - 1 {
			at.Set(c, r, a.At(r, c))
		}
		at.Set(n-1, r, 1)
	}
	pi = make([]float64, g.nx)
	var ps mat.VecDense
	if err := ps.SolveVec(at, e); err == nil {
		for r, x := range T {
			pi[x] = max(0, ps.AtVec(r))
		}
	}
	return v, pi, true
}

// Parameters of the interior point stage (ipmCertify).
const (
	ipmMaxIter        = 30    // Mehrotra iterations at most
	ipmDirectMaxIter  = 25    // with exact Newton solves
	ipmDirectPatience = 3     // iterations without progress before the exact-solve run stops
	ipmMinIter        = 12    // before the stagnation test applies
	ipmStall          = 1e-11 // an iteration improving less (accuracy; gap with exact solves) stops
	ipmCGMax          = 2000  // conjugate gradient iterations per Newton system
	ipmPartition      = 1e-5  // slack below which an input is tight or a transcript at its bound
)

// ipmCertify improves cert, for a two-output game, by the interior point method of
// ipmGame.interiorPoint — with exact Newton solves (ipmDirect) up to ipmDirectMaxInputs
// inputs, stopped after ipmDirectPatience iterations in a row that narrow the certified
// gap by less than ipmStall,
// otherwise with conjugate gradients, stopped when it raises the certified accuracy by
// less — followed, for two-symbol parties (δ_i ∈ {0, 1}), by a crossover to the vertex
// its last iterate suggests. Every iterate's rule (Q(τ, 1) = (1 + v_τ)/2, clamped)
// and prior (π clamped at 0) and both crossover candidates are offered to cert through
// the certified evaluations, so the stage can only narrow the certified gap.
func ipmCertify(kg *kronGame, cert *certificate, accBuf, scBuf []float64) {
	ig := newIPMGame(kg)
	ig.cgMax = ipmCGMax
	if kg.nx <= ipmDirectMaxInputs {
		ig.direct = newIPMDirect(ig)
	}
	q := make([]float64, 2*kg.nt)
	prior := make([]float64, kg.nx)
	offer := func(v, pi []float64) {
		for t, vt := range v {
			u := min(max((1+vt)/2, 0), 1)
			q[2*t], q[2*t+1] = 1-u, u
		}
		for x := range prior {
			prior[x] = pi[kg.rev[x]]
		}
		offerCertified(kg, cert, q, prior, accBuf, scBuf)
	}
	it, idle := 0, 0
	last, lastGap := cert.lower, cert.upper-cert.lower
	maxIter := ipmMaxIter
	if ig.direct != nil {
		maxIter = ipmDirectMaxIter
	}
	st := ig.interiorPoint(maxIter, func(st *ipmState) bool {
		offer(st.v, st.pi)
		it++
		// With conjugate gradients the rule's progress decides; with exact solves the
		// gap's (both iterates converge).
		gap := cert.upper - cert.lower
		var stalled bool
		if ig.direct == nil {
			stalled = it > ipmMinIter && cert.lower-last < ipmStall
		} else {
			if lastGap-gap < ipmStall {
				idle++
			} else {
				idle = 0
			}
			stalled = it > ipmMinIter && idle >= ipmDirectPatience
		}
		last, lastGap = cert.lower, gap
		return gap <= gapTol || stalled
	})
	if cert.upper-cert.lower <= gapTol || !kg.binary {
		return
	}
	if v, pi, ok := ig.crossover(st, ipmPartition, ipmPartition); ok {
		offer(v, pi)
	}
}
