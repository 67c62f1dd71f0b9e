package compose

import (
	"math"
	"sort"

	"github.com/dpkit/dpkit/pld"
)

// maxBracketRounds bounds the lattice refinements of one bracket.
const maxBracketRounds = 3

// latticeTrim is the mass (absolute) a lattice may shed at each end after a convolution.
const latticeTrim = 1e-40

// bracket computes certified upper and lower curves on a lattice: every ε_ℓ is rounded
// up (upper) or down (lower) to a multiple of h and the rounded canonical pairs are
// composed exactly on the lattice (pld.CanonicalLattice, pld.Convolve). The spacing h
// starts from an estimate of the bracket width,
//
//	width ≈ h · Σ_ℓ ∂ε/∂ε_ℓ ≈ h · Σ_ℓ c_ℓ ε_ℓ (1 + z/σ),  σ² = Σ c_ℓ ε_ℓ², z = √(2 ln(1/δ)),
//
// and is refined until the width at targetDelta meets the tolerance or the lattice would
// exceed maxLatticeBins (then the best bracket found is kept: Width reports it).
func (c *Curve) bracket(eps []float64, counts []int64, targetDelta float64, probe func() float64) {
	t := 1e-6
	if targetDelta > c.floor && targetDelta < 1 && c.keep > 0 {
		t = (targetDelta - c.floor) / c.keep
	}
	if t < 1e-300 {
		t = 1e-300
	}
	var sigma2, mean, sens float64
	for i, e := range eps {
		n := float64(counts[i])
		sigma2 += n * e * e
		mean += n * e * math.Tanh(e/2)
	}
	sigma := math.Sqrt(sigma2)
	z := math.Sqrt(2 * math.Log(1/t))
	for i, e := range eps {
		sens += float64(counts[i]) * e * (1 + z/sigma)
	}
	target := math.Min(c.maxLoss, mean+z*sigma)
	h := c.tol * target / (2 * sens)
	for round := 0; ; round++ {
		if span := 30 * sigma / h; span > maxLatticeBins {
			h = 30 * sigma / maxLatticeBins
		}
		up := latticeComposition(eps, counts, h, true)
		lo := latticeComposition(eps, counts, h, false)
		c.upper, c.lower, c.h = up.Discrete(true), lo.Discrete(false), h
		w := probe()
		if w <= c.tol || round == maxBracketRounds-1 || 30*sigma/h >= maxLatticeBins {
			return
		}
		h *= math.Max(0.7*c.tol/w, 1.0/16)
	}
}

// width returns the relative width of the ε bracket at total δ (1e-6 if unknown).
func (c *Curve) width(delta float64) float64 {
	if delta <= c.floor || delta >= 1 {
		delta = c.floor + c.keep*1e-6
	}
	u, l, err := c.Epsilon(delta)
	if err != nil || u == 0 {
		return 0
	}
	return (u - l) / u
}

// deltaWidth returns the relative width of the δ bracket at total ε.
func (c *Curve) deltaWidth(eps float64) float64 {
	u, l, err := c.Delta(eps)
	if err != nil || u == 0 {
		return 0
	}
	return (u - l) / u
}

// latticeComposition composes the rounded canonical pairs on the lattice of spacing h,
// combining the smallest distributions first (a balanced tree of convolutions) and
// trimming negligible tails after each step.
func latticeComposition(eps []float64, counts []int64, h float64, upper bool) *pld.Lattice {
	ls := make([]*pld.Lattice, len(eps))
	for i, e := range eps {
		ls[i] = pld.CanonicalLattice(e, counts[i], h, upper)
	}
	for len(ls) > 1 {
		sort.Slice(ls, func(i, j int) bool { return len(ls[i].Mass) < len(ls[j].Mass) })
		next := make([]*pld.Lattice, 0, (len(ls)+1)/2)
		for i := 0; i+1 < len(ls); i += 2 {
			l := pld.Convolve(ls[i], ls[i+1])
			l.Trim(latticeTrim, upper)
			next = append(next, l)
		}
		if len(ls)%2 == 1 {
			next = append(next, ls[len(ls)-1])
		}
		ls = next
	}
	return ls[0]
}

// Width returns the relative width (upper − lower)/upper of the ε bracket at total δ
// (0 for an exact curve, up to rounding).
func (c *Curve) Width(delta float64) float64 { return c.width(delta) }
