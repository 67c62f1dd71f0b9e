package compose

import (
	"context"
	"fmt"
	"math"
	"sort"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// DefaultTolerance is the relative width (upper − lower)/upper of the certified bracket
// aimed for when the ε values are too many and too distinct for exact evaluation and
// the caller sets no Tolerance: the accounting core's one default, pld.DefaultTolerance.
const DefaultTolerance = pld.DefaultTolerance

// maxExactAtoms bounds the support enumerated by the exact product of binomials.
const maxExactAtoms = 2_000_000

// Options tunes NewCurve and the functions built on it. The zero value is ready to use.
type Options struct {
	// Tolerance, in (0, 1), forces the relative width (upper − lower)/upper of a
	// certified bracket (workloads with many distinct ε; exact curves have none): the
	// lattice is refined until it is met or cannot be refined further. 0 is the adaptive
	// default: aim for DefaultTolerance while the refinement fits in pld.DefaultWork (about
	// a second), and report the width reached (Result.Lower, Curve.Width).
	Tolerance float64
	// Progress, when set, is called as a bracket is computed (see pld.Options.Progress).
	Progress func(done, total int64)
}

func (o *Options) tolerance() (float64, error) {
	if o == nil || o.Tolerance == 0 {
		return 0, nil
	}
	t := o.Tolerance
	if math.IsNaN(t) || t <= 0 || t >= 1 {
		return 0, &dpkit.ParamError{Pkg: "compose", Name: "tolerance", Value: t, Want: "in (0, 1), or 0 for the adaptive default"}
	}
	return t, nil
}

func (o *Options) progress() func(done, total int64) {
	if o == nil {
		return nil
	}
	return o.Progress
}

// Curve is the optimal privacy curve δ(ε) of a composition of (ε_ℓ, δ_ℓ)-DP mechanisms
// (see the package documentation): exact, or bracketed between a certified upper curve
// (a valid guarantee) and a certified lower curve (below the optimum).
type Curve struct {
	mechs        []Mech
	ev           deltaEvents
	maxLoss      float64
	upper, lower *pld.Discrete
	// cond is the bracketed curve conditioned on no δ-event (nil when exact): its
	// intersected lattice brackets replace upper and lower in Delta and Epsilon.
	cond     *pld.Composition
	exact    bool
	tol      float64 // 0: adaptive
	progress func(done, total int64)
}

// NewCurve computes the optimal composition curve of the workload ms. With few distinct
// ε values the curve is exact; otherwise it is a certified bracket computed on a lattice
// fine enough for the tolerance at the δ values of interest (targetDelta hints where the
// curve will be read: pass the total δ you will ask Epsilon for, or 0 if unknown).
func NewCurve(ms []Mech, opts *Options) (*Curve, error) {
	return newCurve(context.Background(), ms, opts, 0)
}

// NewCurveContext is NewCurve, stopping with ctx.Err() soon after ctx is done.
func NewCurveContext(ctx context.Context, ms []Mech, opts *Options) (*Curve, error) {
	return newCurve(ctx, ms, opts, 0)
}

// newCurve builds the curve; targetDelta (or targetEps when targetDelta is 0) says where
// the caller will read it, to size binomial windows and to measure a bracket's width.
func newCurve(ctx context.Context, ms []Mech, opts *Options, targetDelta float64, targetEps ...float64) (*Curve, error) {
	if err := validate(ms); err != nil {
		return nil, err
	}
	tol, err := opts.tolerance()
	if err != nil {
		return nil, err
	}
	g := Group(ms)
	c := &Curve{mechs: g, tol: tol, progress: opts.progress(), maxLoss: sumEps(g), exact: true}
	c.ev = newDeltaEvents(g)

	// Only ε > 0 steps carry privacy loss beyond their δ-events; merge equal ε.
	byEps := map[float64]int64{}
	for _, m := range g {
		if m.Epsilon > 0 {
			byEps[m.Epsilon] += m.Count
		}
	}
	eps := make([]float64, 0, len(byEps))
	for e := range byEps {
		eps = append(eps, e)
	}
	sort.Float64s(eps)
	counts := make([]int64, len(eps))
	for i, e := range eps {
		counts[i] = byEps[e]
	}

	switch {
	case len(eps) == 0:
		c.upper = &pld.Discrete{Loss: []float64{0}, Mass: []float64{1}}
		c.lower = c.upper
	case len(eps) == 1:
		c.upper, c.lower = pld.CanonicalCompositionPositive(eps[0], counts[0], tailFor(c, targetDelta))
	case exactSize(eps, counts) <= maxExactAtoms:
		c.upper, c.lower = exactProduct(eps, counts)
	default:
		c.exact = false
		if err := c.bracket(ctx, eps, counts, targetDelta, targetEps); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// tailFor returns how far (in e-folds below the mode) a single binomial window must
// reach: TailFine when the target is unknown; otherwise 36 e-folds beyond the target
// conditional δ, so the moved tail over-states δ by at most a relative e^-36 ≈ 2e-16,
// far below the masses' own error bound (pld.MassRelErr).
func tailFor(c *Curve, targetDelta float64) float64 {
	if targetDelta <= c.ev.floorUp || targetDelta >= 1 || c.ev.keepUp == 0 {
		return pld.TailFine
	}
	t := (targetDelta - c.ev.floorUp) / c.ev.keepUp
	return math.Min(pld.TailFine, math.Log(1/t)+36)
}

// exactSize estimates the number of atoms of the product of the binomial windows.
func exactSize(eps []float64, counts []int64) float64 {
	size := 1.0
	for i, e := range eps {
		n := float64(counts[i])
		p := 1 / (1 + math.Exp(-e))
		w := math.Min(n+1, 2*math.Sqrt(2*pld.TailCoarse)*math.Sqrt(n*p*(1-p))+3)
		size *= w
		if size > 1e18 {
			return size
		}
	}
	return size
}

// exactProduct composes a few distinct ε values exactly: the product of their binomial
// windows (tails below e^-92 of each mode are bounded and moved up, or dropped).
func exactProduct(eps []float64, counts []int64) (upper, lower *pld.Discrete) {
	for i, e := range eps {
		u, l := pld.CanonicalComposition(e, counts[i], pld.TailCoarse)
		if i == 0 {
			upper, lower = u, l
			continue
		}
		upper = pld.Product(upper, u, 1e-300, true)
		lower = pld.Product(lower, l, 1e-300, false)
	}
	return upper, lower
}

// Exact reports whether the curve is exact (up to the rounding documented on the
// package) rather than a bracket.
func (c *Curve) Exact() bool { return c.exact }

// Floor returns 1 − Π(1 − δ_ℓ), rounded up (see compose.Floor): no total ε brings δ
// below it, and every δ at or above it is reached at some ε ≤ MaxEpsilon().
func (c *Curve) Floor() float64 { return c.ev.floorUp }

// MaxEpsilon returns Σ ε_ℓ, the largest privacy loss: δ(ε) = Floor() for ε ≥ MaxEpsilon.
func (c *Curve) MaxEpsilon() float64 { return c.maxLoss }

// Delta returns the smallest total δ the composition guarantees at total ε (upper, a
// valid guarantee) and a value the optimum provably reaches (lower):
//
//	δ(ε) = 1 − Π(1−δ_ℓ) + Π(1−δ_ℓ) · E[(1 − e^(ε − L))₊]
//
// Both are rounded outward. For an exact curve upper and lower agree to about 1e-12
// relative. Special cases: Delta(ε ≥ MaxEpsilon()) = Floor() (and the floor rounded down
// as lower); ε must be finite and ≥ 0.
func (c *Curve) Delta(eps float64) (upper, lower float64, err error) {
	if err := dpkit.CheckEpsilon("epsilon", eps); err != nil {
		return 0, 0, dpkit.InPackage("compose", err)
	}
	if eps >= c.maxLoss {
		return c.ev.floorUp, c.ev.floorDown, nil
	}
	du, dl := c.condDelta(eps)
	upper = c.ev.floorUp + c.ev.keepUp*du
	upper = math.Min(1, math.Nextafter(math.Nextafter(upper, 2), 2))
	lower = math.Max(c.ev.floorDown, c.ev.floorDown+c.ev.keepDown*dl)
	lower = math.Max(0, math.Nextafter(math.Nextafter(lower, -1), -1))
	if lower > upper {
		lower = upper
	}
	return upper, lower, nil
}

// Epsilon returns the smallest total ε at which the composition guarantees total δ
// (upper: a valid guarantee, never below the optimum) and a value the optimal ε is at
// or above (lower). A δ below Floor() is infeasible: the error (matching
// dpkit.ErrInfeasible) names the floor.
func (c *Curve) Epsilon(delta float64) (upper, lower float64, err error) {
	if err := dpkit.CheckDelta("delta", delta); err != nil {
		return 0, 0, dpkit.InPackage("compose", err)
	}
	if delta < c.ev.floorUp {
		return 0, 0, belowFloor(delta, c.ev.floorUp)
	}
	upper = c.maxLoss
	if c.ev.keepUp > 0 {
		// Conditional targets rounded so that the upper one is met surely and the lower
		// one over-states the truth.
		tUp := (delta - c.ev.floorUp) / c.ev.keepUp * (1 - 4*u)
		tLow := (delta - c.ev.floorDown) / c.ev.keepDown * (1 + 4*u)
		e := c.condEpsilonUpper(tUp)
		el := c.condEpsilonLower(tLow)
		// Confirm with the full formula (rounded up).
		for i := 0; e < upper && i < 64; i++ {
			d, _, _ := c.Delta(e)
			if d <= delta {
				break
			}
			e = math.Nextafter(e, math.Inf(1)) + math.Abs(e)*0x1p-50*float64(int(1)<<i)
		}
		upper = math.Min(upper, e)
		lower = math.Min(upper, el)
		lower = math.Max(0, lower-math.Abs(lower)*0x1p-48)
	}
	return upper, lower, nil
}

// condDelta returns the upper and lower δ(ε) of the composition conditioned on no
// δ-event.
func (c *Curve) condDelta(eps float64) (upper, lower float64) {
	if c.cond != nil {
		upper, lower, _ = c.cond.Delta(eps)
		return upper, lower
	}
	return c.upper.Delta(eps), c.lower.Delta(eps)
}

// condEpsilonUpper returns the upper ε at conditional δ t.
func (c *Curve) condEpsilonUpper(t float64) float64 {
	if c.cond != nil {
		upper, _, _ := c.cond.Epsilon(t)
		return upper
	}
	return c.upper.Epsilon(t)
}

// condEpsilonLower returns the lower ε at conditional δ t.
func (c *Curve) condEpsilonLower(t float64) float64 {
	if c.cond != nil {
		_, lower, _ := c.cond.Epsilon(t)
		return lower
	}
	return c.lower.EpsilonBelow(t)
}

// belowFloor is the error for a total δ that no ε reaches.
func belowFloor(delta, floor float64) error {
	return &dpkit.InfeasibleError{Msg: fmt.Sprintf(
		"total delta %g is below the floor 1 − Π(1 − δ_ℓ) = %v that no epsilon can reach; choose delta ≥ %v",
		delta, floor, floor)}
}

// Epsilon returns the optimal total ε of the composition ms at total δ (Curve.Epsilon),
// as a Result with the certified lower value and whether it is exact. It is
// EpsilonContext without cancellation.
func Epsilon(ms []Mech, delta float64, opts *Options) (Result, error) {
	return EpsilonContext(context.Background(), ms, delta, opts)
}

// EpsilonContext is Epsilon, stopping with ctx.Err() soon after ctx is done. Exact
// curves take at most a few hundred ms (k up to 10^12: docs/benchmarks.md); a bracket,
// without Options.Tolerance, about a second beyond its first lattice.
func EpsilonContext(ctx context.Context, ms []Mech, delta float64, opts *Options) (Result, error) {
	if err := dpkit.CheckDelta("delta", delta); err != nil {
		return Result{}, dpkit.InPackage("compose", err)
	}
	if err := validate(ms); err != nil {
		return Result{}, err
	}
	// Below the floor 1 − Π(1 − δ_ℓ) no ε suffices: say so before building the curve
	// (which, for many distinct ε, is the expensive part). The floor is the same one
	// Curve.Epsilon checks.
	if floor := Floor(Group(ms)); delta < floor {
		return Result{}, belowFloor(delta, floor)
	}
	c, err := newCurve(ctx, ms, opts, delta)
	if err != nil {
		return Result{}, err
	}
	u, l, err := c.Epsilon(delta)
	if err != nil {
		return Result{}, err
	}
	if !c.exact {
		// A loose bracket (e.g. close to the floor) may be beaten by the KOV closed form,
		// which is also a valid guarantee: report the smaller.
		if k, err := EpsilonBy(KOV, ms, delta, nil); err == nil && k.Epsilon < u {
			u = k.Epsilon
		}
	}
	return Result{Theorem: Exact, Epsilon: u, Delta: delta, Lower: l, Exact: c.exact}, nil
}

// Delta returns the optimal total δ of the composition ms at total ε (Curve.Delta), as a
// Result with the certified lower value and whether it is exact. It is DeltaContext
// without cancellation.
func Delta(ms []Mech, eps float64, opts *Options) (Result, error) {
	return DeltaContext(context.Background(), ms, eps, opts)
}

// DeltaContext is Delta, stopping with ctx.Err() soon after ctx is done.
func DeltaContext(ctx context.Context, ms []Mech, eps float64, opts *Options) (Result, error) {
	if err := dpkit.CheckEpsilon("epsilon", eps); err != nil {
		return Result{}, dpkit.InPackage("compose", err)
	}
	c, err := newCurve(ctx, ms, opts, 0, eps)
	if err != nil {
		return Result{}, err
	}
	u, l, err := c.Delta(eps)
	if err != nil {
		return Result{}, err
	}
	return Result{Theorem: Exact, Epsilon: eps, Delta: u, Lower: l, Exact: c.exact}, nil
}
