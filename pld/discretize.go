package pld

import (
	"math"

	"github.com/dpkit/dpkit/internal/numeric"
)

// discretize puts the pair described by s on the lattice of spacing h, twice.
//
// Write Y = e^(−L) for the loss under P. The hockey-stick divergence of a composition is
// E_P[(1 − e^ε·Π Y_i)₊], a convex function of each Y_i; so replacing the law of one Y_i
// by a mean-preserving spread can only raise it, a mean-preserving contraction can only
// lower it (Jensen), and moving loss up (Y down) can only raise it.
//
// Upper ("connect the dots", Doroshenko et al. 2022): the P-mass p of the cell (a, b],
// whose Q-mass is q, is split between the grid points a and b so that both P- and
// Q-mass are kept:
//
//	to a: p·θ,  to b: p·(1−θ),  θ = (q/p − e^(−b)) / (e^(−a) − e^(−b)) = expm1(b − l*)/expm1(b − a)
//
// with l* = ln(p/q) ∈ [a, b]: a spread of Y. θ is lowered by its rounding-error bound,
// which moves a little mass up. Mass above the support goes to +∞; mass below it is in
// the first cell. P-masses are inflated by their relative error bounds.
//
// Lower: the cell is merged into one outcome with loss l* = ln(p/q) (post-processing:
// a contraction), and neighbouring merged outcomes are then mixed so that each mixture
// has its loss exactly on a grid point (again post-processing); what is left at the end
// is rounded down to the grid. Mass above the support is merged into the last cell.
// P-masses are deflated by their relative error bounds.
//
// Both discretisations err only to second order in h, unlike rounding each loss to the
// grid, whose error grows as k·h over k compositions.
func discretize(s spec, h, eta float64) (upper, lower *Lattice) {
	return discretizeBounds(s, h, eta, true, true)
}

// discretizeBound returns one of discretize's two lattices, without computing the other.
func discretizeBound(s spec, h, eta float64, upper bool) *Lattice {
	up, lo := discretizeBounds(s, h, eta, upper, !upper)
	if upper {
		return up
	}
	return lo
}

func discretizeBounds(s spec, h, eta float64, wantUpper, wantLower bool) (upper, lower *Lattice) {
	lo, hi := s.support(eta)
	if (hi-lo)/h > maxLatticeBins/4 {
		// The support bounds P- and Q-mass (a subsampled pair needs the base's Q-tails);
		// the lattice needs only the P-mass, which may lie in a much narrower window
		// (a Laplace loss of scale 1e300 has none near −1e300).
		lo, hi = windowTo(s, eta, lo, hi, numeric.Stop{AbsTol: h})
	}
	if n := (hi - lo) / h; !(n <= maxLatticeBins) {
		refuseLattice(n)
	}
	jlo := int64(math.Floor(lo / h))
	jhi := int64(math.Ceil(hi / h))
	if jhi <= jlo {
		jhi = jlo + 1
	}
	n := int(jhi - jlo + 1)
	upper = &Lattice{H: h, Offset: jlo, Mass: make([]float64, n), InfMass: s.infMass()}
	lower = &Lattice{H: h, Offset: jlo - 1, Mass: make([]float64, n+1), InfMass: s.infMass()}

	// A spec whose losses are computed with a rounding (shiftedSpec) may put an atom
	// that belongs on a grid point a few ulps off it: its cells are taken sl higher, so
	// that such an atom is found with its grid point (below). The split then moves it at
	// most sl down, which the read-out's outward rounding of losses covers.
	sl := 0.0
	if g, ok := s.(interface{ gridSlack() float64 }); ok {
		sl = g.gridSlack()
	}
	// Cell jlo−1 is (−∞, jlo·h]: mass at or below the support, all of it put on grid
	// point jlo by the upper bound (moved up).
	cells := make([]outcome, 0, n)
	for j := jlo - 1; j < jhi; j++ {
		a, b := float64(j)*h, float64(j+1)*h
		ca, cb := a+sl, b+sl
		if j == jlo-1 {
			ca = math.Inf(-1)
		}
		p, lq, e := s.cell(ca, cb)
		if p > 0 && wantUpper {
			i := int(j - jlo)
			pu := p * (1 + e)
			if j == jlo-1 {
				upper.Mass[0] += pu
			} else {
				theta := splitFraction(p, lq, a, b, e)
				upper.Mass[i] += pu * theta
				upper.Mass[i+1] += pu * (1 - theta)
			}
		}
		// The lower bound keeps an atom at the grid point b exactly where it is, and merges
		// only the rest of the cell: merging a heavy atom with its cell would move it off
		// the grid (and drag the sweeps, see placeOnGrid).
		if !wantLower {
			continue
		}
		if p > 0 {
			bm := math.Nextafter(b, math.Inf(-1))
			if sl > 0 {
				bm = b - sl
			}
			if ap, _, _ := s.cell(bm, cb); ap > 0 {
				lower.Mass[j+1-lower.Offset] += ap * math.Max(0, 1-e)
				p, lq, _ = s.cell(ca, bm)
			}
		}
		if j == jhi-1 { // the lower bound merges finite mass above the support into the last cell
			tp, tlq, _ := s.cell(cb, math.Inf(1))
			p, lq = addMass(p, lq, tp, tlq)
		}
		switch {
		case p <= 0:
		case math.IsInf(lq, -1):
			// Q-mass not known (underflow): the loss is only known to be above a, where
			// the mass goes (below the support's first grid point nothing is known: it
			// is dropped).
			if j >= jlo {
				lower.Mass[j-lower.Offset] += p * math.Max(0, 1-e)
			}
		default:
			cells = append(cells, outcome{p * math.Max(0, 1-e), lq, j})
		}
	}
	if wantUpper { // the upper bound sends mass above the support to +∞
		if tp, _, _ := s.cell(float64(jhi)*h+sl, math.Inf(1)); tp > 0 {
			upper.InfMass += tp * (1 + 1e-12)
		}
		// Masses that underflowed (to 0, or to an imprecise subnormal) are covered by an
		// absolute term per cell.
		upper.Err += float64(n+1) * underflowErr
	}
	if wantLower {
		placeOnGrid(cells, h, lower)
	}
	return upper, lower
}

// outcome is a merged cell: P-mass p, log Q-mass lq (loss ln p − lq), from cell
// j = (jh, (j+1)h].
type outcome struct {
	p, lq float64
	j     int64
}

// empty reports whether the outcome holds no mass.
func (o outcome) empty() bool { return o.p == 0 && math.IsInf(o.lq, -1) }

// plus returns the outcome merging o and a.
func (o outcome) plus(a outcome) outcome {
	o.p, o.lq = o.p+a.p, logAdd(o.lq, a.lq)
	return o
}

// part returns the fraction f of o (its loss unchanged).
func (o outcome) part(f float64) outcome {
	return outcome{o.p * f, o.lq + math.Log(f), o.j}
}

// placeOnGrid is the lower discretisation's second step: it mixes merged outcomes so
// that every mixture has its loss exactly on a grid point (post-processing, which can
// only lower the curve). Below the heaviest cell it sweeps upward: a carried outcome
// (loss ≤ g) is completed with the fraction of the next one (loss ≥ g) that brings the
// mixture to g, or absorbs all of it when that is not enough; above the heaviest cell it
// sweeps downward symmetrically. Sweeping toward the mode keeps the carried mass smaller
// than the mass available to complete it. The two carries left at the mode are mixed
// onto a grid point between them, and only what remains of one of them is rounded down
// to the grid: at most one cell's mass moved down by less than h, so the whole step errs
// to second order in h (rounding every outcome down would err to first order).
func placeOnGrid(cells []outcome, h float64, out *Lattice) {
	if len(cells) == 0 {
		return
	}
	m := 0
	for i, c := range cells {
		if c.p > cells[m].p {
			m = i
		}
	}
	emit := func(p float64, g int64) {
		i := g - out.Offset
		if i < 0 {
			return // below the lattice: dropping mass is safe for a lower bound
		}
		out.Mass[min(i, int64(len(out.Mass))-1)] += p
	}
	// Outcomes that the sweeps cannot place wait in rest, for settle once all is emitted.
	var rest []outcome
	roundDown := func(c outcome) {
		if c.p > 0 {
			rest = append(rest, c)
		}
	}

	// Upward over cells[0:m]: the carry's loss is ≤ g·h; it ends below the mode.
	var up outcome
	var gUp int64
	up.lq = math.Inf(-1)
	for _, a := range cells[:m] {
		if up.empty() {
			up, gUp = a, a.j+1
			continue
		}
		gl := float64(gUp) * h
		ea := excess(a.p, a.lq, gl)
		if ea <= 0 { // a is not above g (rounding): it joins the carry
			up = up.plus(a)
			continue
		}
		// Rounded up: the mixture's loss is ≥ g (and a carry that rounding put above g
		// is placed at g as it is: f = 0).
		f := math.Max(0, -excess(up.p, up.lq, gl)/ea*(1+1e-9))
		if f >= 1 { // not enough to lift the carry to g: absorb a, keep g
			up = up.plus(a)
			continue
		}
		emit(up.p+f*a.p, gUp)
		up, gUp = a.part(1-f), a.j+1
	}

	// Downward over cells[m:]: the carry's loss is ≥ g·h.
	var down outcome
	var gDown int64
	down.lq = math.Inf(-1)
	for i := len(cells) - 1; i >= m; i-- {
		a := cells[i]
		if down.empty() {
			down, gDown = a, a.j
			continue
		}
		gl := float64(gDown) * h
		ec := excess(down.p, down.lq, gl)
		if ec <= 0 { // the carry is not above g (rounding): round it down, start afresh
			roundDown(down)
			down, gDown = a, a.j
			continue
		}
		ea := excess(a.p, a.lq, gl)
		if ea >= 0 { // a is not below g (rounding): it joins the carry
			down = down.plus(a)
			continue
		}
		f := ec / -ea * (1 - 1e-9) // rounded down: the mixture's loss is ≥ g
		if f >= 1 {                // a cannot bring the carry down to g: absorb it, keep g
			down = down.plus(a)
			continue
		}
		emit(down.p+f*a.p, gDown)
		down, gDown = a.part(1-f), a.j
	}
	if up.p > 0 {
		up.j = gUp - 1
	}
	meet(&up, &down, h, emit)
	roundDown(up)
	roundDown(down)
	for _, c := range rest {
		settle(c, h, out, emit)
	}
}

// settle places an outcome that the sweeps left off the grid. Its loss l is between grid
// points g and g+1. Mixed with mass already placed below g that brings the mixture's
// loss down to g, or else with mass placed above g+1 that brings it up to g+1, it lands
// on the grid at a cost second order in h, where rounding it down to g would cost first
// order (the second way is what an outcome just above a heavy atom at the bottom of the
// support needs: nothing lies below it). Without enough mass it is rounded down (to its
// cell's bottom when its Q-mass is not known).
func settle(c outcome, h float64, out *Lattice, emit func(float64, int64)) {
	if math.IsInf(c.lq, -1) {
		emit(c.p, c.j)
		return
	}
	g := min(c.j+1, int64(math.Floor(lossDown(c.p, c.lq)/h)))
	if mixOnto(c, g, -1, h, out, emit) || mixOnto(c, g+1, 1, h, out, emit) {
		return
	}
	emit(c.p, g)
}

// mixOnto mixes c with mass already placed at the grid points beyond to (step −1: below
// it, for c above to; +1: above it, for c below to), nearest first, all of each but a
// fraction t of the last, so that the mixture's loss is exactly grid point to; it reports
// whether the mass there sufficed (nothing is changed when not). A placed mass M at grid
// point g has loss ≥ g·h (placing rounds down); taking it as exactly g·h, with its Q-mass
// rounded up, only lowers the mixture's loss, and t is rounded so that the mixture's loss
// is ≥ to·h: recording it at to·h moves loss down, which a lower bound may. (An earlier
// version rounded t up also for mass below to, which put the mixture's loss a relative
// 1e-9 of its distance below to·h.)
func mixOnto(c outcome, to, step int64, h float64, out *Lattice, emit func(float64, int64)) bool {
	gl := float64(to) * h
	need := excess(c.p, c.lq, gl) // the mixture's excess is need + Σ t_g·excess(M_g)
	if need == 0 || (need > 0) != (step < 0) {
		return false
	}
	p := c.p
	for g := to + step; ; g += step {
		i := g - out.Offset
		if i < 0 || i >= int64(len(out.Mass)) {
			return false
		}
		M := out.Mass[i]
		if M <= 0 {
			continue
		}
		lqM, eM := logQMass(M, float64(g)*h)
		lqM += eM + 4*u*math.Abs(lqM) // Q-mass rounded up
		ea := excess(M, lqM, gl)
		if t := math.Abs(need / ea); t < 1 {
			if step < 0 {
				t *= 1 - 1e-9
			} else {
				t *= 1 + 1e-9
			}
			// Commit: every nearer placed mass joins whole, this one by t.
			for g2 := to + step; g2 != g; g2 += step {
				p += out.Mass[g2-out.Offset]
				out.Mass[g2-out.Offset] = 0
			}
			out.Mass[i] -= t * M
			emit(p+t*M, to)
			return true
		}
		need += ea
	}
}

// meet mixes the two carries left by placeOnGrid's sweeps onto a grid point between
// their losses, when there is one: all of one carry and the fraction of the other that
// puts the mixture exactly there are emitted, and the carries keep what is left (which
// the caller rounds down). Of the grid points between the two losses it takes the one
// whose leftover loses least when rounded down (mass times distance to the grid point
// below).
func meet(a, b *outcome, h float64, emit func(float64, int64)) {
	if a.p <= 0 || b.p <= 0 || math.IsInf(a.lq, -1) || math.IsInf(b.lq, -1) {
		return
	}
	lo, hi := a, b
	if lossDown(a.p, a.lq) > lossDown(b.p, b.lq) {
		lo, hi = b, a
	}
	gLo := int64(math.Ceil((math.Log(lo.p) - lo.lq) / h))
	gHi := int64(math.Floor(lossDown(hi.p, hi.lq) / h))
	type plan struct {
		g            int64
		emitP        float64
		newLo, newHi outcome
		cost         float64
	}
	var best *plan
	leftCost := func(c outcome) float64 {
		if c.p <= 0 {
			return 0
		}
		l := (math.Log(c.p) - c.lq) / h
		return c.p * (l - math.Floor(l))
	}
	for g := gLo; g <= gHi && g-gLo < 8; g++ {
		gl := float64(g) * h
		el, eh := excess(lo.p, lo.lq, gl), excess(hi.p, hi.lq, gl)
		if el > 0 || eh <= 0 {
			continue // rounding put a loss on the wrong side of g
		}
		var pl plan
		if f := -el / eh * (1 + 1e-9); f <= 1 { // rounded up: the mixture's loss is ≥ g
			pl = plan{g: g, emitP: lo.p + f*hi.p, newHi: hi.part(1 - f)}
		} else {
			f := eh / -el * (1 - 1e-9) // rounded down: the mixture's loss is ≥ g
			pl = plan{g: g, emitP: hi.p + f*lo.p, newLo: lo.part(1 - f)}
		}
		pl.cost = leftCost(pl.newLo) + leftCost(pl.newHi)
		if best == nil || pl.cost < best.cost {
			best = &pl
		}
	}
	if best == nil {
		return // both in one cell: no grid point between them
	}
	emit(best.emitP, best.g)
	*lo, *hi = best.newLo, best.newHi
	lo.lq, hi.lq = zeroLq(lo), zeroLq(hi)
}

// zeroLq returns o's lq, or −Inf for an outcome without P-mass left.
func zeroLq(o *outcome) float64 {
	if o.p == 0 {
		return math.Inf(-1)
	}
	return o.lq
}

// lossErr returns the loss ln p − lq of an outcome and a bound on its rounding error
// (the roundings of ln p, of the difference, and of lq's own magnitude; errors of the
// masses themselves are the callers').
func lossErr(p, lq float64) (l, err float64) {
	lp := math.Log(p)
	l = lp - lq
	return l, u*(math.Abs(lp)+4*math.Abs(lq)+math.Abs(l)) + 2*u
}

// lossDown returns ln p − lq lowered by twice a bound on its rounding error.
func lossDown(p, lq float64) float64 {
	l, err := lossErr(p, lq)
	return l - 2*err - 1e-300
}

// splitFraction returns θ of the upper split of a cell (a, b] holding P-mass p and log
// Q-mass lq with errors ≤ e (see spec.cell), lowered by a bound on its own error so that
// the split never moves mass down. For wide cells (b − a > 1) θ is evaluated as
// e^(a−l*)·(1 − e^(−(b−l*)))/(1 − e^(−(b−a))), which does not overflow.
func splitFraction(p, lq, a, b, e float64) float64 {
	if math.IsInf(lq, -1) {
		return 0 // loss not known within the cell, or +∞-like: all to b
	}
	l, le := lossErr(p, lq)
	if l >= b {
		return 0
	}
	if l <= a {
		return 1 // mass from below the cell (first cell, or a subsampled boundary)
	}
	var theta float64
	if b-a <= 1 {
		theta = math.Expm1(b-l) / math.Expm1(b-a)
	} else {
		theta = math.Exp(a-l) * -math.Expm1(-(b - l)) / -math.Expm1(-(b - a))
	}
	// dθ/dl* = −e^(b−l*)/expm1(b−a) ≤ e^h/expm1(h) = 1/(1 − e^(−h)) in size: the error
	// of l* carries over multiplied by it; 8u more for the exponentials and the division.
	errL := 2*e + 2*le + 4*u
	theta -= errL/-math.Expm1(-(b-a)) + 8*u
	return math.Max(theta, 0)
}

// excess returns p − e^g·Q, Q = e^lq (> 0 when the loss ln p − lq is above g), computed
// as p·(1 − e^(g − l)) for accuracy, with the loss first lowered by a bound on its
// rounding error: excesses are under-stated, so the fraction f in add is over-stated
// and every mixture placed at g has loss ≥ g (placing it there rounds down).
func excess(p, lq, g float64) float64 {
	if p == 0 {
		return -math.Exp(lq + g)
	}
	if math.IsInf(lq, -1) {
		return p
	}
	l, err := lossErr(p, lq)
	l -= 2*err + 8*u*math.Max(math.Abs(l), math.Abs(g)) + 1e-300
	return -p * math.Expm1(g-l)
}
