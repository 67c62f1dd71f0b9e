package pld

import (
	"math"

	"github.com/dpkit/dpkit/internal/numeric"
)

// ε at a tiny δ.
//
// Read at a total δ far below the plain lattice's absolute error (1000 steps of a
// subsampled Gaussian, σ = 4, q = 0.01, at δ = 1e-25: the upper curve never goes below
// 9.7e-24), ε(δ) has no finite certified upper end on the plain lattices. Two steps
// certify one (refineTiltedEpsilon):
//
//  1. A Chernoff bound. For every λ ≥ 0, (1 − e^(ε−s))₊ ≤ e^(λ(s−ε)), so on the upper
//     lattices (whose composition's δ is above the true one at every ε)
//
//     δ(ε) ≤ I + Π_i M_i(λ)^(n_i)·e^(−λε),  M_i(λ) = Σ_x m_x·e^(λx) over release i's finite masses,
//
//     I ≤ Σ n_i·I_i the mass of the configurations with a release at +∞ (I_i that of one
//     release). Solving for ε at δ = I + e^(K(λ) − λε), K = Σ n_i·ln M_i, and minimising
//     over λ gives a finite ε certified for δ (chernoffEpsilon): loose (a factor of the
//     order of λ·σ√(2π) on δ), but cheap and sound.
//  2. The tilted brackets of δ at chosen ε (tiltedBracket, tilt.go), which are relative
//     to δ: a few secant steps on ln δ(ε) find where the bracket straddles the target,
//     and two probes on either side certify ε_up with upper δ(ε_up) ≤ δ (so ε(δ) ≤
//     ε_up: δ(ε) is non-increasing) and ε_lo with lower δ(ε_lo) > δ (so ε(δ) > ε_lo).

// chernoffEpsilon returns an ε at which δ ≤ delta is certified by the Chernoff bound
// above on the items' upper lattices of spacing h, the larger of the directions' (+Inf
// when delta is not above the mass at +∞, or no λ tried certifies it), the λ that
// attains it, and the bound I on the mass at +∞ (the larger direction's).
func chernoffEpsilon(items []Item, h, delta float64, m *meter) (eps, lambda, infMass float64) {
	sides := 1
	for _, it := range items {
		sides = max(sides, len(it.Mechanism.specs()))
	}
	for d := range sides {
		type part struct {
			l *Lattice
			n float64
		}
		parts := make([]part, len(items))
		inf := 0.0
		for i, it := range items {
			up, _ := discretizeItem(it, d, h, m)
			parts[i] = part{up, float64(it.Count)}
			inf += float64(it.Count) * math.Max(up.InfMass, 0)
		}
		inf *= 1 + float64(2*len(items))*u // rounded up
		infMass = math.Max(infMass, inf)
		rest := (delta - inf) * (1 - 4*u) // rounded down
		if !(rest > 0) {
			return math.Inf(1), 0, infMass
		}
		lr := math.Log(rest)
		lr -= 1e-12 * math.Abs(lr) // rounded down
		// ε(λ) = (K(λ) − ln rest)/λ, each K an upper bound (logMGF; the sum's rounding
		// within 1e-12 of its magnitude), minimised over λ by a golden-section search on
		// ln λ ∈ [ln 1e-6, ln 1e6]; every λ gives a certified ε, so the search needs no
		// precision of its own.
		at := func(ll float64) float64 {
			lam := math.Exp(ll)
			k, mag := 0.0, 0.0
			for _, p := range parts {
				m.add(2 * passWork * int64(len(p.l.Mass)))
				v := p.n * logMGF(p.l, lam)
				k, mag = k+v, mag+math.Abs(v)
			}
			k += 1e-12 * (mag + 1)
			e := (k - lr) / lam
			return e + 1e-12*math.Abs(e)
		}
		ll, best := numeric.GoldenSection(at, math.Log(1e-6), math.Log(1e6), 1e-9, 60)
		bestL := math.Exp(ll)
		if math.IsNaN(best) || math.IsInf(best, 1) {
			return math.Inf(1), 0, infMass
		}
		if d == 0 || best > eps {
			eps, lambda = best, bestL
		}
	}
	return eps, lambda, infMass
}

// maxEpsilonProbes bounds the tilted brackets one spacing's search evaluates.
const maxEpsilonProbes = 8

// refineTiltedEpsilon brackets ε(Options.Delta) when the plain lattices cannot certify
// it to the tolerance (without one, to firstTolerance) because δ is below their
// absolute error (see above): the
// Chernoff ε first, then tilted brackets of δ at a few ε, on a spacing eight times the
// plain lattice's, then on it and on halvings of it while the width exceeds the tolerance
// and the work budget allows (four times DefaultWork without a Tolerance, each spacing
// taking a few tilted compositions; the first two spacings up to firstTiltWork).
func (c *Composition) refineTiltedEpsilon(items []Item, m *meter, adaptive bool) {
	delta, target := c.opts.Delta, c.opts.Tolerance
	width := func() float64 {
		up, lo := c.epsilon(delta)
		if math.IsInf(up, 1) {
			return 1
		}
		if up <= 0 {
			return 0
		}
		return (up - lo) / up
	}
	if adaptive {
		target = math.Max(target, firstTolerance) // what the plain lattices reach by default
	}
	if c.pld == nil || width() <= target || delta < c.floor {
		return
	}
	if up, _ := c.epsilon(delta); !math.IsInf(up, 1) && c.pld.maxErr() <= delta*target {
		return // the plain lattices' error is not what limits them: refining them serves
	}
	h := c.tiltSpacing(items)
	limit := tiltBudget(m, 4*DefaultWork, adaptive)
	defer m.setLimit(0)
	var slope float64 // −d ln δ/dε, about the saddle's λ
	ok := tiltRound(func() bool {
		e, lam, inf := chernoffEpsilon(items, h, delta, m)
		if math.IsInf(e, 1) {
			c.tailMass = inf
			return false
		}
		c.probes = append(c.probes, tiltProbe{e, delta, 0})
		slope = lam
		return true
	})
	if !ok {
		return
	}
	// The first search runs on a spacing eight times coarser, where each tilted
	// composition is several times cheaper, to locate ε(δ); the next ones start from its
	// certified ends, on h and finer. The first two may take up to firstTiltWork when
	// the budget is smaller (a tilted composition of 100 subsampled-Gaussian releases,
	// σ = 1.95, q = 0.001, took 1e9 units on the plain lattice's spacing 3e-5: ε at
	// δ = 1e-60 was [0.136, 2.69], the Chernoff bound alone).
	if adaptive {
		m.setLimit(max(limit, m.done()+firstTiltWork))
	}
	hs := 8 * h
	for round := 0; round < maxTiltRounds; round++ {
		before := m.done()
		found := c.searchEpsilon(items, hs, slope, m)
		if round == 1 {
			m.setLimit(limit)
		}
		if !found && round > 0 {
			return
		}
		cost := m.done() - before
		if width() <= target || round > 0 && m.done()+2*cost > limit {
			return
		}
		if round == 0 {
			hs = h
		} else {
			hs /= 2
		}
	}
}

// searchEpsilon evaluates the tilted bracket of δ on spacing h at up to
// maxEpsilonProbes values of ε, each recorded in c.probes: from the tightest certified
// ε so far, secant steps on the bracket's midpoint ln δ(ε) (slope: the first estimate
// of −d ln δ/dε) locate the crossing ε* of Options.Delta; then probes at ε* ± (half the
// bracket's log-width + a margin)/slope certify either side, the margin doubled and the
// crossing re-estimated after a probe that falls short. It reports false when no
// evaluation applied (tilting does not, or the work budget is spent).
func (c *Composition) searchEpsilon(items []Item, h, slope float64, m *meter) bool {
	delta := c.opts.Delta
	ld := math.Log(delta)
	var pts []tiltProbe
	eval := func(eps float64) bool {
		if !(eps > 0) || math.IsInf(eps, 0) {
			return false
		}
		up, lo, ok := c.tiltedBracket(items, h, eps, m)
		if !ok {
			return false
		}
		p := tiltProbe{eps, up, math.Min(lo, up)}
		c.probes = append(c.probes, p)
		pts = append(pts, p)
		return true
	}
	// mid is the estimate of ln δ a bracket gives: its geometric mean, or its upper end.
	mid := func(p tiltProbe) float64 {
		if p.lo > 0 {
			return (math.Log(p.up) + math.Log(p.lo)) / 2
		}
		return math.Log(p.up)
	}
	// estimate returns the crossing of ld by the secant through the two latest points
	// (or the latest and the slope), the slope, and the latest bracket's log-width.
	estimate := func() (x, s, w float64) {
		p := pts[len(pts)-1]
		s = slope
		for i := len(pts) - 2; i >= 0; i-- {
			if q := pts[i]; q.eps != p.eps {
				if d := (mid(q) - mid(p)) / (p.eps - q.eps); d > 0 {
					s = d
				}
				break
			}
		}
		w = 1.0
		if p.lo > 0 {
			w = math.Log(p.up / p.lo)
		}
		return p.eps + (mid(p)-ld)/s, s, w
	}
	x, _ := c.epsilon(delta) // the tightest certified so far (the Chernoff ε at least)
	if !eval(x) {
		return false
	}
	// Secant steps until the target is within a bracket's reach of the latest point.
	for len(pts) < maxEpsilonProbes-2 {
		p := pts[len(pts)-1]
		if p.lo > 0 && math.Abs(mid(p)-ld) <= math.Log(p.up/p.lo)/2+0.05 {
			break
		}
		nx, _, _ := estimate()
		if nx == p.eps || !eval(nx) {
			break
		}
	}
	margin := 0.01
	for len(pts) < maxEpsilonProbes {
		up, lo := c.epsilon(delta)
		x, s, w := estimate()
		needUp, needLo := up > x, lo < x
		if !(s > 0) || (!needUp && !needLo) {
			break
		}
		step := (w/2 + margin) / s
		n := len(pts)
		if needUp && x+step < up && !eval(x+step) {
			break
		}
		if needLo && len(pts) < maxEpsilonProbes && x-step > lo && !eval(x-step) {
			break
		}
		if len(pts) == n {
			break // no probe would tighten the bracket
		}
		nu, nl := c.epsilon(delta)
		if nu >= up && nl <= lo {
			margin *= 2 // neither side moved: aim further out
		}
		if (nu-nl)/nu <= 2*w/s/nu+2*margin/s/nu {
			break // as tight as this spacing's brackets allow
		}
	}
	return len(pts) > 0
}
