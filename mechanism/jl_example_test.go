package mechanism_test

import (
	"fmt"

	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
)

func ExampleNewJLVariance() {
	m, _ := mechanism.NewJLVariance(mechanism.JLVarianceOptions{Epsilon: 1, Delta: 1e-6, Eta: 0.1, Nu: 0.05})
	fmt.Printf("%d rows, each (ε0 = %.5f, δ0 = %.3g)-DP, weight w = %.1f\n", m.Rows(), m.RowEpsilon(), m.RowDelta(), m.Weight())
	// A unit direction's variance is answered within (1 ± 0.1)·v ± τ with probability 0.95:
	// the matrix needs far more than τ/η rows of norm about 1 for the answer to be useful.
	fmt.Printf("τ = η·w² = %.4g\n", m.AdditiveError([]float64{1, 0}))

	// A 2 × 2 matrix at a large ε, only to show the calls.
	big, _ := mechanism.NewJLVariance(mechanism.JLVarianceOptions{Epsilon: 50, Delta: 0.1, Eta: 0.5, Nu: 0.1})
	sk, _ := big.Release([][]float64{{0.6, 0.8}, {1, 0}}, noise.Seeded(1))
	v, _ := sk.Variance([]float64{1, 0})
	fmt.Printf("%d rows, w = %.3f, variance along (1, 0): %.1f ± %.1f (true 1.36)\n", big.Rows(), big.Weight(), v, big.AdditiveError([]float64{1, 0})+0.5*1.36)
	// Output:
	// 2952 rows, each (ε0 = 0.00422, δ0 = 1.69e-10)-DP, weight w = 2910.7
	// τ = η·w² = 8.472e+05
	// 96 rows, w = 4.926, variance along (1, 0): 1.5 ± 12.8 (true 1.36)
}
