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
//
// One tilt fails when the tilted loss of one release is bimodal (rare large losses): see
// jumps.go, which splits the composition by the number of large losses.

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
	errAt := t.errAt(eps)
	if upper {
		// Below 2.2e-308 the exponentials lose absolute precision: each term (and errAt)
		// may come out up to twice the smallest subnormal low, or 0. Adding that keeps
		// the upper bound above the truth there too (and positive: δ > 0 is never
		// reported as 0).
		return sum*(1+l.Rel)*(1+rel)*(1+n*u) + errAt + t.inf + (2*n+2)*math.SmallestNonzeroFloat64
	}
	return sum*math.Max(0, 1-l.Rel)*(1-rel)*(1-n*u) - errAt
}

// errAt returns the floating-point error term of delta(eps): the tilted absolute error
// untilted at ε, Err·e^(C − λε), rounded up.
func (t tilted) errAt(eps float64) float64 {
	return t.l.Err * math.Exp(t.logScale-t.lambda*eps) * (1 + 4*u*(1+math.Abs(t.logScale)+math.Abs(t.lambda*eps)))
}

// saddleLambda returns λ ≥ 0 at which the tilted means of the parts, each counted n
// times, add up to eps (0 when their untilted means already reach eps, or when no λ up to
// 1e6 does), by bisection: each tilted mean increases with λ.
func saddleLambda(parts []tiltPart, eps float64, m *meter) float64 {
	mean := func(lambda float64) float64 {
		sum := 0.0
		for _, p := range parts {
			m.add(passWork * int64(len(p.l.Mass)))
			sum += float64(p.n) * tiltedMean(p.l, lambda)
		}
		return sum
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
	for range 30 { // any λ gives valid bounds: 2^-30 of the bracket is plenty
		mid := (lo + hi) / 2
		if mean(mid) < eps {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// tiltPart is n releases of the lattice l, a part of a composition.
type tiltPart struct {
	l *Lattice
	n int64
}

// tiltedMean returns the mean loss of l's finite masses tilted by λ.
func tiltedMean(l *Lattice, lambda float64) float64 {
	_, mean, _ := tiltedMoments(l, lambda)
	return mean
}

// tiltedMoments returns ln M(λ) = ln Σ m_i·e^(λx_i) over l's finite masses and the mean
// and variance of the loss tilted by λ (−Inf, 0, 0 for no mass), in float64 without error
// bounds: they choose λ and methods, never a bound.
func tiltedMoments(l *Lattice, lambda float64) (logM, mean, variance float64) {
	c := math.Inf(-1)
	for i, m := range l.Mass {
		if m > 0 {
			x, _ := l.loss(i)
			c = math.Max(c, math.Log(m)+lambda*x)
		}
	}
	// Bins far below the largest tilted mass do not move the moments: they are skipped
	// by their mass alone, without an exponential.
	var s, sx, sxx float64
	for i, m := range l.Mass {
		if m > 0 {
			x, _ := l.loss(i)
			y := math.Log(m) + lambda*x - c
			if y < -60 {
				continue
			}
			w := math.Exp(y)
			s += w
			sx += w * x
			sxx += w * x * x
		}
	}
	if s == 0 {
		return math.Inf(-1), 0, 0
	}
	mean = sx / s
	return c + math.Log(s), mean, math.Max(0, sxx/s-mean*mean)
}

// powerTilted returns the n-fold composition (n ≥ 1) of base by repeated squaring.
func powerTilted(base tilted, n int64, upper bool, eta float64, m *meter) tilted {
	base.trim(upper, eta*total(base.l.Mass))
	var acc *tilted
	for i := bits.Len64(uint64(n)) - 1; i >= 0; i-- {
		if acc != nil {
			m.add(convolveWork(len(acc.l.Mass), len(acc.l.Mass)))
			sq := composeTilted(*acc, *acc, upper, eta)
			acc = &sq
		}
		if n>>uint(i)&1 == 1 {
			if acc == nil {
				b := base
				acc = &b
			} else {
				m.add(convolveWork(len(acc.l.Mass), len(base.l.Mass)))
				st := composeTilted(*acc, base, upper, eta)
				acc = &st
			}
		}
	}
	return *acc
}

// trimEta is the tilted mass, relative to the total, that each end of each of the at
// most 2·log2(k) steps of a k-fold composition may shed: about 1e-12 of the δ read out
// in all.
func trimEta(k int64) float64 { return 1e-12 / float64(4*bits.Len64(uint64(k))) }

// tiltedSelfDelta returns a certified bracket of δ(ε) for it.Count = k releases of one
// pair (it in direction d), discretised on spacing h and composed by repeated squaring on lattices tilted towards
// ε, and false when tilting does not apply (ε at or below the mean loss). When the
// tilted composition would leave ε in a valley between bumps (valley), it is split by
// the number of releases with a loss above ε/4 (splitSelfDelta: one tilt per term);
// when there are none, or large losses are common (the terms computed hold little of
// δ), one tilt of the whole serves, intersected with the split's bracket (both are
// valid).
func tiltedSelfDelta(it Item, d int, h, eps float64, m *meter) (upper, lower float64, ok bool) {
	// A release whose loss is narrow next to h starts finer (tiltcoarse.go).
	up, lo := discretizeRelease(it, d, releaseSpacing(it, h), h, m)
	k := it.Count
	if float64(k)*tiltedMean(up, 0) >= eps {
		return 1, 0, false
	}
	saddle := saddleLambda // on the lattice of one fine release, Newton's few passes (tiltcoarse.go)
	if up.H < h {
		saddle = saddleNewton
	}
	lambda := saddle([]tiltPart{{up, k}}, eps, m)
	upper, lower = 1, 0
	if lambda == 0 || valley(up, k, eps, lambda) < 1e-4 {
		var good bool
		if upper, lower, good = splitSelfDelta(up, lo, k, eps, h, m); good {
			return upper, lower, true
		}
	}
	if lambda == 0 {
		return upper, lower, upper < 1
	}
	eta := trimEta(k)
	upper = math.Min(upper, powerTiltedTo(tilt(up, lambda, true), k, true, eta, h, m).delta(eps, true))
	lower = math.Max(lower, powerTiltedTo(tilt(lo, lambda, false), k, false, eta, h, m).delta(eps, false))
	return math.Min(1, upper), math.Max(0, lower), true
}

// firstTiltWork is the work the first tilted round may take without a Tolerance, when
// the budget is smaller: about ten seconds on one core here.
const firstTiltWork = 10 * DefaultWork

// maxTiltRounds bounds the halvings of the tilted lattices' spacing; the work budget
// (refineTilted) usually ends them first.
const maxTiltRounds = 12

// maxTiltItems is the most items (distinct mechanisms, and blocks of few-atom releases)
// whose composition refineTilted brackets on tilted lattices: a round holds every item's
// tilted lattices at once. The time is bounded by the work budget (refineTilted).
const maxTiltItems = 1024

// tiltedMixDelta returns a certified bracket of δ(ε) in direction d (0 remove, 1 add;
// a symmetric mechanism's one direction serves both) of a workload of several distinct
// mechanisms, each Count times (a Gaussian among them — the workload's Gaussians merged
// into one — is discretised like any pair: the tilted path needs no closed form), and
// false when tilting does not apply. Every item's lattices are tilted by one λ (the tilt
// of a composition is the composition of the tilts, whatever the parts), the saddle of
// the sum of the items' tilted means, each item composed by repeated squaring and the
// items pairwise (composeTiltedAll). Few-atom releases come in blocks (see blocks):
// alone, an atom off the grid would be rounded down in every release, an error of the
// lower bound that grows as count·h and that the tilt multiplies.
// When some item's tilted loss is two bumps (jumpy), the items are split by their
// numbers of large losses (splitDelta, jumps.go), as tiltedSelfDelta does for one.
func tiltedMixDelta(items []Item, d int, h, eps float64, m *meter) (upper, lower float64, ok bool) {
	ups, los := make([]tiltPart, len(items)), make([]tiltPart, len(items))
	hs := releaseSpacings(items, h) // an item whose release is narrow next to h starts finer (tiltcoarse.go)
	parallel(len(items), 0, func(i int) {
		up, lo := discretizeRelease(items[i], d, hs[i], h, m)
		ups[i], los[i] = tiltPart{up, items[i].Count}, tiltPart{lo, items[i].Count}
	})
	mean, total := 0.0, int64(0)
	for _, p := range ups {
		mean += float64(p.n) * tiltedMean(p.l, 0)
		total += p.n
	}
	if mean >= eps {
		return 1, 0, false
	}
	saddle := saddleLambda // on the lattices of one fine release, Newton's few passes (tiltcoarse.go)
	for _, p := range ups {
		if p.l.H < h {
			saddle = saddleNewton
		}
	}
	lambda := saddle(ups, eps, m)
	upper, lower = 1, 0
	parts, split := make([]jumpPart, len(items)), false
	for i := range items {
		parts[i] = newJumpPart(ups[i].l, los[i].l, ups[i].n, eps/4, lambda == 0 || jumpy(ups[i].l, eps/4, lambda))
		parts[i].h = h
		split = split || parts[i].jUp != nil
	}
	if split {
		var good bool
		if upper, lower, good = splitDelta(parts, eps, m); good {
			return upper, lower, true
		}
	}
	if lambda == 0 {
		return upper, lower, upper < 1
	}
	var bounds [2]float64
	for j, parts := range [][]tiltPart{ups, los} {
		isUp := j == 0
		bounds[j] = composeTiltedAll(powerAll(parts, lambda, isUp, h, m), isUp, trimEta(total), m).delta(eps, isUp)
	}
	return math.Min(upper, bounds[0]), math.Max(lower, bounds[1]), true
}

// jumpy reports whether l's loss tilted by λ is two bumps on either side of l0: its bulk
// (losses ≤ l0) and its tail each more than three standard deviations away from l0 in
// their tilted laws. It only chooses the method.
func jumpy(l *Lattice, l0, lambda float64) bool {
	b, jl := splitLattice(l, l0)
	if b == nil || jl == nil {
		return false
	}
	_, mb, vb := tiltedMoments(b, lambda)
	_, mj, vj := tiltedMoments(jl, lambda)
	return l0-mb > 3*math.Sqrt(vb) && mj-l0 > 3*math.Sqrt(vj)
}

// tiltStart returns the first spacing of the tilted lattices of a mix: the plain
// lattice's h, or, when the items' loss atoms lie on multiples of one unit (Laplace's
// ±Δ/b), the largest unit/2^j at most h and unit/8 (but not below h/8). Atoms off the
// grid are spread over two grid points in every release, an error that grows with the
// count (1000 releases of Laplace scale 1 and 100 of scale 0.5 at ε = 900: [8.7e-61,
// 4.9e-60] after six rounds from h = 0.75, the plain lattice's); on the grid only the
// continuous part is spread.
func tiltStart(items []Item, h float64) float64 {
	unit := atomGrid(items)
	if unit <= 0 {
		return h
	}
	// At most 8 times finer than h: a unit far below h (a subsampled loss's edge) would
	// make the lattices of a long composition too large.
	target := math.Min(h, math.Max(unit/8, h/8))
	return unit / math.Exp2(math.Max(0, math.Ceil(math.Log2(unit/target))))
}

// tiltFits reports whether one release of every item fits in maxBins bins of spacing h
// over the support discretize covers (a Gaussian of μ = 100 spans ±3700): the
// compositions of a round are wider still, and a round past it would spend its work
// until a lattice is refused.
func tiltFits(items []Item, h float64, maxBins int) bool {
	for _, it := range items {
		for _, s := range it.Mechanism.specs() {
			if lo, hi := s.support(1e-300); !((hi-lo)/h <= float64(maxBins)) {
				return false
			}
		}
	}
	return true
}

// tiltRound runs one round of refineTilted, and reports false when a lattice of it was
// refused for its size (refuseLattice) or its work went past the meter's limit: the
// refinement, optional, then stops with the bracket it has rather than failing the
// composition. Cancellation still unwinds.
func tiltRound(round func() bool) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if a, isAbort := r.(abort); isAbort && (a.tooLarge || a.overBudget) {
				ok = false
				return
			}
			panic(r)
		}
	}()
	return round()
}

// refineTilted brackets δ(Options.Epsilon) of the workload's items (the merged
// Gaussian, if any, among them) on tilted lattices (tiltedSelfDelta for one repeated
// mechanism, tiltedMixDelta for several) when the plain lattices leave it wider than the tolerance — at tiny δ
// their absolute error leaves the lower end at 0 (issue 24 item 3: 1000 steps of a
// subsampled Gaussian, σ = 4, q = 0.01, at ε = 1: [0, 9.8e-24] plain, [1.0034e-34,
// 1.0076e-34] tilted at spacing 3e-5; at ε = 2, where large losses take over,
// [3.00e-116, 3.27e-116] by default and [3.164e-116, 3.181e-116] at tolerance 0.02,
// split by jumps.go). The spacing starts at the finest plain lattice's and halves (the
// width falls about as h²) until the tolerance is met, maxTiltRounds pass, or
// the next round is predicted to exceed the work budget (DefaultWork without a
// Tolerance, else maxWork in all).
func (c *Composition) refineTilted(items []Item, m *meter, adaptive bool) {
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
	h := c.tiltSpacing(items)
	limit := tiltBudget(m, DefaultWork, adaptive)
	defer m.setLimit(0)
	// The first round, without which the bracket stays the plain one, may take up to
	// firstTiltWork when the budget is smaller (1000 subsampled-Gaussian steps at
	// ε = 5.1, δ ≈ 1.5e-294: [0, 9.8e-24] when its first round, 6e8 units, was cut at
	// DefaultWork); the later ones keep to the budget.
	if adaptive {
		m.setLimit(max(limit, m.done()+firstTiltWork))
	}
	for round := 0; round < maxTiltRounds; round++ {
		before := m.done()
		up, lo, ok := c.tiltedBracket(items, h, eps, m)
		if !ok {
			return // ε is within the bulk of the loss (the plain lattice serves), or the lattices grew too large
		}
		m.setLimit(limit)
		c.probes = append(c.probes, tiltProbe{eps, up, lo})
		cost := m.done() - before
		if width() <= target || m.done()+2*cost > limit {
			return
		}
		h /= 2
	}
}

// tiltSpacing returns the first spacing of the tilted lattices: the finest plain
// lattice's, aligned with the items' atoms (tiltStart) when there are several (one
// mechanism's plain lattice is already aligned with its atoms), doubled while one
// release of some item would not fit in MaxBins bins (tiltFits): the plain lattice may
// be fine for a reason the tilted one does not share (a Gaussian of μ = 4.3 beside
// Laplace and subsampled releases put it at 5.4e-5, where the Gaussian spans 6e6 bins).
func (c *Composition) tiltSpacing(items []Item) float64 {
	h := c.pld.h
	if len(items) > 1 {
		h = tiltStart(items, h)
	}
	for range 30 {
		if tiltFits(items, h, c.opts.MaxBins) {
			break
		}
		h *= 2
	}
	return h
}

// tiltBudget bounds the work of the tilted rounds from now on, up front (a first round
// is not predicted: a mix of a hundred subsampled Gaussians took 6e9 units): work, or
// as much as the plain lattices took when that is more (a Gaussian of μ = 4.3 with
// Laplace and subsampled releases took 8e9 units on them, and its tilted round 1.1e9),
// without a Tolerance, else up to maxWork in all. A round that goes past it is abandoned
// (tiltRound). The caller lifts the limit (m.setLimit(0)) when done.
func tiltBudget(m *meter, work int64, adaptive bool) int64 {
	limit := m.done() + max(work, m.done())
	if !adaptive {
		limit = max(limit, maxWork)
	}
	m.setLimit(limit)
	return limit
}

// tiltedBracket brackets δ(eps) of the items on tilted lattices of spacing h, the
// larger of the directions' brackets (tiltedSelfDelta for one repeated mechanism,
// tiltedMixDelta for several); ok is false when tilting does not apply (eps within the
// bulk of the loss) or the round was abandoned (tiltRound: lattices too large, or the
// work budget spent).
func (c *Composition) tiltedBracket(items []Item, h, eps float64, m *meter) (up, lo float64, ok bool) {
	if !tiltFits(items, h, c.opts.MaxBins) {
		return 1, 0, false
	}
	sides := 1
	for _, it := range items {
		sides = max(sides, len(it.Mechanism.specs()))
	}
	applies := true
	fits := tiltRound(func() bool {
		for d := range sides {
			var u, l float64
			if len(items) == 1 {
				u, l, applies = tiltedSelfDelta(items[0], d, h, eps, m)
			} else {
				u, l, applies = tiltedMixDelta(items, d, h, eps, m)
			}
			if !applies {
				inf, beyond := beyondReach(items, d, h, eps, m)
				if !beyond {
					return false
				}
				// No finite loss of this direction reaches ε: its δ(ε) is the mass at +∞.
				u, l, applies = inf, 0, true
			}
			up, lo = math.Max(up, u), math.Max(lo, l)
		}
		return true
	})
	if !fits || !applies {
		return 1, 0, false
	}
	return up, lo, true
}

// beyondReach reports whether eps is above every finite loss of direction d of the
// items' composition on their upper lattices of spacing h — Σ count·(largest loss that
// holds mass), rounded up — and then bounds its δ(eps): the configurations with a
// release at +∞ (infConfigs), plus the lattices' absolute error terms, each times at most
// the others' total mass. The add direction of a subsampled Gaussian, whose loss is at
// most −ln(1 − q) a release, is such a direction for any ε above 110·0.01005 at 110
// releases of q = 0.01: there tilting has no saddle, and failing the round for it threw
// away the other direction's bracket (two subsampled Gaussians, σ = 0.95 and 1.54, at
// ε = 3.73, δ ≈ 3e-14: [0, 2.8e-10]).
func beyondReach(items []Item, d int, h, eps float64, m *meter) (bound float64, beyond bool) {
	reach, errs, logMass := 0.0, 0.0, 0.0
	parts := make([]jumpPart, len(items))
	for i, it := range items {
		up, _ := discretizeItem(it, d, h, m)
		top := len(up.Mass) - 1 // the support may be wider than the mass (subsampled Laplace)
		for top > 0 && up.Mass[top] == 0 {
			top--
		}
		x, e := up.loss(top)
		n := float64(it.Count)
		reach = addUp(reach, mulUp(n, math.Max(0, x+e)*(1+2*u)))
		parts[i] = jumpPart{up: up, n: it.Count}
		errs = addUp(errs, mulUp(n, up.Err))
		f := total(up.Mass)*(1+up.Rel)*(1+float64(len(up.Mass))*u) + up.Err + math.Max(up.InfMass, 0)
		logMass += n * math.Log1p(f-1) // f − 1 rounded by an ulp of 1: below
		logMass += 4 * n * u
	}
	if !(reach < eps) {
		return 0, false
	}
	bound = infConfigs(parts) + errs*math.Exp(logMass*(1+1e-12))
	return math.Min(1, bound*(1+8*u)), true
}

// discretizeItem returns the upper and lower lattices of spacing h of one release of
// it in direction d (a symmetric mechanism's one direction serves both): a block of
// few-atom releases enumerated exactly (blockMechanism.pld), any other pair discretised
// over its whole support.
func discretizeItem(it Item, d int, h float64, m *meter) (up, lo *Lattice) {
	if b, ok := it.Mechanism.(blockMechanism); ok {
		s := b.pld(h, m).sides[0]
		return s.upper, s.lower
	}
	sp := it.Mechanism.specs()
	return discretize(sp[min(d, len(sp)-1)], h, 1e-300)
}

// composeTiltedAll returns the composition of the tilted bounds ts (same λ and
// spacing), composed pairwise smallest first, a level's pairs on every core, as
// composeAll does for plain lattices: the lattices stay small until the last levels,
// where a chain would convolve every part with the whole. eta is as for composeTilted.
func composeTiltedAll(ts []tilted, upper bool, eta float64, m *meter) tilted {
	return pairwise(ts, func(t tilted) int { return len(t.l.Mass) }, func(a, b tilted) tilted {
		m.add(convolveWork(len(a.l.Mass), len(b.l.Mass)))
		return composeTilted(a, b, upper, eta)
	})
}
