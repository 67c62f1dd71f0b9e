package ldp_test

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit/ldp"
	"github.com/dpkit/dpkit/noise"
)

func ExampleOptimal() {
	// Test P0 against P1 from privatized samples: maximize D(M0‖M1) at ε = 1.
	u, err := ldp.NewKL([]float64{0.5, 0.3, 0.2}, []float64{0.2, 0.3, 0.5})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := ldp.Optimal(u, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s mechanism, KL %.6f, %d outputs\n", res.Mechanism, res.Utility, res.Matrix.Outputs())
	for _, row := range res.Matrix {
		fmt.Printf("%.4f\n", row)
	}
	// Output:
	// binary mechanism, KL 0.039997, 2 outputs
	// [0.7311 0.2689]
	// [0.2689 0.7311]
	// [0.2689 0.7311]
}

func ExampleRandomizedResponse() {
	q, _ := ldp.RandomizedResponse(3, 1)
	eps, _ := q.Epsilon()
	fmt.Printf("%.4f\nε = %.6f\n", q, eps)
	// Output:
	// [[0.5761 0.2119 0.2119] [0.2119 0.5761 0.2119] [0.2119 0.2119 0.5761]]
	// ε = 1.000000
}

func ExampleQuaternary() {
	q, _ := ldp.Quaternary(1, 0.01)
	d, _ := q.Delta(1)
	fmt.Printf("δ(ε=1) = %.4f\n", d)
	// Output:
	// δ(ε=1) = 0.0100
}

func ExampleRROracle() {
	o, _ := ldp.NewRROracle(3, 1)
	src := noise.Seeded(1) // reproducible for this example; production passes nil (noise.Secure())
	counts := make([]int64, 3)
	for i := range 30000 {
		y, _ := o.Randomize(i%3, src) // 10000 users hold each value
		counts[y]++
	}
	est, _ := o.Estimate(counts)
	v, _ := o.Variance([]float64{1.0 / 3, 1.0 / 3, 1.0 / 3}, 30000)
	fmt.Printf("realized ε' ≤ 1: %v\nexact standard error: %.4f\n", o.Epsilon() <= 1, math.Sqrt(v[0]))
	fmt.Printf("estimates: %.2f\n", est.Frequencies)
	// Output:
	// realized ε' ≤ 1: true
	// exact standard error: 0.0075
	// estimates: [0.34 0.33 0.33]
}
