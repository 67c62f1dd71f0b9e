package pld

import (
	"math"
	"testing"
)

// staircaseGridDelta enumerates the grid staircase P(n) ∝ h(|n|) (the definition, not
// the closed form of Staircase) for |n| < periods·M and returns max over the integer
// shifts t ∈ [1, M] of the hockey-stick divergence Σ_n (P(n) − e^ε'·P(n − t))₊ and the
// shift attaining it. The truncation drops mass below b^periods.
func staircaseGridDelta(eps float64, M, r int, epsPrime float64, periods int) (best float64, at int) {
	b := math.Exp(-eps)
	h := func(m int) float64 {
		if m < 0 {
			m = -m
		}
		w := math.Pow(b, float64(m/M))
		if m%M >= r {
			w *= b
		}
		return w
	}
	n := periods * M
	z := 0.0
	for i := -n; i <= n; i++ {
		z += h(i)
	}
	for t := 1; t <= M; t++ {
		d := 0.0
		for i := -n; i <= n+t; i++ {
			d += math.Max(0, h(i)/z-math.Exp(epsPrime)*h(i-t)/z)
		}
		if d > best {
			best, at = d, t
		}
	}
	return best, at
}

// TestStaircaseWorstShift: the closed-form three-point pair equals the worst shift of
// the enumerated grid distribution (within the truncation, b^60 relative) and the worst
// shift is t = M, for small grids with every r, at several ε and ε'.
func TestStaircaseWorstShift(t *testing.T) {
	for _, eps := range []float64{0.3, 1, 2.5} {
		for _, M := range []int{1, 2, 5, 8} {
			for r := 1; r <= M; r++ {
				m := Staircase{Epsilon: eps, Period: uint64(M), Step: uint64(r)}
				if err := m.Validate(); err != nil {
					t.Fatal(err)
				}
				lo, mid, hi := m.Masses()
				if s := lo + mid + hi; math.Abs(s-1) > 1e-15 {
					t.Errorf("ε=%g M=%d r=%d: masses sum to %g", eps, M, r, s)
				}
				for _, ep := range []float64{0, eps / 3, eps * 0.9} {
					want, at := staircaseGridDelta(eps, M, r, ep, int(60/eps)+2)
					got := hi * (1 - math.Exp(ep-eps))
					if math.Abs(got-want) > 1e-13*want+1e-300 {
						t.Errorf("ε=%g M=%d r=%d ε'=%g: closed form %.17g, enumeration %.17g (worst t=%d)", eps, M, r, ep, got, want, at)
					}
					if at != M && want-got > 1e-13*want {
						t.Errorf("ε=%g M=%d r=%d ε'=%g: worst shift %d, want M", eps, M, r, ep, at)
					}
				}
			}
		}
	}
}

// threePoint is a mechanism whose pair has the losses −ε, 0, ε (Staircase, StaircaseL1).
type threePoint interface {
	Mechanism
	Masses() (lo, mid, hi float64)
}

// TestStaircaseCompose: for both grid staircases, the three-fold composition through the
// lattice brackets the exact product of the three-point pair (enumerated with Product),
// and the pair is tighter than the canonical (ε, 0) pair that accounted for them before.
func TestStaircaseCompose(t *testing.T) {
	for _, m := range []threePoint{Staircase{Epsilon: 1, Period: 1 << 31, Step: 1 << 29}, StaircaseL1{Epsilon: 1, Period: 1<<31 + 1, Step: 1 << 30}} {
		lo, mid, hi := m.Masses()
		one, _ := NewDiscrete([]float64{-1, 0, 1}, []float64{lo, mid, hi}, 0)
		exact := Product(Product(one, one, 0, true), one, 0, true)
		c, err := Compose([]Item{{m, 3}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range []float64{0, 0.5, 1, 2, 2.9} {
			want := exact.Delta(e)
			up, low, _ := c.Delta(e)
			if up < want*(1-1e-12) || low > want*(1+1e-12) {
				t.Errorf("%v ε=%g: [%g, %g] misses exact %g", m, e, low, up, want)
			}
		}
		canon, _ := Compose([]Item{{Exponential{Epsilon: 1}, 3}}, nil)
		up, _, _ := c.Delta(1)
		cu, _, _ := canon.Delta(1)
		if !(up < cu) {
			t.Errorf("%v: δ(1) = %g not below the canonical pair's %g", m, up, cu)
		}
	}
}

// checkThreePoint is the fuzz targets' check of a valid three-point pair at ε: masses ≥ 0
// summing to 1 (1e-12), P(L = −ε) = e^(−ε)P(L = ε), P(L = ε) at most the canonical pair's
// e^ε/(1 + e^ε) (which dominates every ε-DP mechanism), and Compose of one release
// answering δ(0) = P(L = ε)(1 − e^(−ε)) within its bracket. It returns P(L = ε).
func checkThreePoint(t *testing.T, m threePoint, eps float64) float64 {
	t.Helper()
	lo, mid, hi := m.Masses()
	canon := 1 / (1 + math.Exp(-eps))
	if lo < 0 || mid < 0 || math.Abs(lo+mid+hi-1) > 1e-12 || hi > canon*(1+1e-12) || math.Abs(lo-math.Exp(-eps)*hi) > 1e-15*hi {
		t.Fatalf("%v: masses %g %g %g (canonical %g)", m, lo, mid, hi, canon)
	}
	if eps > 700 {
		return hi // e^ε overflows the curve's evaluation; the masses above are the check
	}
	c, err := Compose([]Item{{m, 1}}, &Options{Tolerance: 1e-3})
	if err != nil {
		t.Fatalf("%v: %v", m, err)
	}
	want := hi * -math.Expm1(-eps)
	up, low, _ := c.Delta(0)
	if up < want*(1-1e-9) || low > want*(1+1e-9) {
		t.Fatalf("%v: δ(0) in [%g, %g], closed form %g", m, low, up, want)
	}
	return hi
}

// TestStaircaseExtremes: huge ε keeps the masses finite and summing to 1; bad fields
// are refused by name.
func TestStaircaseExtremes(t *testing.T) {
	for _, eps := range []float64{1e-9, 709, 710, 0x1p20} {
		m := Staircase{Epsilon: eps, Period: 1 << 32, Step: 1}
		lo, mid, hi := m.Masses()
		if s := lo + mid + hi; math.IsNaN(s) || math.Abs(s-1) > 1e-12 {
			t.Errorf("ε = %g: masses %g %g %g", eps, lo, mid, hi)
		}
	}
	for _, m := range []Staircase{{0, 1, 1}, {math.NaN(), 1, 1}, {0x1p21, 1, 1}, {1, 0, 1}, {1, 4, 0}, {1, 4, 5}} {
		if err := m.Validate(); err == nil {
			t.Errorf("%+v: no error", m)
		}
	}
}

// FuzzStaircasePLD: any (ε, M, r) either fails Validate or gives a valid three-point
// pair (checkThreePoint) with P(L = ε) at least ½ (the γ = 1 staircase).
func FuzzStaircasePLD(f *testing.F) {
	f.Add(1.0, uint64(1<<31), uint64(1<<29))
	f.Add(70.0, uint64(1<<32), uint64(1))
	f.Add(1e-9, uint64(5), uint64(5))
	f.Add(800.0, uint64(3), uint64(2))
	f.Fuzz(func(t *testing.T, eps float64, period, step uint64) {
		m := Staircase{Epsilon: eps, Period: period, Step: step}
		if m.Validate() != nil {
			return
		}
		if hi := checkThreePoint(t, m, eps); hi < 0.5*(1-1e-12) {
			t.Fatalf("%v: P(L = ε) = %g below ½", m, hi)
		}
	})
}
