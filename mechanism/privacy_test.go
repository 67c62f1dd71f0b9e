package mechanism

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"gonum.org/v1/gonum/stat/distuv"
)

// The empirical privacy check of KOV Thm 2.1: a mechanism is (ε, δ)-DP iff,
// for every pair of neighbouring inputs and every test, the false-alarm and
// missed-detection probabilities (P_FA, P_MD) lie in the privacy region
//
//	R(ε, δ): P_MD + e^ε P_FA ≥ 1−δ,  e^ε P_MD + P_FA ≥ 1−δ,
//	         (1−P_MD) + e^ε (1−P_FA) ≥ 1−δ,  e^ε (1−P_MD) + (1−P_FA) ≥ 1−δ.
//
// We estimate both rates for threshold tests "reject H0 (input D0) when the output
// exceeds τ" from n draws under each input, with Clopper–Pearson intervals, and declare a
// violation only when a constraint fails even at the most favourable ends of the
// intervals (upper ends where the rate enters with a + sign, lower ends where it enters
// as 1 − rate). By the union bound over thresholds and the two rates, a correct
// mechanism is declared in violation with probability at most alpha.

// clopperPearson returns the two-sided (1 − a) Clopper–Pearson interval for x successes
// in n trials.
func clopperPearson(x, n int, a float64) (lo, hi float64) {
	if x > 0 {
		lo = distuv.Beta{Alpha: float64(x), Beta: float64(n - x + 1)}.Quantile(a / 2)
	}
	hi = 1
	if x < n {
		hi = distuv.Beta{Alpha: float64(x + 1), Beta: float64(n - x)}.Quantile(1 - a/2)
	}
	return lo, hi
}

// violation returns a description of the first threshold test whose rates are outside
// R(b) beyond statistical doubt, or "" if none is.
func violation(b dpkit.Budget, out0, out1 []float64, thresholds []float64, alpha float64) string {
	n0, n1 := len(out0), len(out1)
	s0, s1 := slices.Clone(out0), slices.Clone(out1)
	slices.Sort(s0)
	slices.Sort(s1)
	a := alpha / float64(2*len(thresholds)) // Bonferroni over the rates of every test
	e := math.Exp(b.Epsilon)
	for _, tau := range thresholds {
		// P_FA = P(out > τ | D0); P_MD = P(out ≤ τ | D1).
		fa := n0 - sortedCountLE(s0, tau)
		md := sortedCountLE(s1, tau)
		faLo, faHi := clopperPearson(fa, n0, a)
		mdLo, mdHi := clopperPearson(md, n1, a)
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

func sortedCountLE(s []float64, tau float64) int {
	i, _ := slices.BinarySearchFunc(s, tau, func(x, t float64) int {
		if x <= t {
			return -1
		}
		return 1
	})
	return i
}

// privacyAlpha is the false-rejection probability of each empirical privacy check.
const privacyAlpha = 1e-7

func sample(n int, f func() float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = f()
	}
	return out
}

func grid(lo, hi float64, k int) []float64 {
	g := make([]float64, k)
	for i := range g {
		g[i] = lo + (hi-lo)*float64(i)/float64(k-1)
	}
	return g
}

// TestEmpiricalPrivacy runs the check on every real-valued and discrete mechanism with
// neighbouring inputs at distance Δ, over a grid of thresholds spanning the outputs.
// Each case fails a correct mechanism with probability ≤ privacyAlpha.
func TestEmpiricalPrivacy(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	src := noise.Seeded(42)
	lap, _ := NewLaplace(LaplaceOptions{Epsilon: 1, Sensitivity: 1})
	gau, _ := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-3, Sensitivity: 1})
	st, _ := NewStaircase(StaircaseOptions{Epsilon: 2, Sensitivity: 1})
	geo, _ := NewGeometric(GeometricOptions{Epsilon: 0.7, Sensitivity: 1})
	rr4, _ := NewRandomizedResponse4(RandomizedResponse4Options{Epsilon: 1, Delta: 0.05})
	rr, _ := NewRandomizedResponse(RandomizedResponseOptions{Epsilon: 1.5, Categories: 2})
	cases := []struct {
		name       string
		b          dpkit.Budget
		m0, m1     func() float64
		thresholds []float64
	}{
		{"laplace", lap.Guarantee(), func() float64 { v, _ := lap.Release(0, src); return v },
			func() float64 { v, _ := lap.Release(1, src); return v }, grid(-3, 4, 29)},
		{"gaussian", gau.Guarantee(), func() float64 { v, _ := gau.Release(0, src); return v },
			func() float64 { v, _ := gau.Release(1, src); return v }, grid(-8, 9, 35)},
		{"staircase", st.Guarantee(), func() float64 { v, _ := st.Release(0, src); return v },
			func() float64 { v, _ := st.Release(1, src); return v }, grid(-2, 3, 41)},
		{"geometric", geo.Guarantee(), func() float64 { return float64(geo.Release(0, src)) },
			func() float64 { return float64(geo.Release(1, src)) }, grid(-4.5, 5.5, 11)},
		{"rr4", rr4.Guarantee(), func() float64 { v, _ := rr4.Release(0, src); return float64(v) },
			func() float64 { v, _ := rr4.Release(1, src); return float64(v) }, []float64{0.5, 1.5, 2.5}},
		{"rr", rr.Guarantee(), func() float64 { v, _ := rr.Release(0, src); return float64(v) },
			func() float64 { v, _ := rr.Release(1, src); return float64(v) }, []float64{0.5}},
	}
	for _, c := range cases {
		if v := violation(c.b, sample(n, c.m0), sample(n, c.m1), c.thresholds, privacyAlpha); v != "" {
			t.Errorf("%s %v: %s", c.name, c.b, v)
		}
	}
}

// TestEmpiricalPrivacyDetectsBrokenMechanisms shows that the check can fail: mechanisms
// with half the noise they claim (Laplace scale Δ/(2ε), Gaussian σ/2, randomized
// response reporting with e^(2ε)) must be declared in violation of their claimed
// guarantee. (The check's power here is essentially 1: the violations are 0.3 in
// probability against intervals of width ~0.01.)
func TestEmpiricalPrivacyDetectsBrokenMechanisms(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	src := noise.Seeded(43)
	claimed := dpkit.Budget{Epsilon: 1}
	halfLap, _ := NewLaplace(LaplaceOptions{Epsilon: 2, Sensitivity: 1}) // half the scale of ε = 1
	gau, _ := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-3, Sensitivity: 1})
	halfGau, _ := noise.NewSecureGaussian(1, gau.Sigma()/2)
	rr2, _ := NewRandomizedResponse(RandomizedResponseOptions{Epsilon: 2, Categories: 2})
	cases := []struct {
		name       string
		b          dpkit.Budget
		m0, m1     func() float64
		thresholds []float64
	}{
		{"laplace/2", claimed, func() float64 { v, _ := halfLap.Release(0, src); return v },
			func() float64 { v, _ := halfLap.Release(1, src); return v }, grid(-3, 4, 29)},
		{"gaussian/2", gau.Guarantee(), func() float64 { return halfGau.Add(src, 0) },
			func() float64 { return halfGau.Add(src, 1) }, grid(-8, 9, 35)},
		{"rr(2ε)", claimed, func() float64 { v, _ := rr2.Release(0, src); return float64(v) },
			func() float64 { v, _ := rr2.Release(1, src); return float64(v) }, []float64{0.5}},
	}
	for _, c := range cases {
		if v := violation(c.b, sample(n, c.m0), sample(n, c.m1), c.thresholds, privacyAlpha); v == "" {
			t.Errorf("%s: broken mechanism passed the check of %v", c.name, c.b)
		} else {
			t.Logf("%s correctly rejected: %s", c.name, v)
		}
	}
}
