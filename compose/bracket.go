package compose

import (
	"context"
	"math"

	"github.com/dpkit/dpkit/pld"
)

// bracket computes certified upper and lower curves of the composition conditioned on
// no δ-event (the canonical pairs of ε_ℓ with δ = 0) by pld.Compose: releases that occur
// at most a few times are composed exactly in blocks and put on a lattice by a spread
// (upper, a valid guarantee) and by merging and mixing outcomes (lower, post-processing
// of the true pair); repeated ε are self-composed on lattices aligned with them. Both
// err to second order in the spacing, which is refined until the width at the target
// (the conditional δ of targetDelta, or the δ at targetEps) meets the tolerance.
func (c *Curve) bracket(ctx context.Context, eps []float64, counts []int64, targetDelta float64, targetEps []float64) error {
	t := 1e-6
	if targetDelta > c.ev.floorUp && targetDelta < 1 && c.ev.keepUp > 0 {
		t = (targetDelta - c.ev.floorUp) / c.ev.keepUp
	}
	t = math.Min(math.Max(t, 1e-300), 0.5)
	items := make([]pld.Item, len(eps))
	for i, e := range eps {
		items[i] = pld.Item{Mechanism: pld.EpsilonDelta{Epsilon: e}, Count: counts[i]}
	}
	o := &pld.Options{Tolerance: c.tol, Delta: t, Progress: c.progress}
	if targetDelta == 0 && len(targetEps) > 0 {
		o.Epsilon = targetEps[0]
	}
	comp, err := pld.ComposeContext(ctx, items, o)
	if err != nil {
		return err
	}
	c.cond = comp
	c.upper, c.lower = comp.Bounds()
	return nil
}

// width returns the relative width of the ε bracket at total δ (1e-6 if unknown).
func (c *Curve) width(delta float64) float64 {
	if delta <= c.ev.floorUp || delta >= 1 {
		delta = c.ev.floorUp + c.ev.keepUp*1e-6
	}
	u, l, err := c.Epsilon(delta)
	if err != nil || u == 0 {
		return 0
	}
	return (u - l) / u
}

// Width returns the relative width (upper − lower)/upper of the ε bracket at total δ
// (0 for an exact curve, up to rounding).
func (c *Curve) Width(delta float64) float64 { return c.width(delta) }
