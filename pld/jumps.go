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
//
// A workload of several distinct pairs, n_i releases each, multiplies out the same way:
// Π_i (B_i + J_i)^{*n_i} = Σ_{j_1, j_2, …} Π_i C(n_i, j_i)·B_i^{*(n_i−j_i)} * J_i^{*j_i},
// a term per multi-index, each bracketed under its own saddle tilt; a pair whose tilted
// loss is one bump is not split (J_i empty, B_i the whole: the identity still holds).
// The terms are added by their total J = Σ j_i, and those left out are bounded by the
// generating function of the counts (see jumpRemainder). Configurations with a release
// at +∞ are bounded by telescoping the products (see infConfigs).

// passWork is the work (see meter) of one pass over a lattice's bins computing
// exponentials (a tilted mean, a moment generating function).
const passWork = 8

// maxJumps is the largest number of tail releases bracketed term by term.
const maxJumps = 8

// maxSplitTerms bounds the terms (multi-indices) of one total J that splitDelta
// computes, each a composition of the whole workload: past it (a hundred split parts
// have 5050 terms of J = 2) the rest is bounded from J − 1 on.
const maxSplitTerms = 128

// jumpPart is n releases of one pair of a composition split at l0: its upper and lower
// lattices' bulks and tails (tails nil: the part is not split, its bulks are the whole
// lattices), and the whole upper lattice, whose mass at +∞ infConfigs counts.
type jumpPart struct {
	bUp, jUp, bLo, jLo, up *Lattice
	n                      int64
	// h is the spacing the terms are composed on (0: the lattices' own), a power-of-two
	// multiple of theirs (powerTiltedTo).
	h float64
}

// newJumpPart returns the part of n releases of the pair with lattices up and lo, split
// at l0 when split is true and both sides of l0 hold mass.
func newJumpPart(up, lo *Lattice, n int64, l0 float64, split bool) jumpPart {
	p := jumpPart{bUp: up, bLo: lo, up: up, n: n}
	if split {
		if bUp, jUp := splitLattice(up, l0); bUp != nil && jUp != nil {
			p.bUp, p.jUp = bUp, jUp
			p.bLo, p.jLo = splitLattice(lo, l0)
		}
	}
	return p
}

// splitSelfDelta brackets δ(eps) of k releases of the pair whose upper and lower lattices
// are up and lo, term by term in the number of releases with a loss above eps/4 (see
// above). good is false when no mass lies there ([1, 0]) or when the terms not computed
// may hold more than a tenth of the upper bound (large losses are common: the bracket is
// valid but loose).
func splitSelfDelta(up, lo *Lattice, k int64, eps, h float64, m *meter) (upper, lower float64, good bool) {
	p := newJumpPart(up, lo, k, eps/4, true)
	p.h = h
	if p.jUp == nil {
		return 1, 0, false
	}
	return splitDelta([]jumpPart{p}, eps, m)
}

// splitDelta brackets δ(eps) of the composition of the parts term by term in the
// multi-index (j_1, …) of the numbers of tail releases of the split parts (the binomial
// theorem for each part, multiplied out): the terms of J = Σ j_i = 0, 1, … are added
// until the bound on the rest falls below 1e-9 of the lower sum, or J = maxJumps. good
// is false when the rest may hold more than a tenth of the upper bound.
func splitDelta(parts []jumpPart, eps float64, m *meter) (upper, lower float64, good bool) {
	var total, most int64
	for _, p := range parts {
		total += p.n
		if p.jUp != nil {
			most += p.n
		}
	}
	eta := trimEta(total)
	js := make([]int64, len(parts))
	var sumUp, sumLo, rest float64
	terms := 0
	for J := int64(0); ; J++ {
		if J > 0 && splitTerms(parts, J, maxSplitTerms) > maxSplitTerms {
			break // rest bounds the terms from J on
		}
		lambda := 0.0
		eachSplit(parts, js, 0, J, func() {
			var tp []tiltPart
			for i, p := range parts {
				if p.n > js[i] {
					tp = append(tp, tiltPart{p.bUp, p.n - js[i]})
				}
				if js[i] > 0 {
					tp = append(tp, tiltPart{p.jUp, js[i]})
				}
			}
			lambda = saddleLambda(tp, eps, m)
			// λ = 0 (the mean already at ε, or ε out of reach) still gives valid brackets.
			sumUp += jumpTerm(parts, js, lambda, eps, true, eta, m)
			sumLo += math.Max(0, jumpTerm(parts, js, lambda, eps, false, eta, m))
			terms++
		})
		if J == most {
			rest = 0
			break
		}
		// Stop when the terms left are negligible, or after maxJumps.
		rest = jumpRemainder(parts, J, eps, lambda, m)
		if rest <= 1e-9*sumLo || J == maxJumps {
			break
		}
	}
	// terms + 3 additions of non-negative terms, each rounded once.
	r := float64(terms+3) * 2 * u
	upper = math.Min(1, (sumUp+rest+infConfigs(parts))*(1+r))
	return upper, sumLo * (1 - r), rest <= upper/10
}

// eachSplit calls f with js[from:] set to every multi-index of tail counts that adds up
// to J (j_i ≤ n_i, and 0 for a part not split).
func eachSplit(parts []jumpPart, js []int64, from int, J int64, f func()) {
	if from == len(parts) {
		if J == 0 {
			f()
		}
		return
	}
	top := int64(0)
	if parts[from].jUp != nil {
		top = min(J, parts[from].n)
	}
	for j := int64(0); j <= top; j++ {
		js[from] = j
		eachSplit(parts, js, from+1, J-j, f)
	}
	js[from] = 0
}

// splitTerms returns the number of multi-indices eachSplit visits for J, or a number
// above limit when there are more than limit.
func splitTerms(parts []jumpPart, J int64, limit int) int {
	ways := make([]int, J+1) // ways[t]: multi-indices of the parts so far that add up to t
	ways[0] = 1
	for _, p := range parts {
		if p.jUp == nil {
			continue
		}
		next := make([]int, J+1)
		for t, w := range ways {
			for j := int64(0); j <= min(p.n, J-int64(t)); j++ {
				next[int64(t)+j] = min(next[int64(t)+j]+w, limit+1)
			}
		}
		ways = next
	}
	return ways[J]
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

// jumpTerm returns the bound (upper or lower) of Π C(n_i, j_i)·δ(ε) of the composition
// of every part's B^{*(n−j)} * J^{*j}, computed tilted by λ (its +∞ mass is left out:
// infConfigs counts it). A lower bound whose lattices are missing (no lower mass on that
// side) is 0.
func jumpTerm(parts []jumpPart, js []int64, lambda, eps float64, upper bool, eta float64, m *meter) float64 {
	var ts []tilted
	var h float64
	add := func(l *Lattice, n int64) bool {
		if n == 0 {
			return true
		}
		if l == nil {
			return false
		}
		t := tilt(l, lambda, upper)
		t.inf = 0
		if n <= maxJumps && l.H < h {
			// A few releases of a tail: on h from the start (its discretisation error is
			// that of a few releases, and its lattice is wide).
			t.trimBase(upper, eta)
			t = coarsenTilted(t, h, upper, m)
		}
		ts = append(ts, powerTiltedTo(t, n, upper, eta, h, m))
		return true
	}
	lc := 0.0
	for i, p := range parts {
		h = p.h
		if h == 0 {
			h = p.bUp.H
		}
		b, jl := p.bUp, p.jUp
		if !upper {
			b, jl = p.bLo, p.jLo
		}
		if !add(b, p.n-js[i]) || !add(jl, js[i]) {
			return 0
		}
		v, e := logBinom(p.n, js[i])
		if upper {
			lc += v + e
		} else {
			lc += v - e
		}
	}
	acc := composeTiltedAll(ts, upper, eta, m)
	// Σ of a term per part: its rounding is far below 1e-12 of the magnitudes.
	slack := 1e-12 * math.Abs(lc)
	if upper {
		acc.logScale += lc + slack
	} else {
		acc.logScale += lc - slack
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

// jumpRemainder bounds from above the terms with more than J tail releases in all (see
// the comment at the top): the least of the Chernoff bounds at a few λ around λ0 (each is
// a bound), each summed over the multi-indices by the generating function
//
//	Σ_{|j|>J} Π_i C(n_i, j_i)·M_Bi^{n_i−j_i}·M_Ji^{j_i} ≤ t^{−(J+1)}·Π_i (M_Bi + t·M_Ji)^{n_i},  any t ≥ 1,
//
// (every term is non-negative and t^{|j|−J−1} ≥ 1 where |j| > J; a part not split counts
// M^{n_i}), and for one split part also by the ratio of consecutive terms.
func jumpRemainder(parts []jumpPart, J int64, eps, lambda0 float64, m *meter) float64 {
	lb, lj := make([]float64, len(parts)), make([]float64, len(parts))
	bound := func(lambda float64) float64 {
		var split []int
		for i, p := range parts {
			m.add(2 * passWork * int64(len(p.bUp.Mass)))
			lb[i], lj[i] = logMGF(p.bUp, lambda), math.Inf(-1)
			if p.jUp != nil {
				m.add(2 * passWork * int64(len(p.jUp.Mass)))
				lj[i] = logMGF(p.jUp, lambda)
				split = append(split, i)
			}
		}
		best := math.Inf(1)
		for s := 0; s <= 64; s++ { // t = 2^(s/2)
			lt := float64(s) * math.Ln2 / 2
			v, mag := -float64(J+1)*lt-lambda*eps, float64(J+1)*lt+lambda*eps
			for i, p := range parts {
				x := float64(p.n) * logAdd(lb[i], lt+lj[i])
				v, mag = v+x, mag+math.Abs(x)+float64(p.n)*math.Abs(lb[i])
			}
			best = math.Min(best, v+1e-12*mag+1e-9) // the products and sums round
		}
		if len(split) != 1 {
			return best
		}
		// One split part (k releases): the rest is its first term (J+1) times the others'
		// M^n, over 1 − the ratio of term J+2 to term J+1, the largest of those that follow.
		i := split[0]
		k := parts[i].n
		others, mag := 0.0, 0.0
		for o, p := range parts {
			if o != i {
				x := float64(p.n) * lb[o]
				others, mag = others+x, mag+math.Abs(x)
			}
		}
		lc, e := logBinom(k, J+1)
		ta, tb := float64(J+1)*lj[i], float64(k-J-1)*lb[i]
		first := lc + e + ta + tb + others - lambda*eps
		first += 1e-12 * (math.Abs(lc) + math.Abs(ta) + math.Abs(tb) + mag + lambda*eps)
		lr := math.Log(float64(k-J-1)) - math.Log(float64(J+2)) + lj[i] - lb[i]
		if k == J+1 {
			lr = math.Inf(-1)
		}
		if k == J+1 || lr < -1e-3 {
			best = math.Min(best, first-math.Log1p(-math.Exp(lr))+1e-9)
		}
		return best
	}
	best := math.Inf(1)
	for _, f := range []float64{0.5, 0.7, 0.85, 1, 1.2, 1.5, 2} {
		best = math.Min(best, bound(f*lambda0))
	}
	return math.Exp(best) + math.SmallestNonzeroFloat64 // an underflow rounds down
}

// infConfigs bounds from above the mass of the configurations with at least one release
// at +∞: with A_i = (F_i + I_i)^{n_i} and B_i = F_i^{n_i} (F the finite mass of one
// release of part i, at most (1 + Rel)·Σm + Err, and I its mass at +∞),
// Π A_i − Π B_i = Σ_i (A_i − B_i)·Π_{i'<i} B_i'·Π_{i'>i} A_i' ≤ Σ_i n_i·I_i·(F_i + I_i)^{n_i−1}·Π_{i'≠i} A_i'.
func infConfigs(parts []jumpPart) float64 {
	logPow := func(l *Lattice, n int64) float64 { // ln (F + I)^n, rounded up
		f := total(l.Mass)*(1+l.Rel)*(1+float64(len(l.Mass))*u) + l.Err
		// f + inf − 1 is rounded by an ulp of 1 (n times that in the exponent).
		e := float64(n) * math.Log1p(f+math.Max(l.InfMass, 0)-1)
		return e + 1e-12*math.Abs(e) + 4*float64(n)*u
	}
	all := 0.0
	for _, p := range parts {
		all += logPow(p.up, p.n)
	}
	sum := 0.0
	for _, p := range parts {
		if inf := math.Max(p.up.InfMass, 0); inf > 0 {
			e := all - logPow(p.up, p.n) + logPow(p.up, p.n-1)
			e += 1e-12 * (math.Abs(all) + 2*math.Abs(logPow(p.up, p.n)))
			sum += float64(p.n) * inf * math.Exp(e) * (1 + 8*u)
		}
	}
	if sum == 0 {
		return 0
	}
	return sum*(1+float64(len(parts))*2*u) + math.SmallestNonzeroFloat64 // an underflow rounds down
}
