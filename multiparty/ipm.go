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
	nx, nt := g.nx, g.nt
	st := ipmState{
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
	d1 := make([]float64, nx)
	d2 := make([]float64, nt)
	b := make([]float64, nt)
	rv := make([]float64, nt)
	atpi := make([]float64, nt)
	rpi, rg, rh := make([]float64, nx), make([]float64, nt), make([]float64, nt)
	dv, dw, dpi := make([]float64, nt), make([]float64, nx), make([]float64, nx)
	dzg, dzh := make([]float64, nt), make([]float64, nt)
	adv, adw, adpi := make([]float64, nt), make([]float64, nx), make([]float64, nx)
	adzg, adzh := make([]float64, nt), make([]float64, nt)
	rhs := make([]float64, nt)
	tmpX := make([]float64, nx)
	tmpT := make([]float64, nt)
	prec := make([]float64, nt)
	cg := newCGSolver(nt)
	var dtheta, adtheta float64

	// newton solves the Newton system for the right sides rpi, rg, rh (complementarity)
	// and the current dual residuals, into dv, dtheta, dw, dpi, dzg, dzh.
	newton := func(dv, dw, dpi, dzg, dzh []float64, dtheta *float64, rtheta, c float64) {
		// R1 = −(r_v − Aᵀ(r_π/w) + r_h/h − r_g/g), R2 = r_θ − 1ᵀ(r_π/w).
		for x := range nx {
			tmpX[x] = rpi[x] / st.w[x]
		}
		r2 := rtheta
		for x := range nx {
			r2 -= tmpX[x]
		}
		g.mulAT(tmpX, tmpT)
		for j := range nt {
			rhs[j] = -(rv[j] - tmpT[j] + rh[j]/st.h[j] - rg[j]/st.g[j]) + b[j]*r2/c
		}
		if g.direct != nil && g.direct.ok {
			g.direct.solve(b, rhs, dv)
		} else {
			cg.solve(func(x, y []float64) { g.newtonMul(d1, d2, b, c, x, y, tmpX) }, prec, rhs, dv, 1e-10, g.cgMax)
			g.cgIterations += cg.iterations
		}
		bdv := 0.0
		for j := range nt {
			bdv += b[j] * dv[j]
		}
		*dtheta = (r2 + bdv) / c
		g.mulA(dv, dw)
		for x := range nx {
			dw[x] -= *dtheta
			dpi[x] = rpi[x]/st.w[x] - d1[x]*dw[x]
		}
		for j := range nt {
			dzg[j] = (rg[j] - st.zg[j]*dv[j]) / st.g[j]
			dzh[j] = (rh[j] + st.zh[j]*dv[j]) / st.h[j]
		}
	}
	// steps returns the largest primal and dual steps in (0, 1] keeping the iterate
	// positive.
	steps := func(dv, dw, dpi, dzg, dzh []float64) (ap, ad float64) {
		ap, ad = 1, 1
		for x := range nx {
			if dw[x] < 0 {
				ap = min(ap, -st.w[x]/dw[x])
			}
			if dpi[x] < 0 {
				ad = min(ad, -st.pi[x]/dpi[x])
			}
		}
		for j := range nt {
			if dv[j] < 0 {
				ap = min(ap, -st.g[j]/dv[j])
			} else if dv[j] > 0 {
				ap = min(ap, st.h[j]/dv[j])
			}
			if dzg[j] < 0 {
				ad = min(ad, -st.zg[j]/dzg[j])
			}
			if dzh[j] < 0 {
				ad = min(ad, -st.zh[j]/dzh[j])
			}
		}
		return ap, ad
	}
	n := float64(nx + 2*nt)
	for range maxIter {
		if offer(&st) {
			return &st
		}
		mu := 0.0
		for x := range nx {
			mu += st.pi[x] * st.w[x]
		}
		for j := range nt {
			mu += st.zg[j]*st.g[j] + st.zh[j]*st.h[j]
		}
		mu /= n
		// Residuals and the reduced matrix.
		rtheta := 1.0
		c := 0.0
		for x := range nx {
			rtheta -= st.pi[x]
			d1[x] = st.pi[x] / st.w[x]
			c += d1[x]
		}
		g.mulAT(st.pi, atpi)
		for j := range nt {
			rv[j] = st.zh[j] - st.zg[j] - atpi[j]
			d2[j] = st.zg[j]/st.g[j] + st.zh[j]/st.h[j]
		}
		g.mulAT(d1, b)
		if g.direct != nil {
			g.direct.factor(d1, d2, b, c)
		}
		if g.direct == nil || !g.direct.ok {
			g.diagATDA(d1, prec)
			for j := range nt {
				prec[j] = 1 / max(prec[j]+d2[j]-b[j]*b[j]/c, 1e-300)
			}
		}
		// Predictor (affine scaling).
		for x := range nx {
			rpi[x] = -st.pi[x] * st.w[x]
		}
		for j := range nt {
			rg[j] = -st.zg[j] * st.g[j]
			rh[j] = -st.zh[j] * st.h[j]
		}
		newton(adv, adw, adpi, adzg, adzh, &adtheta, rtheta, c)
		ap, ad := steps(adv, adw, adpi, adzg, adzh)
		muAff := 0.0
		for x := range nx {
			muAff += (st.pi[x] + ad*adpi[x]) * (st.w[x] + ap*adw[x])
		}
		for j := range nt {
			muAff += (st.zg[j]+ad*adzg[j])*(st.g[j]+ap*adv[j]) + (st.zh[j]+ad*adzh[j])*(st.h[j]-ap*adv[j])
		}
		muAff /= n
		sigma := math.Pow(muAff/mu, 3)
		// Corrector.
		for x := range nx {
			rpi[x] = sigma*mu - st.pi[x]*st.w[x] - adpi[x]*adw[x]
		}
		for j := range nt {
			rg[j] = sigma*mu - st.zg[j]*st.g[j] - adzg[j]*adv[j]
			rh[j] = sigma*mu - st.zh[j]*st.h[j] + adzh[j]*adv[j]
		}
		newton(dv, dw, dpi, dzg, dzh, &dtheta, rtheta, c)
		ap, ad = steps(dv, dw, dpi, dzg, dzh)
		ap, ad = min(1, 0.995*ap), min(1, 0.995*ad)
		if ap < 1e-12 && ad < 1e-12 {
			return &st
		}
		for j := range nt {
			st.v[j] += ap * dv[j]
			st.g[j] += ap * dv[j]
			st.h[j] -= ap * dv[j]
			st.zg[j] += ad * dzg[j]
			st.zh[j] += ad * dzh[j]
		}
		st.theta += ap * dtheta
		for x := range nx {
			st.w[x] += ap * dw[x]
			st.pi[x] += ad * dpi[x]
		}
	}
	offer(&st)
	return &st
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
