package pld

import "math"

// Tiny δ when the tail is reached by a few large losses.
//
// One tilt fails when the tilted loss of one release is bimodal: a bulk near 0 and a far
// tail that the saddle's λ lifts into a second bump (1000 steps of a subsampled Gaussian,
// σ = 4, q = 0.01, at ε = 2: λ ≈ 145 puts the tail near loss 4.5). The k-fold tilted
// composition is then a Poisson mixture of bumps — the bulk alone, the bulk plus one
// large loss, plus two, … — with ε in a valley between them, often 1e-15 or less of the
// peak: the read-out is the FFT's absolute error, and the lower end falls to 0.
//
// Split the lattice at a loss l0 into its bulk B (losses ≤ l0) and its tail J (losses
// above), finite masses only. The k-fold composition of the finite part is exactly
//
//	(B + J)^{*k} = Σ_j C(k, j)·B^{*(k−j)} * J^{*j}     (binomial theorem; * commutes),
//
// a sum of non-negative measures, and δ(ε) is linear in the measure: δ = Σ_j C(k, j)·δ_j
// with δ_j the δ(ε) of the term with j large losses. Each term has about one bump under
// its own tilt, the saddle λ_j of (k − j) bulk releases and j tail ones, and is bracketed
// as in tilt.go (every λ gives a valid bracket; λ_j makes it narrow); the brackets add
// up, C(k, j) rounded outward. Terms are added for j = 0, 1, … until the bound on the
// rest falls below 1e-9 of the lower sum, or j = maxJumps; the terms j > J left out are
// bounded above (Chernoff) by
//
//	Σ_{j>J} C(k, j)·M_B(λ)^{k−j}·M_J(λ)^j·e^{−λε},  M_X(λ) = Σ_{x∈X} m_x·e^{λx},  any λ ≥ 0,
//
// M_X from the upper lattice's masses raised by their error bounds (logMGF), since
// (1 − e^{ε−s})₊ ≤ e^{λ(s−ε)} and the sum grows with M_B and M_J; the ratio of
// consecutive terms falls with j, so the sum is at most its first term over
// 1 − (first ratio) when that ratio is below 1. The lower bound leaves them out. Mass at +∞ (upper only) is counted apart: the
// configurations with at least one release at +∞ have mass (F + I)^k − F^k ≤
// k·I·(F + I)^{k−1} (F, I the finite and infinite masses of one release), each with δ at
// most its mass.

// passWork is the work (see meter) of one pass over a lattice's bins computing
// exponentials (a tilted mean, a moment generating function).
const passWork = 8

// maxJumps is the largest number of tail releases bracketed term by term.
const maxJumps = 8

// splitSelfDelta brackets δ(eps) of k releases of the pair whose upper and lower lattices
// are up and lo, term by term in the number of releases with a loss above eps/4 (see
// above). good is false when no mass lies there ([1, 0]) or when the terms not computed
// may hold more than a tenth of the upper bound (large losses are common: the bracket is
// valid but loose).
func splitSelfDelta(up, lo *Lattice, k int64, eps float64, m *meter) (upper, lower float64, good bool) {
	l0 := eps / 4
	bUp, jUp := splitLattice(up, l0)
	bLo, jLo := splitLattice(lo, l0)
	if bUp == nil || jUp == nil {
		return 1, 0, false
	}
	eta := trimEta(k)
	var sumUp, sumLo, rest float64
	for j := int64(0); j <= k; j++ {
		lambda := saddleLambda([]tiltPart{{bUp, k - j}, {jUp, j}}, eps, m)
		// λ = 0 (the mean already at ε, or ε out of reach) still gives valid brackets.
		sumUp += jumpTerm(bUp, jUp, k, j, lambda, eps, true, eta, m)
		if bLo != nil && (j == 0 || jLo != nil) {
			sumLo += math.Max(0, jumpTerm(bLo, jLo, k, j, lambda, eps, false, eta, m))
		}
		if j == k {
			rest = 0
			break
		}
		// Stop when the terms left are negligible, or after maxJumps.
		rest = jumpRemainder(bUp, jUp, k, j, eps, lambda, m)
		if rest <= 1e-9*sumLo || j == maxJumps {
			break
		}
	}
	// At most maxJumps + 3 additions of non-negative terms, each rounded once.
	upper = math.Min(1, (sumUp+rest+infConfigs(up, k))*(1+16*u))
	return upper, sumLo * (1 - 16*u), rest <= upper/10
}

// valley estimates, for the k-fold composition of l tilted by λ, its density at eps over
// its largest density — small when eps falls between the bumps of a Poisson mixture
// (see above) — by splitting l at eps/4 and taking each count j of large losses as a
// normal bump, with weight Poisson(k·p_J)(j), p_J the tilted mass above eps/4. It only
// chooses the method (1 when nothing lies above eps/4).
func valley(l *Lattice, k int64, eps, lambda float64) float64 {
	b, jl := splitLattice(l, eps/4)
	if b == nil || jl == nil {
		return 1
	}
	lb, mb, vb := tiltedMoments(b, lambda)
	lj, mj, vj := tiltedMoments(jl, lambda)
	mu := float64(k) / (1 + math.Exp(lb-lj)) // k·p_J
	at, top := 0.0, 0.0
	for j := int64(0); j <= min(k, 64); j++ {
		jf := float64(j)
		lw, _ := math.Lgamma(jf + 1)
		w := math.Exp(jf*math.Log(mu) - mu - lw)
		if j == 0 {
			w = math.Exp(-mu)
		}
		v := (float64(k)-jf)*vb + jf*vj
		if v <= 0 {
			continue
		}
		d := w / math.Sqrt(v)
		z := (eps - (float64(k)-jf)*mb - jf*mj) / math.Sqrt(v)
		at += d * math.Exp(-z*z/2)
		top = math.Max(top, d)
	}
	if top == 0 {
		return 1
	}
	return at / top
}

// splitLattice returns the finite masses of l at losses ≤ l0 and above it as two lattices
// with l's errors (nil for an empty part). Err is kept whole in both: an absolute error
// of the whole is one of each part.
func splitLattice(l *Lattice, l0 float64) (bulk, tail *Lattice) {
	cut := 0
	for cut < len(l.Mass) {
		if x, _ := l.loss(cut); x > l0 {
			break
		}
		cut++
	}
	part := func(lo, hi int) *Lattice {
		if countNonzero(l.Mass[lo:hi]) == 0 {
			return nil
		}
		return &Lattice{H: l.H, Offset: l.Offset + int64(lo), Shift: l.Shift,
			Mass: l.Mass[lo:hi], Rel: l.Rel, Err: l.Err}
	}
	return part(0, cut), part(cut, len(l.Mass))
}

// jumpTerm returns the bound (upper or lower) of C(k, j)·δ(ε) of B^{*(k−j)} * J^{*j},
// computed tilted by λ (its +∞ mass is left out: infConfigs counts it).
func jumpTerm(b, jl *Lattice, k, j int64, lambda, eps float64, upper bool, eta float64, m *meter) float64 {
	var acc *tilted
	if k > j {
		tb := tilt(b, lambda, upper)
		tb.inf = 0
		p := powerTilted(tb, k-j, upper, eta, m)
		acc = &p
	}
	if j > 0 {
		tj := tilt(jl, lambda, upper)
		tj.inf = 0
		p := powerTilted(tj, j, upper, eta, m)
		if acc == nil {
			acc = &p
		} else {
			m.add(convolveWork(len(acc.l.Mass), len(p.l.Mass)))
			c := composeTilted(*acc, p, upper, eta)
			acc = &c
		}
	}
	lc, e := logBinom(k, j)
	if upper {
		acc.logScale += lc + e
	} else {
		acc.logScale += lc - e
	}
	return acc.delta(eps, upper)
}

// logBinom returns ln C(k, j) as Σ_{i<j} ln((k−i)/(i+1)) and a bound on its rounding
// error.
func logBinom(k, j int64) (v, err float64) {
	for i := int64(0); i < j; i++ {
		t := math.Log(float64(k-i)) - math.Log(float64(i+1))
		v += t
		err += 4 * u * (math.Abs(t) + math.Log(float64(k)) + math.Abs(v))
	}
	return v, err
}

// logMGF returns an upper bound on ln M(λ) = ln Σ m_i·e^{λ·x_i} over l's finite masses,
// each loss taken at the top of its error, the masses scaled by 1 + Rel, and l.Err added
// at l's largest loss.
func logMGF(l *Lattice, lambda float64) float64 {
	top := math.Inf(-1)
	for i, mass := range l.Mass {
		if mass > 0 {
			x, e := l.loss(i)
			top = math.Max(top, math.Log(mass)+lambda*(x+e))
		}
	}
	s := 0.0
	for i, mass := range l.Mass {
		if mass > 0 {
			x, e := l.loss(i)
			s += math.Exp(math.Log(mass) + lambda*(x+e) - top)
		}
	}
	xt, et := l.loss(len(l.Mass) - 1)
	v := logAdd(top+math.Log(s)+math.Log1p(l.Rel), math.Log(l.Err)+lambda*(xt+et))
	// Each exponent (ln m, λx and top, each rounded) is off by a few ulps of its
	// magnitude, each exp and each of the n additions by one ulp: 1e-12 of the
	// magnitudes plus 2nu is far above them.
	return v + 1e-12*(1+math.Abs(v)+math.Abs(top)+lambda*math.Abs(xt)) + 2*float64(len(l.Mass))*u
}

// jumpRemainder bounds Σ_{j>J} C(k, j)·δ_j(ε) from above (see the comment at the top):
// the least of the Chernoff bounds at a few λ around λ0 (each is a bound).
func jumpRemainder(b, jl *Lattice, k, J int64, eps, lambda0 float64, m *meter) float64 {
	bound := func(lambda float64) float64 {
		m.add(2 * passWork * int64(len(b.Mass)+len(jl.Mass)))
		la, lb := logMGF(jl, lambda), logMGF(b, lambda)
		lc, e := logBinom(k, J+1)
		ta, tb := float64(J+1)*la, float64(k-J-1)*lb
		first := lc + e + ta + tb - lambda*eps
		// the products and sums round: a few ulps of their magnitudes
		first += 1e-12 * (math.Abs(lc) + math.Abs(ta) + math.Abs(tb) + lambda*eps)
		// ratio of term J+2 to term J+1, the largest of the ratios that follow
		lr := math.Log(float64(k-J-1)) - math.Log(float64(J+2)) + la - lb
		if k == J+1 || lr < -1e-3 {
			if k == J+1 {
				lr = math.Inf(-1)
			}
			return first - math.Log1p(-math.Exp(lr)) + 1e-9
		}
		all := float64(k)*logAdd(la, lb) - lambda*eps // every term with j > J, and more
		return all + 1e-12*(math.Abs(all)+2*lambda*eps) + 1e-9
	}
	best := math.Inf(1)
	for _, f := range []float64{0.5, 0.7, 0.85, 1, 1.2, 1.5, 2} {
		best = math.Min(best, bound(f*lambda0))
	}
	return math.Exp(best) + math.SmallestNonzeroFloat64 // an underflow rounds down
}

// infConfigs bounds from above the mass of the k-fold configurations with at least one
// release at +∞: (F + I)^k − F^k ≤ k·I·(F + I)^{k−1}, F ≤ (1 + Rel)·Σm + Err the finite
// mass of one release, I its mass at +∞.
func infConfigs(l *Lattice, k int64) float64 {
	inf := math.Max(l.InfMass, 0)
	if inf == 0 {
		return 0
	}
	f := total(l.Mass)*(1+l.Rel)*(1+float64(len(l.Mass))*u) + l.Err
	// f + inf − 1 is rounded by an ulp of 1 (k times that in the exponent).
	e := float64(k-1) * math.Log1p(f+inf-1)
	e += 1e-12*math.Abs(e) + 4*float64(k)*u
	return float64(k)*inf*math.Exp(e)*(1+8*u) + math.SmallestNonzeroFloat64 // an underflow rounds down
}
