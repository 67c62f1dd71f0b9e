package pld

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// Randomized response with ε = ln 3 (P0 = (3/4, 1/4), P1 = (1/4, 3/4)): losses ±ln 3 with
// masses 3/4, 1/4. Hand-derived reference: δ(0) = 3/4·(1 − 1/3) = 1/2, δ(ln 3) = 0,
// δ(ln 2) = 3/4·(1 − 2/3) = 1/4; inverse ε(1/4) = ln 2.
func TestDiscreteRandomizedResponse(t *testing.T) {
	d, err := NewDiscrete([]float64{math.Log(3), -math.Log(3)}, []float64{0.75, 0.25}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ eps, want float64 }{{0, 0.5}, {math.Log(2), 0.25}, {math.Log(3), 0}} {
		if got := d.Delta(c.eps); !scalar.EqualWithinAbs(got, c.want, 1e-15) {
			t.Errorf("δ(%v) = %v, want %v", c.eps, got, c.want)
		}
	}
	if got := d.Epsilon(0.25); got < math.Log(2)*(1-1e-15) || got > math.Log(2)*(1+1e-14) { // 1e-15: ln 3 and ln 2 are themselves rounded
		t.Errorf("ε(1/4) = %v, want ln 2 (never below)", got)
	}
	if got := d.Epsilon(0.6); got != 0 {
		t.Errorf("ε(0.6) = %v, want 0", got)
	}
	d.InfMass = 0.1
	if got := d.Epsilon(0.05); !math.IsInf(got, 1) {
		t.Errorf("ε below the mass at +∞ = %v, want +Inf", got)
	}
}

// FFT convolution agrees with direct convolution within its tracked error bound, and the
// bound is honest (the direct result is the reference).
func TestConvolveFFTWithinErr(t *testing.T) {
	a := CanonicalLattice(0.013, 100000, 0.013, true)
	b := CanonicalLattice(0.029, 100000, 0.013, true)
	fft := Convolve(a, b)
	direct := make([]float64, len(a.Mass)+len(b.Mass)-1)
	for i, x := range a.Mass {
		for j, y := range b.Mass {
			direct[i+j] += x * y
		}
	}
	tv := 0.0
	for i := range direct {
		tv += math.Abs(fft.Mass[i] - direct[i])
	}
	if fft.Err == 0 {
		t.Fatal("expected the FFT path (Err > 0)")
	}
	if tv > fft.Err {
		t.Fatalf("TV distance %g exceeds tracked Err %g", tv, fft.Err)
	}
}

// Upper and lower lattice curves bracket the exact binomial curve (enumerated by the
// binomial formula, binomialEnum) and CanonicalComposition's window bracket.
func TestLatticeBrackets(t *testing.T) {
	exact := binomialEnum(0.01234, 500)
	up, lo := CanonicalComposition(0.01234, 500, TailFine)
	lu := CanonicalLattice(0.01234, 500, 1e-4, true).Discrete(true)
	ll := CanonicalLattice(0.01234, 500, 1e-4, false).Discrete(false)
	for _, e := range []float64{0, 0.2, 0.5, 1} {
		want := exact.delta(e)
		if !(ll.Delta(e) <= want*(1+1e-9) && want*(1-1e-9) <= lu.Delta(e) && ll.Delta(e) < lu.Delta(e)) {
			t.Errorf("ε=%v: lattice [%v, %v] does not bracket the binomial %v", e, ll.Delta(e), lu.Delta(e), want)
		}
		if !(lo.Delta(e) <= want*(1+1e-9) && want*(1-1e-9) <= up.Delta(e)) {
			t.Errorf("ε=%v: window [%v, %v] does not bracket the binomial %v", e, lo.Delta(e), up.Delta(e), want)
		}
	}
}

func TestNewDiscreteValidates(t *testing.T) {
	if _, err := NewDiscrete([]float64{0}, []float64{-1}, 0); err == nil {
		t.Error("negative mass accepted")
	}
	if _, err := NewDiscrete([]float64{math.NaN()}, []float64{1}, 0); err == nil {
		t.Error("NaN loss accepted")
	}
	if _, err := NewDiscrete([]float64{0, 1}, []float64{1}, 0); err == nil {
		t.Error("length mismatch accepted")
	}
}
