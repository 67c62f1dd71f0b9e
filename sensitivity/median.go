package sensitivity

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpkit/dpkit"
)

// The median's sensitivities are for the ReplaceOne relation on datasets of a fixed,
// public size n (Hamming distance), values in a declared interval [lower, upper]; the
// median is the lower median x_m, m = ⌈n/2⌉, of the sorted values x_1 ≤ … ≤ x_n.

// medianInput validates the bounds and returns the sorted, clamped copy of xs.
func medianInput(xs []float64, lower, upper float64) ([]float64, error) {
	if err := checkInterval(lower, upper); err != nil {
		return nil, err
	}
	if len(xs) == 0 {
		return nil, &dpkit.ParamError{Pkg: "sensitivity", Name: "values", Value: "[]", Want: "at least one value"}
	}
	s := make([]float64, len(xs))
	for i, x := range xs {
		if math.IsNaN(x) {
			return nil, &dpkit.ParamError{Pkg: "sensitivity", Name: fmt.Sprintf("values[%d]", i), Value: x, Want: "a number (±Inf is clamped)"}
		}
		s[i] = min(max(x, lower), upper)
	}
	slices.Sort(s)
	return s, nil
}

func checkInterval(lower, upper float64) error {
	if math.IsNaN(lower) || math.IsInf(lower, 0) {
		return &dpkit.ParamError{Pkg: "sensitivity", Name: "lower", Value: lower, Want: "a finite number"}
	}
	if math.IsNaN(upper) || math.IsInf(upper, 0) || upper <= lower {
		return &dpkit.ParamError{Pkg: "sensitivity", Name: "upper", Value: upper, Want: fmt.Sprintf("a finite number > lower = %g", lower)}
	}
	if math.IsInf(upper-lower, 0) {
		return &dpkit.ParamError{Pkg: "sensitivity", Name: "upper", Value: upper, Want: "upper − lower finite in float64"}
	}
	return nil
}

// MedianIndex returns m = ⌈n/2⌉, the 1-based rank of the (lower) median of n values.
func MedianIndex(n int) int { return (n + 1) / 2 }

// padded returns x_i for the sorted values s (1-based i), with x_i = lower for i < 1
// and upper for i > n (docs/errata.md, slides item 2).
func padded(s []float64, i int, lower, upper float64) float64 {
	switch {
	case i < 1:
		return lower
	case i > len(s):
		return upper
	}
	return s[i-1]
}

// Median returns the (lower) median of xs after clamping to [lower, upper]: the m-th
// smallest value, m = ⌈n/2⌉.
func Median(xs []float64, lower, upper float64) (float64, error) {
	s, err := medianInput(xs, lower, upper)
	if err != nil {
		return 0, err
	}
	return s[MedianIndex(len(s))-1], nil
}

// LocalMedian returns the local sensitivity of the median at xs under ReplaceOne with
// values clamped to [lower, upper] (the lecture slides, "Local sensitivity"; NRS 2007 §3.1):
//
//	LS(D) = max(x_m − x_{m−1}, x_{m+1} − x_m)
//
// with x_0 = lower and x_{n+1} = upper. It is exact (one float64 subtraction, rounded
// up). Local sensitivity must not be used to calibrate noise: see SmoothMedian.
func LocalMedian(xs []float64, lower, upper float64) (float64, error) {
	s, err := medianInput(xs, lower, upper)
	if err != nil {
		return 0, err
	}
	m := MedianIndex(len(s))
	return max(diffUp(padded(s, m, lower, upper), padded(s, m-1, lower, upper)),
		diffUp(padded(s, m+1, lower, upper), padded(s, m, lower, upper))), nil
}

// diffUp returns a float64 ≥ a − b (a ≥ b), at most one ulp above it.
func diffUp(a, b float64) float64 {
	d := a - b
	if d-a != -b || a-d != b { // inexact (Sterbenz does not apply): round up one ulp
		d = math.Nextafter(d, math.Inf(1))
	}
	return d
}

// smoothSlack is the relative amount by which SmoothMedian rounds its result up to
// cover floating-point error (see SmoothMedian).
const smoothSlack = 0x1p-40

// SmoothMedian returns the β-smooth sensitivity of the median (Nissim, Raskhodnikova
// and Smith 2007, Prop. 3.4; the lecture slides "smooth sensitivity of the median" with the
// corrected inner term of docs/errata.md, slides item 2):
//
//	A^(k)(D) = max_{0≤t≤k+1} (x_{m+t} − x_{m+t−k−1}),   S*(D) = max_{k≥0} e^(−kβ) A^(k)(D)
//
// with x_i = lower for i < 1 and upper for i > n. Equivalently S* is the maximum of
// (x_j − x_i)·e^(−β(j−i−1)) over 0 ≤ i ≤ m ≤ j ≤ n+1. The row maxima of that matrix
// move right as i grows (ln((x_b − x_i)/(x_a − x_i)) increases with x_i for a ≤ b), so a
// divide-and-conquer over rows finds the maximum in O(n log n) after sorting.
//
// Rounding: the result is never below the exact S*. Each candidate is computed with a
// relative error of a few ulps, and a near-tie resolved the wrong way in the divide and
// conquer loses at most that much per level; the result is multiplied by 1 + 2^−40
// (over-stating S* by at most 1e-12 relative) and is at least (upper − lower)·2^−60, a
// floor that keeps the noise scale from underflowing (raising a smooth bound to a
// constant floor keeps it a β-smooth upper bound).
//
// β must be finite and > 0.
func SmoothMedian(xs []float64, lower, upper, beta float64) (float64, error) {
	if err := dpkit.InPackage("sensitivity", dpkit.CheckPositive("beta", beta)); err != nil {
		return 0, err
	}
	s, err := medianInput(xs, lower, upper)
	if err != nil {
		return 0, err
	}
	n, m := len(s), MedianIndex(len(s))
	x := func(i int) float64 { return padded(s, i, lower, upper) }
	// decay[k] = e^(−βk), each computed directly (no accumulated rounding); entries that
	// underflow are 0 and end the table.
	decay := make([]float64, 0, n+2)
	for k := 0; k <= n+1; k++ {
		e := math.Exp(-beta * float64(k))
		if e == 0 {
			break
		}
		decay = append(decay, e)
	}
	val := func(i, j int) float64 {
		d := x(j) - x(i)
		if d <= 0 || j-i-1 >= len(decay) {
			return 0
		}
		return d * decay[j-i-1]
	}
	best := 0.0
	// rows i in [ilo, ihi], columns j in [jlo, jhi]; the row maximum of row i lies in
	// [jlo, jhi].
	var solve func(ilo, ihi, jlo, jhi int)
	solve = func(ilo, ihi, jlo, jhi int) {
		for ilo <= ihi {
			mid := (ilo + ihi) / 2
			arg, v := jlo, -1.0
			for j := jlo; j <= jhi; j++ {
				if w := val(mid, j); w >= v { // the largest argmax
					arg, v = j, w
				}
			}
			best = max(best, v)
			solve(ilo, mid-1, jlo, arg)
			ilo, jlo = mid+1, arg // tail call on the right half
		}
	}
	solve(0, m, m, n+1)
	floor := (upper - lower) * 0x1p-60
	return max(best*(1+smoothSlack), floor), nil
}

// SmoothMedianNaive evaluates the formula of SmoothMedian literally, in O(n²) time, as a
// reference for tests; it applies the same rounding.
func smoothMedianNaive(xs []float64, lower, upper, beta float64) (float64, error) {
	s, err := medianInput(xs, lower, upper)
	if err != nil {
		return 0, err
	}
	n, m := len(s), MedianIndex(len(s))
	best := 0.0
	for k := 0; k <= n; k++ {
		a := 0.0
		for t := 0; t <= k+1; t++ {
			a = max(a, padded(s, m+t, lower, upper)-padded(s, m+t-k-1, lower, upper))
		}
		best = max(best, math.Exp(-float64(k)*beta)*a)
	}
	return max(best*(1+smoothSlack), (upper-lower)*0x1p-60), nil
}
