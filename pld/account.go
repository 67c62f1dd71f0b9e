package pld

import (
	"math"
	"slices"
	"sort"

	"github.com/dpkit/dpkit"
)

// Item is a mechanism released Count times.
type Item struct {
	Mechanism Mechanism
	Count     int64
}

// MaxCount bounds Item.Count.
const MaxCount = 1_000_000_000_000

// DefaultTolerance is the relative width (upper − lower)/upper of the ε bracket that
// Compose aims for at Options.Delta.
const DefaultTolerance = 1e-3

// Options tunes Compose. The zero value is ready to use.
type Options struct {
	// Tolerance is the relative width of the ε bracket to reach (default 1e-3), in (0, 1).
	Tolerance float64
	// Delta is the total δ at which the width is measured (default 1e-6), in (0, 1).
	Delta float64
	// Epsilon, when set (finite, > 0), measures the width as the relative width
	// (upper − lower)/upper of the δ bracket at this total ε instead.
	Epsilon float64
	// MaxBins bounds the lattice (default 2^21 bins): past it the best bracket found is
	// returned and Width says how wide it is.
	MaxBins int
}

// Composition is the privacy curve of a workload of mechanisms: exact for Gaussians
// alone (closed form), otherwise a certified bracket computed on a lattice.
type Composition struct {
	mu  float64 // total Gaussian μ when exact
	pld *PLD    // the finest lattice computed
	all []*PLD  // every lattice computed: each gives a valid bracket; they are intersected
	// maxLoss is Σ Count·(largest finite loss) (+Inf when some loss is unbounded) and
	// floor = 1 − Π(1 − δ-event mass)^Count: δ(ε) = floor for ε ≥ maxLoss.
	maxLoss, floor float64
	tol            float64
	opts           Options
}

// Compose returns the privacy curve of running every item's mechanism Count times
// (adaptively chosen mechanisms with fixed parameters compose the same way: KOV Thm 3.3's
// proof, and Dong, Roth & Su 2022 Thm 3.2). Gaussians are merged in closed form
// (μ² = Σ Count·μ_i²); identical mechanisms are self-composed by repeated squaring; the
// rest are convolved on a lattice whose spacing is refined (at most maxRounds times, by 2 to 16) until
// the ε bracket at Options.Delta is within Options.Tolerance.
func Compose(items []Item, opts *Options) (*Composition, error) {
	o := Options{Tolerance: DefaultTolerance, Delta: 1e-6, MaxBins: 1 << 21}
	if opts != nil {
		if opts.Tolerance != 0 {
			o.Tolerance = opts.Tolerance
		}
		if opts.Delta != 0 {
			o.Delta = opts.Delta
		}
		if opts.MaxBins != 0 {
			o.MaxBins = opts.MaxBins
		}
		o.Epsilon = opts.Epsilon
	}
	if math.IsNaN(o.Tolerance) || o.Tolerance <= 0 || o.Tolerance >= 1 {
		return nil, paramErr("tolerance", o.Tolerance, "in (0, 1)")
	}
	if math.IsNaN(o.Delta) || o.Delta <= 0 || o.Delta >= 1 {
		return nil, paramErr("delta", o.Delta, "in (0, 1)")
	}
	if math.IsNaN(o.Epsilon) || math.IsInf(o.Epsilon, 0) || o.Epsilon < 0 {
		return nil, paramErr("epsilon", o.Epsilon, "a finite number ≥ 0 (0: measure the width at Delta)")
	}
	if len(items) == 0 {
		return nil, paramErr("items", 0, "at least one mechanism")
	}
	mu2 := 0.0
	groups := map[string]Item{}
	var total float64
	for _, it := range items {
		if it.Mechanism == nil {
			return nil, paramErr("mechanism", nil, "a mechanism")
		}
		if err := it.Mechanism.Validate(); err != nil {
			return nil, err
		}
		if err := dpkit.CheckCount("count", it.Count, MaxCount); err != nil {
			return nil, err
		}
		total += float64(it.Count)
		if g, ok := it.Mechanism.(Gaussian); ok {
			mu2 += float64(it.Count) * g.Mu() * g.Mu()
			continue
		}
		key := it.Mechanism.String()
		g := groups[key]
		g.Mechanism = it.Mechanism
		g.Count += it.Count
		groups[key] = g
	}
	// Σ Count·μ_i² is summed in float64 (n roundings): round it up so that the merged μ,
	// and every value read off it, is never below the exact one.
	mu2 *= 1 + 2*u*float64(len(items)+2)
	c := &Composition{tol: o.Tolerance, opts: o}
	// The floor per direction (remove, add): a mechanism with one direction counts in
	// both; the composition's curve is the larger of the two directions', so is its floor.
	var logKeep [2]float64
	for _, g := range groups {
		ml := 0.0
		sp := g.Mechanism.specs()
		for d := range logKeep {
			s := sp[min(d, len(sp)-1)]
			ml = math.Max(ml, s.maxLoss())
			logKeep[d] += float64(g.Count) * math.Log1p(-s.infMass())
		}
		c.maxLoss += float64(g.Count) * ml
	}
	if mu2 > 0 {
		c.maxLoss = math.Inf(1)
	}
	// Rounded up: the floor only caps upper values, so it must not be below the truth.
	c.floor = math.Min(1, -math.Expm1(math.Min(logKeep[0], logKeep[1]))*(1+1e-12))
	if len(groups) == 0 {
		c.mu = math.Sqrt(mu2) * (1 + 2*u)
		return c, nil
	}
	list := make([]Item, 0, len(groups)+1)
	for _, g := range groups {
		list = append(list, g)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Mechanism.String() < list[j].Mechanism.String() })
	if mu2 > 0 {
		list = append(list, Item{Gaussian{Sigma: 1 / math.Sqrt(mu2), Sensitivity: 1}, 1})
	}
	// Few-atom mechanisms whose atoms all lie on multiples of one unit (ε = 0.01, 0.02,
	// 0.05, …) compose exactly on a lattice aligned with that unit; otherwise they are
	// composed in blocks.
	unit0 := commonUnit(list)
	if unit0 == 0 {
		list = blocks(list)
	}
	v := 0.0
	for _, it := range list {
		for _, s := range it.Mechanism.specs() {
			v += float64(it.Count) * s.variance()
		}
	}
	sd := math.Sqrt(v)
	if sd == 0 {
		sd = 1
	}
	// Lattice spacing: a fiftieth of the standard deviation of the total loss, and fine
	// enough to resolve each group of identical mechanisms (a sixteenth of its standard
	// deviation), since every group is re-discretised onto it; refined until the bracket
	// is tight enough or the lattice reaches MaxBins.
	//
	// Tails: each release's support may leave out eta at each end, and each composition
	// may trim eta more (upper: moved to +∞ or the lowest bin; lower: dropped). With at
	// most total + 130·len(list) such steps, the upper curve rises by at most half of
	// budget = Delta·Tolerance/100 (so ε(Delta) moves far less than the tolerance); read
	// at much smaller δ it may stay above budget (valid, but loose there). When the width
	// is measured at Options.Epsilon, where δ is not known beforehand, 1e-30 in all.
	eta := 1e-30 / math.Max(total, 1)
	if o.Epsilon == 0 {
		eta = math.Max(eta, o.Delta*o.Tolerance/100/(2*(total+130*float64(len(list)))))
	}
	h := sd / 50
	for _, it := range list {
		if _, ok := it.Mechanism.(blockMechanism); ok {
			continue // enumerated, not self-composed on a lattice of its own
		}
		for _, s := range it.Mechanism.specs() {
			if g := math.Sqrt(float64(it.Count)*s.variance()) / 16; g > 0 {
				h = math.Min(h, g)
			}
		}
	}
	// Width model: each of the n items discretised on the common lattice moves the
	// variance of the total loss by about h²/2 (the upper spread adds ≈ h²/6, the lower
	// merge-and-mix removes ≈ h²/3), and ε(δ) ≈ v/2 + z·σ, z = √(2 ln(1/δ)), moves by
	// (1/2 + z/(2σ)) per unit of variance: the first lattice aims at half the tolerance.
	if n := float64(len(list)); n > 1 {
		z := math.Sqrt(2 * math.Log(1/o.Delta))
		h = math.Min(h, math.Sqrt(o.Tolerance*(v/2+z*sd)/(n*(0.5+z/(2*sd)))))
	}
	h = math.Max(h, sd/float64(o.MaxBins)*8)
	if unit0 > 0 {
		// The aligned lattice: unit0/2^j ≤ h, unless that exceeds the bins (then blocks).
		a := unit0 / math.Exp2(math.Max(0, math.Ceil(math.Log2(unit0/h))))
		if mu2 == 0 {
			a = unit0 // atoms only: exact on the unit itself, no finer lattice helps
		}
		if 30*sd/a <= float64(o.MaxBins) {
			h = a
		} else {
			unit0 = 0
			list = blocks(list)
		}
	}
	// FFT error allowance: Err adds to δ directly, and a relative error r of δ moves ε by
	// about r over d ln δ/d ln ε ≳ 2 ln(1/δ) (≈ z² for a Gaussian-like curve): a total of
	// Delta·Tolerance·ln(1/Delta)/5 moves ε(Delta) by at most a tenth of the tolerance. It
	// is shared by the at most 2·(len(list) + 32) convolutions' worth of allowances (see
	// selfComposeAdaptive). Measured at Epsilon, δ is unknown: exact bulks where cheap.
	errTol := 0.0
	if o.Epsilon == 0 {
		errTol = o.Delta * o.Tolerance * math.Log(1/o.Delta) / 5 / (2 * float64(len(list)+32))
	}
	worse := 0
	h0 := h
	for round := 0; ; round++ {
		prev := c.target()
		refine := int(math.Round(math.Log2(h0 / h)))
		c.pld = composeOnLattice(list, h, eta, refine, errTol, unit0 > 0)
		c.all = append(c.all, c.pld)
		w := c.target()
		if round > 0 && w > prev/1.5 {
			worse++
		}
		// Stop when refining cannot help: the tolerance is met, the rounds or bins run out,
		// the width stopped shrinking, or the FFT error (absolute, it grows as the lattice
		// is refined) is already a tenth of the target δ.
		if w <= o.Tolerance || round == maxRounds || worse == 2 || c.pld.Bins()*4 > o.MaxBins || c.pld.maxErr() > o.Delta/10 {
			return c, nil
		}
		// The width falls as h² (second order, both bounds): aim for 60% of the
		// tolerance in one step, refining by 1.25 to 16.
		f := math.Min(0.8, math.Max(math.Sqrt(0.6*o.Tolerance/w), 1.0/16))
		if unit0 > 0 { // stay aligned: halve
			f = math.Exp2(math.Min(-1, math.Round(math.Log2(f))))
		}
		h *= f
	}
}

// maxRounds bounds the refinements of the lattice spacing (each halves it).
const maxRounds = 6

// composeOnLattice composes the items on the lattice of spacing h. A mechanism whose
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
func composeOnLattice(items []Item, h, eta float64, refine int, errTol float64, aligned bool) *PLD {
	ps := make([]*PLD, 0, len(items))
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
		if !aligned && isComb(it, h, refine) && len(items) > 1 {
			lumpy++
		}
	}
	var share float64 // μ² of each Gaussian share
	if gauss != nil && lumpy > len(partners) {
		share = gauss.Mu() * gauss.Mu() / float64(lumpy-len(partners)+1)
	}
	for _, it := range groups {
		hg, hMax := groupSpacing(it, h, refine, len(items) > 1)
		if aligned { // every atom is on the common lattice: compose there, exactly
			hg, hMax = h, h
		}
		p := selfCompose(it, hg, hMax, coarseRatio*math.Exp2(float64(refine)), eta, errTol)
		if p.h != h && len(items) > 1 {
			if isComb(it, h, refine) {
				switch {
				case len(partners) > 0:
					p, _ = p.Compose(partners[len(partners)-1].pld(p.h))
					partners = partners[:len(partners)-1]
				case share > 0:
					p, _ = p.Compose(newPLD(p.h, eta, gaussianSpec{math.Sqrt(share)}))
				}
			}
			p = p.rediscretize(h, false)
		}
		ps = append(ps, p)
	}
	for _, b := range partners {
		p := b.pld(h)
		p.trim, p.errTol = eta, errTol
		ps = append(ps, p)
	}
	if gauss != nil {
		mu := gauss.Mu()
		if share > 0 { // what the shares left
			mu = math.Sqrt(share)
		}
		g := newPLD(h, eta, gaussianSpec{mu})
		g.errTol = errTol
		ps = append(ps, g)
	}
	for len(ps) > 1 {
		sort.Slice(ps, func(i, j int) bool { return ps[i].Bins() < ps[j].Bins() })
		next := make([]*PLD, 0, (len(ps)+1)/2)
		for i := 0; i+1 < len(ps); i += 2 {
			q, _ := ps[i].Compose(ps[i+1])
			next = append(next, q)
		}
		if len(ps)%2 == 1 {
			next = append(next, ps[len(ps)-1])
		}
		ps = next
	}
	return ps[0]
}

// selfCompose returns the it.Count-fold composition of it's release, which starts on
// spacing h and may coarsen up to hMax: on two resolutions when its loss has long light
// tails (see tailed), else on one.
func selfCompose(it Item, h, hMax, ratio, eta, errTol float64) *PLD {
	sp := it.Mechanism.specs()
	if it.Count > 1 {
		sd0 := 0.0
		for _, s := range sp {
			sd0 = math.Max(sd0, math.Sqrt(s.variance()))
		}
		if plan := planTails(sd0, h, hMax, ratio, it.Count); plan != nil {
			if t, ok := newTailed(h, eta, plan, sp...); ok {
				t = t.withTol(errTol)
				return t.selfCompose(it.Count, hMax, ratio, plan)
			}
		}
	}
	p := newPLD(h, eta, sp...)
	p.errTol = errTol
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
		return start, math.Min(largest, math.Max(start, unit))
	}
	start = h
	for target > 0 && start > target && width/start < maxStartBins/2 {
		start /= 2
	}
	return start, largest
}

// maxStartBins bounds the lattice of one release (see groupSpacing).
const maxStartBins = 1 << 18

// commonUnit returns u > 0 when every item but Gaussians has losses that are atoms
// only, each direction's on its own grid Shift + u·Z (the smallest atom unit; ratios
// within 1e-9 of integers; a subsampled two-atom pair has a different Shift in each
// direction, see subsampledSpec.atomOffset); else 0.
func commonUnit(list []Item) float64 {
	var units []float64
	for _, it := range list {
		if _, ok := it.Mechanism.(Gaussian); ok {
			continue
		}
		for _, s := range it.Mechanism.specs() {
			if !pureAtoms(s) || s.atomUnit() <= 0 {
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
		return 0, 0, paramErr("eps", eps, "a number, not NaN")
	}
	if c.pld == nil {
		if c.mu == 0 {
			return 0, 0, nil
		}
		d, r := gaussianDelta(c.mu, eps)
		return math.Min(1, d*(1+r)), d * (1 - r), nil
	}
	upper, lower = 1, 0
	for _, p := range c.all {
		u, l := p.Delta(eps)
		upper, lower = math.Min(upper, u), math.Max(lower, l)
	}
	if eps >= c.maxLoss { // no loss exceeds maxLoss: only δ-events remain
		upper = math.Min(upper, c.floor)
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
		return upper, lower, &dpkit.InfeasibleError{Msg: "total δ is below the probability of the mechanisms' δ-events (or of losses the lattice sent to +∞)"}
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

// Width returns the relative width (upper − lower)/upper of the ε bracket at delta
// (0 when exact or when ε is 0).
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
	return (u - l) / u
}

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
		z := math.Sqrt2 * math.Erfcinv(2*alpha) // Φ⁻¹(1 − α)
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
	ok := func(mu float64) bool {
		for _, p := range pts {
			if g, _ := gaussianDelta(mu, p.eps); g < p.delta {
				return false
			}
		}
		return true
	}
	lo, hi := 0.0, 1.0
	for !ok(hi) && hi < 1e6 {
		lo, hi = hi, hi*2
	}
	for range 60 {
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
