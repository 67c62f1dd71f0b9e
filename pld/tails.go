package pld

import (
	"math"

	"github.com/dpkit/dpkit/internal/numeric"
)

// Two resolutions for releases with long, light tails.
//
// A Poisson-subsampled Gaussian's loss ln(1 − q + q·e^L) lies within a few q·√(e−1)
// of 0 but reaches out to about L − ln(1/q) for rare large L: on a lattice fine enough
// for one release (startRatio bins per standard deviation) its support is tens of
// thousands of bins, nearly all of negligible mass, and every squaring pays for them —
// in FFT size and in the FFT's error bound, which grows with the size and must be tiny
// when a square is repeated 10^5 times.
//
// A tailed PLD keeps that mass on the coarser lattice the composition will end on: the
// distribution is bulk + tail, bulk on the working lattice and tail on a lattice of
// spacing H, a power-of-two multiple of bulk's (its grid points are bulk's). Composing
// two of them is four compositions (bulk⊛bulk on the fine lattice, bulk⊛tail by
// composeCoarse, tail⊛tail on the coarse one); the square's bulk then sheds at most
// keep of mass at each end into the tail (splitTails). δ(ε) is additive over a
// partition of the outcomes, so discretising each part (discretize, onto) bounds the
// whole in the same direction; Rel and Err add up as for a mixture (addPLD).
//
// Moving mass m onto the coarse lattice moves each loss by less than H, so a part that
// is repeated c times in the final composition moves its mean loss — and ε(δ), to first
// order — by at most c·m·H at each end. tailPlan chooses keep so that this is a small
// fraction of what the coarsenings of the bulk cost anyway (a 1/(3·ratio²) share of the
// variance each).
type tailed struct{ bulk, tail *PLD }

// tailPlan says where the tails of a self-composition go: onto spacing H, keeping at
// most keep(j) of mass at each end of level j's bulk (level j is repeated k/2^j times).
type tailPlan struct {
	H   float64
	k   int64
	eps float64 // allowed first-order move of the mean loss per level and end
}

func (t *tailPlan) keep(j int) float64 {
	return math.Min(maxKeep, t.eps/(float64(t.k>>uint(j))*t.H))
}

// maxKeep caps the mass a level's bulk sheds at each end: the top levels, repeated a
// few times only, would otherwise be allowed to shed most of it.
const maxKeep = 1e-3

// planTails returns the plan for the k-fold composition of a release of loss standard
// deviation sd0 that starts on spacing h: H is the spacing its top power will have
// (coarsening's rule applied to the predicted √(2^j)·sd0, at most hMax), and each level
// may move the mean loss by sd_k/(4·ratio²) at each end (sd_k = √k·sd0; a coarsening
// moves the variance by about sd_k²/(3·ratio²), hence ε by about z/(6·ratio²)·sd_k).
// It returns nil when H is less than 8 times h (nothing to gain).
func planTails(sd0, h, hMax, ratio float64, k int64) *tailPlan {
	H := h
	top := 0
	for k>>uint(top+1) > 0 {
		top++
	}
	for j := 1; j <= top; j++ {
		sd := sd0 * math.Sqrt(math.Exp2(float64(j)))
		for 2*H <= hMax*(1+1e-12) && sd/(2*H) >= ratio {
			H *= 2
		}
	}
	if H < 8*h {
		return nil
	}
	return &tailPlan{H: H, k: k, eps: math.Sqrt(float64(k)) * sd0 / (4 * ratio * ratio)}
}

// newTailed discretises the pair's directions: within the support that leaves out
// plan.keep(0) at each end on spacing h, the rest on plan.H. ok is false when that window
// is not much narrower than the whole support (a quarter or more), or the directions'
// atoms are on a shifted grid: then a plain lattice does as well.
func newTailed(h, eta float64, plan *tailPlan, specs ...spec) (t tailed, ok bool) {
	bulk := &PLD{h: h, trim: eta}
	tail := &PLD{h: plan.H, trim: eta}
	gain := false
	for _, s := range specs {
		if os, isShifted := s.(interface{ atomOffset() float64 }); isShifted && os.atomOffset() != 0 {
			return tailed{}, false
		}
		flo, fhi := s.support(eta)
		lo, hi := window(s, plan.keep(0), flo, fhi)
		lo, hi = plan.H*math.Floor(lo/plan.H), plan.H*math.Ceil(hi/plan.H)
		if fhi-flo > 4*(hi-lo) {
			gain = true
		}
		up, lower := discretize(partSpec{s, lo, hi, true}, h, eta)
		bulk.sides = append(bulk.sides, side{up, lower})
		up, lower = discretize(partSpec{s, lo, hi, false}, plan.H, eta)
		tail.sides = append(tail.sides, side{up, lower})
	}
	return tailed{bulk, tail}, gain
}

// window returns lo ≤ hi within [flo, fhi] such that the pair's P-mass below lo and
// above hi is at most keep each (by bisection on the cell masses, 60 steps; any window
// is valid, a wider one only costs more bins).
func window(s spec, keep, flo, fhi float64) (lo, hi float64) {
	return windowTo(s, keep, flo, fhi, numeric.Stop{MaxIter: 60})
}

// windowTo is window with a given stopping rule.
func windowTo(s spec, keep, flo, fhi float64, stop numeric.Stop) (lo, hi float64) {
	above := func(x float64) (bool, error) { // P-mass above x is more than keep
		p, _, _ := s.cell(x, math.Inf(1))
		return p > keep, nil
	}
	hi = fhi
	if ok, _ := above(flo); !ok {
		hi = flo
	} else if flo < fhi {
		_, hi, _ = numeric.Bisect(flo, fhi, above, stop)
	}
	below := func(x float64) (bool, error) { // P-mass at or below x is at most keep
		p, _, _ := s.cell(math.Inf(-1), x)
		return p <= keep, nil
	}
	lo = flo
	if ok, _ := below(hi); ok {
		lo = hi
	} else if flo < hi {
		lo, _, _ = numeric.Bisect(flo, hi, below, stop)
	}
	return lo, hi
}

// partSpec is the part of a pair's outcomes whose loss is in (lo, hi] (inside) or
// outside it.
type partSpec struct {
	s      spec
	lo, hi float64
	inside bool
}

func (p partSpec) cell(a, b float64) (pm, lq, relErr float64) {
	if p.inside {
		a, b = math.Max(a, p.lo), math.Min(b, p.hi)
		if a >= b {
			return 0, math.Inf(-1), 0
		}
		return p.s.cell(a, b)
	}
	lq = math.Inf(-1)
	if a < p.lo {
		x, y, e := p.s.cell(a, math.Min(b, p.lo))
		pm, lq, relErr = x, y, e
	}
	if b > p.hi {
		x, y, e := p.s.cell(math.Max(a, p.hi), b)
		pm, lq = addMass(pm, lq, x, y)
		relErr = math.Max(relErr, e) + 2*u
	}
	return pm, lq, relErr
}

func (p partSpec) support(eta float64) (lo, hi float64) {
	if p.inside {
		return p.lo, p.hi
	}
	return p.s.support(eta)
}

func (p partSpec) infMass() float64 {
	if p.inside {
		return 0
	}
	return p.s.infMass()
}

func (p partSpec) atomUnit() float64 { return p.s.atomUnit() }
func (p partSpec) maxLoss() float64  { return p.s.maxLoss() }
func (p partSpec) variance() float64 { return p.s.variance() }

// compose returns a ⊛ b, the square's bulk shedding at most keep at each end into the
// tail (on spacing H).
func (a tailed) compose(b tailed, H, keep float64) tailed {
	bulk, _ := a.bulk.Compose(b.bulk)
	if a.tail == nil && b.tail == nil {
		return tailed{bulk: bulk}
	}
	var parts []*PLD
	if a.tail != nil {
		parts = append(parts, composeOnto(b.bulk, a.tail))
	}
	switch {
	case b.tail != nil && a == b: // a square: the two cross terms are equal
		parts = append(parts, parts[0])
	case b.tail != nil:
		parts = append(parts, composeOnto(a.bulk, b.tail))
	}
	if a.tail != nil && b.tail != nil {
		tt, _ := a.tail.Compose(b.tail)
		parts = append(parts, tt)
	}
	bulk, spill := bulk.splitTails(H, keep)
	return tailed{bulk, addPLD(append(parts, spill)...)}
}

// merged returns bulk + tail on one lattice: the tail's (exact) when the bulk has
// reached its spacing, else the bulk's, on which the tail is exact too (refine).
func (t tailed) merged() *PLD {
	switch {
	case t.tail == nil:
		return t.bulk
	case t.bulk.h == t.tail.h:
		return addPLD(t.bulk, t.tail)
	}
	return addPLD(t.bulk, t.tail.refine(t.bulk.h))
}

// onto returns t ⊛ acc on acc's lattice (composeOnto for each part; a part coarser than
// acc is first refined onto it, exactly).
func (t tailed) onto(acc *PLD) *PLD {
	out := composeOnto(t.bulk, acc)
	if t.tail == nil {
		return out
	}
	tail := t.tail
	if tail.h > acc.h {
		tail = tail.refine(acc.h)
	}
	return addPLD(out, composeOnto(tail, acc))
}

// withTol returns t with the convolution allowance errTol for its bulk and an eighth of
// it for its tail (whose masses, hence FFT errors, are small).
func (t tailed) withTol(errTol float64) tailed {
	b := *t.bulk
	b.errTol = errTol
	out := tailed{bulk: &b}
	if t.tail != nil {
		c := *t.tail
		c.errTol = errTol / 8
		out.tail = &c
	}
	return out
}

// sd returns the standard deviation of the upper distributions' finite loss, bulk and
// tail together (largest over the sides).
func (t tailed) sd() float64 {
	if t.tail == nil {
		return t.bulk.sd()
	}
	return sdOf(t.bulk, t.tail)
}

// splitTails returns p's lattices cut where at most keep of mass lies beyond each end,
// and what lies beyond, re-discretised onto spacing H (nil when nothing is cut).
func (p *PLD) splitTails(H, keep float64) (bulk, spill *PLD) {
	bulk = &PLD{h: p.h, sides: make([]side, len(p.sides)), trim: p.trim, errTol: p.errTol, m: p.m}
	spill = &PLD{h: H, sides: make([]side, len(p.sides)), trim: p.trim, errTol: p.errTol, m: p.m}
	cut := false
	for i, s := range p.sides {
		var c [2]bool
		bulk.sides[i].upper, spill.sides[i].upper, c[0] = s.upper.splitTails(H, keep, true)
		bulk.sides[i].lower, spill.sides[i].lower, c[1] = s.lower.splitTails(H, keep, false)
		cut = cut || c[0] || c[1]
	}
	if !cut {
		return p, nil
	}
	return bulk, spill
}

func (l *Lattice) splitTails(H, keep float64, upper bool) (bulk, spill *Lattice, cut bool) {
	lo, acc := 0, 0.0
	for lo < len(l.Mass)-1 && acc+l.Mass[lo] <= keep {
		acc += l.Mass[lo]
		lo++
	}
	hi := len(l.Mass) - 1
	for acc = 0; hi > lo && acc+l.Mass[hi] <= keep; hi-- {
		acc += l.Mass[hi]
	}
	empty := &Lattice{H: H, Shift: l.Shift, Mass: []float64{0}}
	if lo == 0 && hi == len(l.Mass)-1 {
		return l, empty, false
	}
	bulk = &Lattice{H: l.H, Offset: l.Offset + int64(lo), Shift: l.Shift, Mass: append([]float64(nil), l.Mass[lo:hi+1]...),
		InfMass: l.InfMass, Rel: l.Rel, Err: l.Err}
	spill = empty
	part := func(a, b int) *Lattice {
		x := &Lattice{H: l.H, Offset: l.Offset + int64(a), Shift: l.Shift, Mass: l.Mass[a:b], Rel: l.Rel}
		return x.onto(H, true, upper)
	}
	if lo > 0 {
		spill = part(0, lo)
	}
	if hi < len(l.Mass)-1 {
		spill = sumLattices(spill, part(hi+1, len(l.Mass)))
	}
	return bulk, spill, true
}

// addPLD returns the sum of PLDs on one lattice (parts of one distribution; nil parts
// are skipped).
func addPLD(ps ...*PLD) *PLD {
	var out *PLD
	for _, p := range ps {
		if p == nil {
			continue
		}
		if out == nil {
			out = &PLD{h: p.h, sides: append([]side(nil), p.sides...), trim: p.trim, errTol: p.errTol, m: p.m}
			continue
		}
		n := max(len(out.sides), len(p.sides))
		sides := make([]side, n)
		for i := range n {
			a, b := out.sides[min(i, len(out.sides)-1)], p.sides[min(i, len(p.sides)-1)]
			sides[i] = side{sumLattices(a.upper, b.upper), sumLattices(a.lower, b.lower)}
		}
		out.sides, out.trim, out.errTol = sides, max(out.trim, p.trim), minTol(out.errTol, p.errTol)
	}
	return out
}

// sumLattices returns a + b (same spacing and Shift). Each bin is a sum of two
// non-negative values, each within its Rel: the sum is within the larger Rel and one
// rounding; absolute errors add.
func sumLattices(a, b *Lattice) *Lattice {
	// An all-zero lattice has no position worth keeping (its Offset may be far away).
	if total(b.Mass) == 0 {
		a, b = b, a
	}
	if total(a.Mass) == 0 {
		out := *b
		out.Mass = append([]float64(nil), b.Mass...)
		out.InfMass, out.Rel, out.Err = a.InfMass+b.InfMass, (1+math.Max(a.Rel, b.Rel))*(1+u)-1, a.Err+b.Err
		return &out
	}
	lo := min(a.Offset, b.Offset)
	hi := max(a.Offset+int64(len(a.Mass)), b.Offset+int64(len(b.Mass)))
	out := &Lattice{H: a.H, Offset: lo, Shift: a.Shift, Mass: make([]float64, hi-lo),
		InfMass: a.InfMass + b.InfMass, Rel: (1+math.Max(a.Rel, b.Rel))*(1+u) - 1, Err: a.Err + b.Err}
	copy(out.Mass[a.Offset-lo:], a.Mass)
	for i, m := range b.Mass {
		out.Mass[b.Offset-lo+int64(i)] += m
	}
	return out
}
