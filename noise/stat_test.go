package noise

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// frp is the false-rejection probability of every statistical test in this package
// (per test function, with the number of sub-tests divided out where there are several).
const frp = 1e-7

// chiSquare fails t when the counts deviate from the expected probabilities (which must
// sum to 1 over the bins) beyond the 1 − alpha quantile of the χ² distribution with
// len(p) − 1 degrees of freedom. Bins should have n·p ≥ 5 for the approximation.
func chiSquare(t *testing.T, name string, counts []int, p []float64, alpha float64) {
	t.Helper()
	n := 0
	for _, c := range counts {
		n += c
	}
	stat := 0.0
	for i, c := range counts {
		e := float64(n) * p[i]
		if e < 5 {
			t.Fatalf("%s: bin %d expects %.2f < 5 draws: test design error", name, i, e)
		}
		stat += (float64(c) - e) * (float64(c) - e) / e
	}
	crit := distuv.ChiSquared{K: float64(len(p) - 1)}.Quantile(1 - alpha)
	if stat > crit {
		t.Errorf("%s: χ² = %.1f > %.1f (df %d, false-rejection probability %g)", name, stat, crit, len(p)-1, alpha)
	}
}

// dkw fails t when the empirical CDF of xs is further than ε from cdf anywhere, with ε
// from the Dvoretzky–Kiefer–Wolfowitz inequality P(sup|F_n − F| > ε) ≤ 2e^(−2nε²) = alpha
// (Massart's constant): a Kolmogorov–Smirnov test with a rigorous false-rejection bound.
func dkw(t *testing.T, name string, xs []float64, cdf func(float64) float64, alpha float64) {
	t.Helper()
	n := float64(len(xs))
	eps := math.Sqrt(math.Log(2/alpha) / (2 * n))
	sorted := append([]float64(nil), xs...)
	slices.Sort(sorted)
	d := 0.0
	for i, x := range sorted {
		f := cdf(x)
		d = math.Max(d, math.Max(math.Abs(float64(i+1)/n-f), math.Abs(f-float64(i)/n)))
	}
	if d > eps {
		t.Errorf("%s: KS distance %.5f > %.5f (n = %d, false-rejection probability %g)", name, d, eps, len(xs), alpha)
	}
}

// draws returns the number of draws for a statistical test: fewer under -short.
func draws(long, short int) int {
	if testing.Short() {
		return short
	}
	return long
}
