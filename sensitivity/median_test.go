package sensitivity

import (
	"errors"
	"gonum.org/v1/gonum/floats/scalar"
	"math"
	"slices"
	"testing"

	"github.com/dpkit/dpkit"
	"pgregory.net/rapid"
)

// bruteLocal is the local sensitivity of the lower median by enumeration: the largest
// change of the median over every dataset that differs from d in one entry, entries on
// the grid. Because the median moves furthest when an entry is replaced by an end of
// the interval, the grid maximum equals the maximum over all real entries.
func bruteLocal(d []float64, grid []float64) float64 {
	med := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[MedianIndex(len(s))-1]
	}
	m0 := med(d)
	ls := 0.0
	e := slices.Clone(d)
	for i := range d {
		for _, g := range grid {
			e[i] = g
			ls = max(ls, math.Abs(med(e)-m0))
		}
		e[i] = d[i]
	}
	return ls
}

// bruteSmooth computes S*(D) = max_{D'} LS(D') e^(−β d(D, D')) by enumerating every
// multiset D' of n grid values, with d the Hamming distance n − |D ∩ D'| and LS by
// bruteLocal: the definition of smooth sensitivity (the lecture slides, NRS Def 2.2), with no use
// of the A^(k) formula under test.
func bruteSmooth(d []float64, grid []float64, beta float64) float64 {
	n := len(d)
	count := map[float64]int{}
	for _, x := range d {
		count[x]++
	}
	best := 0.0
	multisets(grid, n, n, func(dp []float64) {
		c := map[float64]int{}
		common := 0
		for _, x := range dp {
			c[x]++
			if c[x] <= count[x] {
				common++
			}
		}
		best = max(best, bruteLocal(dp, grid)*math.Exp(-beta*float64(n-common)))
	})
	return best
}

// TestSmoothMedianBruteForce compares SmoothMedian with the definition evaluated by
// exhaustive search over datasets on a grid. The grid is the half-integers of [0, 4]:
// the formula only uses data values and the ends, and bruteSmooth finds the same
// maximum on the finer grid. Tolerance: the result may exceed the reference by the
// documented 2^−40 relative slack plus 1e-15 for exp; it may never be below it.
func TestSmoothMedianBruteForce(t *testing.T) {
	grid := []float64{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4}
	coarse := []float64{0, 1, 2, 3, 4}
	datasets := [][]float64{{2}, {0, 4}, {1, 2}, {1, 1, 3}, {0.5, 2, 2.5}, {0, 0, 0, 4}, {1, 2, 3, 3.5}, {3, 3, 3, 3, 3}, {0, 1, 2, 3, 4}}
	for _, d := range datasets {
		for _, beta := range []float64{0.05, 0.3, 1, 3} {
			g := grid
			if len(d) >= 5 {
				g = coarse // keep the enumeration small; d's values lie on it
			}
			want := bruteSmooth(d, g, beta)
			got, err := SmoothMedian(d, 0, 4, beta)
			if err != nil {
				t.Fatal(err)
			}
			if got < want || got > want*(1+0x1p-40+1e-15) {
				t.Errorf("SmoothMedian(%v, β=%v) = %.17g, brute force %.17g", d, beta, got, want)
			}
			ls, _ := LocalMedian(d, 0, 4)
			if w := bruteLocal(d, g); ls != w {
				t.Errorf("LocalMedian(%v) = %v, brute force %v", d, ls, w)
			}
		}
	}
}

// TestSmoothMedianFastMatchesNaive: the O(n log n) divide and conquer against the
// literal O(n²) formula on random data (with ties and values outside the bounds).
// Tolerance: 1e-13 relative (both are within rounding of the same maximum).
func TestSmoothMedianFastMatchesNaive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "n")
		lower := rapid.Float64Range(-10, 10).Draw(t, "lower")
		upper := lower + rapid.Float64Range(0.1, 100).Draw(t, "width")
		xs := make([]float64, n)
		for i := range xs {
			if rapid.Bool().Draw(t, "tie") && i > 0 {
				xs[i] = xs[i-1]
			} else {
				xs[i] = rapid.Float64Range(lower-5, upper+5).Draw(t, "x")
			}
		}
		beta := rapid.Float64Range(1e-3, 5).Draw(t, "beta")
		fast, err := SmoothMedian(xs, lower, upper, beta)
		if err != nil {
			t.Fatal(err)
		}
		naive, _ := smoothMedianNaive(xs, lower, upper, beta)
		if !scalar.EqualWithinRel(fast, naive, 1e-13) {
			t.Fatalf("fast %.17g, naive %.17g", fast, naive)
		}
		// Properties: LS ≤ S* ≤ upper − lower (up to the slack); β-smoothness
		// S*(D) ≤ e^β S*(D') for a neighbour D'.
		ls, _ := LocalMedian(xs, lower, upper)
		if fast < ls || fast > (upper-lower)*(1+1e-12) {
			t.Fatalf("S* = %v outside [LS = %v, width = %v]", fast, ls, upper-lower)
		}
		ys := slices.Clone(xs)
		ys[rapid.IntRange(0, n-1).Draw(t, "i")] = rapid.Float64Range(lower, upper).Draw(t, "y")
		other, _ := SmoothMedian(ys, lower, upper, beta)
		if fast > math.Exp(beta)*other*(1+1e-12) {
			t.Fatalf("not β-smooth: S*(D) = %v, S*(D') = %v, e^β = %v", fast, other, math.Exp(beta))
		}
		// Monotone: larger β, smaller S*.
		if s2, _ := SmoothMedian(xs, lower, upper, beta*2); s2 > fast*(1+1e-12) {
			t.Fatalf("S* grew with β: %v → %v", fast, s2)
		}
	})
}

// TestSmoothMedianExtreme: huge n with equal values underflows e^(−kβ); the floor keeps
// S* positive. Large n stays fast (O(n log n)).
func TestSmoothMedianExtreme(t *testing.T) {
	xs := make([]float64, 200001)
	for i := range xs {
		xs[i] = 0.5
	}
	s, err := SmoothMedian(xs, 0, 1, 1)
	if err != nil || s != 0x1p-60 {
		t.Errorf("SmoothMedian(constant, β=1) = %v, %v; want the floor 2^-60", s, err)
	}
	for i := range xs {
		xs[i] = float64(i%1000) / 1000
	}
	if _, err := SmoothMedian(xs, 0, 1, 1e-4); err != nil {
		t.Fatal(err)
	}
	med, _ := Median([]float64{5, -3, 2, 100}, 0, 10)
	if med != 2 {
		t.Errorf("Median = %v, want 2 (lower median of clamped 0, 2, 5, 10)", med)
	}
}

func TestSmoothMedianInvalid(t *testing.T) {
	for name, err := range map[string]error{
		"beta":      func() error { _, err := SmoothMedian([]float64{1}, 0, 1, 0); return err }(),
		"upper":     func() error { _, err := SmoothMedian([]float64{1}, 0, 0, 1); return err }(),
		"lower":     func() error { _, err := SmoothMedian([]float64{1}, math.Inf(-1), 0, 1); return err }(),
		"values":    func() error { _, err := SmoothMedian(nil, 0, 1, 1); return err }(),
		"values[1]": func() error { _, err := SmoothMedian([]float64{1, math.NaN()}, 0, 1, 1); return err }(),
		"gamma":     func() error { _, _, err := HeavyTailCalibration(1, 1); return err }(),
		"delta":     func() error { _, _, err := LaplaceCalibration(1, 1); return err }(),
		"epsilon":   func() error { _, _, err := LaplaceCalibration(math.NaN(), 0.5); return err }(),
	} {
		var pe *dpkit.ParamError
		if !errors.As(err, &pe) || pe.Name != name {
			t.Errorf("want ParamError on %s, got %v", name, err)
		}
	}
}

// TestCalibration: α = β = ε/(2(γ+1)) and α = ε/2, β = ε/(2 ln(2/δ)) (docs/errata.md, slides item 3),
// each at most a few ulps below the exact value (computed here with the closed form in
// float64; tolerance 1e-15 relative, never above).
func TestCalibration(t *testing.T) {
	a, b, err := HeavyTailCalibration(1, 4)
	if err != nil || a != b || a > 0.1 || a < 0.1*(1-1e-15) {
		t.Errorf("HeavyTailCalibration(1, 4) = %v, %v, %v; want 0.1", a, b, err)
	}
	a, b, err = LaplaceCalibration(1, 1e-6)
	want := 1 / (2 * math.Log(2e6)) // 0.034466...; ln(2e6) = 14.508657738524219
	if err != nil || a != 0.5 || b > want || b < want*(1-1e-15) {
		t.Errorf("LaplaceCalibration(1, 1e-6) = %v, %v, %v; want 0.5, %v", a, b, err, want)
	}
}
