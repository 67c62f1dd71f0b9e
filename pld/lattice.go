package pld

import (
	"math"
	"math/bits"

	"gonum.org/v1/gonum/floats"
)

// Lattice is a privacy-loss distribution supported on the grid Shift + H·(Offset + i):
// Mass[i] at loss Shift + H·(Offset+i), plus InfMass at +∞. (Shift is 0 but for a
// mechanism whose atoms are aligned with a grid that does not pass through 0.)
//
// Rel and Err bound the floating-point error against the exact lattice it stands for, at
// the level of the curve: for every real ε,
//
//	(1 − Rel)·δ(ε) − Err ≤ δ_exact(ε) ≤ (1 + Rel)·δ(ε) + Err.
//
// Rel collects relative errors (sums of non-negative products: every bin, hence every
// δ(ε), is within a relative γ_n), Err absolute ones (FFT, zeroing FFT noise): since
// 0 ≤ (1 − e^(ε−l))₊ ≤ 1, a total-variation error moves δ(ε) by at most itself. The
// bounds survive composition: δ of a composition is E_M[δ(ε − M)], a mixture of shifted
// curves (Convolve), and re-discretisation, which only moves the curve in the bound's
// own direction. Relative errors do not grow with how small δ is: they are what keeps
// δ ≈ 1e-18 read-outs meaningful after a million compositions.
type Lattice struct {
	H       float64
	Offset  int64
	Shift   float64
	Mass    []float64
	InfMass float64
	Rel     float64
	Err     float64
}

// loss returns the loss of bin i and a bound on its error: the rounding of the sum, and
// the few ulps (of the lattice's largest loss) by which a shifted spec's discretisation
// may have moved an atom onto its grid point (discretize's gridSlack).
func (l *Lattice) loss(i int) (x, err float64) {
	g := l.H * float64(l.Offset+int64(i))
	x = g + l.Shift
	if l.Shift == 0 {
		return x, 2 * u * math.Abs(g)
	}
	top := l.H * math.Max(math.Abs(float64(l.Offset)), math.Abs(float64(l.Offset+int64(len(l.Mass)))))
	return x, 16 * u * (top + math.Abs(l.Shift))
}

// Discrete returns the lattice as a Discrete bound: for upper, masses are scaled by
// 1 + Rel and Err is added at +∞ (every δ(ε) rises by Err); for lower, masses are scaled
// by 1 − Rel and Err is subtracted (InfMass may then be negative, which only lowers every
// δ(ε) by Err). Losses are rounded outward by two ulps (covering the rounding of the
// spacing and of the atoms a spec places on grid points).
func (l *Lattice) Discrete(upper bool) *Discrete {
	d := &Discrete{}
	dir, scale := math.Inf(-1), math.Max(0, 1-l.Rel)*(1-2*u)
	if upper {
		dir, scale = math.Inf(1), (1+l.Rel)*(1+2*u)
	}
	for i, m := range l.Mass {
		if m <= 0 {
			continue
		}
		x, e := l.loss(i)
		if upper {
			x += e
		} else {
			x -= e
		}
		d.Loss = append(d.Loss, math.Nextafter(math.Nextafter(x, dir), dir))
		d.Mass = append(d.Mass, m*scale)
	}
	if upper {
		d.InfMass = (l.InfMass + l.Err) * (1 + l.Rel) * (1 + 2*u)
	} else {
		d.InfMass = l.InfMass*math.Max(0, 1-l.Rel) - l.Err
	}
	return d
}

// CanonicalLattice returns the k-fold composition of the canonical (ε', δ) pair on the
// lattice of spacing h, conditioned on no δ-event, where ε' = n·h is ε rounded up to the
// lattice (upper = true) or down (upper = false). Rounding ε up is sound because an
// (ε, δ)-DP mechanism is (ε', δ)-DP for every ε' ≥ ε, so the canonical pair of ε'
// dominates that of ε (KOV Thm 2.4); rounding down gives a composition the optimum is at
// least as large as. Binomial tails beyond e^(−TailCoarse) of the mode are moved to the
// lowest bin and to +∞ (upper) or dropped (lower).
func CanonicalLattice(eps float64, k int64, h float64, upper bool) *Lattice {
	var n int64
	if upper {
		n = int64(math.Ceil(eps / h))
	} else {
		n = int64(math.Floor(eps / h))
	}
	if n == 0 {
		return &Lattice{H: h, Offset: 0, Mass: []float64{1}}
	}
	w := newBinomialWindow(float64(n)*h, k, TailCoarse, -1)
	lo := int64(w.lo)
	l := &Lattice{H: h, Offset: (2*lo - k) * n}
	span := int64(len(w.mass)-1)*2*n + 1
	l.Mass = make([]float64, span)
	f := 1 - w.relErr
	if upper {
		f = 1 + w.relErr
	}
	for i, m := range w.mass {
		l.Mass[int64(i)*2*n] = m * f
	}
	if upper {
		l.Mass[0] += w.lowTail * f
		l.InfMass = w.highTail * f
	}
	return l
}

// Convolve returns the distribution of the sum of independent losses from a and b, which
// must share H. Small or sparse inputs are convolved directly (non-negative products,
// one rounding each); large ones by real FFT (realFFT), whose error obeys
//
//	‖ĉ − c‖₂ ≤ 3·η·(log₂N + 1)·(‖a‖₂‖b‖₁ + ‖a‖₁‖b‖₂ + ‖a‖₂‖b‖₂),  η = 7u
//
// (Higham, "Accuracy and Stability of Numerical Algorithms", 2nd ed., Thm 24.2 for each of
// the two forward and the inverse transform, radix-2 stages with twiddle factors accurate
// to u — realFFT says why its transforms qualify; the pointwise product adds
// 3u‖a‖₂‖b‖₁; the second-order term is below the last summand for N ≤ 2^40), so the
// total-variation error of the transform is at most √size times the
// bound. Results at or below the bound (noise, or negative) are then set to 0, which
// moves the distribution by exactly the sum Z of their magnitudes; Err grows by
// √size·bound + Z. With upper = false the rest is the same; the sign of the correction is
// applied by Discrete.
func Convolve(a, b *Lattice) *Lattice { return convolve(a, b, 0) }

// convolve is Convolve with an allowance: the whole convolution is done by FFT when its
// error bound is at most errTol; otherwise the bulks are summed exactly (see below).
// errTol = 0 asks for exact bulks only where that is cheap (at most 2^20 products).
func convolve(a, b *Lattice, errTol float64) *Lattice {
	aTot, bTot := total(a.Mass), total(b.Mass)
	out := &Lattice{
		H:       a.H,
		Offset:  a.Offset + b.Offset,
		Shift:   a.Shift + b.Shift,
		InfMass: a.InfMass*(b.InfMass+bTot) + aTot*b.InfMass,
		Rel:     (1+a.Rel)*(1+b.Rel)*(1+2*u) - 1,
		Err:     productErr(a, b),
	}
	na, nb := len(a.Mass), len(b.Mass)
	size := na + nb - 1
	if size > maxLatticeBins {
		refuseLattice(float64(size))
	}
	nzA, nzB := countNonzero(a.Mass), countNonzero(b.Mass)
	nfft := 1 << bits.Len(uint(size-1))
	logN := float64(bits.Len(uint(nfft)))
	out.Mass = make([]float64, size)
	if float64(nzA)*float64(nzB) <= 4*float64(nfft)*logN {
		convolveSparse(out, a, b, nzA, nzB)
		return out
	}
	sq := math.Sqrt(float64(size))
	plain := 3 * 7 * u * logN * (norm2(a.Mass)*bTot + aTot*norm2(b.Mass) + norm2(a.Mass)*norm2(b.Mass))
	sp := chooseBulk(a, b, aTot, bTot, logN, sq, errTol)

	// The cheapest way that meets the allowance (errTol = 0: exact bulks where cheap).
	switch {
	case errTol == 0 && sp.direct <= 1<<20, errTol > 0 && plain*sq > errTol && sp.err*sq <= errTol && sp.direct <= maxDirectBulk:
		convolveSplit(out, a, b, sp, nfft)
	case errTol == 0 || plain*sq <= errTol:
		out.Err += fftConvolve(out.Mass, a, b, nfft, plain)
	case float64(nzA)*float64(nb) <= math.Min(maxDirectAll, ddCost*float64(nfft)*logN):
		// All of it by direct sums (relative error only).
		g := directBulk(out.Mass, a.Mass, b.Mass, 0, na, 0, nb)
		out.Rel = (1+out.Rel)*(1+g) - 1
	case nfft > maxDDFFT:
		// Too large for the double-double FFT's time: the float64 one, whose larger error
		// bound widens the bracket instead (it is reported, never hidden).
		out.Err += fftConvolve(out.Mass, a, b, nfft, plain)
	default:
		// The FFT in double-double: error bound about 2^-51 times the float64 one.
		c, bound := ddConvolve(a.Mass, b.Mass)
		zeroed := 0.0
		for i, v := range c {
			if v <= bound {
				zeroed += math.Abs(v)
				v = 0
			}
			out.Mass[i] = v
		}
		out.Err += bound*sq + zeroed
		out.Rel = (1+out.Rel)*(1+u) - 1 // each bin rounded once to float64
	}
	return out
}

// convolveSparse sums a ⊛ b over the nonzero bins directly into out.
func convolveSparse(out, a, b *Lattice, nzA, nzB int) {
	ia, ib := nonzero(a.Mass, nzA), nonzero(b.Mass, nzB)
	for _, i := range ia {
		ai := a.Mass[i]
		for _, j := range ib {
			out.Mass[i+j] += ai * b.Mass[j]
		}
	}
	// Each bin sums at most len(ia) non-negative products: relative error ≤ γ_n.
	out.Rel = (1+out.Rel)*(1+float64(len(ia)+2)*u) - 1
}

// bulkSplit is a split of two lattices into bulks [lo, hi) and tails, with the direct
// products of the bulks and the FFT error bound of the tails' part.
type bulkSplit struct {
	aLo, aHi, bLo, bHi, direct int
	aTail, bTail               []float64
	err                        float64
}

// chooseBulk returns the split at the first ratio of bulkRatios (bins above it times the
// largest are the bulk) whose tails' FFT error meets the allowance while the bulks' direct
// sums stay affordable.
func chooseBulk(a, b *Lattice, aTot, bTot, logN, sq, errTol float64) bulkSplit {
	var sp bulkSplit
	for _, r := range bulkRatios {
		sp.aLo, sp.aHi = bulk(a.Mass, r)
		sp.bLo, sp.bHi = bulk(b.Mass, r)
		sp.direct = (sp.aHi - sp.aLo) * (sp.bHi - sp.bLo)
		sp.aTail, sp.bTail = tailOf(a.Mass, sp.aLo, sp.aHi), tailOf(b.Mass, sp.bLo, sp.bHi)
		aT1, aT2, bT1, bT2 := total(sp.aTail), norm2(sp.aTail), total(sp.bTail), norm2(sp.bTail)
		aB2, aB1 := norm2(a.Mass[sp.aLo:sp.aHi]), total(a.Mass[sp.aLo:sp.aHi])
		sp.err = 5 * 7 * u * logN * (aT2*bTot + aT1*norm2(b.Mass) + aT2*norm2(b.Mass) + aB2*bT1 + aB1*bT2 + aB2*bT2)
		if errTol == 0 || sp.err*sq <= errTol || sp.direct > maxDirectBulk {
			break
		}
	}
	return sp
}

// convolveSplit adds a ⊛ b to out: the bulks (bins above the split's ratio of the
// largest) exactly, by direct sums of non-negative products; the rest, aTail⊛b +
// aBulk⊛bTail, by FFT, whose error scales with the tails' norms (small) instead of the
// bulks'.
func convolveSplit(out, a, b *Lattice, sp bulkSplit, nfft int) {
	g := directBulk(out.Mass, a.Mass, b.Mass, sp.aLo, sp.aHi, sp.bLo, sp.bHi)
	out.Rel = (1+out.Rel)*(1+g) - 1
	A := transform(nfft, sp.aTail, 0, len(sp.aTail))
	Ab := transform(nfft, a.Mass, sp.aLo, sp.aHi)
	if a == b { // squaring: aTail⊛a + aBulk⊛aTail = aTail⊛(aTail + 2·aBulk)
		for i := range A {
			A[i] *= A[i] + 2*Ab[i]
		}
	} else {
		B := transform(nfft, b.Mass, 0, len(b.Mass))
		Bt := transform(nfft, sp.bTail, 0, len(sp.bTail))
		for i := range A {
			A[i] = A[i]*B[i] + Ab[i]*Bt[i]
		}
	}
	out.Err += addTransformed(out.Mass, nfft, A, sp.err)
}

// fftConvolve adds a ⊛ b by one float64 FFT to out and returns the error to add.
func fftConvolve(out []float64, a, b *Lattice, nfft int, bound float64) float64 {
	X := transform(nfft, a.Mass, 0, len(a.Mass))
	Y := X
	if b != a {
		Y = transform(nfft, b.Mass, 0, len(b.Mass))
	}
	for i := range X {
		X[i] *= Y[i]
	}
	return addTransformed(out, nfft, X, bound)
}

// directBlock is the number of rows directBulk sums into a block partial before adding
// it to the output.
const directBlock = 64

// directBulk adds a[aLo:aHi] ⊛ b[bLo:bHi] into out (at the inputs' own indices) and
// returns a bound on the relative error of every bin's sum. Rows of a are summed in
// blocks of directBlock into a partial, which is then added to out: each bin's value
// is a sum of non-negative terms computed with at most directBlock + ⌈n/directBlock⌉
// additions in sequence, so its relative error is at most that many u (γ bound),
// where a single running sum of n terms would allow n·u.
func directBulk(out, a, b []float64, aLo, aHi, bLo, bHi int) float64 {
	nb := bHi - bLo
	part := make([]float64, nb+directBlock)
	for i0 := aLo; i0 < aHi; i0 += directBlock {
		i1 := min(i0+directBlock, aHi)
		clear(part[:nb+i1-i0-1])
		for i := i0; i < i1; i++ {
			ai := a[i]
			if ai == 0 {
				continue
			}
			floats.AddScaled(part[i-i0:i-i0+nb], ai, b[bLo:bHi])
		}
		floats.Add(out[i0+bLo:i0+bLo+nb+i1-i0-1], part[:nb+i1-i0-1])
	}
	return float64(directBlock+(aHi-aLo+directBlock-1)/directBlock+2) * u
}

// bulkRatios: the bulk of a lattice is the window of bins holding every mass above a
// ratio times the largest; convolve sums bulk × bulk directly when that costs at most
// maxDirectBulk products, trying wider bulks (smaller ratios, smaller tails) while the
// FFT of the tails would still err more than allowed.
var bulkRatios = []float64{1e-2, 1e-3, 1e-4, 1e-5, 1e-7, 1e-9, 1e-13}

const (
	maxDirectBulk = 1 << 25
	// maxDirectAll bounds the products of a convolution summed directly in full when the
	// FFT's error bound exceeds the allowance (tiny δ targets), and ddCost is the cost of
	// a double-double FFT convolution per N·log₂N, in products: the cheaper is taken.
	maxDirectAll = 1 << 26
	ddCost       = 60
	// maxDDFFT bounds the size of a double-double FFT (about 2 s at 2^20 points here).
	maxDDFFT = 1 << 20
)

// bulk returns the window [lo, hi) of m holding every value above ratio·max(m).
func bulk(m []float64, ratio float64) (lo, hi int) {
	mx := 0.0
	for _, v := range m {
		if v > mx {
			mx = v
		}
	}
	t := mx * ratio
	lo, hi = 0, len(m)
	for lo < hi && m[lo] <= t {
		lo++
	}
	for hi > lo && m[hi-1] <= t {
		hi--
	}
	return lo, hi
}

// tailOf returns m with the window [lo, hi) zeroed.
func tailOf(m []float64, lo, hi int) []float64 {
	t := make([]float64, len(m))
	copy(t, m)
	clear(t[lo:hi])
	return t
}

// transform returns the real FFT (size n, coefficients 0 … n/2) of m[lo:hi] placed at
// its own indices.
func transform(n int, m []float64, lo, hi int) (X []complex128) {
	withRealFFT(n, func(p *realFFT) { X = p.transform(m, lo, hi) })
	return X
}

// addTransformed adds the inverse FFT of X (size n) to out, bin by bin: values at or
// below bound (noise, or negative) are not added, and the sum Z of their magnitudes is
// moved to the error. It returns the error to add: √len(out)·bound + Z (the 2-norm bound
// turned into a total-variation one, plus what was zeroed).
func addTransformed(out []float64, n int, X []complex128, bound float64) float64 {
	res := make([]float64, len(out))
	withRealFFT(n, func(p *realFFT) {
		z, done := p.scratch()
		defer done()
		p.inverse(X, res, z)
	})
	scale := 1 / float64(n)
	zeroed := 0.0
	for i, r := range res {
		v := r * scale
		if v <= bound {
			zeroed += math.Abs(v)
			continue
		}
		out[i] += v
	}
	return bound*math.Sqrt(float64(len(out))) + zeroed
}

// Trim removes leading and trailing bins holding at most eta of mass in total on each
// side: for upper, the low tail is added to the first kept bin and the high tail to
// InfMass (δ(ε) can only rise); for lower, both are dropped (δ(ε) can only fall).
func (l *Lattice) Trim(eta float64, upper bool) {
	lo, acc := 0, 0.0
	for lo < len(l.Mass)-1 && acc+l.Mass[lo] <= eta {
		acc += l.Mass[lo]
		lo++
	}
	lowTail := acc
	hi := len(l.Mass) - 1
	acc = 0
	for hi > lo && acc+l.Mass[hi] <= eta {
		acc += l.Mass[hi]
		hi--
	}
	highTail := acc
	l.Mass = l.Mass[lo : hi+1]
	l.Offset += int64(lo)
	if upper {
		l.Mass[0] += lowTail
		l.InfMass += highTail
	}
}

// countNonzero returns the number of nonzero entries of m.
func countNonzero(m []float64) int {
	n := 0
	for _, v := range m {
		if v != 0 {
			n++
		}
	}
	return n
}

// nonzero returns the indices of the n nonzero entries of m.
func nonzero(m []float64, n int) []int {
	idx := make([]int, 0, n)
	for i, v := range m {
		if v != 0 {
			idx = append(idx, i)
		}
	}
	return idx
}

func norm2(m []float64) float64 {
	s := 0.0
	for _, v := range m {
		s += v * v
	}
	return math.Sqrt(s)
}
