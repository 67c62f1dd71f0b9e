package mechanism

import (
	"math"
	"testing"

	"github.com/dpkit/dpkit/noise"
)

// dlapPMF returns P(Z = z) ∝ e^(−|z|/t) on |z| ≤ R (closed-form normaliser
// tanh(1/2t), relative accuracy ~1e-15).
func dlapPMF(t float64, z int64) float64 {
	return math.Tanh(1/(2*t)) * math.Exp(-math.Abs(float64(z))/t)
}

// TestMedianDiscreteLaplaceLemma checks the (ε, δ) argument of the Median doc comment
// numerically for small grid scales t (where direct summation is feasible; the proof
// does not depend on the size of t beyond the 1/2t terms, which are larger here):
// for centres j, j' at distance ⌊ε₁t⌋ and scales t' = t·e^(±β̂) (rounded inward),
// the hockey-stick divergence Σ_z (P(z) − e^ε P'(z))₊, summed over |z| ≤ 80·max(t, t')
// (the rest is below e^(−80)), is ≤ δ in both directions. It also shows the
// calibration is not vacuous: with 5β̂, or a shift of 1.5εt, the divergence exceeds δ.
func TestMedianDiscreteLaplaceLemma(t *testing.T) {
	for _, c := range []struct{ eps, delta float64 }{{1, 1e-3}, {0.5, 1e-2}, {2, 1e-4}} {
		half := c.eps / 2
		bhat := math.Log1p(half / (half + math.Log(1/c.delta)))
		eps1 := half
		div := func(t0, t1 float64, m int64) float64 {
			R := int64(80 * math.Max(t0, t1))
			d := 0.0
			for z := -R; z <= R; z++ {
				d += math.Max(0, dlapPMF(t0, z)-math.Exp(c.eps)*dlapPMF(t1, z-m))
			}
			return d
		}
		worst, worstBroken := 0.0, 0.0
		for _, t0 := range []float64{40, 150} {
			m := int64(math.Floor(eps1 * t0))
			for _, sign := range []float64{1, -1} {
				t1 := math.Floor(t0 * math.Exp(bhat))
				if sign < 0 {
					t1 = math.Ceil(t0 * math.Exp(-bhat))
				}
				for _, mm := range []int64{m, -m, 0} {
					worst = max(worst, div(t0, t1, mm))
				}
				// broken: dilation by 5β̂, or a shift of 1.5ε·t (sliding beyond ε₁)
				tb := math.Ceil(t0 * math.Exp(-5*bhat))
				worstBroken = max(worstBroken, div(t0, tb, m), div(t0, t0, int64(1.5*c.eps*t0)))
			}
		}
		if worst > c.delta {
			t.Errorf("ε=%v δ=%v: hockey-stick divergence %v > δ", c.eps, c.delta, worst)
		}
		if worstBroken <= c.delta {
			t.Errorf("ε=%v δ=%v: divergence with 3β̂ is %v ≤ δ: the check cannot fail", c.eps, c.delta, worstBroken)
		}
	}
}

// TestMedianGrid: releases are multiples of Granularity in [Lower, Upper] for very
// different datasets (the output set does not depend on the data), huge and offset
// bounds included; the grid index range fits the integer noise.
func TestMedianGrid(t *testing.T) {
	for _, o := range []MedianOptions{
		{Epsilon: 1, Lower: 0, Upper: 100},
		{Epsilon: 1, Delta: 1e-6, Lower: 0, Upper: 100},
		{Epsilon: 0.1, Delta: 1e-9, Lower: 1e9, Upper: 1e9 + 1},
		{Epsilon: 2, Lower: -1e300, Upper: 1e300},
		{Epsilon: 1e-6, Delta: 1e-6, Lower: -3, Upper: 5},
	} {
		m, err := NewMedian(o)
		if err != nil {
			t.Fatalf("%+v: %v", o, err)
		}
		g := m.Granularity()
		if f, _ := math.Frexp(g); f != 0.5 {
			t.Fatalf("granularity %v not a power of two", g)
		}
		src := noise.Seeded(21)
		w := o.Upper - o.Lower
		for _, xs := range [][]float64{{o.Lower}, {o.Upper, o.Upper, o.Upper}, {o.Lower + w/3, o.Lower + w/2, o.Upper}, {math.Inf(1), math.Inf(-1), o.Lower + w*0.123456789}} {
			for range 50 {
				y, err := m.Release(xs, src)
				if err != nil {
					t.Fatal(err)
				}
				if y < o.Lower || y > o.Upper || math.IsNaN(y) {
					t.Fatalf("%+v: release %v outside bounds", o, y)
				}
				if q := y / g; q != math.Trunc(q) {
					t.Fatalf("%+v: release %v not a multiple of %v", o, y, g)
				}
			}
		}
	}
	if _, err := NewMedian(MedianOptions{Epsilon: 1e-12, Delta: 1e-6, Lower: 0, Upper: 1}); err == nil {
		t.Error("ε = 1e-12 accepted (α below 2^-30)")
	}
}
