package pld

import (
	"math"
	"testing"

	"github.com/dpkit/dpkit"
	"gonum.org/v1/gonum/floats/scalar"
)

// GaussianMu inverts the closed form: μ = 1 meets ε = 4.3771780957 at δ = 1e-5 (issue
// 3's anchor, TestGaussianAnchor).
func TestGaussianMu(t *testing.T) {
	mu, err := GaussianMu(4.3771780957, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !scalar.EqualWithinAbs(mu, 1, 1e-9) {
		t.Errorf("μ = %.12g, want 1", mu)
	}
	if _, err := GaussianMu(1, 0); err == nil {
		t.Error("δ = 0 accepted")
	}
}

// One Laplace release of scale b (ε0 = 1/b) has δ(ε) = 1 − e^((ε − ε0)/2) (see
// TestLaplaceSingleBracket), so it meets (ε, δ) iff ε0 ≤ ε − 2·ln(1 − δ): the smallest
// scale is 1/(ε − 2·log1p(−δ)). CalibrateScale must be within 1e-4 above it, never below.
func TestCalibrateScaleLaplace(t *testing.T) {
	b := dpkit.Budget{Epsilon: 1, Delta: 1e-3}
	want := 1 / (b.Epsilon - 2*math.Log1p(-b.Delta))
	got, err := CalibrateScale(func(s float64) Mechanism { return Laplace{Scale: s, Sensitivity: 1} }, 1, b, 1/b.Epsilon)
	if err != nil {
		t.Fatal(err)
	}
	if got < want*(1-1e-9) || got > want*(1+2e-4) {
		t.Errorf("scale = %.10g, want %.10g (never below, ≤ 2e-4 above)", got, want)
	}
}
