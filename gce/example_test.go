package gce_test

import (
	"fmt"
	"math/big"

	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/gce"
)

// HBW's hospitals: 1000 databases, each answered once by a (0.01, 0)-DP release;
// one person spends at most 365 nights a year in hospital.
func ExampleAtMost() {
	ms := []compose.Mech{{Epsilon: 0.01, Count: 1000}}
	r, _ := gce.AtMost(ms, 365, gce.Unbounded, 1e-6, nil)
	fmt.Printf("at most 365: ε = %.4f (classic %.4f, parallel %.2f)\n", r.Epsilon, r.Classic, r.Parallel)
	r, _ = gce.AtMost(ms, 365, gce.Bounded, 1e-6, nil)
	fmt.Printf("bounded:     ε = %.4f (parallel %.2f)\n", r.Epsilon, r.Parallel)
	// Output:
	// at most 365: ε = 0.7901 (classic 1.3654, parallel 3.65)
	// bounded:     ε = 1.1513 (parallel 7.30)
}

// The counterexample of docs/errata.md (HBW item 1): the paper's recipe would
// report ln(½e + ½) = 0.620, but the truth is 0.99997; the general rule gives 1.
func ExampleHDP() {
	ms := []compose.Mech{{Epsilon: 1, Count: 1}, {Epsilon: 10, Count: 1}}
	v := func(s string) gce.Vector { b, _ := gce.ParseVector(s); return b }
	half := big.NewRat(1, 2)
	p0 := gce.Hypothesis{{B: v("10"), W: half}, {B: v("01"), W: half}}
	p1 := gce.Hypothesis{{B: v("00"), W: half}, {B: v("01"), W: half}}
	r, _ := gce.HDP(ms, p0, p1, 0, nil)
	fmt.Printf("ε = %.4f by the %s rule\n", r.Epsilon, r.Rule)
	for _, p := range r.Pairs {
		fmt.Printf("  %s vs %s, weight %s: ε = %.4f\n", p.B0, p.B1, p.W.RatString(), p.Epsilon)
	}
	// Output:
	// ε = 1.0000 by the general rule
	//   10 vs 00, weight 1/2: ε = 1.0000
	//   01 vs 01, weight 1/2: ε = 0.0000
}

func ExampleRefineTuples() {
	v := func(s string) gce.Vector { b, _ := gce.ParseVector(s); return b }
	t0 := []gce.Tuple{{B: v("00"), W: big.NewRat(1, 2)}, {B: v("11"), W: big.NewRat(1, 2)}}
	t1 := []gce.Tuple{{B: v("01"), W: big.NewRat(1, 3)}, {B: v("10"), W: big.NewRat(2, 3)}}
	u0, u1, _ := gce.RefineTuples(t0, t1)
	for i := range u0 {
		fmt.Printf("%s — %s  weight %s\n", u0[i].B, u1[i].B, u0[i].W.RatString())
	}
	// Output:
	// 00 — 01  weight 1/3
	// 11 — 10  weight 1/2
	// 00 — 10  weight 1/6
}

// The uniform-prior adversary (HBW §V-B) against 1000 × (0.01, 0): Theorem 3 with
// the exact composition, and Cor. 7 (simple composition) for comparison.
func ExampleUniformPrior() {
	ms := []compose.Mech{{Epsilon: 0.01, Count: 1000}}
	r, _ := gce.UniformPrior(ms, 1e-6, nil)
	c7, _ := gce.Corollary7(0.01, 0, 1000)
	fmt.Printf("uniform prior ε = %.4f, worst case %.4f, Cor. 7 %.4f\n", r.Epsilon, r.WorstCase, c7.Epsilon)
	// Output:
	// uniform prior ε = 0.6496, worst case 1.3654, Cor. 7 5.0125
}

func ExampleSubsample() {
	s, _ := gce.Subsample(compose.Mech{Epsilon: 1, Delta: 1e-6, Count: 1}, 0.5)
	fmt.Printf("S_1/2 of (1, 1e-6): (%.4f, %g)\n", s.Epsilon, s.Delta)
	// Output: S_1/2 of (1, 1e-6): (0.6201, 5e-07)
}
