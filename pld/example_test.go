package pld_test

import (
	"fmt"

	"github.com/dpkit/dpkit/pld"
)

// A workload mixing Gaussian, Laplace and plain (ε, δ) releases: the certified bracket on
// its total ε at δ = 1e-5, to a relative width of 1e-4.
func ExampleCompose() {
	c, err := pld.Compose([]pld.Item{
		{Mechanism: pld.Gaussian{Sigma: 100, Sensitivity: 1}, Count: 10000},
		{Mechanism: pld.Laplace{Scale: 2, Sensitivity: 1}, Count: 5},
		{Mechanism: pld.EpsilonDelta{Epsilon: 0.1, Delta: 1e-6}, Count: 3},
	}, &pld.Options{Delta: 1e-5, Tolerance: 1e-4})
	if err != nil {
		fmt.Println(err)
		return
	}
	up, lo, _ := c.Epsilon(1e-5)
	fmt.Printf("ε ∈ [%.4f, %.4f]\n", lo, up)
	// Output: ε ∈ [6.3078, 6.3083]
}

// Gaussians alone compose exactly: μ² adds up.
func ExampleGaussianEpsilon() {
	eps, _ := pld.GaussianEpsilon(1, 1e-5) // σ = 100, 10^4 releases: μ = 1
	fmt.Printf("%.10f\n", eps)
	// Output: 4.3771780957
}
