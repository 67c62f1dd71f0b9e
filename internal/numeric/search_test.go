package numeric

import (
	"errors"
	"math"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
	"pgregory.net/rapid"
)

// TestBisectSqrt2 brackets √2 as the boundary of x² < 2 down to adjacent floats.
// Reference: math.Sqrt2 = 1.41421356237309504880… (the constant's decimal expansion,
// OEIS A002193), whose nearest float64 is 1.4142135623730951.
func TestBisectSqrt2(t *testing.T) {
	below := func(x float64) (bool, error) { return x*x < 2, nil }
	for _, stop := range []Stop{{}, {Geometric: true}} {
		lo, hi, err := Bisect(1, 2, below, stop)
		if err != nil {
			t.Fatal(err)
		}
		if !(lo*lo < 2) || hi*hi < 2 || math.Nextafter(lo, 2) != hi {
			t.Errorf("%+v: bracket [%v, %v] is not the adjacent pair around √2", stop, lo, hi)
		}
		if lo != math.Sqrt2 && hi != math.Sqrt2 {
			t.Errorf("%+v: bracket [%v, %v] misses float64(√2) = %v", stop, lo, hi, math.Sqrt2)
		}
	}
}

// TestBisectStops checks the three stopping rules and the bracket contract on random
// thresholds (property test).
func TestBisectStops(t *testing.T) {
	rapid.Check(t, func(r *rapid.T) {
		lo := rapid.Float64Range(-1e6, 1e6).Draw(r, "lo")
		hi := lo + rapid.Float64Range(1e-6, 1e6).Draw(r, "width")
		th := rapid.Float64Range(lo, hi).Draw(r, "threshold")
		rel := rapid.SampledFrom([]float64{0, 1e-3, 1e-9}).Draw(r, "rel")
		abs := rapid.SampledFrom([]float64{0, 1e-2}).Draw(r, "abs")
		ok := func(x float64) (bool, error) { return x <= th, nil }
		if !(lo <= th) || hi <= th { // the caller's guarantee
			return
		}
		a, b, err := Bisect(lo, hi, ok, Stop{RelTol: rel, AbsTol: abs})
		if err != nil {
			r.Fatal(err)
		}
		if !(a <= th && th < b) {
			r.Fatalf("bracket [%v, %v] does not hold the threshold %v", a, b, th)
		}
		w := b - a
		if !(w <= abs || w <= rel*math.Max(math.Abs(a), math.Abs(b)) || math.Nextafter(a, b) == b) {
			r.Fatalf("bracket [%v, %v] wider than the stopping rule (rel %v, abs %v)", a, b, rel, abs)
		}
	})
}

func TestBisectMaxIterAndErrors(t *testing.T) {
	n := 0
	ok := func(x float64) (bool, error) { n++; return x < 0.3, nil }
	if _, _, err := Bisect(0, 1, ok, Stop{MaxIter: 5}); err != nil || n != 5 {
		t.Errorf("MaxIter 5: %d evaluations, err %v", n, err)
	}
	boom := errors.New("boom")
	if _, _, err := Bisect(0, 1, func(float64) (bool, error) { return false, boom }, Stop{}); !errors.Is(err, boom) {
		t.Errorf("error not passed through: %v", err)
	}
	for _, b := range [][2]float64{{1, 1}, {2, 1}, {math.NaN(), 1}, {0, math.Inf(1)}} {
		if _, _, err := Bisect(b[0], b[1], ok, Stop{}); !errors.Is(err, ErrBracket) {
			t.Errorf("bracket %v: err %v, want ErrBracket", b, err)
		}
	}
	if _, _, err := Bisect(0, 1, ok, Stop{Geometric: true}); !errors.Is(err, ErrBracket) {
		t.Errorf("geometric from 0: err %v, want ErrBracket", err)
	}
	// The widest bracket still terminates, at adjacent floats.
	lo, hi, err := Bisect(-math.MaxFloat64, math.MaxFloat64, func(x float64) (bool, error) { return x < 1e300, nil }, Stop{})
	if err != nil || math.Nextafter(lo, hi) != hi || !(lo < 1e300) || hi < 1e300 {
		t.Errorf("full range: [%v, %v], %v", lo, hi, err)
	}
}

func TestExpandUp(t *testing.T) {
	ok := func(x float64) (bool, error) { return x < 100, nil }
	lo, hi, found, err := ExpandUp(1, 2, 1e9, ok)
	if err != nil || !found || lo != 64 || hi != 128 {
		t.Errorf("ExpandUp = %v, %v, %v, %v; want 64, 128, true", lo, hi, found, err)
	}
	lo, hi, found, err = ExpandUp(1, 2, 50, ok)
	if err != nil || found || lo != 32 || hi != 50 {
		t.Errorf("capped ExpandUp = %v, %v, %v, %v; want 32, 50, false", lo, hi, found, err)
	}
	if _, _, _, err := ExpandUp(0, 2, 10, ok); !errors.Is(err, ErrBracket) {
		t.Errorf("x0 = 0: %v", err)
	}
}

func TestLargestInt(t *testing.T) {
	rapid.Check(t, func(r *rapid.T) {
		max := rapid.Int64Range(1, 1<<62).Draw(r, "max")
		th := rapid.Int64Range(0, max+1).Draw(r, "threshold")
		calls := 0
		got, err := LargestInt(max, func(k int64) (bool, error) { calls++; return k <= th, nil })
		if err != nil {
			r.Fatal(err)
		}
		if want := min(th, max); got != want {
			r.Fatalf("LargestInt(%d) with threshold %d = %d, want %d", max, th, got, want)
		}
		if calls > 2*64+2 {
			r.Fatalf("%d evaluations", calls)
		}
	})
	if got, err := LargestInt(math.MaxInt64, func(int64) (bool, error) { return true, nil }); err != nil || got != math.MaxInt64 {
		t.Errorf("always true up to MaxInt64: %d, %v", got, err)
	}
}

// TestGoldenSection minimises (x − c)² (minimum at c, value 0 by construction) and a
// function whose minimum lies at an end of the interval.
func TestGoldenSection(t *testing.T) {
	for _, c := range []float64{0.1, 0.5, 0.77} {
		x, fx := GoldenSection(func(x float64) float64 { return (x - c) * (x - c) }, 0, 1, 1e-12, 0)
		if !scalar.EqualWithinAbs(x, c, 1e-9) || fx > 1e-18 {
			t.Errorf("min of (x − %v)²: x = %v, f = %v", c, x, fx)
		}
	}
	x, fx := GoldenSection(func(x float64) float64 { return x }, 0, 1, 1e-12, 0)
	if x != 0 || fx != 0 {
		t.Errorf("min of x on [0, 1]: x = %v, f = %v; want 0, 0", x, fx)
	}
	x, _ = GoldenSection(func(x float64) float64 { return -x }, 0, 1, 1e-12, 0)
	if x != 1 {
		t.Errorf("min of −x on [0, 1]: x = %v, want 1", x)
	}
}

// Brent brackets the root of smooth increasing functions with known roots (√2 of x² − 2,
// ln 3 of eˣ − 3, the cube root of 10 of x³ − 10: their float64 values from the math
// package), within the stopping rule, in far fewer evaluations than bisection; and keeps
// the bracket contract (f(lo) ≤ 0 < f(hi)) on random monotone step-like functions.
func TestBrent(t *testing.T) {
	for _, c := range []struct {
		f      func(float64) float64
		lo, hi float64
		root   float64
	}{
		{func(x float64) float64 { return x*x - 2 }, 1, 2, math.Sqrt2},
		{func(x float64) float64 { return math.Exp(x) - 3 }, 0, 5, math.Log(3)},
		{func(x float64) float64 { return x*x*x - 10 }, 0, 10, math.Cbrt(10)},
	} {
		n := 0
		f := func(x float64) (float64, error) { n++; return c.f(x), nil }
		lo, hi, err := Brent(c.lo, c.hi, c.f(c.lo), c.f(c.hi), f, Stop{RelTol: 1e-13})
		if err != nil {
			t.Fatal(err)
		}
		if !(c.f(lo) <= 0 && c.f(hi) > 0) || hi-lo > 1e-13*hi {
			t.Errorf("bracket [%v, %v] (f = %g, %g)", lo, hi, c.f(lo), c.f(hi))
		}
		if !scalar.EqualWithinAbs(lo, c.root, 2e-13*c.root) {
			t.Errorf("root %v, want %v", lo, c.root)
		}
		if n > 20 {
			t.Errorf("%d evaluations (bisection: ~45)", n)
		}
	}
	rapid.Check(t, func(r *rapid.T) {
		th := rapid.Float64Range(-10, 10).Draw(r, "threshold")
		slope := rapid.Float64Range(1e-3, 1e3).Draw(r, "slope")
		jump := rapid.Float64Range(0, 5).Draw(r, "jump")
		f := func(x float64) float64 {
			v := slope * (x - th)
			if x > th {
				v += jump
			}
			return v
		}
		lo, hi, err := Brent(-20, 20, f(-20), f(20), func(x float64) (float64, error) { return f(x), nil }, Stop{AbsTol: 1e-9})
		if err != nil {
			r.Fatal(err)
		}
		if !(f(lo) <= 0 && f(hi) > 0 && lo <= th && th <= hi) || (hi-lo > 1e-9 && f(lo) != 0) {
			r.Fatalf("bracket [%v, %v] for threshold %v (f = %g, %g)", lo, hi, th, f(lo), f(hi))
		}
	})
	if _, _, err := Brent(0, 1, 1, 2, nil, Stop{}); !errors.Is(err, ErrBracket) {
		t.Errorf("no sign change accepted: %v", err)
	}
}
