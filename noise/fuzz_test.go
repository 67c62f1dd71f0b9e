package noise

import (
	"errors"
	"math"
	"testing"

	"github.com/dpkit/dpkit"
)

// Fuzz targets for the noise constructors (issue 24 item 6): each either refuses its
// input with a parameter error naming package noise, or builds a sampler whose exact
// accounting holds (ε' = D/t ≤ ε, δ bounds in (0, 1] and non-increasing in ε) and whose
// draws terminate and lie on its grid. Constructors and draws are all bounded-time; a
// hang (as at ε = 5e-20 or DeltaBound(1e7), issue 24) would stop the fuzzer.

func wantNoiseParamError(t *testing.T, err error) {
	t.Helper()
	var pe *dpkit.ParamError
	if !errors.As(err, &pe) || pe.Pkg != "noise" {
		t.Fatalf("error %v: want a *dpkit.ParamError of package noise", err)
	}
}

func onGrid(t *testing.T, v, g float64) {
	t.Helper()
	if math.IsNaN(v) || (math.Abs(v) < math.MaxFloat64 && math.Mod(v, g) != 0) {
		t.Fatalf("draw %g is not on the grid %g", v, g)
	}
}

func FuzzSecureLaplace(f *testing.F) {
	f.Add(1.0, 1.0, uint16(1), 0.5)
	f.Add(1.0, 5e-20, uint16(1), 0.0)
	f.Add(1.0, 1e7, uint16(3), -2.0)
	f.Add(1e300, 1e-300, uint16(1), 1e300)
	f.Fuzz(func(t *testing.T, sens, eps float64, dims uint16, x float64) {
		s, err := NewSecureLaplaceL1(sens, eps, int(dims))
		if err != nil {
			wantNoiseParamError(t, err)
			return
		}
		if s.Epsilon() > eps || s.GridSensitivity() > 1<<50+uint64(dims) || s.GridScale() < 1 || s.GridScale() > maxGridT {
			t.Fatalf("Δ = %g, ε = %g: ε' = %g, D = %d, t = %d", sens, eps, s.Epsilon(), s.GridSensitivity(), s.GridScale())
		}
		if math.IsNaN(x) {
			x = 0
		}
		src := Seeded(1)
		onGrid(t, s.Add(src, x), s.Granularity())
		onGrid(t, s.Noise(src), s.Granularity())
	})
}

func FuzzSecureGaussian(f *testing.F) {
	f.Add(1.0, 1.0, uint16(1), 1.0)
	f.Add(1.0, 1.0, uint16(1), 1e7)
	f.Add(1e300, 1.0, uint16(1), 0.5)
	f.Add(1.0, 3.0, uint16(100), 2.0)
	f.Fuzz(func(t *testing.T, sens, sigma float64, dims uint16, eps float64) {
		s, err := NewSecureGaussianL2(sens, sigma, int(dims))
		if err != nil {
			wantNoiseParamError(t, err)
			return
		}
		if s.GridSensitivity() > 1<<50 || s.Sigma() < sigma {
			t.Fatalf("Δ = %g, σ = %g: D = %d, σ' = %g", sens, sigma, s.GridSensitivity(), s.Sigma())
		}
		if math.IsNaN(eps) || eps < 0 {
			eps = 0
		}
		d0, d1 := s.DeltaBound(eps), s.DeltaBound(eps+1)
		if !(d0 > 0 && d0 <= 1 && d1 > 0 && d1 <= d0) {
			t.Fatalf("δ(%g) = %g, δ(%g + 1) = %g: want in (0, 1], non-increasing", eps, d0, eps, d1)
		}
		onGrid(t, s.Noise(Seeded(2)), s.Granularity())
	})
}

func FuzzDiscreteSamplers(f *testing.F) {
	f.Add(1.0, uint64(1), 2.0)
	f.Add(0x1p-40, uint64(1<<40), 1.0)
	f.Add(0x1p20, uint64(3), 1e300)
	f.Fuzz(func(t *testing.T, rate float64, sigma uint64, gamma float64) {
		src := Seeded(3)
		if d, err := NewDiscreteLaplace(rate); err != nil {
			wantNoiseParamError(t, err)
		} else {
			d.Sample(src)
		}
		if g, err := NewDiscreteGaussian(sigma); err != nil {
			wantNoiseParamError(t, err)
		} else {
			g.Sample(src)
		}
		if h, err := NewHeavyTail(gamma); err != nil {
			wantNoiseParamError(t, err)
		} else if v := h.Sample(src); math.IsNaN(v) {
			t.Fatalf("γ = %g: NaN draw", gamma)
		}
	})
}
