package sensitivity_test

import (
	"fmt"

	"github.com/dpkit/dpkit/sensitivity"
)

func ExampleSum() {
	// Salaries clamped to [10000, 100000] (the lecture slides' example), one row per person.
	ar, _ := sensitivity.Sum(sensitivity.AddRemove, 10000, 100000, 1)
	r1, _ := sensitivity.Sum(sensitivity.ReplaceOne, 10000, 100000, 1)
	fmt.Println(ar, r1)
	// Output: 100000 90000
}

func ExampleHistogram() {
	l1, l2, _ := sensitivity.Histogram(sensitivity.ReplaceOne, 1)
	fmt.Printf("ℓ1 = %v, ℓ2 = %.6f\n", l1, l2)
	// Output: ℓ1 = 2, ℓ2 = 1.414214
}

func ExampleSmoothMedian() {
	// The lecture slides' worked example: D = (1, …, 9) in [0, 10]. At β = 0.1 the maximum is
	// reached by moving all 9 values (the pair x_0 = 0, x_10 = 10): 10·e^(−0.9).
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	ls, _ := sensitivity.LocalMedian(xs, 0, 10)
	s, _ := sensitivity.SmoothMedian(xs, 0, 10, 0.1)
	fmt.Printf("local %v, smooth %.6f\n", ls, s)
	// Output: local 1, smooth 4.065697
}

func ExampleHeavyTailCalibration() {
	alpha, beta, _ := sensitivity.HeavyTailCalibration(1, 4)
	fmt.Printf("α = %.4f, β = %.4f\n", alpha, beta)
	// Output: α = 0.1000, β = 0.1000
}

func ExampleGrouped() {
	// Counts per group: a person contributes at most 4 rows, to at most 2 groups, at most
	// 2 rows in each. ℓ1 = min(4, 2·2) = 4; ℓ2 = √(2·2²) ≈ 2.83, what Gaussian noise
	// is calibrated to.
	l1, l2, _ := sensitivity.Grouped(sensitivity.AddRemove, 4, 2, 2, 1, true)
	fmt.Printf("ℓ1 = %v, ℓ2 = %.6f\n", l1, l2)
	// Sums of values in [0, 30]: both scale by 30; replacing a person doubles them.
	l1, l2, _ = sensitivity.Grouped(sensitivity.ReplaceOne, 4, 2, 2, 30, false)
	fmt.Printf("ℓ1 = %v, ℓ2 = %.4f\n", l1, l2)
	// Output:
	// ℓ1 = 4, ℓ2 = 2.828427
	// ℓ1 = 240, ℓ2 = 169.7056
}
