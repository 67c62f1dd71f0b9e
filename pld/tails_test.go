package pld

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// The two-resolution self-composition (bulk + tail, tails spilled at every level, joined
// at the end) of a Gaussian release must still bracket the closed form of μ√k-GDP
// (Balle & Wang 2018, Thm 8, via GaussianEpsilon): every part of the machinery —
// partSpec, splitTails, the cross terms by composeCoarse, addPLD, merged, onto — is on
// this path, and an unsound step would put the exact value outside. Here keep is far
// larger than planTails would allow (10^-6 at level 0, doubling with each level up to
// maxKeep, at both ends), so the tails carry real mass.
func TestTailedGaussianBracketsClosedForm(t *testing.T) {
	const mu = 0.002
	h := mu / startRatio
	for _, k := range []int64{3, 1000, 40961, 1_000_003} {
		plan := planTails(mu, h, math.Inf(1), coarseRatio, k)
		if plan == nil {
			plan = &tailPlan{H: 8 * h, k: k}
		}
		plan.eps = 1e-6 * float64(k) * plan.H
		tl, _ := newTailed(h, 1e-40, plan, gaussianSpec{mu})
		if total(tl.tail.sides[0].upper.Mass) == 0 {
			t.Fatalf("k=%d: nothing went to the tail", k)
		}
		c := tl.withTol(1e-17).selfCompose(k, math.Inf(1), coarseRatio, plan)
		// Loose: keep is far above what planTails allows, so the lower bound pays.
		checkGaussianBracket(t, c, mu, k, func(float64) float64 { return 0.01 })
	}
}

// The subsampled Gaussian composed on two resolutions (what Compose does) and on one
// (the plain adaptive squaring, from the same start) are both certified, so their
// brackets must overlap; the two-resolution one meets the tolerance 1e-3 it is asked for.
func TestTailedSubsampledAgreesWithPlain(t *testing.T) {
	if testing.Short() {
		t.Skip("plain 10^4-fold subsampled Gaussian: a few seconds")
	}
	m := PoissonSubsampled{Base: Gaussian{Sigma: 1, Sensitivity: 1}, Rate: 0.01}
	const k = 10_000
	c, err := Compose([]Item{{m, k}}, &Options{Delta: 1e-6, Tolerance: 1e-3})
	if err != nil {
		t.Fatal(err)
	}
	up, lo, _ := c.Epsilon(1e-6)
	it := Item{m, k}
	h, hMax := groupSpacing(it, c.pld.h, 0, false)
	p := newPLD(h, 1e-30, m.specs()...)
	plain := p.selfComposeAdaptive(k, hMax, coarseRatio)
	pu, pl := plain.Epsilon(1e-6)
	if lo > pu || pl > up {
		t.Errorf("two resolutions [%g, %g] and one [%g, %g] do not overlap", lo, up, pl, pu)
	}
	if w := (up - lo) / up; w > 1e-3 {
		t.Errorf("two-resolution width %g above the tolerance 1e-3", w)
	}
}

// A cell of a pair is the sum of its parts inside and outside any window.
func TestPartSpecAdditive(t *testing.T) {
	specs := []spec{
		gaussianSpec{0.7},
		subsampledSpec{base: gaussianSpec{1}, rate: 0.01},
		subsampledSpec{base: gaussianSpec{1}, rate: 0.01, add: true},
	}
	rapid.Check(t, func(t *rapid.T) {
		s := specs[rapid.IntRange(0, len(specs)-1).Draw(t, "spec")]
		x := []float64{
			rapid.Float64Range(-3, 3).Draw(t, "a"), rapid.Float64Range(-3, 3).Draw(t, "b"),
			rapid.Float64Range(-3, 3).Draw(t, "lo"), rapid.Float64Range(-3, 3).Draw(t, "hi"),
		}
		a, b := math.Min(x[0], x[1]), math.Max(x[0], x[1])
		lo, hi := math.Min(x[2], x[3]), math.Max(x[2], x[3])
		p, lq, e := s.cell(a, b)
		pi, lqi, ei := partSpec{s, lo, hi, true}.cell(a, b)
		po, lqo, eo := partSpec{s, lo, hi, false}.cell(a, b)
		q, qi, qo := math.Exp(lq), math.Exp(lqi), math.Exp(lqo)
		tol := 4*math.Max(e, math.Max(ei, eo)) + 1e-15
		if math.Abs(pi+po-p) > tol*p+1e-300 || math.Abs(qi+qo-q) > tol*q+1e-300 {
			t.Fatalf("cell (%g, %g], window (%g, %g]: parts %g + %g, %g + %g; whole %g, %g", a, b, lo, hi, pi, po, qi, qo, p, q)
		}
	})
}

// Splitting a lattice's ends off and adding them back (on a coarser lattice) keeps its
// total mass, +∞ mass and Err, and only moves mass beyond the cut: with keep = 1e-4 at
// each end, at most 2e-4 (1e-12: the rounding of the sums).
func TestSplitTailsKeepsMass(t *testing.T) {
	l := &Lattice{H: 0.01, Offset: -50, Mass: make([]float64, 200), InfMass: 1e-9, Err: 1e-12}
	for i := range l.Mass {
		x := float64(i-80) / 20
		l.Mass[i] = math.Exp(-x * x / 2)
	}
	s := total(l.Mass)
	for i := range l.Mass {
		l.Mass[i] /= s
	}
	for _, upper := range []bool{true, false} {
		bulk, spill, cut := l.splitTails(0.08, 1e-4, upper)
		if !cut {
			t.Fatal("nothing cut")
		}
		sum := sumLattices(bulk, spill)
		if d := total(sum.Mass) - total(l.Mass); math.Abs(d) > 1e-12 {
			t.Errorf("upper=%v: mass moved by %g", upper, d)
		}
		if sum.InfMass != l.InfMass || sum.Err != l.Err {
			t.Errorf("upper=%v: InfMass %g, Err %g", upper, sum.InfMass, sum.Err)
		}
		if total(spill.Mass) > 2e-4 || total(spill.Mass) == 0 {
			t.Errorf("upper=%v: spilled %g, want (0, 2e-4]", upper, total(spill.Mass))
		}
	}
}
