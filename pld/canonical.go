package pld

import (
	"math"

	"github.com/dpkit/dpkit/internal/numeric"
)

// MassRelErr bounds the relative error of Loader's binomial (~1e-13) and of at most 256
// steps of the ratio recurrence (~2e-13). The error of p = e^ε/(1+e^ε) itself adds
// 6u·|m − kp| (see newBinomialWindow). Upper distributions inflate their masses by the
// total bound, lower ones deflate them by it.
const MassRelErr = 1e-12

// Tail thresholds: atoms whose probability is below e^(−T) times the largest are not
// stored; their total mass is bounded and moved (upper) or dropped (lower).
const (
	// TailFine keeps every atom down to e^-680 ≈ 1e-295 of the mode: used for a single
	// binomial, where the window costs O(√k) anyway.
	TailFine = 680.0
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
	if eps == 0 {
		// All loss is 0: δ(ε̃) = 0 for ε̃ ≥ 0 beyond the δ-events.
		return &Discrete{Loss: []float64{0}, Mass: []float64{1}}, &Discrete{Loss: []float64{0}, Mass: []float64{1}}
	}
	w := newBinomialWindow(eps, k, tail)
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
func newBinomialWindow(eps float64, k int64, tail float64) binomialWindow {
	n := float64(k)
	p := 1 / (1 + math.Exp(-eps))
	q := 1 / (1 + math.Exp(eps))
	ratio := math.Exp(eps) // p/q
	mode := math.Floor((n + 1) * p)
	if mode > n {
		mode = n
	}
	lpMode := numeric.LogBinomPMF(mode, n, p, q)
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
		cut := math.Exp(-tail)
		for i := 0; ; i++ {
			if i > 0 && i%256 == 0 {
				v = math.Exp(numeric.LogBinomPMF(m, n, p, q) - lpMode)
			}
			rel = append(rel, v)
			next := m + dir
			if next < 0 || next > n {
				return rel, 0
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
	// p and q carry relative errors a, b ≤ 3u from their evaluation; in Loader's form they
	// change ln pmf(m) by (np − m)(a − b) (the ±np terms of bd0 cancel the rest), so the
	// masses err by at most 6u·max|m − np| beyond MassRelErr.
	// The bound uses the widest window any tail setting can produce (TailFine), so that
	// curves built with different windows are inflated alike and stay ordered.
	maxDev := math.Sqrt(2*TailFine)*math.Sqrt(n*p*q) + 2
	w.relErr = MassRelErr + 12*0x1p-53*maxDev
	w.mass = make([]float64, 0, len(up)+len(down)-1)
	for i := len(down) - 1; i >= 1; i-- {
		w.mass = append(w.mass, down[i]*pmfMode)
	}
	for _, v := range up {
		w.mass = append(w.mass, v*pmfMode)
	}
	return w
}
