package pld

import "math"

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
	lo, hi := s.support(eta)
	jlo := int64(math.Floor(lo / h))
	jhi := int64(math.Ceil(hi / h))
	if jhi <= jlo {
		jhi = jlo + 1
	}
	n := int(jhi - jlo + 1)
	upper = &Lattice{H: h, Offset: jlo, Mass: make([]float64, n), InfMass: s.infMass()}
	lower = &Lattice{H: h, Offset: jlo - 1, Mass: make([]float64, n+1), InfMass: s.infMass()}

	// Cell jlo−1 is (−∞, jlo·h]: mass at or below the support, all of it put on grid
	// point jlo by the upper bound (moved up).
	cells := make([]outcome, 0, n)
	for j := jlo - 1; j < jhi; j++ {
		a, b := float64(j)*h, float64(j+1)*h
		ca := a
		if j == jlo-1 {
			ca = math.Inf(-1)
		}
		p, q, e := s.cell(ca, b)
		if p > 0 {
			i := int(j - jlo)
			pu := p * (1 + e)
			if j == jlo-1 {
				upper.Mass[0] += pu
			} else {
				theta := splitFraction(p, q, a, b, e)
				upper.Mass[i] += pu * theta
				upper.Mass[i+1] += pu * (1 - theta)
			}
		}
		// The lower bound keeps an atom at the grid point b exactly where it is, and merges
		// only the rest of the cell: merging a heavy atom with its cell would move it off
		// the grid (and drag the sweeps, see placeOnGrid).
		if p > 0 {
			bm := math.Nextafter(b, math.Inf(-1))
			if ap, _, _ := s.cell(bm, b); ap > 0 {
				lower.Mass[j+1-lower.Offset] += ap * (1 - e)
				p, q, _ = s.cell(ca, bm)
			}
		}
		if j == jhi-1 { // the lower bound merges finite mass above the support into the last cell
			tp, tq, _ := s.cell(b, math.Inf(1))
			p, q = p+tp, q+tq
		}
		if p > 0 {
			cells = append(cells, outcome{p * (1 - e), q, j})
		}
	}
	if tp, _, _ := s.cell(float64(jhi)*h, math.Inf(1)); tp > 0 { // the upper bound sends it to +∞
		upper.InfMass += tp * (1 + 1e-12)
	}
	placeOnGrid(cells, h, lower)
	return upper, lower
}

// outcome is a merged cell: P-mass p, Q-mass q (loss ln(p/q)), from cell j = (jh, (j+1)h].
type outcome struct {
	p, q float64
	j    int64
}

// placeOnGrid is the lower discretisation's second step: it mixes neighbouring merged
// outcomes so that every mixture has its loss exactly on a grid point (post-processing,
// which can only lower the curve). Below the heaviest cell it sweeps upward: a carried
// outcome (loss ≤ g) is completed with the fraction of the next one (loss ≥ g) that
// brings the mixture to g; above it, it sweeps downward symmetrically. Sweeping toward the
// mode keeps the carried mass smaller than the mass available to complete it. What is
// left of the two sweeps is rounded down to the grid.
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
	roundDown := func(c outcome) {
		if c.p <= 0 {
			return
		}
		g := c.j + 1
		if c.q > 0 {
			l := math.Log(c.p / c.q)
			l -= 8*u*math.Abs(l) + 1e-300
			g = min(g, int64(math.Floor(l/h)))
		} else {
			g = c.j + 1 // P-only mass: loss above its cell; its top is below it
		}
		emit(c.p, g)
	}

	// Upward over cells[0:m]: the carry has loss ≤ g·h.
	var carry outcome
	var g int64
	for i := 0; i < m; i++ {
		a := cells[i]
		if carry.p == 0 && carry.q == 0 {
			carry, g = a, a.j+1
			continue
		}
		if a.j > g {
			// Not adjacent: mixing outcomes farther apart than a cell would err more
			// than rounding the carry down to the grid.
			carry.j = g - 1
			roundDown(carry)
			carry, g = a, a.j+1
			continue
		}
		for a.p > 0 {
			ea := excess(a.p, a.q, float64(g)*h)
			if ea <= 0 {
				carry.p, carry.q = carry.p+a.p, carry.q+a.q
				break
			}
			ec := excess(carry.p, carry.q, float64(g)*h)
			f := -ec / ea * (1 + 1e-9) // rounded up: the mixture's loss is ≥ g
			if f >= 1 {
				carry.p, carry.q = carry.p+a.p, carry.q+a.q
				break
			}
			emit(carry.p+f*a.p, g)
			carry = outcome{a.p * (1 - f), a.q * (1 - f), a.j}
			g = a.j + 1
			break
		}
	}
	up, gUp := carry, g

	// Downward over cells[m:]: the carry has loss ≥ g·h.
	carry = outcome{}
	for i := len(cells) - 1; i >= m; i-- {
		a := cells[i]
		if carry.p == 0 && carry.q == 0 {
			carry, g = a, a.j
			continue
		}
		if a.j+1 < g { // not adjacent: see the upward sweep
			roundDown(carry)
			carry, g = a, a.j
			continue
		}
		gl := float64(g) * h
		ea := excess(a.p, a.q, gl)
		if ea >= 0 {
			// Not below g (cannot happen for a lower cell; keep it safe): round it down.
			roundDown(a)
			continue
		}
		ec := excess(carry.p, carry.q, gl)
		if ec <= 0 {
			roundDown(carry)
			carry, g = a, a.j
			continue
		}
		f := ec / -ea * (1 - 1e-9) // rounded down: the mixture's loss is ≥ g
		if f >= 1 {
			carry.p, carry.q = carry.p+a.p, carry.q+a.q
			continue
		}
		emit(carry.p+f*a.p, g)
		carry, g = outcome{a.p * (1 - f), a.q * (1 - f), a.j}, a.j
	}

	// Where the sweeps meet at one grid point, mix what is left of both onto it (the
	// upward carry is below it, the downward one above); round down the rest.
	if up.p > 0 && carry.p > 0 && gUp == g {
		gl := float64(g) * h
		eu, ed := excess(up.p, up.q, gl), excess(carry.p, carry.q, gl)
		if eu <= 0 && ed > 0 {
			if f := -eu / ed * (1 + 1e-9); f < 1 { // all of up, part of the downward carry
				emit(up.p+f*carry.p, g)
				up, carry = outcome{}, outcome{carry.p * (1 - f), carry.q * (1 - f), carry.j}
			} else if f := ed / -eu * (1 - 1e-9); f < 1 { // all of it, part of up
				emit(carry.p+f*up.p, g)
				up, carry = outcome{up.p * (1 - f), up.q * (1 - f), up.j}, outcome{}
			}
		}
	}
	if up.p > 0 {
		up.j = gUp - 1
		roundDown(up)
	}
	if carry.p > 0 {
		roundDown(carry)
	}
}

// splitFraction returns θ of the upper split of a cell (a, b] holding P-mass p and
// Q-mass q with relative errors ≤ e, lowered by a bound on its own error so that the
// split never moves mass down.
func splitFraction(p, q, a, b, e float64) float64 {
	if q <= 0 {
		return 0 // loss at the top of the cell (or above: +∞-like) — all to b
	}
	l := math.Log(p / q) // l* with absolute error ≤ 2e + 3u
	if l >= b {
		return 0
	}
	if l <= a {
		return 1 // mass from below the cell (first cell, or a subsampled boundary)
	}
	theta := math.Expm1(b-l) / math.Expm1(b-a)
	// dθ/dl* = −e^(b−l*)/expm1(b−a) ≤ e^h/expm1(h) in size: the error of l* carries over
	// multiplied by it; 8u more for the expm1 and the division.
	errL := 2*e + 4*u + 4*u*math.Abs(l)
	theta -= errL*math.Exp(b-a)/math.Expm1(b-a) + 8*u
	return math.Max(theta, 0)
}

// excess returns p − e^g·q (> 0 when the loss of (p, q) is above g), computed as
// p·(1 − e^(g − l)) for accuracy, with the loss l = ln(p/q) first lowered by a bound on
// its rounding error: excesses are under-stated, so the fraction f in add is over-stated
// and every mixture placed at g has loss ≥ g (placing it there rounds down).
func excess(p, q, g float64) float64 {
	if p == 0 {
		return -q * math.Exp(g)
	}
	if q == 0 {
		return p
	}
	l := math.Log(p / q)
	l -= 8*u*math.Max(math.Abs(l), math.Abs(g)) + 1e-300
	return -p * math.Expm1(g-l)
}
