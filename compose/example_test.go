package compose_test

import (
	"fmt"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// The errata's example: 30 releases of (1, 1e-3)-DP at total δ = 0.06. The grid points
// of Thm 3.3 would give ε = 22; the exact optimum lies between them.
func ExampleEpsilon() {
	r, _ := compose.Epsilon([]compose.Mech{{Epsilon: 1, Delta: 1e-3, Count: 30}}, 0.06, nil)
	fmt.Printf("ε = %.4f (exact: %v)\n", r.Epsilon, r.Exact)
	// Output: ε = 21.7096 (exact: true)
}

func ExampleDelta() {
	r, _ := compose.Delta([]compose.Mech{{Epsilon: 0.01, Count: 10000}}, 1, nil)
	fmt.Printf("δ(ε=1) = %.3e\n", r.Delta)
	// Output: δ(ε=1) = 1.269e-01
}

func ExampleEpsilonBy() {
	ms := []compose.Mech{{Epsilon: 0.1, Delta: 1e-6, Count: 100}}
	for _, th := range compose.Theorems {
		r, err := compose.EpsilonBy(th, ms, 1e-3, nil)
		if err != nil {
			fmt.Println(th, err)
			continue
		}
		fmt.Printf("%-5s ε = %.3f\n", th, r.Epsilon)
	}
	// Output:
	// basic ε = 10.000
	// drv   ε = 4.797
	// kov   ε = 4.245
	// exact ε = 3.145
}

func ExampleDeltaBy() {
	r, _ := compose.DeltaBy(compose.KOV, []compose.Mech{{Epsilon: 0.1, Count: 100}}, 3, nil)
	fmt.Printf("δ = %.3e\n", r.Delta)
	// Output: δ = 4.389e-02
}

func ExampleNewCurve() {
	c, _ := compose.NewCurve([]compose.Mech{{Epsilon: 0.1, Count: 50}, {Epsilon: 0.5, Delta: 1e-6, Count: 10}}, nil)
	up, _, _ := c.Epsilon(1e-3)
	fmt.Printf("floor %.3e, ε(1e-3) = %.4f, exact %v\n", c.Floor(), up, c.Exact())
	// Output: floor 1.000e-05, ε(1e-3) = 5.6789, exact true
}

func ExampleCurve_Breakpoints() {
	c, _ := compose.NewCurve([]compose.Mech{{Epsilon: 0.4, Count: 3}}, nil)
	bs, _ := c.Breakpoints()
	for _, b := range bs {
		fmt.Printf("(%.1f, %.4f) ", b.Epsilon, b.Delta)
	}
	fmt.Println()
	// Output: (1.2, 0.0000) (0.4, 0.1182)
}

func ExampleMaxEpsilonPerQuery() {
	e0, _ := compose.MaxEpsilonPerQuery(100, 0, dpkit.Budget{Epsilon: 1, Delta: 1e-6})
	fmt.Printf("ε0 = %.5f per query\n", e0)
	// Output: ε0 = 0.02401 per query
}

func ExampleMaxQueries() {
	k, _ := compose.MaxQueries(dpkit.Budget{Epsilon: 0.01}, dpkit.Budget{Epsilon: 1, Delta: 1e-6})
	fmt.Println(k, "queries")
	// Output: 562 queries
}

func ExampleRegion() {
	bs, _ := compose.Region(compose.Basic, []compose.Mech{{Epsilon: 0.125, Delta: 0.0009765625, Count: 32}}, nil)
	fmt.Println(bs)
	// Output: [(ε=4, δ=0.03125)]
}

// Sums are those of the binary inputs, rounded up: 0.1 is 0.1000000000000000055… in
// float64, so 30 × 0.1 exceeds 3.
func ExampleRegion_rounding() {
	bs, _ := compose.Region(compose.Basic, []compose.Mech{{Epsilon: 0.1, Delta: 0.001, Count: 30}}, nil)
	fmt.Println(bs)
	// Output: [(ε=3.0000000000000004, δ=0.030000000000000002)]
}
