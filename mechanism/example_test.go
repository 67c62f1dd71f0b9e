package mechanism_test

import (
	"encoding/json"
	"fmt"

	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
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

func ExampleFromDescriptor() {
	m, _ := mechanism.NewLaplace(mechanism.LaplaceOptions{Epsilon: 0.5, Sensitivity: 1})
	b, _ := json.Marshal(m.Descriptor())
	fmt.Println(string(b))

	var d mechanism.Descriptor
	_ = json.Unmarshal(b, &d)
	back, _ := mechanism.FromDescriptor(d)
	p, _ := back.PLD()
	fmt.Println(back.Guarantee(), p)
	// Output:
	// {"kind":"laplace","version":1,"epsilon":0.5,"sensitivity":1}
	// (ε=0.5, δ=0) geometric:scale=2.199023255552e+12,sensitivity=1099511627776
}

func ExampleDescribe() {
	// Gaussian noise of σ = 100 added elsewhere to a sum of sensitivity 1, on a 1%
	// Poisson sample: accounted by its privacy loss distribution.
	d := mechanism.Describe(mechanism.Subsampled{Rate: 0.01,
		Base: mechanism.Describe(mechanism.GaussianNoise{Sigma: 100, Sensitivity: 1})})
	m, _ := mechanism.FromDescriptor(d)
	p, _ := m.PLD()
	fmt.Println(d)
	fmt.Println(p)
	// Output:
	// {"kind":"subsampled","version":1,"rate":0.01,"base":{"kind":"gaussian_noise","version":1,"sigma":100,"sensitivity":1}}
	// subsampled(gaussian:sigma=100,sensitivity=1,q=0.01)
}

func ExampleNewComposition() {
	// The noisy sum and the noisy count of an average, released together.
	sum, _ := mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: 0.5, Delta: 1e-6, Sensitivity: 10})
	count, _ := mechanism.NewGaussian(mechanism.GaussianOptions{Epsilon: 0.5, Delta: 1e-6, Sensitivity: 1})
	c, _ := mechanism.NewComposition(sum, count)
	p, _ := c.PLD()
	fmt.Println("basic composition:", c.Guarantee())
	// Each part is μ = 1/σ = 1/8.0576 = 0.1241-GDP; together √2·0.1241.
	fmt.Printf("Gaussian DP: μ = %.4f\n", p.(pld.Gaussian).Mu())
	// Output:
	// basic composition: (ε=1, δ=2e-06)
	// Gaussian DP: μ = 0.1755
}

func ExampleNewQuantile() {
	// The median of ages in [0, 120], one row per person (Δu = 1), at ε = 1: the
	// exponential mechanism over the 121 integer ages, sampled exactly.
	m, _ := mechanism.NewQuantile(mechanism.QuantileOptions{Epsilon: 1, Sensitivity: 1, P: 0.5, Lower: 0, Upper: 120, Step: 1})
	fmt.Println(m.Guarantee(), m.Points(), "candidates, scale", m.Scale(), "ranks")
	fmt.Println(m.Descriptor())
	// Output:
	// (ε=1, δ=0) 121 candidates, scale 2 ranks
	// {"kind":"quantile","version":1,"epsilon":1,"sensitivity":1,"p":0.5,"lower":0,"upper":120,"step":1}
}

// A Gaussian mechanism given its Gaussian-DP parameter μ (as the Gaussian policies of
// the ledger and the query service charge it): σ = Δ/μ, on a grid; ReleaseInt adds
// discrete noise to an integer count.
func ExampleNewGaussianMu() {
	m, err := mechanism.NewGaussianMu(mechanism.GaussianMuOptions{Mu: 0.5, Sensitivity: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	pm, _ := m.PLD()
	fmt.Printf("σ = %.6g, PLD μ ≤ 0.5: %v\n", m.Sigma(), pm.(pld.Gaussian).Mu() <= 0.5)
	v, err := m.ReleaseInt(120, noise.Seeded(1)) // production code passes nil
	fmt.Println("noisy count:", v, err)
	_, err = mechanism.NewGaussianMu(mechanism.GaussianMuOptions{Mu: 0, Sensitivity: 1})
	fmt.Println(err)
	// Output:
	// σ = 2, PLD μ ≤ 0.5: true
	// noisy count: 118 <nil>
	// mechanism: invalid mu = 0: want a finite number > 0
}

// DescribePLD gives the descriptor of a privacy loss distribution of package pld (the
// command line's KIND:key=value forms parse to those): what the ledger records.
func ExampleDescribePLD() {
	d, _ := mechanism.DescribePLD(pld.Gaussian{Sigma: 4, Sensitivity: 1})
	b, _ := json.Marshal(d)
	fmt.Println(string(b))
	// Output: {"kind":"gaussian_noise","version":1,"sigma":4,"sensitivity":1}
}
