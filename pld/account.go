package pld

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
)

// lattice holds the settings of one round's lattice: spacing h, the mass eta each step
// may shed, refine (the halvings of the spacing so far), the convolutions' error
// allowance, whether the items' atoms are on the common lattice, and the meter.
type lattice struct {
	h, eta  float64
	refine  int
	errTol  float64
	aligned bool
	m       *meter
}

// newPLD returns newPLD(l.h, l.eta, specs...) with the lattice's allowance and meter.
func (l lattice) newPLD(h float64, specs ...spec) *PLD {
	p := newPLD(h, l.eta, specs...)
	p.errTol, p.m = l.errTol, l.m
	for _, s := range p.sides {
		l.m.add(discretizeWork * int64(len(s.upper.Mass)))
	}
	return p
}

// composeOnLattice composes the items on the lattice of spacing l.h. A mechanism whose
// loss has atoms on multiples of a unit is first self-composed on its own lattice, of
// spacing unit/2^j ≤ h (refined with h: refine halvings so far), which holds the atoms
// exactly (so its lower bound stays tight), and the result is then re-discretised onto h
// (rediscretize: a spread for the upper bound, merging and mixing for the lower one).
//
// The spread errs to second order in h whatever it spreads; merging and mixing does so
// only for a smooth distribution, and a self-composed group is a comb (a binomial of
// atoms 2ε apart, for Laplace with a little mass between the teeth): with teeth several
// cells apart, mixing must reach across empty cells and errs to first order. So each
// such group is first composed, on its own lattice, with a smooth partner: a block
// (partners), or else a share of the workload's Gaussian (split so that the μ² add up
// to the whole, which is exact). The comb convolved with a bump wider than its teeth
// is smooth.
func composeOnLattice(items []Item, l lattice) *PLD {
	var partners []blockMechanism
	var gauss *Gaussian
	var groups []Item
	for _, it := range items {
		switch m := it.Mechanism.(type) {
		case blockMechanism:
			partners = append(partners, m)
		case Gaussian:
			gauss = &m
		default:
			groups = append(groups, it)
		}
	}
	// Each comb that will be re-discretised takes one partner; Gaussian shares go to
	// those left without a block.
	lumpy := 0
	for _, it := range groups {
		if !l.aligned && isComb(it, l.h, l.refine) && len(items) > 1 {
			lumpy++
		}
	}
	var share float64 // μ² of each Gaussian share
	if gauss != nil && lumpy > len(partners) {
		share = gauss.Mu() * gauss.Mu() / float64(lumpy-len(partners)+1)
	}
	ps := make([]*PLD, 0, len(items))
	for _, it := range groups {
		p := l.group(it, len(items) > 1)
		if p.h != l.h && len(items) > 1 {
			if isComb(it, l.h, l.refine) {
				switch {
				case len(partners) > 0:
					p, _ = p.Compose(partners[len(partners)-1].pld(p.h, l.m))
					partners = partners[:len(partners)-1]
				case share > 0:
					p, _ = p.Compose(l.newPLD(p.h, gaussianSpec{math.Sqrt(share)}))
				}
			}
			p = p.rediscretize(l.h, false)
		}
		ps = append(ps, p)
	}
	// The blocks are independent: enumerated on every core.
	bs := make([]*PLD, len(partners))
	parallel(len(partners), 0, func(i int) {
		bs[i] = partners[i].pld(l.h, l.m)
		bs[i].trim, bs[i].errTol = l.eta, l.errTol
	})
	ps = append(ps, bs...)
	if gauss != nil {
		mu := gauss.Mu()
		if share > 0 { // what the shares left
			mu = math.Sqrt(share)
		}
		ps = append(ps, l.newPLD(l.h, gaussianSpec{mu}))
	}
	return composeAll(ps)
}

// composeAll composes PLDs on one lattice pairwise, smallest first (pairwise; each
// PLD's own lattices are composed concurrently too, so only levels of several pairs
// gain from the cores).
func composeAll(ps []*PLD) *PLD {
	return pairwise(ps, (*PLD).Bins, func(a, b *PLD) *PLD {
		c, _ := a.Compose(b)
		return c
	})
}

// group returns the it.Count-fold composition of it's release, which starts on the
// spacing groupSpacing gives and may coarsen up to its largest: on two resolutions when
// its loss has long light tails (see tailed), else on one.
func (l lattice) group(it Item, several bool) *PLD {
	h, hMax := groupSpacing(it, l.h, l.refine, several)
	if l.aligned { // every atom is on the common lattice: compose there, exactly
		h, hMax = l.h, l.h
	}
	ratio := coarseRatio * math.Exp2(float64(l.refine))
	sp := it.Mechanism.specs()
	if it.Count > 1 {
		sd0 := 0.0
		for _, s := range sp {
			sd0 = math.Max(sd0, math.Sqrt(s.variance()))
		}
		if plan := planTails(sd0, h, hMax, ratio, it.Count); plan != nil {
			if t, ok := newTailed(h, l.eta, plan, sp...); ok {
				t.bulk.m, t.tail.m = l.m, l.m
				t = t.withTol(l.errTol)
				return t.selfCompose(it.Count, hMax, ratio, plan)
			}
		}
	}
	p := l.newPLD(h, sp...)
	if it.Count > 1 {
		p = p.selfComposeAdaptive(it.Count, hMax, ratio)
	}
	return p
}

// startRatio is the number of bins per standard deviation of one release on the
// lattice a group starts on (times 2^refine): the discretisation of each release moves
// the variance of the total by about 1/(3·startRatio²) of itself.
const startRatio = 32

// groupSpacing returns the spacing of the lattice an item starts on and the largest its
// self-composition may coarsen to. A loss with atoms on multiples of a unit starts on
// unit/2^j ≤ h/2^refine, so the atoms are on the lattice, and stays within the unit (but
// a subsampled loss without atoms, whose unit only aligns an edge); other losses start on
// h/2^j. Unless the loss is atoms only (then exact on its aligned lattice), the start is
// also fine enough for about startRatio·2^refine bins per standard deviation of one
// release (a unit-aligned start: the power of two nearest to it, within a factor √2, but
// for an edge, which needs at least that many).
// With several items the largest spacing is h (the common
// lattice); alone an item's own lattice is the answer, and may coarsen freely.
func groupSpacing(it Item, h float64, refine int, several bool) (start, largest float64) {
	sp := it.Mechanism.specs()
	sd := 0.0
	for _, s := range sp {
		sd = math.Max(sd, math.Sqrt(s.variance()))
	}
	target := sd / (startRatio * math.Exp2(float64(refine)))
	largest = math.Inf(1)
	if several {
		largest = h
	}
	// One release's lattice holds at most maxStartBins bins: a finer unit (a discrete
	// Laplace on a fine grid) is then not resolved, and the loss is treated as smooth.
	width := 0.0
	for _, s := range sp {
		lo, hi := s.support(1e-30)
		width = math.Max(width, hi-lo)
	}
	if unit := sp[0].atomUnit(); unit > 0 {
		// A subsampled loss without atoms is aligned with the edge the mass of one release
		// piles up at: that pile-up needs the full start resolution, but its powers are
		// smooth there, and may coarsen beyond the unit.
		edge := false
		if ss, ok := sp[0].(subsampledSpec); ok {
			_, _, heavy := ss.heavyAtoms()
			edge = !heavy
		}
		slack := math.Sqrt2
		if edge {
			slack = 1
		}
		start = unit / math.Exp2(math.Max(0, math.Ceil(math.Log2(unit/h)))+float64(refine))
		for target > 0 && start > slack*target && !pureAtoms(sp[0]) {
			start /= 2
		}
		for width/start > maxStartBins {
			start *= 2
		}
		if edge {
			return start, largest
		}
		// Within the unit the comb's atoms stay exact; a composition spread over more
		// than combBinsPerSD units per standard deviation is smooth at a coarser spacing
		// (every cell holds many teeth), and may coarsen to that many bins per standard
		// deviation: a 10^12-fold Laplace of scale 10^6 otherwise held 12 million bins a
		// lattice (8 GB, minutes).
		sdK := math.Sqrt(float64(it.Count)) * sd
		return start, math.Min(largest, math.Max(math.Max(start, unit), sdK/(combBinsPerSD*math.Exp2(float64(refine)))))
	}
	start = h
	for target > 0 && start > target && width/start < maxStartBins/2 {
		start /= 2
	}
	return start, largest
}

// combBinsPerSD is the resolution, in bins per standard deviation of the whole
// composition, below which an aligned comb may coarsen past its atom unit (see
// groupSpacing).
const combBinsPerSD = 2048

// maxStartBins bounds the lattice of one release (see groupSpacing).
const maxStartBins = 1 << 18

// commonUnit returns u > 0 when every item but Gaussians has losses that are atoms
// only, each direction's on its own grid Shift + u·Z (the smallest atom unit; ratios
// within 1e-9 of integers; a subsampled two-atom pair has a different Shift in each
// direction, see subsampledSpec.atomOffset); else 0.
func commonUnit(list []Item) float64 {
	for _, it := range list {
		if _, ok := it.Mechanism.(Gaussian); ok {
			continue
		}
		for _, s := range it.Mechanism.specs() {
			if !pureAtoms(s) {
				return 0
			}
		}
	}
	return atomGrid(list)
}

// atomGrid returns u > 0 when every item but Gaussians has loss atoms (Laplace's ±Δ/b
// among a continuous part, or atoms only) on multiples of one unit u (the smallest; ratios
// within 1e-9 of integers); else 0.
func atomGrid(list []Item) float64 {
	var units []float64
	for _, it := range list {
		if _, ok := it.Mechanism.(Gaussian); ok {
			continue
		}
		for _, s := range it.Mechanism.specs() {
			if s.atomUnit() <= 0 {
				return 0
			}
			units = append(units, s.atomUnit())
		}
	}
	if len(units) == 0 {
		return 0
	}
	u0 := slices.Min(units)
	for _, x := range units {
		if r := x / u0; math.Abs(r-math.Round(r)) > 1e-9*r {
			return 0
		}
	}
	return u0
}

// pureAtoms reports whether a spec's loss is atoms only (on multiples of its unit, from
// its offset): on an aligned lattice it is then exact, and needs no finer start.
func pureAtoms(s spec) bool {
	switch t := s.(type) {
	case *atomSpec, discreteLaplaceSpec:
		return true
	case subsampledSpec:
		return t.twoAtoms()
	}
	return false
}

// isComb reports whether an item is self-composed on a lattice aligned with its atoms
// other than the common one: the result is a comb of atoms (see composeOnLattice).
func isComb(it Item, h float64, refine int) bool {
	if it.Mechanism.specs()[0].atomUnit() <= 0 {
		return false
	}
	start, _ := groupSpacing(it, h, refine, true)
	return start != h
}

// Exact reports whether the curve is exact (Gaussians only) rather than a bracket.
func (c *Composition) Exact() bool { return c.pld == nil }

// PLD returns the lattice distribution behind a bracketed curve (nil when exact).
func (c *Composition) PLD() *PLD { return c.pld }

// GaussianMu returns the total μ when the workload is Gaussian only (else 0).
func (c *Composition) GaussianMu() float64 {
	if c.pld == nil {
		return c.mu
	}
	return 0
}

// Delta returns lower ≤ δ(ε) ≤ upper for the composition.
func (c *Composition) Delta(eps float64) (upper, lower float64, err error) {
	if math.IsNaN(eps) {
		return 0, 0, paramErr("epsilon", eps, "a number, not NaN")
	}
	if c.pld == nil {
		if c.mu == 0 {
			return 0, 0, nil
		}
		upper, lower = gaussianBounds(c.mu, eps)
		return upper, lower, nil
	}
	upper, lower = 1, 0
	for _, p := range c.all {
		u, l := p.Delta(eps)
		upper, lower = math.Min(upper, u), math.Max(lower, l)
	}
	if eps >= c.maxLoss { // no loss exceeds maxLoss: only δ-events remain
		upper = math.Min(upper, c.floor)
	}
	for _, p := range c.probes { // δ(eps) ≤ δ(p.eps) at eps ≥ p.eps, ≥ it at eps ≤ p.eps
		if eps >= p.eps {
			upper = math.Min(upper, p.up)
		}
		if eps <= p.eps {
			lower = math.Max(lower, p.lo)
		}
	}
	return upper, math.Min(lower, upper), nil
}

// Epsilon returns lower ≤ ε(δ) ≤ upper, the smallest total ε at total δ. It reports a
// *dpkit.InfeasibleError when δ is below what the composition can reach at any ε.
func (c *Composition) Epsilon(delta float64) (upper, lower float64, err error) {
	if err := dpkit.CheckDelta("delta", delta); err != nil {
		return 0, 0, err
	}
	if c.pld == nil {
		if c.mu == 0 {
			return 0, 0, nil
		}
		if delta == 0 {
			return 0, 0, &dpkit.InfeasibleError{Msg: "a Gaussian mechanism has δ > 0 at every ε"}
		}
		return gaussianEpsilon(c.mu, delta, true), gaussianEpsilon(c.mu, delta, false), nil
	}
	upper, lower = c.epsilon(delta)
	if math.IsInf(upper, 1) {
		if delta < c.floor {
			return upper, lower, &dpkit.InfeasibleError{Msg: "total δ is below the probability of the mechanisms' δ-events"}
		}
		// The true ε is finite (δ is above the floor): the lattices cannot certify it.
		if c.tailMass >= delta {
			return upper, lower, &dpkit.InfeasibleError{Msg: fmt.Sprintf("no finite ε can be certified at δ = %g, although one exists: the lattices leave out tails (beyond 1e-300 of each release) and δ-events of mass %.3g in all, at or above it; ask for a larger δ", delta, c.tailMass)}
		}
		reach, _, _ := c.Delta(math.MaxFloat64)
		return upper, lower, &dpkit.InfeasibleError{Msg: fmt.Sprintf("no finite ε can be certified at δ = %g, although one exists: the lattices' floating-point error and truncated tails keep their upper δ at %.3g or more at every ε; ask for a δ above that, or for δ at a chosen ε (read relative to δ itself)", delta, reach)}
	}
	return upper, lower, nil
}

// target returns the width Compose refines: of the ε bracket at Options.Delta, or of
// the δ bracket at Options.Epsilon when that is set.
func (c *Composition) target() float64 {
	if c.opts.Epsilon == 0 {
		return c.Width(c.opts.Delta)
	}
	if c.pld == nil {
		return 0
	}
	u, l, _ := c.Delta(c.opts.Epsilon)
	if u == 0 {
		return 0
	}
	return (u - l) / u
}

// Bounds returns the upper and lower distributions of the finest lattice computed (nil
// when the curve is exact): their δ(ε) bracket the true curve, and their atoms are the
// losses where it bends. For a pair whose two neighbour orders differ they are those
// of the remove direction.
func (c *Composition) Bounds() (upper, lower *Discrete) {
	if c.pld == nil {
		return nil, nil
	}
	up, lo := c.pld.discretes()
	return up[0], lo[0]
}

// Width returns the relative width (upper − lower)/max(upper, 1e-6) of the ε bracket at
// delta (0 when exact or when ε is 0).
func (c *Composition) Width(delta float64) float64 {
	if c.pld == nil {
		return 0
	}
	if len(c.all) == 0 {
		return 1
	}
	u, l := c.epsilon(delta)
	if math.IsInf(u, 1) || u == 0 {
		return 0
	}
	return (u - l) / math.Max(u, minWidthScale)
}

// minWidthScale is the ε below which widths are measured absolutely: a bracket
// [0, 1e-9] of an ε that is 0 up to a billionth of a nat is as tight as one needs, and
// relative to its upper end it would be 1 however fine the lattice.
const minWidthScale = 1e-6

// epsilon intersects the ε brackets of every lattice computed.
func (c *Composition) epsilon(delta float64) (upper, lower float64) {
	upper, lower = math.Inf(1), 0
	for _, p := range c.all {
		u, l := p.Epsilon(delta)
		upper, lower = math.Min(upper, u), math.Max(lower, l)
	}
	if delta >= c.floor { // δ(maxLoss) = floor ≤ delta
		upper = math.Min(upper, c.maxLoss)
	}
	for _, p := range c.probes { // δ(p.eps) ≤ delta: ε(delta) ≤ p.eps; > delta: ε(delta) ≥ p.eps
		if p.up <= delta {
			upper = math.Min(upper, p.eps)
		}
		if p.lo > delta {
			lower = math.Max(lower, p.eps)
		}
	}
	return upper, math.Min(lower, upper)
}

// TradeOff returns lower ≤ β(α) ≤ upper, the trade-off function (f-DP view).
func (c *Composition) TradeOff(alpha float64) (upper, lower float64, err error) {
	if math.IsNaN(alpha) || alpha < 0 || alpha > 1 {
		return 0, 0, paramErr("alpha", alpha, "in [0, 1]")
	}
	if c.pld == nil {
		// μ-GDP: β(α) = Φ(Φ⁻¹(1 − α) − μ).
		if alpha == 0 {
			return 1, 1, nil
		}
		z := invNormSF(alpha) // Φ⁻¹(1 − α)
		b := normCDF(z - c.mu)
		return b * (1 + 1e-12), b * (1 - 1e-12), nil
	}
	upper, lower = 1, 0
	for _, p := range c.all {
		u, l := p.TradeOff(alpha)
		upper, lower = math.Min(upper, u), math.Max(lower, l)
	}
	return upper, lower, nil
}

// FitGaussianMu returns the smallest μ whose Gaussian-DP curve lies above the upper
// curve at every loss value of the lattice with δ in [max(1e-15, 100·m), 0.5], m the upper
// curve's mass at +∞ (δ-events, truncated tails, rounding error) — the Gaussian DP that
// best describes the composition. It is a fit on the grid of losses, not a certificate
// between grid points.
func (c *Composition) FitGaussianMu() float64 {
	if c.pld == nil {
		return c.mu
	}
	type point struct{ eps, delta float64 }
	var pts []point
	up, _ := c.pld.discretes()
	for _, d := range up {
		// Below 100 times the mass at +∞ (δ-events, truncated tails, tracked error) the
		// upper curve is that mass more than the shape of the loss: not fitted.
		floor := math.Max(1e-15, 100*d.InfMass)
		d.atomDeltas(func(i int, dl float64) {
			if d.Loss[i] >= 0 && dl >= floor && dl <= 0.5 {
				pts = append(pts, point{d.Loss[i], dl})
			}
		})
	}
	// below(μ): μ's curve is still under some point (μ too small); true below, false above.
	below := func(mu float64) (bool, error) {
		for _, p := range pts {
			if g, _ := gaussianBounds(mu, p.eps); g < p.delta {
				return true, nil
			}
		}
		return false, nil
	}
	hi := 1.0
	if b, _ := below(hi); b {
		_, h, found, _ := numeric.ExpandUp(hi, 2, 1e6, below)
		if !found {
			return 1e6
		}
		hi = h
	}
	_, hi, _ = numeric.Bisect(0, hi, below, numeric.Stop{MaxIter: 60})
	return hi
}
