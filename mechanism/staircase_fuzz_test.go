package mechanism

import (
	"errors"
	"math"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
)

// FuzzStaircase: for any ε and Δ, NewStaircase either refuses with a *dpkit.ParamError
// naming epsilon or sensitivity, or returns a mechanism whose releases terminate (the
// hang of issue 24 was at ε ≥ 45) on the grid, whose exact PLD validates with masses
// summing to 1 and P(L = ε) at most the canonical pair's e^ε/(1 + e^ε) (it is dominated by
// it: an independent bound), and whose Interval grows as β falls.
func FuzzStaircase(f *testing.F) {
	for _, c := range [][2]float64{{1, 1}, {70, 1}, {45, 3}, {0x1p-12, 1e-300}, {0x1p20, 1e300}, {1e-5, 1}, {math.Inf(1), 1}, {1, math.NaN()}} {
		f.Add(c[0], c[1], false)
	}
	f.Fuzz(func(t *testing.T, eps, sens float64, l1 bool) {
		cost := CostL2
		if l1 {
			cost = CostL1
		}
		m, err := NewStaircase(StaircaseOptions{Epsilon: eps, Sensitivity: sens, Cost: cost})
		if err != nil {
			var pe *dpkit.ParamError
			if !errors.As(err, &pe) || (pe.Name != "epsilon" && pe.Name != "Epsilon" && pe.Name != "sensitivity" && pe.Name != "Sensitivity") {
				t.Fatalf("ε=%g Δ=%g: error %v does not name epsilon or sensitivity", eps, sens, err)
			}
			return
		}
		src := noise.Seeded(1)
		g := m.Granularity()
		for range 20 {
			v, err := m.Release(0, src)
			if err != nil {
				t.Fatal(err)
			}
			if q := v / g; q != math.Trunc(q) && !math.IsInf(v, 0) {
				t.Fatalf("ε=%g Δ=%g: release %g off the grid %g", eps, sens, v, g)
			}
		}
		p, err := m.PLD()
		if err != nil {
			t.Fatal(err)
		}
		s := p.(pld.Staircase)
		if err := s.Validate(); err != nil {
			t.Fatalf("ε=%g Δ=%g: PLD %v invalid: %v", eps, sens, s, err)
		}
		lo, mid, hi := s.Masses()
		canon := 1 / (1 + math.Exp(-s.Epsilon))
		if math.Abs(lo+mid+hi-1) > 1e-12 || lo < 0 || mid < 0 || hi > canon*(1+1e-12) || hi < 0.5*(1-1e-12) {
			t.Fatalf("ε=%g Δ=%g: masses %g %g %g (canonical %g)", eps, sens, lo, mid, hi, canon)
		}
		w1, err1 := m.Interval(0.05)
		w2, err2 := m.Interval(0.001)
		if err1 != nil || err2 != nil || !(w2 >= w1) || math.IsNaN(w1) {
			t.Fatalf("ε=%g Δ=%g: intervals %g (β=0.05), %g (β=0.001): %v %v", eps, sens, w1, w2, err1, err2)
		}
	})
}

// FuzzStaircaseL1: for any ε and Δ, NewStaircaseL1 refuses with a named error or returns
// a mechanism whose releases terminate on the grid, whose γ lies in [0, 1] and is no
// worse than γ = 0, ½ or 1 for the cost (an independent optimality check), and whose ℓ1
// bound grows as β falls.
func FuzzStaircaseL1(f *testing.F) {
	for _, c := range [][2]float64{{1, 1}, {70, 1}, {45, 3}, {0x1p-12, 1e-300}, {0x1p20, 1e300}, {2100, 1}, {0, 1}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, eps, sens float64) {
		m, err := NewStaircaseL1(StaircaseL1Options{Epsilon: eps, Sensitivity: sens, Dimension: 2})
		if err != nil {
			var pe *dpkit.ParamError
			if !errors.As(err, &pe) || (pe.Name != "epsilon" && pe.Name != "sensitivity") {
				t.Fatalf("ε=%g Δ=%g: error %v does not name epsilon or sensitivity", eps, sens, err)
			}
			return
		}
		src := noise.Seeded(2)
		g := m.Granularity()
		for range 20 {
			v, err := m.ReleaseVector([]float64{0, 0}, src)
			if err != nil {
				t.Fatal(err)
			}
			for _, x := range v {
				if q := x / g; q != math.Trunc(q) && !math.IsInf(x, 0) {
					t.Fatalf("ε=%g Δ=%g: release %v off the grid %g", eps, sens, v, g)
				}
			}
		}
		gs := StaircaseL1Gamma(eps, 2)
		if !(gs >= 0 && gs <= 1) {
			t.Fatalf("ε=%g: γ* = %g", eps, gs)
		}
		if gs > 0 {
			best := StaircaseL1Cost(eps, gs, 2)
			for _, g := range []float64{0x1p-1000, 0.5, 1} {
				if c := StaircaseL1Cost(eps, g, 2); c < best*(1-1e-12) {
					t.Fatalf("ε=%g: cost(γ = %g) = %g below cost(γ* = %g) = %g", eps, g, c, gs, best)
				}
			}
		}
		w1, err1 := m.NormBound(0.05)
		w2, err2 := m.NormBound(0.001)
		if err1 != nil || err2 != nil || !(w2 >= w1) || !(w1 > 0) {
			t.Fatalf("ε=%g Δ=%g: bounds %g, %g: %v %v", eps, sens, w1, w2, err1, err2)
		}
	})
}
