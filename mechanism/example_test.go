package mechanism_test

import (
	"fmt"

	"github.com/dpkit/dpkit/mechanism"
)

func ExampleNewLaplace() {
	// The lecture slides: a count (Δ = 1) released with ε = 0.1.
	m, _ := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: 0.1, Sensitivity: 1})
	w, _ := m.Interval(0.05)
	fmt.Println("guarantee:", m.Guarantee())
	fmt.Printf("scale %.4f, variance %.2f, 95%% of the noise within ±%.3f\n", m.NoiseScale(), m.Variance(), w)
	// Output:
	// guarantee: (ε=0.1, δ=0)
	// scale 10.0000, variance 200.00, 95% of the noise within ±29.957
}

func ExampleNewGaussian() {
	m, _ := mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1})
	// classic: √(2 ln(1.25e5))/0.99 = 4.84480/0.99 = 4.8937
	c, _ := mechanism.ClassicGaussianSigma(0.99, 1e-5, 1)
	fmt.Printf("analytic σ = %.4f (classic at ε = 0.99: %.4f)\n", m.CalibratedSigma(), c)
	fmt.Println("guarantee:", m.Guarantee())
	// Output:
	// analytic σ = 3.7306 (classic at ε = 0.99: 4.8937)
	// guarantee: (ε=1, δ=1e-05)
}

func ExampleNewExponential() {
	m, _ := mechanism.NewExponential(mechanism.ExponentialOptions{Epsilon: 1, Sensitivity: 1})
	// p ∝ e^(u/2): the best has 1/(1 + e^(−9) + e^(−10)) = 0.999831.
	p, _ := m.Probabilities([]float64{10, 12, 30})
	gap, _ := m.UtilityBound(3, 0.05)
	fmt.Printf("p = %.4f %.4f %.6f; utility ≥ OPT − %.3f with probability 0.95\n", p[0], p[1], p[2], gap)
	// Output: p = 0.0000 0.0001 0.999831; utility ≥ OPT − 8.189 with probability 0.95
}

func ExampleNewRandomizedResponse4() {
	m, _ := mechanism.NewRandomizedResponse4(mechanism.RandomizedResponse4Options{Epsilon: 1, Delta: 0.01})
	p, _ := m.Pair()
	e, _ := p.Epsilon(0.01)
	fmt.Printf("P0 = %.4f, P1 = %.4f, ε at δ = 0.01: %.4f\n", p.P0, p.P1, e)
	// Output: P0 = [0.0100 0.7237 0.2663 0.0000], P1 = [0.0000 0.2663 0.7237 0.0100], ε at δ = 0.01: 1.0000
}

func ExampleNewMedian() {
	m, _ := mechanism.NewMedian(mechanism.MedianOptions{Epsilon: 1, Lower: 0, Upper: 100})
	fmt.Printf("heavy-tail γ = %v, α = β = %.2f\n", m.Gamma(), m.Alpha())
	// Output: heavy-tail γ = 4, α = β = 0.10
}
