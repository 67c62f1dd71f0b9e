package mechanism

import (
	"math"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// A mechanism's PLD must not promise more than its Guarantee: the single-release curve at
// the guaranteed ε is at most the guaranteed δ (to rounding).
func TestPLDWithinGuarantee(t *testing.T) {
	lap, err := NewLaplace(LaplaceOptions{Sensitivity: 1, Epsilon: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	geo, err := NewGeometric(GeometricOptions{Sensitivity: 2, Epsilon: 0.7})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := NewRandomizedResponse(RandomizedResponseOptions{Categories: 4, Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	gau, err := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1})
	if err != nil {
		t.Fatal(err)
	}
	rr4, _ := NewRandomizedResponse4(RandomizedResponse4Options{Epsilon: 1, Delta: 1e-3})
	med, _ := NewMedian(MedianOptions{Epsilon: 1, Delta: 1e-6, Lower: 0, Upper: 1})
	type withPLD interface {
		PLD() (pld.Mechanism, error)
	}
	for name, m := range map[string]withPLD{"laplace": lap, "geometric": geo, "rr": rr, "gaussian": gau, "rr4": rr4, "median": med} {
		pm, err := m.PLD()
		if err != nil {
			t.Fatal(err)
		}
		c, err := pld.Compose([]pld.Item{{Mechanism: pm, Count: 1}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := m.(interface{ Guarantee() dpkit.Budget }).Guarantee()
		up, _, _ := c.Delta(g.Epsilon * (1 + 1e-9))
		if up > g.Delta*(1+1e-9)+1e-12 {
			t.Errorf("%s: δ(%g) = %g by its PLD, above its guarantee %v", name, g.Epsilon, up, g)
		}
		// And the PLD is not trivially loose: some loss reaches ε within 1%.
		if up, _, _ := c.Delta(g.Epsilon * 0.99); up <= 0 && !math.IsNaN(up) {
			t.Errorf("%s: δ(0.99ε) = %g: PLD looser than the guarantee", name, up)
		}
	}
}

// discreteGaussianDelta returns δ(ε) of N_ℤ(0, S²) against N_ℤ(D, S²) by the
// definition, Σ_y (P(y) − e^ε Q(y))₊, summed directly over |y| ≤ 60S + D (the rest has
// mass below e^(−1800)): an independent reference for Gaussian.PLD's domination argument.
func discreteGaussianDelta(S, D int64, eps float64) float64 {
	f := func(y int64) float64 { x := float64(y) / float64(S); return math.Exp(-x * x / 2) }
	lim := 60*S + D
	z := 0.0
	for y := -lim; y <= lim; y++ {
		z += f(y)
	}
	d := 0.0
	for y := -lim; y <= lim; y++ {
		d += math.Max(0, f(y)-math.Exp(eps)*f(y-D))
	}
	return d / z
}

// TestGaussianPLDDominates: the discrete Gaussian with integer shift D is dominated by
// the continuous Gaussian with shift D + 1 (the argument at Gaussian.PLD), checked
// where the lattice is coarsest; with shift D it is not (at S = D = 1, ε = 0 the
// discrete total variation 1/Σe^(−y²/2) = 0.39894 exceeds 2Φ(½) − 1 = 0.38292), which
// is why the +1 is there.
func TestGaussianPLDDominates(t *testing.T) {
	for _, S := range []int64{1, 2, 3, 5, 8, 20} {
		for _, D := range []int64{1, 2, 3, 7} {
			for _, eps := range []float64{0, 0.1, 0.5, 1, 2, 4, 8} {
				exact := discreteGaussianDelta(S, D, eps)
				bound, err := pld.GaussianDelta(float64(D+1)/float64(S), eps)
				if err != nil {
					t.Fatal(err)
				}
				if exact > bound*(1+1e-12)+1e-300 { // 1e-300: rounding of the subnormal tail terms
					t.Errorf("S=%d D=%d ε=%v: discrete δ %.12g above the continuous bound %.12g", S, D, eps, exact, bound)
				}
			}
		}
	}
	if tight, _ := pld.GaussianDelta(1, 0); discreteGaussianDelta(1, 1, 0) <= tight {
		t.Error("the shift-D continuous Gaussian dominates at S = D = 1: the check cannot tell")
	}
	// The mechanism's own PLD: μ' = (D+1)/S at most 2^-29 above Δ/σ, and its curve meets
	// the guarantee.
	for _, c := range []struct{ eps, delta, sens float64 }{{1, 1e-5, 1}, {0.1, 1e-10, 3}, {8, 1e-3, 0.01}} {
		m, err := NewGaussian(GaussianOptions{Epsilon: c.eps, Delta: c.delta, Sensitivity: c.sens})
		if err != nil {
			t.Fatal(err)
		}
		pm, _ := m.PLD()
		mu := pm.(pld.Gaussian).Mu()
		if want := c.sens / m.Sigma(); mu < want || mu > want+0x1p-29 {
			t.Errorf("%+v: μ' = %v, Δ/σ = %v", c, mu, want)
		}
		if d, _ := pld.GaussianDelta(mu, c.eps); d > c.delta {
			t.Errorf("%+v: PLD δ(ε) = %v above the guarantee", c, d)
		}
	}
}

// TestGaussianMu: NewGaussianMu's PLD meets μ and is tight (within 2^-27 relative of μ,
// from the 2^-28 search and the grid), for scalars and vectors; its descriptor rebuilds it.
func TestGaussianMu(t *testing.T) {
	for _, c := range []struct {
		mu, sens float64
		dim      int
	}{{0.5, 1, 0}, {0.01, 3, 0}, {2, 1e-3, 0}, {0.3, 1, 5}} {
		m, err := NewGaussianMu(GaussianMuOptions{Mu: c.mu, Sensitivity: c.sens, Dimension: c.dim})
		if err != nil {
			t.Fatal(err)
		}
		pm, _ := m.PLD()
		got := pm.(pld.Gaussian).Mu()
		if got > c.mu || got < c.mu*(1-0x1p-26) {
			t.Errorf("%+v: PLD μ' = %v", c, got)
		}
		if tv, _ := pld.GaussianDelta(got, 0); m.Guarantee().Epsilon != 0 || m.Guarantee().Delta < tv {
			t.Errorf("%+v: guarantee %v below the total variation %v", c, m.Guarantee(), tv)
		}
		back, err := FromDescriptor(m.Descriptor())
		if err != nil || back.(*Gaussian).Sigma() != m.Sigma() {
			t.Errorf("%+v: rebuilt %v (%v)", c, back, err)
		}
	}
}
