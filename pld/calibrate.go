package pld

import (
	"context"
	"errors"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
)

// CalibrateScale returns, to a relative 1e-4 and never below, the smallest noise scale
// s such that k releases of mechanism(s) meet the budget b by the certified upper curve
// of Compose. mechanism must be monotone in s (more noise, more privacy), and
// pureScale a scale that meets b for sure (for Laplace-type noise on sensitivity Δ,
// k·Δ/ε: the basic composition of pure ε-DP releases); the search (a geometric
// bisection, numeric.Bisect) covers [pureScale/10^6, pureScale]. It is
// CalibrateScaleContext without cancellation.
func CalibrateScale(mechanism func(scale float64) Mechanism, k int64, b dpkit.Budget, pureScale float64) (float64, error) {
	return CalibrateScaleContext(context.Background(), mechanism, k, b, pureScale)
}

// CalibrateScaleContext is CalibrateScale, stopping with ctx.Err() when ctx is done. The
// search runs in two phases: doubling from pureScale/10^6, then geometric bisection, on
// compositions at tolerance 1e-2 (cheap: about half a second each even at k = 10^12)
// until the bracket is 3% wide,
// then Brent's method (numeric.Brent) on ln(ε(scale)/ε) with compositions at tolerance
// 1e-3, to a relative 1e-4: about ten compositions at 1e-2 and six at 1e-3.
func CalibrateScaleContext(ctx context.Context, mechanism func(scale float64) Mechanism, k int64, b dpkit.Budget, pureScale float64) (float64, error) {
	if err := b.Validate(); err != nil {
		return 0, dpkit.InPackage("pld", err)
	}
	if err := positive("pure_scale", pureScale); err != nil {
		return 0, err
	}
	// over returns ln(ε at b.Delta / b.Epsilon) of k releases at scale s, by the certified
	// upper curve at tolerance tol (+Inf where no finite ε meets b.Delta, or where the
	// loss is beyond what a lattice composes: more noise is needed).
	over := func(s, tol float64) (float64, error) {
		c, err := ComposeContext(ctx, []Item{{Mechanism: mechanism(s), Count: k}}, &Options{Delta: math.Max(b.Delta, 1e-300), Tolerance: tol})
		if err != nil {
			var pe *dpkit.ParamError
			if errors.As(err, &pe) && pe.Name == "mechanisms" {
				return math.Inf(1), nil
			}
			return 0, err
		}
		up, _, err := c.Epsilon(b.Delta)
		if err != nil || up <= 0 {
			if err == nil {
				return math.Inf(-1), nil
			}
			return math.Inf(1), nil
		}
		return math.Log(up / b.Epsilon), nil
	}
	short := func(tol float64) numeric.Monotone {
		return func(s float64) (bool, error) {
			x, err := over(s, tol)
			return x > 0, err
		}
	}
	lo := pureScale / 1e6
	if sh, err := short(1e-2)(lo); err != nil || !sh {
		return lo, err // even a millionth of the pure scale meets it
	}
	// Up from the smallest scale by doubling (small scales — large per-release losses —
	// compose fast; a scale far above the answer, a tiny per-release loss repeated 10^12
	// times, is the slow kind), then bisection to 3%.
	lo, hi, found, err := numeric.ExpandUp(lo, 2, pureScale, short(1e-2))
	if err != nil {
		return 0, err
	}
	if !found {
		hi = pureScale // short up to the last doubling: the pure scale meets it surely
	}
	lo, hi, err = numeric.Bisect(lo, hi, short(1e-2), numeric.Stop{RelTol: 0.03, Geometric: true})
	if err != nil {
		return 0, err
	}
	// hi meets the budget at tolerance 1e-2, so at 1e-3 too (a tighter bracket); lo may
	// meet it at 1e-3: then the answer is below, found by bisection at 1e-3 from lo/2.
	flo, err := over(lo, 1e-3)
	if err != nil {
		return 0, err
	}
	for flo <= 0 && lo > pureScale/1e6 {
		hi, lo = lo, math.Max(lo/2, pureScale/1e6)
		if flo, err = over(lo, 1e-3); err != nil {
			return 0, err
		}
	}
	if flo <= 0 {
		return lo, nil
	}
	fhi, err := over(hi, 1e-3)
	if err != nil {
		return 0, err
	}
	for fhi >= 0 && hi < pureScale { // met at 1e-2 but not at 1e-3 (a different lattice)
		lo, flo = hi, fhi
		hi = math.Min(hi*1.03, pureScale)
		if fhi, err = over(hi, 1e-3); err != nil {
			return 0, err
		}
	}
	if fhi >= 0 {
		return pureScale, nil
	}
	// Brent on g(s) = −ln(ε(s)/ε): ≤ 0 where s is too small, > 0 where it meets.
	neg := func(s float64) (float64, error) {
		x, err := over(s, 1e-3)
		return -x, err
	}
	if math.IsInf(flo, 1) {
		flo = math.MaxFloat64
	}
	_, hi, err = numeric.Brent(lo, hi, -flo, -fhi, neg, numeric.Stop{RelTol: 1e-4})
	return hi, err
}
