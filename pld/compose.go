package pld

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/dpkit/dpkit"
)

// Item is a mechanism released Count times.
type Item struct {
	Mechanism Mechanism
	Count     int64
}

// MaxCount bounds the releases one Item (and one compose.Mech) may stand for, and the
// total of a workload: the accounting core's one bound on k (10^12).
const MaxCount = 1_000_000_000_000

// DefaultTolerance is the relative width (upper − lower)/upper of a certified bracket
// that the accounting core aims for when the caller sets none (package compose uses the
// same): without Options.Tolerance, Compose refines toward it while the next refinement
// fits in DefaultWork, and reports the width it reached (Composition.Width).
const DefaultTolerance = 1e-6

// DefaultWork is the work budget of a composition without Options.Tolerance, in the
// units of Composition.Work (about one floating-point multiply-add or FFT butterfly
// each): about a second on one core of the two-core machine of docs/benchmarks.md.
const DefaultWork = 400_000_000

// MaxReleaseLoss bounds the privacy loss of one release composed on a lattice (the
// support of its loss, excluding ±∞ and tails below 1e-30): ε0 = Δ/b of Laplace noise,
// ε of randomized response or an (ε, δ) pair, μ²/2 + 12μ for a Gaussian composed with
// others. A loss of 1e15 is no privacy at all; beyond it the lattice's float64 positions
// would no longer resolve the composition of such releases with ordinary ones.
const MaxReleaseLoss = 1e15

// maxWork ends the refinement of a forced Tolerance (about two minutes on one core
// here): past it the bracket reached is returned, with its width.
const maxWork = 100 * DefaultWork

// firstTolerance is the width the first lattice of an adaptive composition aims for:
// cheap for every workload measured (docs/benchmarks.md), refined from there.
const firstTolerance = 1e-3

// Options tunes Compose. The zero value is ready to use.
type Options struct {
	// Tolerance, in (0, 1), forces a precision: the lattice is refined until the
	// relative width of the ε bracket at Delta (or of the δ bracket at Epsilon) is at most
	// Tolerance, or until refining stops helping or MaxBins is reached (Width says what
	// was reached). 0 means adaptive: aim for DefaultTolerance, refining only while the
	// next round is predicted to fit in DefaultWork.
	Tolerance float64
	// Delta is the total δ at which the width is measured (default 1e-6), in (0, 1).
	Delta float64
	// Epsilon, when set (finite, > 0), measures the width as the relative width
	// (upper − lower)/upper of the δ bracket at this total ε instead.
	Epsilon float64
	// MaxBins bounds the lattice (default 2^21 bins, at most 2^22): past it the best
	// bracket found is returned and Width says how wide it is.
	MaxBins int
	// Progress, when set, is called with the work done so far and an estimate of the
	// total (both in work units, done ≤ total), at most every 100 ms and never from two
	// goroutines at once; the last call has done = total.
	Progress func(done, total int64)
}

// resolve fills in the defaults and checks the options.
func (opts *Options) resolve() (o Options, adaptive bool, err error) {
	o = Options{Delta: 1e-6, MaxBins: 1 << 21}
	if opts != nil {
		o.Tolerance, o.Epsilon, o.Progress = opts.Tolerance, opts.Epsilon, opts.Progress
		if opts.Delta != 0 {
			o.Delta = opts.Delta
		}
		if opts.MaxBins != 0 {
			o.MaxBins = opts.MaxBins
		}
	}
	switch {
	case math.IsNaN(o.Tolerance) || o.Tolerance < 0 || o.Tolerance >= 1:
		return o, false, paramErr("tolerance", o.Tolerance, "in (0, 1), or 0 for the adaptive default")
	case math.IsNaN(o.Delta) || o.Delta <= 0 || o.Delta >= 1:
		return o, false, paramErr("delta", o.Delta, "in (0, 1)")
	case math.IsNaN(o.Epsilon) || math.IsInf(o.Epsilon, 0) || o.Epsilon < 0:
		return o, false, paramErr("epsilon", o.Epsilon, "a finite number ≥ 0 (0: measure the width at delta)")
	case o.MaxBins < 1<<10 || o.MaxBins > 1<<22:
		return o, false, paramErr("max_bins", o.MaxBins, "in [2^10, 2^22]")
	}
	if o.Tolerance == 0 {
		o.Tolerance, adaptive = DefaultTolerance, true
	}
	return o, adaptive, nil
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
	opts           Options
	work           int64
	// probes are brackets of δ at single ε certified apart from the lattices in all
	// (refineTilted at opts.Epsilon, refineTiltedEpsilon around ε(opts.Delta)); δ(ε) is
	// non-increasing, so each bounds the curve on either side of its ε.
	probes []tiltProbe
	// tailMass, when > 0, is the mass at +∞ of the lattices refineTiltedEpsilon tried
	// (the δ-events and the tails each release's lattice leaves out): a δ at or below it
	// cannot be certified.
	tailMass float64
}

// tiltProbe is a certified bracket lo ≤ δ(eps) ≤ up.
type tiltProbe struct{ eps, up, lo float64 }

// Compose returns the privacy curve of running every item's mechanism Count times: it is
// ComposeContext without cancellation.
func Compose(items []Item, opts *Options) (*Composition, error) {
	return ComposeContext(context.Background(), items, opts)
}

// ComposeContext returns the privacy curve of running every item's mechanism Count
// times (adaptively chosen mechanisms with fixed parameters compose the same way: KOV
// Thm 3.3's proof, and Dong, Roth & Su 2022 Thm 3.2). Gaussians are merged in closed
// form (μ² = Σ Count·μ_i²); identical mechanisms are self-composed by repeated squaring;
// the rest are convolved on a lattice whose spacing is refined (at most maxRounds times,
// by 1.25 to 16) until the bracket meets the tolerance (see Options).
//
// It stops with ctx.Err() soon after ctx is done. Its time and memory are bounded for
// every input it accepts: the lattice holds at most Options.MaxBins bins (2^21 by
// default: about 50 MB a lattice, at most a few dozen alive), and without a Tolerance
// the work is about DefaultWork beyond the first lattice (docs/benchmarks.md).
func ComposeContext(ctx context.Context, items []Item, opts *Options) (c *Composition, err error) {
	o, adaptive, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	w, err := newWorkload(items)
	if err != nil {
		return nil, err
	}
	c = &Composition{opts: o, maxLoss: w.maxLoss, floor: w.floor}
	if len(w.list) == 0 {
		c.mu = math.Sqrt(w.mu2) * (1 + 2*u)
		return c, nil
	}
	m := newMeter(ctx, o.Progress)
	defer recoverAbort(&err)
	tol := o.Tolerance
	if adaptive {
		tol = math.Max(tol, firstTolerance) // the first round: cheap, then refined
	}
	p, err := w.plan(o, tol)
	if err != nil {
		return nil, err
	}
	c.refine(p, m, tol, adaptive)
	switch {
	case len(p.list) > maxTiltItems:
	case o.Epsilon > 0:
		c.refineTilted(p.list, m, adaptive)
	default:
		c.refineTiltedEpsilon(p.list, m, adaptive)
	}
	c.work = m.done()
	m.finish()
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// workload is a validated list of items: identical mechanisms grouped, Gaussians merged
// into one (μ² = Σ Count·μ_i²), with the floor and the largest loss.
type workload struct {
	list           []Item
	mu2, total     float64
	maxLoss, floor float64
}

func newWorkload(items []Item) (*workload, error) {
	if len(items) == 0 {
		return nil, paramErr("items", 0, "at least one mechanism")
	}
	w := &workload{}
	groups := map[string]Item{}
	for i, it := range items {
		if it.Mechanism == nil {
			return nil, paramErr(fmt.Sprintf("items[%d].mechanism", i), nil, "a mechanism")
		}
		if err := it.Mechanism.Validate(); err != nil {
			return nil, err
		}
		if err := dpkit.CheckCount("count", it.Count, MaxCount); err != nil {
			return nil, dpkit.InPackage("pld", err)
		}
		w.total += float64(it.Count)
		if w.total > MaxCount {
			return nil, paramErr("count", w.total, "a total of at most 10^12 releases")
		}
		if g, ok := it.Mechanism.(Gaussian); ok {
			w.mu2 += float64(it.Count) * g.Mu() * g.Mu()
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
	w.mu2 *= 1 + 2*u*float64(len(items)+2)
	if w.mu2 > MaxGaussianMu*MaxGaussianMu {
		return nil, paramErr("mechanisms", math.Sqrt(w.mu2), "Gaussians whose total μ = √(Σ count·(Δ/σ)²) is at most 1e150")
	}
	w.setFloor(groups)
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		w.list = append(w.list, groups[k])
	}
	if w.mu2 > 0 && len(w.list) > 0 {
		w.list = append(w.list, Item{Gaussian{Sigma: 1 / math.Sqrt(w.mu2), Sensitivity: 1}, 1})
	}
	return w, nil
}

// setFloor computes the floor and the largest loss. The floor per direction (remove,
// add): a mechanism with one direction counts in both; the composition's curve is the
// larger of the two directions', so is its floor, rounded up (it only caps upper values).
func (w *workload) setFloor(groups map[string]Item) {
	var logKeep [2]float64
	for _, g := range groups {
		ml := 0.0
		sp := g.Mechanism.specs()
		for d := range logKeep {
			s := sp[min(d, len(sp)-1)]
			ml = math.Max(ml, s.maxLoss())
			logKeep[d] += float64(g.Count) * math.Log1p(-s.infMass())
		}
		w.maxLoss = addUp(w.maxLoss, mulUp(float64(g.Count), ml))
	}
	if w.mu2 > 0 {
		w.maxLoss = math.Inf(1)
	}
	w.floor = math.Min(1, -math.Expm1(math.Min(logKeep[0], logKeep[1]))*(1+1e-12))
}

// latticePlan is how a workload is put on lattices: the items (few-atom releases dealt
// into blocks unless a common unit aligns them), the spread of their losses, and the
// smallest spacing float64 resolves.
type latticePlan struct {
	list  []Item
	unit0 float64 // common atom unit (0: none): the lattice is aligned with it
	floor float64 // the smallest spacing float64 can resolve at the workload's losses
	mu2   float64
	v, sd float64 // variance and standard deviation of the total loss (guides)
	total float64
}

// plan groups the workload's items for the lattice (tol: the first round's tolerance,
// which decides whether an aligned lattice fits).
func (w *workload) plan(o Options, tol float64) (*latticePlan, error) {
	for _, it := range w.list {
		for _, s := range it.Mechanism.specs() {
			if lo, hi := s.support(1e-30); !(math.Max(-lo, hi) <= MaxReleaseLoss) {
				return nil, paramErr("mechanisms", it.Mechanism.String(), fmt.Sprintf("mechanisms whose privacy loss in one release stays within ±1e15 (this one reaches %.3g); only Gaussians alone compose beyond, in closed form", math.Max(-lo, hi)))
			}
		}
	}
	p := &latticePlan{list: w.list, mu2: w.mu2, total: w.total}
	// Few-atom mechanisms whose atoms all lie on multiples of one unit (ε = 0.01, 0.02,
	// 0.05, …) compose exactly on a lattice aligned with that unit; otherwise they are
	// composed in blocks.
	p.unit0 = commonUnit(p.list)
	if p.unit0 == 0 {
		p.list = blocks(p.list)
	}
	span := 0.0
	for _, it := range p.list {
		for _, s := range it.Mechanism.specs() {
			p.v += float64(it.Count) * s.variance()
			lo, hi := s.support(1e-30)
			span += float64(it.Count) * math.Max(math.Abs(lo), math.Abs(hi))
		}
	}
	if math.IsInf(span, 0) || math.IsNaN(span) {
		return nil, paramErr("mechanisms", w.total, "a workload whose total privacy loss is within the float64 range")
	}
	// Lattice positions are float64 multiples of the spacing: 2^44 of them resolve a
	// loss of any size to 6e-14 of the largest, and offsets stay far inside int64.
	p.floor = span * 0x1p-44
	p.sd = math.Sqrt(math.Min(p.v, math.MaxFloat64))
	if p.sd == 0 {
		p.sd = 1
	}
	if p.unit0 > 0 {
		// The aligned lattice must fit in the bins and be resolved; else blocks.
		a := p.aligned(p.spacing(o, tol))
		if 30*p.sd/a > float64(o.MaxBins) || a < p.floor {
			p.unit0 = 0
			p.list = blocks(p.list)
		}
	}
	return p, nil
}

// first returns the spacing of the first lattice for a tolerance tol: the aligned one
// when there is a common unit.
func (p *latticePlan) first(o Options, tol float64) float64 {
	h := p.spacing(o, tol)
	if p.unit0 > 0 {
		h = p.aligned(h)
	}
	return h
}

// aligned returns the aligned lattice: unit0/2^j ≤ h, or the unit itself for atoms only
// (exact on it; no finer lattice helps).
func (p *latticePlan) aligned(h float64) float64 {
	if p.mu2 == 0 {
		return p.unit0
	}
	return p.unit0 / math.Exp2(math.Max(0, math.Ceil(math.Log2(p.unit0/h))))
}

// allowances returns the mass each step may shed (tailAllowance) and the convolutions'
// FFT error allowance for a round aiming at tolerance tol. Err adds to δ directly, and
// a relative error r of δ moves ε by about r over d ln δ/d ln ε ≳ 2 ln(1/δ) (≈ z² for a
// Gaussian-like curve): a total of Delta·tol·ln(1/Delta)/5 moves ε(Delta) by at most a
// tenth of the tolerance. It is shared by the at most 2·(len(list) + 32) convolutions'
// worth of allowances (see selfComposeAdaptive). Measured at Epsilon, δ is unknown:
// exact bulks where cheap.
func (p *latticePlan) allowances(o Options, tol, delta float64) (eta, errTol float64) {
	eta = tailAllowance(delta, tol, p.total, len(p.list))
	if delta > 0 {
		errTol = delta * tol * math.Log(1/delta) / 5 / (2 * float64(len(p.list)+32))
	}
	return eta, errTol
}

// tailAllowance returns the mass each release's support may leave out at each end, and
// each composition trim (upper: moved to +∞ or the lowest bin; lower: dropped). With at
// most total + 130·n such steps, the upper curve rises by at most half of
// δ·tol/100 (so ε(δ) moves far less than the tolerance); read at much smaller δ it may
// stay above that (valid, but loose there). With δ not known (0: the first round
// measured at Options.Epsilon), 1e-30 in all.
func tailAllowance(delta, tol, total float64, n int) float64 {
	if delta == 0 {
		return 1e-30 / math.Max(total, 1)
	}
	return math.Max(delta*tol/100/(2*(total+130*float64(n))), 1e-320)
}

// spacing returns the first lattice spacing: a fiftieth of the standard deviation of the
// total loss, and fine enough to resolve each group of identical mechanisms (a
// sixteenth of its standard deviation), since every group is re-discretised onto it;
// then as the width model asks for half the tolerance, and no finer than MaxBins and
// float64 resolution allow.
func (p *latticePlan) spacing(o Options, tol float64) float64 {
	sd, v := p.sd, p.v
	h := sd / 50
	for _, it := range p.list {
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
	if n := float64(len(p.list)); n > 1 {
		z := math.Sqrt(2 * math.Log(1/o.Delta))
		h = math.Min(h, math.Sqrt(tol*(v/2+z*sd)/(n*(0.5+z/(2*sd)))))
	}
	return math.Max(h, math.Max(sd/float64(o.MaxBins)*8, p.floor))
}

// maxRounds bounds the refinements of the lattice spacing.
const maxRounds = 6

// refine composes the plan on lattices refined round by round (each round's bracket is
// valid; they are intersected) until the target width is met, refining stops helping,
// the bins run out, or, adaptive, the next round would not fit in DefaultWork.
//
// Measured at Options.Epsilon, δ is not known beforehand: the first round takes exact
// convolution bulks where cheap and tails of 1e-30; each later round sizes its
// allowances for the δ the previous one found (dEst), and a round whose δ came out ten
// times below the estimate it was sized for is run again at the same spacing, since
// then the allowances, not the spacing, limited it (issue 24: a 1000-fold subsampled
// Gaussian at ε = 1 had δ ≤ 1.3e-11 with lower bound 0; the truth is about 1e-15).
func (c *Composition) refine(p *latticePlan, m *meter, tol float64, adaptive bool) {
	o := c.opts
	target := o.Tolerance
	h := p.first(o, tol)
	h0 := h
	dEst := 0.0 // the δ at Options.Epsilon the rounds are sized for (0: not known)
	if o.Epsilon == 0 {
		dEst = o.Delta
	}
	worse, budget := 0, int64(-1)
	for round := 0; ; round++ {
		prev := c.target()
		before := m.done()
		eta, errTol := p.allowances(o, tol, dEst)
		refine := int(math.Round(math.Log2(h0 / h)))
		c.pld = composeOnLattice(p.list, lattice{h: h, eta: eta, refine: refine, errTol: errTol, aligned: p.unit0 > 0, m: m})
		c.all = append(c.all, c.pld)
		cost := m.done() - before
		if budget < 0 {
			budget = m.done() + DefaultWork
		}
		w := c.target()
		if round > 0 && w > prev/1.5 {
			worse++
		}
		again := false
		if o.Epsilon > 0 {
			up, lo, _ := c.Delta(o.Epsilon)
			est := lo // the allowances are sized for at most the true δ
			if est <= 0 {
				// Nothing certified above 0: the upper value is the error terms, and the
				// truth may be far below; size the next round for a millionth of it.
				est = up * 1e-6
			}
			est = math.Max(est, 1e-300)
			again = dEst == 0 || est < dEst/10
			dEst = math.Min(0.5, est)
		}
		// Stop when refining cannot help: the tolerance is met, the rounds or bins run out,
		// the width stopped shrinking, or the FFT error (absolute, it grows as the lattice
		// is refined) is already a tenth of the target δ.
		if w <= target || round == maxRounds || (worse == 2 && !again) || c.pld.Bins()*4 > o.MaxBins || (dEst > 0 && c.pld.maxErr() > dEst/10 && !again) || m.done() > maxWork {
			return
		}
		// The width falls as h² (second order, both bounds): aim for 60% of the
		// tolerance in one step, refining by 1.25 to 16 (or not at all for a δ round).
		f := math.Min(0.8, math.Max(math.Sqrt(0.6*target/w), 1.0/16))
		if p.unit0 > 0 { // stay aligned: halve
			f = math.Exp2(math.Min(-1, math.Round(math.Log2(f))))
		}
		if again {
			f = 1
		}
		if h*f < p.floor {
			return // float64 cannot resolve a finer lattice at these losses
		}
		// A round's cost grows about as the bins, 1/f.
		next := int64(float64(cost) / f)
		m.expect(m.done() + next)
		if adaptive {
			if m.done()+next > budget {
				return
			}
			if !again {
				// The next round aims at what its spacing should reach (the width falls as h²).
				tol = math.Max(target, w*f*f/2)
			}
		}
		h *= f
	}
}

// check reports an internal failure (a non-finite mass or error term on a lattice) as an
// error rather than let it turn into a wrong answer.
func (c *Composition) check() error {
	for _, p := range c.all {
		for _, s := range p.sides {
			for _, l := range []*Lattice{s.upper, s.lower} {
				if !finiteLattice(l) {
					return fmt.Errorf("pld: internal error: a lattice of spacing %g holds a non-finite mass; the workload is outside what can be composed soundly", p.h)
				}
			}
		}
	}
	return nil
}

func finiteLattice(l *Lattice) bool {
	ok := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	if !ok(l.InfMass) || !ok(l.Err) || !ok(l.Rel) || !ok(l.H) || !ok(l.Shift) {
		return false
	}
	for _, m := range l.Mass {
		if !ok(m) || m < 0 {
			return false
		}
	}
	return true
}

// Work returns the work units the composition took (see DefaultWork).
func (c *Composition) Work() int64 { return c.work }

// mulUp returns a·b rounded up (a, b ≥ 0): moved up an ulp when FMA shows the product
// was rounded down.
func mulUp(a, b float64) float64 {
	p := a * b
	if !math.IsInf(p, 0) && math.FMA(a, b, -p) > 0 {
		p = math.Nextafter(p, math.Inf(1))
	}
	return p
}

// addUp returns a + b rounded up: moved up an ulp when the exact error of the sum (Knuth's
// TwoSum) is positive.
func addUp(a, b float64) float64 {
	s := a + b
	if math.IsInf(s, 0) {
		return s
	}
	bv := s - a
	if err := (a - (s - bv)) + (b - bv); err > 0 {
		s = math.Nextafter(s, math.Inf(1))
	}
	return s
}
