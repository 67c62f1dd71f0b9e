package pld

import (
	"math"
	"math/bits"

	"gonum.org/v1/gonum/floats"
)

// coarseRatio is the number of lattice bins per standard deviation above which a power
// in selfComposeAdaptive is coarsened: each coarsening moves the variance of the final
// loss by about 1/(3·coarseRatio²) of itself (merge-and-mix, the larger of the two
// bounds' errors), and there are at most log2(k) of them.
const coarseRatio = 128

// maxCoarseSpacing bounds the spacing on which composeCoarse scales Q-masses by e^(cell
// top − loss) ≤ e^spacing; a coarser lattice (losses of hundreds and more) takes the
// re-discretisation path.
const maxCoarseSpacing = 256

// maxCoarseCells bounds the cells a finer PLD may span on a coarser lattice for
// composeCoarse's direct sums; a wider one is smooth there and re-discretised instead.
const maxCoarseCells = 64

// selfComposeAdaptive returns the k-fold composition of p by repeated squaring, where a
// power whose standard deviation exceeds ratio bins is re-discretised onto a lattice
// 2^j times coarser (at most hMax): the powers stay a few hundred bins per standard
// deviation whatever k, so a release can start on a lattice fine enough to resolve it
// (its own standard deviation) and the composition still costs O(log k) small
// convolutions. Coarsening a smooth power errs to second order in the new spacing.
//
// The powers p^(2^j) whose bits are set in k are then combined from the largest down: a
// narrow power on a finer lattice joins the wider, coarser one by composeCoarse.
func (p *PLD) selfComposeAdaptive(k int64, hMax, ratio float64) *PLD {
	return tailed{bulk: p}.selfCompose(k, hMax, ratio, nil)
}

// selfCompose is selfComposeAdaptive for a PLD held at two resolutions (see tailed): each
// square's bulk sheds its ends into the tail as plan says, is coarsened as its total
// standard deviation grows (never beyond the tail's spacing), and joins the tail once it
// reaches that spacing. With plan nil (and no tail) it is plain repeated squaring.
func (t tailed) selfCompose(k int64, hMax, ratio float64, plan *tailPlan) *PLD {
	errTol := t.bulk.errTol
	// pows[j] = t^(2^j), kept only where bit j of k is set (the others are not needed
	// once squared: at k = 10^12 that halves what is held).
	var pows []tailed
	pow := t
	for j := 0; ; j++ {
		if k>>uint(j)&1 == 1 {
			pows = append(pows, pow)
		} else {
			pows = append(pows, tailed{})
		}
		if k>>uint(j+1) == 0 {
			break
		}
		// The square of level j appears k/2^(j+1) times in the result: its error
		// allowance is the release's divided by that (so each level adds about errTol).
		sq := pow
		if errTol > 0 {
			sq = pow.withTol(errTol / float64(k>>uint(j+1)))
		}
		var H, keep float64
		if plan != nil {
			H, keep = plan.H, plan.keep(j+1)
		}
		pow = sq.compose(sq, H, keep)
		limit := hMax
		if pow.tail != nil {
			limit = pow.tail.h
		}
		if f := coarsening(pow.sd(), pow.bulk.h, limit, ratio); f > 1 {
			pow.bulk = pow.bulk.rediscretize(pow.bulk.h*f, true)
		}
		if pow.tail != nil && pow.bulk.h == pow.tail.h {
			pow = tailed{bulk: pow.merged()}
		}
	}
	var acc *PLD
	for j := bits.Len64(uint64(k)) - 1; j >= 0; j-- {
		if k>>uint(j)&1 == 0 {
			continue
		}
		// Each join happens once: it may use the release's whole allowance.
		pow := pows[j].withTol(errTol)
		if acc == nil {
			acc = pow.merged()
			continue
		}
		acc.errTol = errTol
		acc = pow.onto(acc)
	}
	acc.errTol = errTol
	return acc
}

// coarsening returns the power of two by which a spacing h can grow (1 for none): the
// largest keeping at least ratio bins per standard deviation sd, and the spacing ≤ hMax.
func coarsening(sd, h, hMax, ratio float64) float64 {
	f := 1.0
	for 2*f*h <= hMax*(1+1e-12) && sd/(2*f*h) >= ratio {
		f *= 2
	}
	return f
}

// sd returns the standard deviation of the upper distribution's finite loss (largest
// over the sides).
func (p *PLD) sd() float64 { return sdOf(p) }

// sdOf returns the standard deviation of the finite loss of the upper distribution that
// the PLDs are parts of (largest over the sides). Losses are measured from the first
// part's lowest grid point, so the moments do not cancel for a lattice far from 0.
func sdOf(ps ...*PLD) float64 {
	s := 0.0
	for i := range ps[0].sides {
		ref := ps[0].sides[i].upper
		x0 := ref.Shift + ref.H*float64(ref.Offset)
		var m0, m1, m2 float64
		for _, p := range ps {
			l := p.lattice(i, true)
			for j, m := range l.Mass {
				x := l.Shift + l.H*float64(l.Offset+int64(j)) - x0
				m0, m1, m2 = m0+m, m1+m*x, m2+m*x*x
			}
		}
		if m0 > 0 {
			m1 /= m0
			s = math.Max(s, math.Sqrt(math.Max(m2/m0-m1*m1, 0)))
		}
	}
	return s
}

// composeOnto composes a PLD with one on a lattice 2^j times coarser (or the same).
// When fine spans few cells of the coarse lattice it is binned into them and the cell
// masses of the composition are summed directly (composeCoarse); otherwise fine is
// smooth at the coarse spacing and is re-discretised onto it.
func composeOnto(fine, coarse *PLD) *PLD {
	if fine.h == coarse.h {
		out, _ := fine.Compose(coarse)
		return out
	}
	if fine.Bins() <= maxCoarseCells*int(math.Round(coarse.h/fine.h)) && coarse.h <= maxCoarseSpacing {
		return composeCoarse(fine, coarse)
	}
	out, _ := fine.rediscretize(coarse.h, true).Compose(coarse)
	return out
}

// composeCoarse composes fine (spacing hf) with coarse (spacing hc = 2^m·hf) on the
// coarse lattice. Every loss of coarse is a grid point g·hc, so a loss of fine in the
// cell (c·hc, (c+1)·hc] lands, added to it, in the cell (c+g) — whose P- and Q-mass
// are therefore Σ_g P_coarse(g)·P_fine(cell c) and the same for Q (Q = P·e^(−loss)),
// summed here directly (non-negative terms: relative error ≤ terms·u). The composition,
// known by its cell masses, is then discretised (spread / merge-and-mix) — second order
// in hc, since it is as smooth as coarse — without ever holding it on the fine lattice.
func composeCoarse(fine, coarse *PLD) *PLD {
	r := int64(math.Round(coarse.h / fine.h))
	n := max(len(fine.sides), len(coarse.sides))
	out := &PLD{h: coarse.h, sides: make([]side, n), trim: max(fine.trim, coarse.trim), errTol: minTol(fine.errTol, coarse.errTol), m: anyMeter(fine, coarse)}
	each(2*n, func(t int) {
		i, upper := t/2, t%2 == 0
		f, c := fine.lattice(i, upper), coarse.lattice(i, upper)
		cells, move := coarseCells(f, c, r)
		out.m.add(int64(len(f.Mass)) + int64(len(c.Mass))*int64(len(cells.p)-len(c.Mass)+1) + discretizeWork*int64(len(cells.p)))
		l := discretizeBound(cells, coarse.h, 0, upper)
		l.Offset += move
		l.Shift, l.Err, l.Rel = f.Shift+c.Shift, productErr(f, c), (1+f.Rel)*(1+c.Rel)-1
		l.Trim(out.trimMass(), upper)
		out.sides[i].set(upper, l)
	})
	return out
}

// coarseCells returns the cell masses (spacing r·f.H) of the composition of the lattice
// f with the lattice c of spacing r·f.H. Losses are measured from grid points near the
// middle of each lattice (nf·f.H, a coarse grid point, and nc·c.H): the cells are those
// of the composition moved down by (nf/r + nc)·c.H.
//
// Q-masses are summed scaled by the top of their cell: a fine atom of P-mass m at loss x
// in the coarse cell with top t adds m·e^(t − x) (t − x ∈ [0, c.H)) to its cell's scaled
// Q-mass; since every loss of c is a grid point g, a cell k = g + j of the composition
// has top T_k = g + t_j, and its Q-mass e^(−T_k)·Σ_g P_c(g)·fqs_j is a sum of
// non-negative products, whatever the losses (composeOnto keeps c.H small enough for
// e^(c.H)).
func coarseCells(f, c *Lattice, r int64) (cells *cellsSpec, move int64) {
	// Bin f: fine index n lies in the coarse cell ceil(n/r) − 1.
	ceilDiv := func(a, b int64) int64 {
		q := a / b
		if a%b != 0 && a > 0 {
			q++
		}
		return q
	}
	nf := ceilDiv(f.Offset+int64(len(f.Mass)/2), r) * r
	nc := c.Offset + int64(len(c.Mass)/2)
	c0 := ceilDiv(f.Offset-nf, r) - 1
	c1 := ceilDiv(f.Offset-nf+int64(len(f.Mass))-1, r) - 1
	fp := make([]float64, c1-c0+1)
	fqs := make([]float64, c1-c0+1)
	for i, m := range f.Mass {
		if m > 0 {
			nIdx := f.Offset - nf + int64(i)
			j := ceilDiv(nIdx, r) - 1 - c0
			fp[j] += m
			// top of coarse cell j + c0 minus the atom's loss, in fine steps: in [0, r)
			fqs[j] += m * math.Exp(float64((j+c0+1)*r-nIdx)*f.H)
		}
	}
	cells = &cellsSpec{h: c.H, jlo: c.Offset - nc + c0}
	cells.p = make([]float64, len(c.Mass)+len(fp)-1)
	cells.lq = make([]float64, len(cells.p))
	for g, pg := range c.Mass {
		if pg <= 0 {
			continue
		}
		floats.AddScaled(cells.p[g:g+len(fp)], pg, fp)
		floats.AddScaled(cells.lq[g:g+len(fp)], pg, fqs)
	}
	for k, qs := range cells.lq {
		top := float64(cells.jlo+int64(k)+1) * c.H
		cells.lq[k] = linearToLog(qs) - top
	}
	// The exponentials err by a few u, the sums by their length.
	cells.relErr = float64(len(f.Mass)+len(c.Mass)+16) * u
	fTot, cTot := total(f.Mass), total(c.Mass)
	cells.inf = f.InfMass*(c.InfMass+cTot) + fTot*c.InfMass
	cells.trim()
	return cells, nf/r + nc
}

// productErr is the absolute error (Err) the composition of a and b inherits: by the
// mixture argument of Lattice, δ_a⊛b is within (1+Rel_b)·Err_a·|b| + (1+Rel_a)·Err_b·|a|
// + Err_a·Err_b of the composition of the computed lattices (|·| total mass).
func productErr(a, b *Lattice) float64 {
	return a.Err*(total(b.Mass)+b.InfMass)*(1+b.Rel) + b.Err*(total(a.Mass)+a.InfMass)*(1+a.Rel) + a.Err*b.Err
}

// refine returns p on the lattice of spacing h = p.h/2^m: the same atoms, every 2^m-th
// bin (exact).
func (p *PLD) refine(h float64) *PLD {
	r := int64(math.Round(p.h / h))
	out := &PLD{h: h, sides: make([]side, len(p.sides)), trim: p.trim, errTol: p.errTol, m: p.m}
	spread := func(l *Lattice) *Lattice {
		o := &Lattice{H: h, Offset: l.Offset * r, Shift: l.Shift, InfMass: l.InfMass, Rel: l.Rel, Err: l.Err}
		o.Mass = make([]float64, (int64(len(l.Mass))-1)*r+1)
		for i, m := range l.Mass {
			o.Mass[int64(i)*r] = m
		}
		return o
	}
	for i, s := range p.sides {
		out.sides[i] = side{spread(s.upper), spread(s.lower)}
	}
	return out
}
