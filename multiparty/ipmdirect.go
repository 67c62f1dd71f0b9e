package multiparty

import (
	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// ipmDirect solves the interior point method's reduced Newton systems
//
//	(K − b bᵀ/c) Δv = r,   K = Aᵀ D₁ A + D₂
//
// exactly, through the input space instead of the transcript space (Woodbury):
//
//	K⁻¹ r = D₂⁻¹ (r − Aᵀ M⁻¹ A D₂⁻¹ r),   M = D₁⁻¹ + A D₂⁻¹ Aᵀ   (2^k × 2^k),
//
// and the rank-one term by Sherman–Morrison. M = D₁⁻¹ + diag(s) P E Pᵀ diag(s) with
// E = D₂⁻¹ is formed by one Kronecker product: (P E Pᵀ)[x, x'] = Σ_τ E_τ Π_i P(τ_i|x_i)
// P(τ_i|x'_i), so the 4 × s_i factors K_i[(b, b'), σ] = P(σ|b) P(σ|b') map E to the
// matrix with its indices interleaved party by party. M is factored by Cholesky's
// method once per iteration (O(8^k/3)); every solve then costs two Kronecker products
// and two triangular solves, and solve refines the step against the Newton operator
// itself. Used up to ipmDirectMaxInputs inputs, for any δ_i, and, with M formed block
// by block (revealGame.formM), for the restricted programs of ipmReveal.
type ipmDirect struct {
	g       *ipmGame
	pair    [][]float64 // K_i, 4 × ns_i
	four    []int
	perm    []int // perm[xr·nx + xr']: index of (xr, xr') in the interleaved order
	full    []float64
	buf     []float64
	m       *mat.SymDense // M, overwritten by its Cholesky factor U (upper triangle)
	kb      []float64     // K⁻¹ b
	bkb, c  float64
	d2      []float64
	tx, tx2 []float64
	tt      []float64
	ok      bool
	d1      []float64
	res2    []float64 // iterative refinement (solve)
	corr2   []float64
	tmpX    []float64
	e       []float64 // D₂⁻¹ for a restricted program (ipmReveal; M by revealGame.formM)
}

// ipmDirectMaxInputs bounds the inputs for which the Newton systems are solved by
// Cholesky factors (2^10: a factorization of about 0.4 GFlop per iteration).
const ipmDirectMaxInputs = 1 << 10

func newIPMDirect(g *ipmGame) *ipmDirect {
	kg := g.kg
	k := kg.k
	d := &ipmDirect{g: g, tx: make([]float64, g.nx), tx2: make([]float64, g.nx), tt: make([]float64, g.nt), kb: make([]float64, g.nt)}
	for i := range k {
		ns := kg.ns[i]
		p := kg.prob[i]
		m := make([]float64, 4*ns)
		for b := range 2 {
			for b2 := range 2 {
				for s := range ns {
					m[(2*b+b2)*ns+s] = p[s][b] * p[s][b2]
				}
			}
		}
		d.pair, d.four = append(d.pair, m), append(d.four, 4)
	}
	nx := g.nx
	spread := make([]int, nx) // row-major input index → base-4 digits
	for xr := range nx {
		v := 0
		for i := range k {
			if xr>>(k-1-i)&1 == 1 {
				v += 1 << (2 * (k - 1 - i))
			}
		}
		spread[xr] = v
	}
	d.perm = make([]int, nx*nx)
	for a := range nx {
		for b := range nx {
			d.perm[a*nx+b] = 2*spread[a] + spread[b]
		}
	}
	size := max(nx*nx, g.nt)
	d.full, d.buf = make([]float64, size), make([]float64, size)
	d.m = mat.NewSymDense(nx, nil)
	return d
}

// factor prepares the solves for the iteration's D₁ = d1, D₂ = d2, b and c; d.ok
// reports whether M was positive definite to working precision (otherwise the caller
// falls back to conjugate gradients).
func (d *ipmDirect) factor(d1, d2, b []float64, c float64) {
	g := d.g
	nx := g.nx
	e := d.tt
	if d.e != nil {
		e = d.e
	}
	for j, v := range d2 {
		e[j] = 1 / v
	}
	raw := d.m.RawSymmetric()
	if g.rg != nil {
		for a := range nx {
			clear(raw.Data[a*raw.Stride+a : a*raw.Stride+nx])
		}
		g.rg.formM(e, raw.Data, raw.Stride)
		for a := range nx {
			raw.Data[a*raw.Stride+a] += 1 / d1[a]
		}
	} else {
		r := kronMul(d.pair, d.four, g.ns, e, d.full, d.buf)
		for a := range nx {
			row := raw.Data[a*raw.Stride : a*raw.Stride+nx]
			sa := g.s[a]
			for bb := a; bb < nx; bb++ {
				row[bb] = sa * g.s[bb] * r[d.perm[a*nx+bb]]
			}
			row[a] += 1 / d1[a]
		}
	}
	d.d1, d.d2 = d1, d2
	// In place: M is formed anew every iteration. (mat.Cholesky would copy it and
	// estimate its condition number, unused, which took as long as the factorization.)
	if _, d.ok = lapack64.Potrf(raw); !d.ok {
		return
	}
	d.c = c
	d.applyK(b, d.kb)
	d.bkb = floats.Dot(b, d.kb)
}

// applyK sets out = K⁻¹ r.
func (d *ipmDirect) applyK(r, out []float64) {
	g := d.g
	for j := range r {
		d.tt[j] = r[j] / d.d2[j]
	}
	g.mulA(d.tt, d.tx)
	d.cholSolve(d.tx, d.tx2)
	g.mulAT(d.tx2, d.tt)
	for j := range r {
		out[j] = (r[j] - d.tt[j]) / d.d2[j]
	}
}

// newRevealDirect returns the Newton solver of a restricted program (g.rg set).
func newRevealDirect(g *ipmGame) *ipmDirect {
	d := &ipmDirect{g: g, tx: make([]float64, g.nx), tx2: make([]float64, g.nx), tt: make([]float64, g.nt), kb: make([]float64, g.nt),
		e: make([]float64, g.nt), m: mat.NewSymDense(g.nx, nil)}
	return d
}

// cholSolve sets t = M⁻¹ u from the factor M = UᵀU by two triangular solves along
// the rows of U (an ill-conditioned M, late in the iterations, only makes the step
// less accurate: solve refines it, and the certificate is evaluated independently).
func (d *ipmDirect) cholSolve(u, t []float64) {
	n := len(u)
	copy(t, u)
	raw := d.m.RawSymmetric()
	for i := range n { // Uᵀ y = u
		row := raw.Data[i*raw.Stride : i*raw.Stride+n]
		t[i] /= row[i]
		if yi := t[i]; yi != 0 {
			floats.AddScaled(t[i+1:], -yi, row[i+1:])
		}
	}
	for i := n - 1; i >= 0; i-- { // U t = y
		row := raw.Data[i*raw.Stride : i*raw.Stride+n]
		t[i] = (t[i] - floats.Dot(row[i+1:], t[i+1:])) / row[i]
	}
}

// solve sets dv = (K − b bᵀ/c)⁻¹ rhs, refined three times against the operator itself
// (newtonMul): the Woodbury form cancels badly when D₂ spans many orders of magnitude
// (late iterations), and a refinement step costs two products with A.
func (d *ipmDirect) solve(b, rhs, dv []float64) {
	d.solveOnce(b, rhs, dv)
	if d.res2 == nil {
		d.res2, d.corr2, d.tmpX = make([]float64, len(dv)), make([]float64, len(dv)), make([]float64, d.g.nx)
	}
	for range 3 {
		d.g.newtonMul(d.d1, d.d2, b, d.c, dv, d.res2, d.tmpX)
		for j := range rhs {
			d.res2[j] = rhs[j] - d.res2[j]
		}
		d.solveOnce(b, d.res2, d.corr2)
		for j := range dv {
			dv[j] += d.corr2[j]
		}
	}
}

func (d *ipmDirect) solveOnce(b, rhs, dv []float64) {
	d.applyK(rhs, dv)
	den := d.c - d.bkb
	if den == 0 {
		return
	}
	f := floats.Dot(b, dv) / den
	for j := range dv {
		dv[j] += f * d.kb[j]
	}
}
