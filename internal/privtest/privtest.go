// Package privtest is the empirical privacy check of dpkit's tests: the hypothesis-testing
// characterisation of differential privacy (Kairouz, Oh and Viswanath, "The composition
// theorem for differential privacy", Thm 2.1). A mechanism is (ε, δ)-DP iff, for every
// pair of neighbouring inputs and every test, the false-alarm and missed-detection
// probabilities (P_FA, P_MD) lie in the privacy region
//
//	R(ε, δ): P_MD + e^ε P_FA ≥ 1−δ,  e^ε P_MD + P_FA ≥ 1−δ,
//	         (1−P_MD) + e^ε (1−P_FA) ≥ 1−δ,  e^ε (1−P_MD) + (1−P_FA) ≥ 1−δ.
//
// Violation estimates both rates for threshold tests "reject H0 (input D0) when the output
// exceeds τ" from samples under each input, with Clopper–Pearson intervals, and reports
// a violation only when a constraint fails even at the most favourable ends of the
// intervals. By the union bound over thresholds and the two rates, a correct mechanism
// is reported with probability at most alpha.
package privtest

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpkit/dpkit"
	"gonum.org/v1/gonum/stat/distuv"
)

// ClopperPearson returns the two-sided (1 − a) Clopper–Pearson interval for x successes
// in n trials.
// At x = n (x = 0) the lower (upper) end is in closed form, (a/2)^(1/n) (one minus it):
// gonum's Beta quantile is not accurate for Beta(n, 1) with n large.
func ClopperPearson(x, n int, a float64) (lo, hi float64) {
	edge := math.Pow(a/2, 1/float64(n))
	switch {
	case x == n:
		lo = edge
	case x > 0:
		lo = distuv.Beta{Alpha: float64(x), Beta: float64(n - x + 1)}.Quantile(a / 2)
	}
	switch {
	case x == 0:
		hi = 1 - edge
	case x < n:
		hi = distuv.Beta{Alpha: float64(x + 1), Beta: float64(n - x)}.Quantile(1 - a/2)
	default:
		hi = 1
	}
	return lo, hi
}

// Violation returns a description of the first threshold test whose rates are outside
// R(b) beyond statistical doubt, or "" if none is. out0 and out1 are outputs under the
// two neighbouring inputs; alpha is the false-rejection probability of the whole check.
func Violation(b dpkit.Budget, out0, out1 []float64, thresholds []float64, alpha float64) string {
	n0, n1 := len(out0), len(out1)
	s0, s1 := slices.Clone(out0), slices.Clone(out1)
	slices.Sort(s0)
	slices.Sort(s1)
	a := alpha / float64(2*len(thresholds)) // Bonferroni over the rates of every test
	e := math.Exp(b.Epsilon)
	for _, tau := range thresholds {
		// P_FA = P(out > τ | D0); P_MD = P(out ≤ τ | D1).
		fa := n0 - countLE(s0, tau)
		md := countLE(s1, tau)
		faLo, faHi := ClopperPearson(fa, n0, a)
		mdLo, mdHi := ClopperPearson(md, n1, a)
		one := 1 - b.Delta
		switch {
		case mdHi+e*faHi < one:
			return fmt.Sprintf("τ=%g: P_MD + e^ε P_FA ≤ %.4f + e^ε·%.4f < 1−δ", tau, mdHi, faHi)
		case e*mdHi+faHi < one:
			return fmt.Sprintf("τ=%g: e^ε P_MD + P_FA ≤ e^ε·%.4f + %.4f < 1−δ", tau, mdHi, faHi)
		case (1-mdLo)+e*(1-faLo) < one:
			return fmt.Sprintf("τ=%g: (1−P_MD) + e^ε(1−P_FA) < 1−δ (P_MD ≥ %.4f, P_FA ≥ %.4f)", tau, mdLo, faLo)
		case e*(1-mdLo)+(1-faLo) < one:
			return fmt.Sprintf("τ=%g: e^ε(1−P_MD) + (1−P_FA) < 1−δ (P_MD ≥ %.4f, P_FA ≥ %.4f)", tau, mdLo, faLo)
		}
	}
	return ""
}

func countLE(s []float64, tau float64) int {
	i, _ := slices.BinarySearchFunc(s, tau, func(x, t float64) int {
		if x <= t {
			return -1
		}
		return 1
	})
	return i
}

// Sample returns n draws of f.
func Sample(n int, f func() float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f()
	}
	return out
}

// Grid returns k evenly spaced points from lo to hi.
func Grid(lo, hi float64, k int) []float64 {
	g := make([]float64, k)
	for i := range g {
		g[i] = lo + (hi-lo)*float64(i)/float64(k-1)
	}
	return g
}
