package mechanism

import (
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/privtest"
	"github.com/dpkit/dpkit/noise"
)

// The empirical privacy check of KOV Thm 2.1 is package internal/privtest.

var (
	violation      = privtest.Violation
	sample         = privtest.Sample
	grid           = privtest.Grid
	clopperPearson = privtest.ClopperPearson
)

// privacyAlpha is the false-rejection probability of each empirical privacy check.
const privacyAlpha = 1e-7

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
