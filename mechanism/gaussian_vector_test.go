package mechanism

import (
	"gonum.org/v1/gonum/floats/scalar"
	"math"
	"testing"

	"github.com/dpkit/dpkit/noise"
)

// TestGaussianVector: the certified δ of the vector release meets the target; the CDP
// bound it uses is never below the exact δ of the continuous Gaussian with the same ρ
// (Balle–Wang closed form, cross-checked against direct integration in
// TestGaussianDelta), as it must be for a valid conversion; σ is within 30% of the
// analytic one; the grid ℓ2 sensitivity includes √d; and releases lie on the grid.
func TestGaussianVector(t *testing.T) {
	for _, c := range []struct {
		eps, delta, sens float64
		dim              int
	}{{1, 1e-5, 1, 10}, {0.3, 1e-8, 2.5, 3}, {4, 1e-3, 1, 1000}} {
		m, err := NewGaussian(GaussianOptions{Epsilon: c.eps, Delta: c.delta, Sensitivity: c.sens, Dimension: c.dim})
		if err != nil {
			t.Fatal(err)
		}
		s := m.Sampler()
		if m.Dimension() != c.dim || s.Dims() != c.dim {
			t.Fatalf("dimension %d/%d", m.Dimension(), s.Dims())
		}
		if d := s.DeltaBound(c.eps); d > c.delta {
			t.Errorf("%+v: certified δ %v > δ", c, d)
		}
		g := s.Granularity()
		if s.GridL2Sensitivity() < c.sens/g+math.Sqrt(float64(c.dim)) {
			t.Errorf("%+v: D₂ = %v < Δ/g + √d", c, s.GridL2Sensitivity())
		}
		// The CDP bound against the continuous Gaussian of noise σ = S (grid units) and
		// sensitivity D₂: its exact δ is a lower bound for every ρ-CDP conversion.
		S := float64(s.GridSigma())
		if cont := gaussianDeltaOf(c.eps, S, s.GridL2Sensitivity()); s.DeltaBound(c.eps) < cont*(1-1e-9) {
			t.Errorf("%+v: CDP bound %v below the continuous Gaussian's exact δ %v", c, s.DeltaBound(c.eps), cont)
		}
		if m.Sigma() < m.CalibratedSigma() || m.Sigma() > 1.3*m.CalibratedSigma() {
			t.Errorf("%+v: σ %v vs analytic %v", c, m.Sigma(), m.CalibratedSigma())
		}
		// the search is tight: 1e-6 less σ is not certified
		if g2, err := noise.NewSecureGaussianL2(c.sens, m.Sigma()*(1-1e-6), c.dim); err == nil && g2.DeltaBound(c.eps) <= c.delta {
			t.Errorf("%+v: σ not tight", c)
		}
		vals := make([]float64, c.dim)
		for i := range vals {
			vals[i] = 0.1 * float64(i)
		}
		out, err := m.ReleaseVector(vals, noise.Seeded(3))
		if err != nil || len(out) != c.dim {
			t.Fatal(err)
		}
		for _, y := range out {
			if q := y / g; q != math.Trunc(q) {
				t.Errorf("release %v off the grid %v", y, g)
			}
		}
		if _, err := m.Release(1, nil); err == nil {
			t.Error("scalar Release accepted for a vector mechanism")
		}
		if _, err := m.ReleaseVector(vals[:1], nil); err == nil {
			t.Error("wrong length accepted")
		}
	}
}

// TestGaussianVectorAccuracy: VectorBound is the per-coordinate interval at β/d;
// L2Bound is close to σ√(d + 2√(d ln(1/β)) + 2 ln(1/β)) (computed here from the
// formula, tolerance 1e-9 relative) and is met empirically: with β = 0.01 and 2000
// seeded releases of d = 10 coordinates, the number of exceedances is ≤ 45 (binomial
// upper tail P[Bin(2000, 0.01) > 45] < 1e-7 by the Chernoff bound).
func TestGaussianVectorAccuracy(t *testing.T) {
	m, err := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1, Dimension: 10})
	if err != nil {
		t.Fatal(err)
	}
	v, _ := m.VectorBound(0.05)
	w, _ := m.Interval(0.005)
	if v != w {
		t.Errorf("VectorBound(0.05) = %v, Interval(0.005) = %v", v, w)
	}
	beta := 0.01
	l2, _ := m.L2Bound(beta)
	x := math.Log(1 / beta)
	if want := m.Sigma() * math.Sqrt(10+2*math.Sqrt(10*x)+2*x); !scalar.EqualWithinRel(l2, want, 1e-9) {
		t.Errorf("L2Bound %v, formula %v", l2, want)
	}
	src := noise.Seeded(12)
	exceed := 0
	zero := make([]float64, 10)
	for range 2000 {
		y, _ := m.ReleaseVector(zero, src)
		n := 0.0
		for _, c := range y {
			n += c * c
		}
		if math.Sqrt(n) >= l2 {
			exceed++
		}
	}
	if exceed > 45 {
		t.Errorf("%d of 2000 noise vectors beyond the 99%% ℓ2 bound", exceed)
	}
	if _, err := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1, Dimension: -1}); err == nil {
		t.Error("negative Dimension accepted")
	}
}
