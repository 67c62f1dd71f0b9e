package pld

import "math"

// Tilted lattices that start fine and coarsen as they widen.
//
// refineTilted's spacing h is sized for the whole composition. One release of an item
// with many releases (10^6 releases of a subsampled Gaussian, q/σ ≈ 1e-3) may have a
// loss whose standard deviation is below h: discretised on h, each release errs by a
// large fraction of its own variance, an error that the n-fold composition multiplies
// by n and the tilt amplifies (sixteen such items at ε = 100 left the lower bound at 0).
// As the plain path does (groupSpacing, selfComposeAdaptive), such an item starts on
// h/2^j, fine for one release (startRatio bins per standard deviation), and each power
// of its repeated squaring is put on a spacing 2^i times coarser once it is wide enough
// (tiltCoarseRatio bins per tilted standard deviation), up to h. The grids are nested
// (all through 0, spacings h/2^j), so a coarse point is a fine one.
//
// Coarsening is applied to a composed power, not to a release: its error is that of one
// re-discretisation of a distribution already tilted-wide, a few per power of two. It is
// sound for every λ because δ(ε) of any composition is a hockey-stick divergence, a
// convex and non-decreasing function of each part's loss (see discretize): writing
// Y = e^(−L), E_P[(1 − e^ε·Π Y_i)₊] is convex in each Y_i, and a part may be any
// non-negative measure (the argument is linear in it). In tilted units a mass moved from
// loss x to g is multiplied by e^(λ(g − x)) (its untilted mass is what moves).
//
//   - Upper (coarsenUp): the "connect the dots" spread of discretize, each mass at x in
//     (a, b] split θ to a and 1 − θ to b with θ = expm1(b − x)/expm1(b − a), keeping its
//     P- and Q-mass: a mean-preserving spread of Y, which can only raise δ; θ is lowered
//     by its rounding bound (moving mass up only raises δ).
//   - Lower (coarsenDown): merging and mixing, as discretize's lower lattice does
//     (placeOnGrid's downward sweep), on the tilted masses: from the top, a carried outcome
//     whose loss is at or above its coarse grid point g is completed with the fraction of
//     the next mass below g that brings the mixture's loss to g exactly (post-processing:
//     merging outcomes is a contraction of Y, which can only lower δ), and placed at g;
//     when that mass does not suffice, the carry absorbs it. What is left at the bottom is
//     rounded down to its grid point (moving loss down only lowers δ). The carry is kept
//     in the frame of its grid point (P- and Q-mass scaled so that a mass at g keeps its
//     tilted value), which no exponent of the whole lattice's range can overflow; every
//     rounding there lowers P-mass or raises Q-mass, each of which only lowers δ.
//
// Errors: the spread is linear with factors at most e^(|λ|·H) (H the coarse spacing), so
// Err grows by that factor; each output bin sums at most 2r + 1 non-negative products
// (r the ratio of spacings), whose rounding is added to Rel. The lower bound's steps only
// lower δ of every composition they enter, so its Rel and Err carry over the same way.

// tiltCoarseRatio is the number of bins per tilted standard deviation above which a
// power of powerTiltedTo is coarsened (the plain path's coarseRatio). A coarsening of the
// power of 2^j releases at spacing H moves the upper bound's δ by about
// (n/2^j)·λ²H²/12 of itself (the spread's second-order error, once per copy of that
// power in the n-fold whole), about z²/(48·ratio²) with z the standard deviations from
// the mean loss to ε; there are at most log2(h/start) + 1 of them.
const tiltCoarseRatio = coarseRatio

// tiltRefineRatio ties the coarsening to h: the power of c of n releases is coarsened
// no further than h·tiltRefineRatio·√(c/n), where its standard deviation over the
// whole's is √(c/n). Each halving of h by refineTilted's rounds then refines every level
// (its error falls as h²), not only the last; on the first round tiltCoarseRatio mostly
// binds. Sixteen subsampled Gaussians (10^6 releases each) at ε = 100 reach
// --tolerance 0.02 (width 0.017), where the rounds stalled at 0.0205 after 49 s.
const tiltRefineRatio = 8

// releaseSpacing returns the spacing item it's tilted lattices start on: h/2^j, the largest
// with about startRatio bins per standard deviation of one release (as groupSpacing),
// one release's support within maxStartBins/2 bins; h for a single release, a block (its
// own lattice), a loss of atoms only (exact on the aligned lattice), and a Gaussian.
func releaseSpacing(it Item, h float64) float64 {
	if it.Count < 2 {
		return h
	}
	switch it.Mechanism.(type) {
	case blockMechanism, Gaussian:
		return h
	}
	sd, width := 0.0, 0.0
	for _, s := range it.Mechanism.specs() {
		if pureAtoms(s) {
			return h
		}
		sd = math.Max(sd, math.Sqrt(s.variance()))
		lo, hi := s.support(1e-300)
		width = math.Max(width, hi-lo)
	}
	start := h
	for sd > 0 && start > sd/startRatio && width/(start/2) < maxStartBins/2 {
		start /= 2
	}
	return start
}

// powerTiltedTo returns the n-fold composition (n ≥ 1) of base, whose spacing divides h
// by a power of two, on spacing h: the powers base^(2^j) by repeated squaring, each
// coarsened (coarsenTilted) once it holds more than 2·tiltCoarseRatio bins per tilted
// standard deviation (and within tiltRefineRatio's limit), multiplied into the result
// from the lowest bit up (the result is coarsened to each power's spacing as it joins),
// the result coarsened to h at the end.
// On spacing h already it is powerTilted.
func powerTiltedTo(base tilted, n int64, upper bool, eta, h float64, m *meter) tilted {
	if base.l.H == h {
		return powerTilted(base, n, upper, eta, m)
	}
	base.trimBase(upper, eta)
	pow := base
	var acc *tilted
	for j := 0; ; j++ {
		if n>>uint(j)&1 == 1 {
			if acc == nil {
				p := pow
				acc = &p
			} else {
				a := coarsenTilted(*acc, pow.l.H, upper, m)
				m.add(convolveWork(len(a.l.Mass), len(pow.l.Mass)))
				c := composeTilted(a, pow, upper, eta)
				acc = &c
			}
		}
		if n>>uint(j+1) == 0 {
			break
		}
		m.add(convolveWork(len(pow.l.Mass), len(pow.l.Mass)))
		pow = composeTilted(pow, pow, upper, eta)
		m.add(passWork * int64(len(pow.l.Mass)))
		_, _, v := tiltedMoments(pow.l, 0) // pow's masses are the tilted law
		c := float64(uint64(2) << uint(j)) // releases in pow
		limit := math.Min(h, math.Max(pow.l.H, h*tiltRefineRatio*math.Sqrt(c/float64(n))))
		if f := coarsening(math.Sqrt(v), pow.l.H, limit, tiltCoarseRatio); f > 1 {
			pow = coarsenTilted(pow, pow.l.H*f, upper, m)
		}
	}
	return coarsenTilted(*acc, h, upper, m)
}

// coarsenTilted returns t on spacing H, a power-of-two multiple of t's (t itself when
// equal): spread for the upper bound, merged and mixed for the lower (see the comment
// at the top). t's lattice must pass through 0 (Shift 0).
func coarsenTilted(t tilted, H float64, upper bool, m *meter) tilted {
	l := t.l
	if H == l.H {
		return t
	}
	r := int64(math.Round(H / l.H))
	m.add(passWork * int64(len(l.Mass)))
	lo := floorDiv(l.Offset, r)
	hi := floorDiv(l.Offset+int64(len(l.Mass))-1, r) + 1
	out := &Lattice{H: H, Offset: lo, Mass: make([]float64, hi-lo+1)}
	lam := t.lambda
	if upper {
		coarsenUp(l, out, r, lam)
	} else {
		coarsenDown(l, out, r, lam)
	}
	// Each bin: at most 2r + 1 non-negative terms, each a product of a mass and a factor
	// computed within (8 + 4|λ|H)·u (below).
	rel := float64(2*r+2)*u + (8+4*math.Abs(lam)*H)*u
	out.Rel = (1+l.Rel)*(1+rel) - 1
	out.Err = l.Err * math.Exp(math.Abs(lam)*H) * (1 + 8*u)
	t.l = out
	return t
}

// floorDiv returns ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// coarsenUp spreads each mass of l (spacing H/r) between the two points of out (spacing
// H) around it: to a (below) θ·e^(−λ(x − a)), to b (above) (1 − θ)·e^(λ(b − x)) of its
// tilted mass, θ = expm1(b − x)/expm1(b − a) lowered by its rounding bound (splitFraction).
func coarsenUp(l, out *Lattice, r int64, lam float64) {
	H := out.H
	toA, toB := make([]float64, r), make([]float64, r)
	for k := int64(1); k < r; k++ {
		x := float64(k) * l.H // x − a
		theta := splitFraction(1, -x, 0, H, 0)
		// exp(±λ·d) and the products: within (6 + 4|λ|H)u; rounded up by that (Rel adds
		// the same again, two-sided).
		up := 1 + (8+4*math.Abs(lam)*H)*u
		toA[k] = theta * math.Exp(-lam*x) * up
		toB[k] = (1 - theta) * math.Exp(lam*(H-x)) * up
	}
	for i, v := range l.Mass {
		if v <= 0 {
			continue
		}
		g := l.Offset + int64(i)
		a := floorDiv(g, r)
		k := g - a*r
		j := a - out.Offset
		if k == 0 {
			out.Mass[j] += v
			continue
		}
		out.Mass[j] += v * toA[k]
		out.Mass[j+1] += v * toB[k]
	}
}

// coarsenDown merges and mixes the masses of l (spacing H/r) onto out (spacing H) in one
// downward sweep (see the comment at the top). An outcome is held as its P-mass p and log
// Q-mass lq in the frame of grid point g: a mass t (tilted) at loss x is
// p = t·e^(−λd), lq = ln t − (λ+1)·d, d = x − g, so that its loss over g is ln p − lq
// and, placed at g, its tilted mass is p.
func coarsenDown(l, out *Lattice, r int64, lam float64) {
	H := out.H
	// frame returns a tilted mass t at d = x − g as an outcome in g's frame: P-mass
	// rounded down, Q-mass up (each only lowers δ).
	frame := func(t, d float64) outcome {
		lt := math.Log(t)
		a := (lam + 1) * d
		p := t * math.Exp(-lam*d) * (1 - (8+4*math.Abs(lam*d))*u)
		return outcome{p: p, lq: lt - a + 4*u*(math.Abs(lt)+2*math.Abs(a)+1)}
	}
	// reframe moves an outcome from grid point g to g' = g + D (D < 0).
	reframe := func(o outcome, D float64) outcome {
		a := (lam + 1) * D
		o.p *= math.Exp(lam*D) * (1 - (8+4*math.Abs(lam*D))*u)
		o.lq += a + 4*u*(math.Abs(o.lq)+2*math.Abs(a)+1)
		return o
	}
	emit := func(p float64, g int64) {
		if p > 0 && g >= out.Offset { // below the lattice: dropped (only lowers δ)
			out.Mass[g-out.Offset] += p * (1 - 4*u)
		}
	}
	var carry outcome
	carry.lq = math.Inf(-1)
	var gk int64 // the carry's grid point (coarse index)
	// start makes the mass t at fine index g the carry (or places it, when on the grid).
	start := func(t float64, g int64) {
		gk = floorDiv(g, r)
		k := g - gk*r
		if k == 0 {
			emit(t, gk)
			carry = outcome{lq: math.Inf(-1)}
			return
		}
		carry = frame(t, float64(k)*l.H)
	}
	for i := len(l.Mass) - 1; i >= 0; i-- {
		t := l.Mass[i]
		if t <= 0 {
			continue
		}
		g := l.Offset + int64(i)
		if carry.empty() {
			start(t, g)
			continue
		}
		d := float64(g-gk*r) * l.H // loss over the carry's grid point
		if d >= 0 {                // at or above it (same cell): joins the carry
			carry = carry.plus(frame(t, d))
			continue
		}
		ec := excess(carry.p, carry.lq, 0)
		if ec <= 0 || (math.Abs(lam)+1)*-d > 200 {
			// The carry is not above g (rounding), or the mass is too far below to join in
			// this frame: the carry goes to the grid point below its own (ec ≤ 0), or to g.
			if ec <= 0 {
				emit(reframe(carry, -H).p, gk-1)
			} else {
				emit(carry.p, gk)
			}
			start(t, g)
			continue
		}
		a := frame(t, d)
		ea := excess(a.p, a.lq, 0)
		f := ec / -ea * (1 - 1e-9) // rounded down: the mixture's loss is ≥ g
		if ea >= 0 || f >= 1 {     // a cannot bring the carry down to g: absorb it, keep g
			carry = carry.plus(a)
			continue
		}
		emit(carry.p+f*a.p, gk)
		// What is left of the mass (1 − f, rounded down) starts the next carry.
		start(t*(1-f)*(1-2*u), g)
	}
	if !carry.empty() {
		if excess(carry.p, carry.lq, 0) > 0 {
			emit(carry.p, gk)
		} else {
			emit(reframe(carry, -H).p, gk-1)
		}
	}
}

// saddleNewton is saddleLambda by Newton's method on the summed tilted means (their
// derivative is the summed tilted variance), kept within a bisection bracket: a handful
// of passes over lattices of one fine release each, where bisection takes forty. Like
// saddleLambda it only chooses λ (every λ gives valid bounds).
func saddleNewton(parts []tiltPart, eps float64, m *meter) float64 {
	moments := func(lambda float64) (mean, variance float64) {
		for _, p := range parts {
			m.add(passWork * int64(len(p.l.Mass)))
			_, mu, v := tiltedMoments(p.l, lambda)
			mean += float64(p.n) * mu
			variance += float64(p.n) * v
		}
		return mean, variance
	}
	mean, v := moments(0)
	if mean >= eps {
		return 0
	}
	lo, hi, lambda := 0.0, math.Inf(1), 0.0
	for range 60 {
		if mean < eps {
			lo = lambda
		} else {
			hi = lambda
		}
		if math.Abs(mean-eps) <= 1e-9*eps || !math.IsInf(hi, 1) && hi-lo <= 1e-9*hi {
			break
		}
		next := lambda + (eps-mean)/v
		if !(next > lo && next < hi) {
			if math.IsInf(hi, 1) {
				next = 2*lo + 1
			} else {
				next = (lo + hi) / 2
			}
		}
		if next > 1e6 {
			return 0 // ε beyond the composition's reach
		}
		lambda = next
		mean, v = moments(lambda)
	}
	return lambda
}

// trimBase trims the tilted lattice of one release (trim, and shedHigh for the upper
// bound), each end by up to eta of its tilted mass.
func (t *tilted) trimBase(upper bool, eta float64) {
	t.trim(upper, eta*total(t.l.Mass))
	if upper {
		t.shedHigh(eta * total(t.l.Mass))
	}
}

// shedHigh drops the upper bound's highest bins while their tilted mass adds up to at
// most eta, and adds it to Err: an absolute tilted error E moves δ(ε) by at most
// E·e^(C − λε) (λ ≥ 0: every bin above ε carries at most that factor; see tilted.delta),
// where sending the mass to +∞ would count it untilted, whole. One release of a
// subsampled Gaussian keeps thousands of such bins (its far tail, tilted to 1e-20 of
// the peak and less), which the first convolution would zero as noise anyway at the cost
// of an FFT as wide as all of them.
func (t *tilted) shedHigh(eta float64) {
	if t.lambda < 0 {
		return
	}
	l := t.l
	hi, acc := len(l.Mass), 0.0
	for hi > 1 && acc+l.Mass[hi-1] <= eta {
		acc += l.Mass[hi-1]
		hi--
	}
	l.Mass = l.Mass[:hi]
	l.Err += acc * (1 + float64(len(l.Mass))*u)
}

// releaseSpacings returns the spacing each item's tilted lattices start on (releaseSpacing),
// the items of one count that start finer than h sharing the finest of theirs (as long
// as one release still fits in maxGroupBins bins): powerAll composes one release of each
// and raises that to the count, one power where there would be one per item. Sixteen
// subsampled Gaussians (σ = 5 to 20, 10^6 releases each) at ε = 100: one power of
// about 2e8 work units where sixteen took 9e8, and the finest spacing for all (each
// release's discretisation errs by about n·λ²·h_i²/12 of δ, the finest h_i the least:
// a bracket 2.6 times narrower than with each item on its own spacing).
func releaseSpacings(items []Item, h float64) []float64 {
	hs := make([]float64, len(items))
	finest := map[int64]float64{}
	for i, it := range items {
		hs[i] = releaseSpacing(it, h)
		if f, ok := finest[it.Count]; hs[i] < h && (!ok || hs[i] < f) {
			finest[it.Count] = hs[i]
		}
	}
	for i, it := range items {
		if hs[i] == h {
			continue
		}
		width := 0.0
		for _, s := range it.Mechanism.specs() {
			lo, hi := s.support(1e-300)
			width = math.Max(width, hi-lo)
		}
		for f := finest[it.Count]; f < hs[i]; f *= 2 {
			if width/f <= maxGroupBins {
				hs[i] = f
				break
			}
		}
	}
	return hs
}

// maxGroupBins bounds one release's lattice on the spacing it shares with its group
// (releaseSpacings): 2^20 bins, 8 MB.
const maxGroupBins = 1 << 20

// powerAll returns the tilted n-fold compositions of the parts on spacing h, the parts
// of one count on one spacing finer than h (see releaseSpacings) composed release by release
// first and raised to their count together: Π_i B_i^(*n) = (Π_i B_i)^(*n), convolution
// being commutative and associative.
func powerAll(parts []tiltPart, lambda float64, upper bool, h float64, m *meter) []tilted {
	var groups [][]int
	at := map[[2]float64]int{}
	for i, p := range parts {
		key := [2]float64{float64(p.n), p.l.H}
		if g, ok := at[key]; ok && p.l.H < h {
			groups[g] = append(groups[g], i)
			continue
		}
		at[key] = len(groups)
		groups = append(groups, []int{i})
	}
	ts := make([]tilted, len(groups))
	parallel(len(groups), 0, func(g int) {
		idx := groups[g]
		p := parts[idx[0]]
		if len(idx) == 1 {
			ts[g] = powerTiltedTo(tilt(p.l, lambda, upper), p.n, upper, trimEta(p.n), h, m)
			return
		}
		eta := trimEta(p.n * int64(len(idx)))
		bs := make([]tilted, len(idx))
		for k, i := range idx {
			bs[k] = tilt(parts[i].l, lambda, upper)
			bs[k].trimBase(upper, eta)
		}
		ts[g] = powerTiltedTo(composeTiltedAll(bs, upper, eta, m), p.n, upper, eta, h, m)
	})
	return ts
}

// discretizeFine returns one release of s on spacing hs, a power-of-two fraction of h,
// fine only over its bulk [xl, xt] — multiples of h beyond which P and Q give at most
// 1e-30 on either side —, the cells below xl and above xt discretised on h, whose points
// are points of hs. The lattices stand for the partition of the losses into those cells,
// discretised as discretize does: its argument holds cell by cell (the upper bound
// spreads each cell over its two ends; the lower merges and mixes outcomes, which is
// post-processing in each part as in the whole); only the far tails get the accuracy of
// h. One release of a subsampled Gaussian σ = 5, q = 0.01 has its loss within
// [−0.0926, 0.0926] but for 1e-30 of it, its support to 1e-300 reaching 2.9 on one side:
// 5·10^3 fine cells instead of 3·10^5. A spec whose atoms are placed with a slack
// (gridSlack) is discretised whole.
func discretizeFine(s spec, hs, h float64) (up, lo *Lattice) {
	if _, shifted := s.(interface{ gridSlack() float64 }); shifted || hs == h {
		return discretize(s, hs, 1e-300)
	}
	bottom, top := s.support(1e-300)
	l30, h30 := s.support(1e-30)
	xl := math.Max(bottom, math.Floor(l30/h)*h)
	xt := math.Min(top, math.Ceil(h30/h)*h)
	if !(xl < xt) {
		return discretize(s, hs, 1e-300)
	}
	// The bulk takes everything on a side without a tail part (the outcomes of loss −∞,
	// an atom at the support's end).
	bulk := rangeSpec{s, math.Inf(-1), math.Inf(1), true}
	if xl > bottom {
		bulk.lo = xl
	}
	if xt < top {
		bulk.hi = xt
	}
	up, lo = discretize(bulk, hs, 1e-300)
	if xl > bottom {
		u, l := discretize(rangeSpec{s, math.Inf(-1), xl, false}, h, 1e-300)
		up, lo = joinFine(up, u), joinFine(lo, l)
	}
	if xt < top {
		u, l := discretize(rangeSpec{s, xt, math.Inf(1), false}, h, 1e-300)
		up, lo = joinFine(up, u), joinFine(lo, l)
	}
	return up, lo
}

// rangeSpec is s restricted to its finite losses in (lo, hi] (lo = −∞: with the
// outcomes of loss −∞), with s's mass at +∞ when inf is set.
type rangeSpec struct {
	spec
	lo, hi float64
	inf    bool
}

func (s rangeSpec) cell(a, b float64) (p, lq, relErr float64) {
	a, b = math.Max(a, s.lo), math.Min(b, s.hi)
	if a >= b {
		return 0, math.Inf(-1), 0
	}
	return s.spec.cell(a, b)
}

func (s rangeSpec) support(eta float64) (lo, hi float64) {
	lo, hi = s.spec.support(eta)
	return math.Max(lo, s.lo), math.Min(hi, s.hi)
}

func (s rangeSpec) infMass() float64 {
	if s.inf {
		return s.spec.infMass()
	}
	return 0
}

// joinFine returns the sum of a (spacing hs) and b (spacing h, a power-of-two multiple
// of hs, both through 0) on spacing hs: masses add bin by bin (one rounding each, in
// Rel), and so do Err and the mass at +∞.
func joinFine(a, b *Lattice) *Lattice {
	r := int64(math.Round(b.H / a.H))
	lo := min(a.Offset, b.Offset*r)
	hi := max(a.Offset+int64(len(a.Mass)), (b.Offset+int64(len(b.Mass))-1)*r+1)
	out := &Lattice{H: a.H, Offset: lo, Mass: make([]float64, hi-lo),
		InfMass: a.InfMass + b.InfMass, Err: a.Err + b.Err,
		Rel: (1+math.Max(a.Rel, b.Rel))*(1+u) - 1}
	copy(out.Mass[a.Offset-lo:], a.Mass)
	for k, v := range b.Mass {
		out.Mass[(b.Offset+int64(k))*r-lo] += v
	}
	return out
}

// discretizeRelease returns the upper and lower lattices of one release of it in
// direction d on spacing hs: discretizeItem on h, discretizeFine below it (counted in the
// work budget, discretizeWork a bin).
func discretizeRelease(it Item, d int, hs, h float64, m *meter) (up, lo *Lattice) {
	if hs == h {
		return discretizeItem(it, d, h, m)
	}
	sp := it.Mechanism.specs()
	up, lo = discretizeFine(sp[min(d, len(sp)-1)], hs, h)
	m.add(discretizeWork * int64(len(up.Mass)+len(lo.Mass)))
	return up, lo
}
