package noise_test

import (
	"fmt"

	"github.com/dpkit/dpkit/noise"
)

func ExampleNewSecureLaplace() {
	s, _ := noise.NewSecureLaplace(1, 0.5)
	fmt.Println("granularity:", s.Granularity())
	fmt.Println("grid sensitivity:", s.GridSensitivity(), "grid scale:", s.GridScale())
	fmt.Println("scale:", s.Scale(), "exact ε:", s.Epsilon())
	// Output:
	// granularity: 9.094947017729282e-13
	// grid sensitivity: 1099511627776 grid scale: 2199023255552
	// scale: 2 exact ε: 0.5
}

func ExampleNewSecureGaussian() {
	g, _ := noise.NewSecureGaussian(1, 3.5)
	fmt.Println("granularity:", g.Granularity(), "σ:", g.Sigma())
	// The continuous Gaussian's δ(1) at σ = 3.5 is 2.72989e-05 (Balle–Wang Thm 8); the
	// grid bound exceeds it by a relative ~1e-9.
	fmt.Printf("certified δ(1) ≤ %.4g\n", g.DeltaBound(1))
	// Output:
	// granularity: 1.862645149230957e-09 σ: 3.5
	// certified δ(1) ≤ 2.73e-05
}

func ExampleStaircaseGammaL2() {
	fmt.Printf("γ* for ε = 1: L1 %.4f, L2 %.4f\n", noise.StaircaseGammaL1(1), noise.StaircaseGammaL2(1))
	// Output: γ* for ε = 1: L1 0.3775, L2 0.4167
}
