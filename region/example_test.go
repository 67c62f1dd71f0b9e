package region_test

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/region"
)

func printPoints(pts []region.Point) {
	for _, p := range pts {
		fmt.Printf("(%.4f, %.4f) ", p.MD, p.FA)
	}
	fmt.Println()
}

func ExampleContains() {
	b := dpkit.Budget{Epsilon: math.Log(3), Delta: 0}
	for _, p := range []region.Point{{MD: 0.3, FA: 0.3}, {MD: 0.2, FA: 0.2}, {MD: 0.5, FA: 0.5}} {
		in, err := region.Contains(b, p.MD, p.FA)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("(%.1f, %.1f) in R(ln 3, 0): %v\n", p.MD, p.FA, in)
	}
	_, err := region.Contains(b, 1.5, 0)
	fmt.Println(err)
	// Output:
	// (0.3, 0.3) in R(ln 3, 0): true
	// (0.2, 0.2) in R(ln 3, 0): false
	// (0.5, 0.5) in R(ln 3, 0): true
	// region: invalid md = 1.5: want in [0, 1]
}

func ExampleBoundary() {
	pts, err := region.Boundary(dpkit.Budget{Epsilon: math.Log(3), Delta: 0.1})
	if err != nil {
		fmt.Println(err)
		return
	}
	printPoints(pts) // (0, 1−δ), ((1−δ)/(1+e^ε), same), (1−δ, 0)
	// Output:
	// (0.0000, 0.9000) (0.2250, 0.2250) (0.9000, 0.0000)
}

func ExampleNewPair() {
	// Randomized response with ε = ln 3.
	rr, err := region.NewPair([]float64{0.75, 0.25}, []float64{0.25, 0.75})
	fmt.Println(rr.P0, rr.P1, err)

	_, err = region.NewPair([]float64{0.5, 0.6}, []float64{0.5, 0.5})
	fmt.Println(err)
	// Output:
	// [0.75 0.25] [0.25 0.75] <nil>
	// region: invalid sum(p0) = 1.1: want 1 (within 1e-9)
}

func ExamplePair_HockeyStick() {
	rr, _ := region.NewPair([]float64{0.75, 0.25}, []float64{0.25, 0.75})
	for _, eps := range []float64{0, math.Log(2), math.Log(3)} {
		fmt.Printf("d_%.4f = %.4f\n", eps, rr.HockeyStick(eps))
	}
	// Output:
	// d_0.0000 = 0.5000
	// d_0.6931 = 0.2500
	// d_1.0986 = 0.0000
}

func ExamplePair_HockeyStickReverse() {
	// An asymmetric pair: only D1 can produce the third outcome.
	p, _ := region.NewPair([]float64{0.6, 0.4, 0}, []float64{0.3, 0.5, 0.2})
	eps := math.Log(2)
	fmt.Printf("d(P0‖P1) = %.4f, d(P1‖P0) = %.4f\n", p.HockeyStick(eps), p.HockeyStickReverse(eps))
	// Output:
	// d(P0‖P1) = 0.0000, d(P1‖P0) = 0.2000
}

func ExamplePair_Region() {
	p, _ := region.NewPair([]float64{0.6, 0.4, 0}, []float64{0.3, 0.5, 0.2})
	printPoints(p.Region())
	// Output:
	// (0.0000, 1.0000) (0.3000, 0.4000) (0.8000, 0.0000)
}

func ExamplePair_Polygon() {
	p, _ := region.NewPair([]float64{0.6, 0.4, 0}, []float64{0.3, 0.5, 0.2})
	printPoints(p.Polygon())
	// Output:
	// (0.0000, 1.0000) (0.3000, 0.4000) (0.8000, 0.0000) (1.0000, 0.0000) (0.7000, 0.6000) (0.2000, 1.0000)
}

func ExamplePair_Breakpoints() {
	// The two divergences cross at e^ε = 4/3, which is no likelihood ratio of the pair.
	p, _ := region.NewPair([]float64{0.6, 0.4, 0}, []float64{0.3, 0.5, 0.2})
	for _, b := range p.Breakpoints() {
		fmt.Printf("(ε=%.4f, δ=%.4f)\n", b.Epsilon, b.Delta)
	}
	fmt.Printf("ln(4/3) = %.4f\n", math.Log(4.0/3))
	// Output:
	// (ε=0.0000, δ=0.3000)
	// (ε=0.2877, δ=0.2000)
	// ln(4/3) = 0.2877
}

func ExamplePair_Epsilon() {
	rr, _ := region.NewPair([]float64{0.75, 0.25}, []float64{0.25, 0.75})
	for _, delta := range []float64{0, 0.25, 0.5} {
		eps, err := rr.Epsilon(delta)
		fmt.Printf("δ = %.2f: ε = %.4f %v\n", delta, eps, err)
	}
	// Output:
	// δ = 0.00: ε = 1.0986 <nil>
	// δ = 0.25: ε = 0.6931 <nil>
	// δ = 0.50: ε = 0.0000 <nil>
}

func ExampleDominates() {
	rr3, _ := region.NewPair([]float64{0.75, 0.25}, []float64{0.25, 0.75})
	rr2, _ := region.NewPair([]float64{2.0 / 3, 1.0 / 3}, []float64{1.0 / 3, 2.0 / 3})
	fmt.Println(region.Dominates(rr3, rr2), region.Dominates(rr2, rr3))
	// Output:
	// true false
}

func ExampleImplies() {
	from := dpkit.Budget{Epsilon: math.Log(3), Delta: 0}
	for _, to := range []dpkit.Budget{{Epsilon: math.Log(2), Delta: 0.25}, {Epsilon: math.Log(2), Delta: 0.2}} {
		ok, err := region.Implies(from, to)
		fmt.Printf("(ln 3, 0) ⇒ (ln 2, %.2f): %v %v\n", to.Delta, ok, err)
	}
	// Output:
	// (ln 3, 0) ⇒ (ln 2, 0.25): true <nil>
	// (ln 3, 0) ⇒ (ln 2, 0.20): false <nil>
}

func ExampleImpliedDelta() {
	// δ̃ = δ + (1−δ)(e^ε − e^ε̃)/(1+e^ε) below ε: at ε̃ = 0.5, (e − e^0.5)/(1 + e) = 0.287650.
	b := dpkit.Budget{Epsilon: 1, Delta: 1e-6}
	for _, et := range []float64{0, 0.5, 1, 2} {
		d, _ := region.ImpliedDelta(b, et)
		fmt.Printf("ε̃ = %.1f: δ̃ = %.6f\n", et, d)
	}
	// Output:
	// ε̃ = 0.0: δ̃ = 0.462118
	// ε̃ = 0.5: δ̃ = 0.287650
	// ε̃ = 1.0: δ̃ = 0.000001
	// ε̃ = 2.0: δ̃ = 0.000001
}

func ExampleTotalVariation() {
	tv, err := region.TotalVariation(dpkit.Budget{Epsilon: math.Log(3), Delta: 0.1})
	fmt.Printf("%.4f %v\n", tv, err) // 0.1 + 0.9·tanh(ln(3)/2) = 0.1 + 0.9·0.5
	// Output:
	// 0.5500 <nil>
}

func ExampleCanonical() {
	p, err := region.Canonical(dpkit.Budget{Epsilon: math.Log(3), Delta: 0.1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("P0 = %.4f\nP1 = %.4f\n", p.P0, p.P1)
	printPoints(p.Region()) // = Boundary(ln 3, 0.1)
	// Output:
	// P0 = [0.1000 0.6750 0.2250 0.0000]
	// P1 = [0.0000 0.2250 0.6750 0.1000]
	// (0.0000, 0.9000) (0.2250, 0.2250) (0.9000, 0.0000)
}
