package pld

import (
	"math"
	"math/big"

	"github.com/dpkit/dpkit/internal/numeric"
)

// MassRelErr bounds the relative error of Loader's binomial (~1e-13) and of at most 256
// steps of the ratio recurrence (~2e-13). The rounding of p = e^ε/(1+e^ε) is corrected
// (pqCorrection), which adds about 8u. Upper distributions inflate their masses by the
// total bound, lower ones deflate them by it.
const MassRelErr = 1e-12

// Tail thresholds: atoms whose probability is below e^(−T) times the largest are not
// stored; their total mass is bounded and moved (upper) or dropped (lower).
const (
	// TailFine keeps every atom in the normal float64 range (down to 2^-1016 ≈ 1.4e-306):
	// used for a single binomial, where the window costs O(√k) anyway, so that δ down to
	// 1e-300 is read to a relative 1e-6 or better.
	TailFine = 745.0
	// TailCoarse keeps atoms down to e^-92 ≈ 1e-40 of the mode: used inside products.
	TailCoarse = 92.0
)

// CanonicalComposition returns upper and lower bounds on the privacy-loss distribution of
// the k-fold composition of the canonical (ε, δ) pair of KOV eq. (17)/(18), conditioned on
// none of its δ-events (the caller accounts for those through 1 − (1−δ)^k):
//
//	L = (2m − k)·ε,  m ~ Binomial(k, p),  p = e^ε/(1 + e^ε).
//
// Only the m whose probability is within e^(−tail) of the mode's are stored. The mass
// above the window, bounded by the geometric series of the (decreasing) pmf ratio, is put
// on an atom at the largest possible loss kε in upper; the mass below the window is added
// to the lowest stored atom in upper. Both tails are dropped in lower. Upper masses and
// losses are rounded up, lower ones down (MassRelErr, one ulp).
func CanonicalComposition(eps float64, k int64, tail float64) (upper, lower *Discrete) {
	return canonicalComposition(eps, k, tail, -1)
}

// CanonicalCompositionPositive is CanonicalComposition for curves read at ε̃ ≥ 0 only:
// the window stops, below the mode, at the first atom of loss ≤ 0, which stands for all
// the mass at or below it (an atom of loss l ≤ 0 ≤ ε̃ adds nothing to δ(ε̃)): the same
// curve on [0, ∞) from half the atoms or fewer.
func CanonicalCompositionPositive(eps float64, k int64, tail float64) (upper, lower *Discrete) {
	return canonicalComposition(eps, k, tail, math.Floor(float64(k)/2))
}

// canonicalComposition builds the window down to m = floorM (< 0: the tail rule alone).
func canonicalComposition(eps float64, k int64, tail, floorM float64) (upper, lower *Discrete) {
	if eps == 0 {
		// All loss is 0: δ(ε̃) = 0 for ε̃ ≥ 0 beyond the δ-events.
		return &Discrete{Loss: []float64{0}, Mass: []float64{1}}, &Discrete{Loss: []float64{0}, Mass: []float64{1}}
	}
	w := newBinomialWindow(eps, k, tail, floorM)
	n := float64(k)
	size := len(w.mass)
	lower = &Discrete{Loss: make([]float64, size), Mass: make([]float64, size)}
	upper = &Discrete{Loss: make([]float64, size), Mass: make([]float64, size)}
	for i, m := range w.mass {
		l := (2*(w.lo+float64(i)) - n) * eps
		lower.Loss[i] = math.Nextafter(l, math.Inf(-1))
		lower.Mass[i] = m * (1 - w.relErr)
		upper.Loss[i] = math.Nextafter(l, math.Inf(1))
		upper.Mass[i] = m * (1 + w.relErr)
	}
	upper.Mass[0] += w.lowTail * (1 + w.relErr)
	if w.highTail > 0 {
		top := math.Nextafter(n*eps, math.Inf(1))
		if top > upper.Loss[size-1] {
			upper.Loss = append(upper.Loss, top)
			upper.Mass = append(upper.Mass, w.highTail*(1+w.relErr))
		} else {
			upper.Mass[size-1] += w.highTail * (1 + w.relErr)
		}
	}
	return upper, lower
}

// pqCorrection returns c such that Loader's form evaluated with the float64 p and q
// (LogBinomPMF(m, n, p, q)) exceeds the exact ln Pr[m] of Binomial(n, e^ε/(1+e^ε)) by
// (m − np)·c, to second order, and a bound on the relative mass error that remains.
//
// Loader's form sees p and q through P = fl(n·p) and Q = fl(n·q); with P = np*(1+α),
// Q = nq*(1+β) (p*, q* the exact probabilities) it evaluates
// ln C(n,m) + m ln(P/n) + (n−m) ln(Q/n) − (P + Q − n), which exceeds the exact value by
// m·α + (n−m)·β − n(p*α + q*β) + O(nα²) = (m − np*)(α − β) + O(nα²). α and β are
// computed here from p* and q* to 160 bits (numeric.ExpBig), so c = α − β is known to
// far below u; what remains is the second-order term (at most 8n·u²) and the roundings
// of applying c (8u). Without it the masses erred by up to 6u·|m − np| — 2.4e-8 at
// n = 10^12, where the ε of a composition came out 2.5e-9 above the truth. For ε beyond
// ±700 (where q underflows, and the window is a few atoms) c = 0 and the old bound
// 12u·max|m − np| is kept.
func pqCorrection(eps, n, p, q float64) (c, relErr float64) {
	if math.Abs(eps) > 700 {
		maxDev := math.Sqrt(2*TailFine)*math.Sqrt(n*p*q) + 2
		return 0, 12 * u * maxDev
	}
	const prec = 160
	e := numeric.ExpBig(eps, prec)
	one := new(big.Float).SetPrec(prec).SetInt64(1)
	den := new(big.Float).SetPrec(prec).Add(one, e)         // 1 + e^ε
	pt := new(big.Float).SetPrec(prec).Quo(e, den)          // p* = e^ε/(1+e^ε)
	qt := new(big.Float).SetPrec(prec).Quo(one, den)        // q* = 1/(1+e^ε)
	nb := new(big.Float).SetPrec(prec).SetFloat64(n)        // n is an integer ≤ 2^53
	rel := func(got float64, exact *big.Float) *big.Float { // got/(n·exact) − 1
		x := new(big.Float).SetPrec(prec).Mul(nb, exact)
		x.Quo(new(big.Float).SetPrec(prec).SetFloat64(got), x)
		return x.Sub(x, one)
	}
	d := new(big.Float).SetPrec(prec).Sub(rel(n*p, pt), rel(n*q, qt))
	c, _ = d.Float64()
	return c, 8*u + 8*n*u*u
}

// minWindowMass is the smallest binomial mass a window stores: normal in float64 with
// room for the error factors (1 ± relErr).
const minWindowMass = 0x1p-1016

// binomialWindow holds Pr[m] for m ∈ [lo, lo+len(mass)) of m ~ Binomial(k, e^ε/(1+e^ε)),
// and bounds on the mass below (lowTail) and above (highTail) the window.
type binomialWindow struct {
	lo                float64
	mass              []float64
	lowTail, highTail float64
	relErr            float64 // bound on the relative error of every mass
}

// newBinomialWindow walks out from the mode with the pmf ratio recurrence (resynchronised
// with Loader's binomial every 256 steps) until the pmf falls below e^(−tail) of the
// mode's; the remaining tail is bounded by the geometric series of the ratio, which is
// decreasing on each side of the mode.
func newBinomialWindow(eps float64, k int64, tail, floorM float64) binomialWindow {
	n := float64(k)
	p := 1 / (1 + math.Exp(-eps))
	q := 1 / (1 + math.Exp(eps))
	ratio := math.Exp(eps) // p/q
	mode := math.Floor((n + 1) * p)
	if mode > n {
		mode = n
	}
	// c corrects Loader's form for the rounding of p and q (see pqCorrection).
	c, cErr := pqCorrection(eps, n, p, q)
	lpMode := numeric.LogBinomPMF(mode, n, p, q) - (mode-n*p)*c
	// stepRatio is pmf(m+dir)/pmf(m).
	stepRatio := func(m, dir float64) float64 {
		if dir > 0 {
			return (n - m) / (m + 1) * ratio
		}
		return m / (n - m + 1) / ratio
	}
	// walk returns pmf(mode + dir·i)/pmf(mode) for i = 0, 1, … while above e^(−tail),
	// in linear scale (the ratio recurrence costs one division and two products a term;
	// every 256 terms it is resynchronised with Loader's form), and the tail beyond.
	pmfMode := math.Exp(lpMode)
	walk := func(dir float64) (rel []float64, tailMass float64) {
		m, v := mode, 1.0
		cut := math.Max(math.Exp(-tail), minWindowMass/pmfMode)
		for i := 0; ; i++ {
			if i > 0 && i%256 == 0 {
				v = math.Exp(numeric.LogBinomPMF(m, n, p, q) - (m-n*p)*c - lpMode)
			}
			rel = append(rel, v)
			next := m + dir
			if next < 0 || next > n {
				return rel, 0
			}
			if dir < 0 && m <= floorM {
				// The atom at floorM stands for everything below (see
				// CanonicalCompositionPositive): a tail bound of 1 is valid, and moot.
				return rel, 1
			}
			vNext := v * stepRatio(m, dir)
			if vNext < cut {
				r := stepRatio(next, dir)
				if next+dir < 0 || next+dir > n {
					r = 0
				}
				if r >= 1 { // not reachable past the mode; keep the bound valid regardless
					return rel, vNext * pmfMode * (n + 1)
				}
				return rel, vNext * pmfMode / (1 - r)
			}
			m, v = next, vNext
		}
	}
	up, highTail := walk(+1)
	down, lowTail := walk(-1)
	w := binomialWindow{lo: mode - float64(len(down)-1), lowTail: lowTail, highTail: highTail}
	// Beyond MassRelErr, the correction's own error (cErr), the same for every window, so
	// that curves built with different windows are inflated alike and stay ordered.
	w.relErr = MassRelErr + cErr
	w.mass = make([]float64, 0, len(up)+len(down)-1)
	for i := len(down) - 1; i >= 1; i-- {
		w.mass = append(w.mass, down[i]*pmfMode)
	}
	for _, v := range up {
		w.mass = append(w.mass, v*pmfMode)
	}
	return w
}
