package compose

import (
	"fmt"
	"math"
	"sort"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// DefaultTolerance is the relative width (upper − lower)/upper of the certified bracket
// when the ε values are too many and too distinct for exact evaluation.
const DefaultTolerance = 1e-6

// maxExactAtoms bounds the support enumerated by the exact product of binomials.
const maxExactAtoms = 2_000_000

// Options tunes NewCurve and the functions built on it. The zero value is ready to use.
type Options struct {
	// Tolerance is the largest relative width (upper − lower)/upper accepted for a
	// certified bracket; 0 means DefaultTolerance. It must be in (0, 1).
	Tolerance float64
}

func (o *Options) tolerance() (float64, error) {
	if o == nil || o.Tolerance == 0 {
		return DefaultTolerance, nil
	}
	t := o.Tolerance
	if math.IsNaN(t) || t <= 0 || t >= 1 {
		return 0, &dpkit.ParamError{Name: "tolerance", Value: t, Want: "in (0, 1)"}
	}
	return t, nil
}

// Curve is the optimal privacy curve δ(ε) of a composition of (ε_ℓ, δ_ℓ)-DP mechanisms
// (see the package documentation): exact, or bracketed between a certified upper curve
// (a valid guarantee) and a certified lower curve (below the optimum).
type Curve struct {
	mechs        []Mech
	floor, keep  float64
	maxLoss      float64
	upper, lower *pld.Discrete
	// cond is the bracketed curve conditioned on no δ-event (nil when exact): its
	// intersected lattice brackets replace upper and lower in Delta and Epsilon.
	cond  *pld.Composition
	exact bool
	tol   float64
}

// NewCurve computes the optimal composition curve of the workload ms. With few distinct
// ε values the curve is exact; otherwise it is a certified bracket computed on a lattice
// fine enough for the tolerance at the δ values of interest (targetDelta hints where the
// curve will be read: pass the total δ you will ask Epsilon for, or 0 if unknown).
func NewCurve(ms []Mech, opts *Options) (*Curve, error) {
	return newCurve(ms, opts, 0)
}

// newCurve builds the curve; targetDelta (or targetEps when targetDelta is 0) says where
// the caller will read it, to size binomial windows and to measure a bracket's width.
func newCurve(ms []Mech, opts *Options, targetDelta float64, targetEps ...float64) (*Curve, error) {
	if err := validate(ms); err != nil {
		return nil, err
	}
	tol, err := opts.tolerance()
	if err != nil {
		return nil, err
	}
	g := Group(ms)
	c := &Curve{mechs: g, tol: tol, maxLoss: sumEps(g), exact: true}
	c.floor, c.keep = floorKeep(g)

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
		c.upper, c.lower = pld.CanonicalComposition(eps[0], counts[0], tailFor(c, targetDelta))
	case exactSize(eps, counts) <= maxExactAtoms:
		c.upper, c.lower = exactProduct(eps, counts)
	default:
		c.exact = false
		if err := c.bracket(eps, counts, targetDelta, targetEps); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// tailFor returns how far (in e-folds below the mode) a single binomial window must
// reach: TailFine when the target is unknown; otherwise 60 e-folds beyond the target
// conditional δ, so the moved tail over-states δ by at most a relative e^-60 ≈ 1e-26.
func tailFor(c *Curve, targetDelta float64) float64 {
	if targetDelta <= c.floor || targetDelta >= 1 || c.keep == 0 {
		return pld.TailFine
	}
	t := (targetDelta - c.floor) / c.keep
	return math.Min(pld.TailFine, math.Log(1/t)+60)
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

// Floor returns 1 − Π(1 − δ_ℓ): no total ε brings δ below it.
func (c *Curve) Floor() float64 { return c.floor }

// MaxEpsilon returns Σ ε_ℓ, the largest privacy loss: δ(ε) = Floor() for ε ≥ MaxEpsilon.
func (c *Curve) MaxEpsilon() float64 { return c.maxLoss }

// Delta returns the smallest total δ the composition guarantees at total ε (upper, a
// valid guarantee) and a value the optimum provably reaches (lower):
//
//	δ(ε) = 1 − Π(1−δ_ℓ) + Π(1−δ_ℓ) · E[(1 − e^(ε − L))₊]
//
// For an exact curve upper and lower agree to about 1e-12 relative. Special cases:
// Delta(ε ≥ MaxEpsilon()) = Floor(); ε must be finite and ≥ 0.
func (c *Curve) Delta(eps float64) (upper, lower float64, err error) {
	if err := dpkit.CheckEpsilon("epsilon", eps); err != nil {
		return 0, 0, err
	}
	if eps >= c.maxLoss {
		return c.floor, c.floor, nil
	}
	du, dl := c.condDelta(eps)
	upper = c.floor + c.keep*du
	upper = math.Min(1, math.Nextafter(math.Nextafter(upper, 2), 2))
	lower = math.Max(c.floor, c.floor+c.keep*dl)
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
		return 0, 0, err
	}
	if delta < c.floor {
		return 0, 0, belowFloor(delta, c.floor)
	}
	upper = c.maxLoss
	if t := (delta - c.floor) / c.keep; c.keep > 0 {
		// Invert the upper curve, then confirm with the full formula (rounded up).
		e, el := c.condEpsilon(t)
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

// condEpsilon returns the upper and lower ε at conditional δ t.
func (c *Curve) condEpsilon(t float64) (upper, lower float64) {
	if c.cond != nil {
		upper, lower, _ = c.cond.Epsilon(t)
		return upper, lower
	}
	return c.upper.Epsilon(t), c.lower.Epsilon(t)
}

// belowFloor is the error for a total δ that no ε reaches.
func belowFloor(delta, floor float64) error {
	return &dpkit.InfeasibleError{Msg: fmt.Sprintf(
		"total delta %g is below the floor 1 − Π(1 − δ_ℓ) = %v that no epsilon can reach; choose delta ≥ %v",
		delta, floor, floor)}
}

// Epsilon returns the optimal total ε of the composition ms at total δ (Curve.Epsilon),
// as a Result with the certified lower value and whether it is exact.
func Epsilon(ms []Mech, delta float64, opts *Options) (Result, error) {
	if err := dpkit.CheckDelta("delta", delta); err != nil {
		return Result{}, err
	}
	if err := validate(ms); err != nil {
		return Result{}, err
	}
	// Below the floor 1 − Π(1 − δ_ℓ) no ε suffices: say so before building the curve
	// (which, for many distinct ε, is the expensive part). The floor is the same one
	// Curve.Epsilon checks.
	if floor, _ := floorKeep(Group(ms)); delta < floor {
		return Result{}, belowFloor(delta, floor)
	}
	c, err := newCurve(ms, opts, delta)
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
// Result with the certified lower value and whether it is exact.
func Delta(ms []Mech, eps float64, opts *Options) (Result, error) {
	if err := dpkit.CheckEpsilon("epsilon", eps); err != nil {
		return Result{}, err
	}
	c, err := newCurve(ms, opts, 0, eps)
	if err != nil {
		return Result{}, err
	}
	u, l, err := c.Delta(eps)
	if err != nil {
		return Result{}, err
	}
	return Result{Theorem: Exact, Epsilon: eps, Delta: u, Lower: l, Exact: c.exact}, nil
}
