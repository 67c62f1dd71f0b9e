package pld

import (
	"math"
	"math/bits"
)

// Tiny δ by exponential tilting.
//
// A lattice's floating-point error is absolute (Lattice.Err, about 1e-16 of the largest
// mass after an FFT): a δ(ε) far below it — 1000 steps of a subsampled Gaussian at ε = 1,
// δ ≈ 1e-30 — is certified only as [0, Err]. Exponential tilting moves the mass that
// matters to the top (Esscher; the saddle-point idea): with
//
//	m'_i = m_i·e^(λ·x_i − c),   x_i the loss of bin i,
//
// the convolution of tilted lattices is the tilted convolution (e^(λ(x+y)) = e^(λx)·e^(λy)),
// so the k-fold composition is computed on the tilted masses, whose peak is put near ε by
// the choice of λ (k times the tilted mean of one release = ε). Errors are then absolute
// on the tilted masses, and untilting turns a tilted error E into an error of at most
// E·e^(C − λε) on δ(ε) (C the accumulated log scale): every bin above ε carries e^(C − λx)
// ≤ e^(C − λε). The bracket is relative to δ where the plain lattice's is absolute.
//
// Trimming keeps the bracket valid: the lower bound drops both tails (dropping mass only
// lowers δ of any composition); the upper bound moves its low tail up to the first bin it
// keeps, with the same untilted mass (moving mass to a higher loss only raises δ), and
// sheds at its high end only bins that are empty. Mass at +∞ of the release (δ-events) is
// kept untilted in inf; the lower bound leaves it out.

// tilted is one bound of a k-fold composition kept tilted: the masses of l are
// m_i·e^(λ·x_i − logScale), with l's Rel and Err in those units, and inf the untilted mass
// at +∞ (upper bound only).
type tilted struct {
	l        *Lattice
	lambda   float64
	logScale float64
	inf      float64
}

// tilt returns l tilted by λ, normalised so that its largest mass is 1. The relative
// error of each new mass (the exponent's rounding, the loss's own error times λ) is
// added to Rel; l.Err (absolute, untilted) is scaled by the largest factor e^(λx − c).
func tilt(l *Lattice, lambda float64, upper bool) tilted {
	out := &Lattice{H: l.H, Offset: l.Offset, Shift: l.Shift, Mass: make([]float64, len(l.Mass))}
	c, top := math.Inf(-1), math.Inf(-1)
	for i, m := range l.Mass {
		x, _ := l.loss(i)
		top = math.Max(top, lambda*x)
		if m > 0 {
			c = math.Max(c, math.Log(m)+lambda*x)
		}
	}
	rel := 0.0
	for i, m := range l.Mass {
		if m <= 0 {
			continue
		}
		x, e := l.loss(i)
		y := math.Log(m) + lambda*x - c
		out.Mass[i] = math.Exp(y)
		// ln m, λx and c each rounded (u·magnitude), x off by e: the exponent is off by at
		// most this, and exp adds a rounding.
		rel = math.Max(rel, 3*u*(math.Abs(math.Log(m))+math.Abs(lambda*x)+math.Abs(c))+lambda*e+2*u)
	}
	out.Rel = (1+l.Rel)*(1+2*rel) - 1
	out.Err = l.Err * math.Exp(top-c) * (1 + 4*u)
	t := tilted{l: out, lambda: lambda, logScale: c}
	if upper {
		t.inf = math.Max(l.InfMass, 0)
	}
	return t
}

// composeTilted returns the composition of two tilted bounds (same λ and spacing),
// normalised and trimmed: eta is the tilted mass, relative to the total, that each end
// may shed.
func composeTilted(a, b tilted, upper bool, eta float64) tilted {
	a0, b0 := *a.l, *b.l
	a0.InfMass, b0.InfMass = 0, 0 // +∞ is kept untilted, in inf
	c := convolve(&a0, &b0, 0)
	// The exact bounds have finite untilted mass at most 1 + Rel each: mass at +∞ meets
	// the other's finite mass or its own +∞.
	out := tilted{l: c, lambda: a.lambda, logScale: a.logScale + b.logScale,
		inf: (a.inf*(1+b.l.Rel) + b.inf*(1+a.l.Rel) + a.inf*b.inf) * (1 + 4*u)}
	mx := 0.0
	for _, v := range c.Mass {
		mx = math.Max(mx, v)
	}
	if mx > 0 {
		s := 1 / mx
		for i := range c.Mass {
			c.Mass[i] *= s
		}
		c.Err *= s * (1 + 2*u)
		c.Rel = (1+c.Rel)*(1+2*u) - 1
		out.logScale += math.Log(mx) // the rounding of ln mx and of s: in Rel above
		c.Rel = (1+c.Rel)*(1+4*u*(1+math.Abs(math.Log(mx)))) - 1
	}
	out.trim(upper, eta*total(c.Mass))
	return out
}

// trim sheds up to eta of tilted mass at each end (see the package comment above).
func (t *tilted) trim(upper bool, eta float64) {
	l := t.l
	n := len(l.Mass)
	// High end: dropped (lower), or for the upper bound only the bins that hold nothing
	// (beyond the FFT's noise, which convolve zeroes and counts in Err): sending mass to
	// +∞ would count it fully in δ, which at δ ≈ 1e-30 costs more than keeping the bins.
	hi, acc := n, 0.0
	for hi > 1 && (upper && l.Mass[hi-1] == 0 || !upper && acc+l.Mass[hi-1] <= eta) {
		acc += l.Mass[hi-1]
		hi--
	}
	// Low end: dropped (lower) or moved up to the first bin kept with its untilted mass
	// (upper): S_j = Σ_{i<j} m_i·e^(λ(x_j − x_i)) is the tilted mass that adds to bin j.
	lo := 0
	if upper {
		g := math.Exp(t.lambda*l.H) * (1 + 1e-12) // e^(λh), rounded up
		s := 0.0
		for lo < hi-1 {
			next := (s + l.Mass[lo]) * g
			if next > eta {
				break
			}
			s = next
			lo++
		}
		l.Mass[lo] += s
	} else {
		acc = 0
		for lo < hi-1 && acc+l.Mass[lo] <= eta {
			acc += l.Mass[lo]
			lo++
		}
	}
	l.Mass = l.Mass[lo:hi]
	l.Offset += int64(lo)
}

// delta returns the bound's δ(ε): Σ_{x_i > ε} m_i·e^(C − λx_i)·(1 − e^(ε − x_i)), scaled by
// 1 ± Rel, ± Err·e^(C − λε), plus inf (upper). Each term is computed in one exponential;
// the rounding of its exponent is a relative error, added to the scale.
func (t tilted) delta(eps float64, upper bool) float64 {
	l := t.l
	sum, rel := 0.0, 0.0
	for i, m := range l.Mass {
		if m <= 0 {
			continue
		}
		x, e := l.loss(i)
		e += 2 * u * math.Abs(x)
		xd, xe := x+e, x-e // upper: the loss the hinge sees, and the one the weight sees
		if !upper {
			xd, xe = x-e, x+e
		}
		if xd <= eps {
			continue
		}
		y := math.Log(m) + t.logScale - t.lambda*xe
		rel = math.Max(rel, 3*u*(math.Abs(math.Log(m))+math.Abs(t.logScale)+math.Abs(t.lambda*xe))+2*u)
		sum += math.Exp(y) * -math.Expm1(eps-xd)
	}
	n := float64(len(l.Mass))
	errAt := l.Err * math.Exp(t.logScale-t.lambda*eps) * (1 + 4*u*(1+math.Abs(t.logScale)+math.Abs(t.lambda*eps)))
	if upper {
		return sum*(1+l.Rel)*(1+rel)*(1+n*u) + errAt + t.inf
	}
	return sum*math.Max(0, 1-l.Rel)*(1-rel)*(1-n*u) - errAt
}

// saddleLambda returns λ ≥ 0 with k times the tilted mean of l equal to eps (0 when the
// mean of the k-fold composition already reaches eps), by bisection: the tilted mean
// increases with λ.
func saddleLambda(l *Lattice, k int64, eps float64) float64 {
	mean := func(lambda float64) float64 {
		c := math.Inf(-1)
		for i, m := range l.Mass {
			if m > 0 {
				x, _ := l.loss(i)
				c = math.Max(c, math.Log(m)+lambda*x)
			}
		}
		var s, sx float64
		for i, m := range l.Mass {
			if m > 0 {
				x, _ := l.loss(i)
				w := math.Exp(math.Log(m) + lambda*x - c)
				s += w
				sx += w * x
			}
		}
		return sx / s * float64(k)
	}
	if mean(0) >= eps {
		return 0
	}
	lo, hi := 0.0, 1.0
	for mean(hi) < eps {
		if hi > 1e6 {
			return 0 // ε beyond the composition's reach
		}
		lo, hi = hi, 2*hi
	}
	for range 60 {
		mid := (lo + hi) / 2
		if mean(mid) < eps {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// tiltedSelfDelta returns a certified bracket of δ(ε) for k releases of one pair s,
// discretised on spacing h and composed by repeated squaring on the lattice tilted
// towards ε, and false when tilting does not apply (ε at or below the mean loss).
func tiltedSelfDelta(s spec, k int64, h, eps float64, m *meter) (upper, lower float64, ok bool) {
	up, lo := discretize(s, h, 1e-300)
	lambda := saddleLambda(up, k, eps)
	if lambda == 0 {
		return 1, 0, false
	}
	// Each of the at most 2·log2(k) steps may shed this much tilted mass at each end:
	// about 1e-12 of the δ read out in all.
	eta := 1e-12 / float64(4*bits.Len64(uint64(k)))
	bounds := [2]float64{}
	for j, l := range []*Lattice{up, lo} {
		isUp := j == 0
		base := tilt(l, lambda, isUp)
		var acc *tilted
		for i := bits.Len64(uint64(k)) - 1; i >= 0; i-- {
			if acc != nil {
				m.add(convolveWork(len(acc.l.Mass), len(acc.l.Mass)))
				sq := composeTilted(*acc, *acc, isUp, eta)
				acc = &sq
			}
			if k>>uint(i)&1 == 1 {
				if acc == nil {
					b := base
					acc = &b
				} else {
					m.add(convolveWork(len(acc.l.Mass), len(base.l.Mass)))
					st := composeTilted(*acc, base, isUp, eta)
					acc = &st
				}
			}
		}
		bounds[j] = acc.delta(eps, isUp)
	}
	return math.Min(1, bounds[0]), math.Max(0, bounds[1]), true
}

// refineTilted brackets δ(Options.Epsilon) of one repeated mechanism on tilted lattices
// (tiltedSelfDelta) when the plain lattices leave it wider than the tolerance — at tiny δ
// their absolute error leaves the lower end at 0 (issue 24 item 3: 1000 steps of a
// subsampled Gaussian, σ = 4, q = 0.01, at ε = 1: [0, 9.8e-24] plain, [1.0034e-34,
// 1.0076e-34] tilted at spacing 3e-5). The spacing starts at the finest plain lattice's
// and halves (the width falls about as h²) until the tolerance is met, six rounds pass,
// or, adaptive, the next round is predicted to exceed DefaultWork.
func (c *Composition) refineTilted(it Item, m *meter, adaptive bool) {
	eps, target := c.opts.Epsilon, c.opts.Tolerance
	width := func() float64 {
		up, lo, _ := c.Delta(eps)
		if up <= 0 {
			return 0
		}
		return (up - lo) / up
	}
	if c.pld == nil || width() <= target {
		return
	}
	h := c.pld.h
	start := m.done()
	for round := 0; round < 6; round++ {
		before := m.done()
		up, lo := 0.0, 0.0
		for _, s := range it.Mechanism.specs() {
			u, l, ok := tiltedSelfDelta(s, it.Count, h, eps, m)
			if !ok {
				return // ε is within the bulk of the loss: the plain lattice serves
			}
			up, lo = math.Max(up, u), math.Max(lo, l)
		}
		if c.tiltUp == 0 || up < c.tiltUp {
			c.tiltUp = up
		}
		c.tiltLo = math.Max(c.tiltLo, lo)
		cost := m.done() - before
		if width() <= target || adaptive && m.done()-start+2*cost > DefaultWork || m.done() > maxWork {
			return
		}
		h /= 2
	}
}
