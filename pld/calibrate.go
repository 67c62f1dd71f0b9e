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

// CalibrateScaleContext is CalibrateScale, stopping with ctx.Err() when ctx is done.
// Each step composes k releases at tolerance 1e-3 (about 15 steps).
func CalibrateScaleContext(ctx context.Context, mechanism func(scale float64) Mechanism, k int64, b dpkit.Budget, pureScale float64) (float64, error) {
	if err := b.Validate(); err != nil {
		return 0, dpkit.InPackage("pld", err)
	}
	if err := positive("pure_scale", pureScale); err != nil {
		return 0, err
	}
	// short(s): scale s does not meet the budget (true below the answer, false above).
	short := func(scale float64) (bool, error) {
		c, err := ComposeContext(ctx, []Item{{Mechanism: mechanism(scale), Count: k}}, &Options{Delta: math.Max(b.Delta, 1e-300), Tolerance: 1e-3})
		if err != nil {
			var pe *dpkit.ParamError
			if errors.As(err, &pe) && pe.Name == "mechanisms" {
				return true, nil // beyond what a lattice composes: a larger scale is needed
			}
			return false, err
		}
		up, _, err := c.Epsilon(b.Delta)
		if err != nil {
			return true, nil // infeasible at this scale: more noise is needed
		}
		return up > b.Epsilon, nil
	}
	lo, hi := pureScale/1e6, pureScale
	if s, err := short(lo); err != nil || !s {
		return lo, err // even a millionth of the pure scale meets it
	}
	_, hi, err := numeric.Bisect(lo, hi, short, numeric.Stop{RelTol: 1e-4, Geometric: true, MaxIter: 60})
	return hi, err
}
