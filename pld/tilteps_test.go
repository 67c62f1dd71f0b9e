package pld

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

// ε read at a δ far below the plain lattices' error (issue 24: `compose --delta 1e-25` on
// 1000 subsampled-Gaussian steps was refused as infeasible) is bracketed by the Chernoff
// bound and tilted lattices (refineTiltedEpsilon): at δ = the references' δ(ε) of
// testdata/tail_delta.json and tail_delta_mixed.json (Bromwich inversion of the exact
// moment generating function, 50 digits; tiny_delta.json: saddle point and Edgeworth,
// 1e-5), the bracket of ε holds the reference's ε. The reference δ is exact to within
// its tolerance r, which moves ε by at most r/λ ≤ r (λ = −d ln δ/dε ≥ 1 there): the
// bracket is widened by that much before the check.
func TestEpsilonAtTinyDelta(t *testing.T) {
	if testing.Short() {
		t.Skip("about 8 s")
	}
	type tc struct {
		name  string
		items []Item
		eps   float64
		delta string
		r     float64
	}
	var cases []tc
	for _, c := range loadTinyDelta(t).Cases {
		cases = append(cases, tc{c.Name, []Item{c.Mechanism.item()}, c.Eps, c.Want, tinyDeltaTol})
	}
	for _, c := range loadTailDelta(t, "testdata/tail_delta.json").Cases {
		if d, _ := strconv.ParseFloat(c.Want, 64); d > 1e-22 || c.Eps == 2 || c.Eps == 3 {
			continue // the plain lattices certify δ ≈ 7e-20 (6 s); ε = 4 takes the same split path as 2 and 3
		}
		cases = append(cases, tc{c.Name, []Item{c.Mechanism.item()}, c.Eps, c.Want, tailDeltaTol})
	}
	for _, c := range loadTailDelta(t, "testdata/tail_delta_mixed.json").Cases {
		if strings.Contains(c.Name, "_s2_q0.05_") {
			continue // one tilt of two subsampled Gaussians: as the single ones (3 s)
		}
		var items []Item
		for _, m := range c.Mechanisms {
			items = append(items, m.item())
		}
		cases = append(cases, tc{c.Name, items, c.Eps, c.Want, tailDeltaTol})
	}
	for _, c := range cases {
		delta, _ := strconv.ParseFloat(c.delta, 64)
		comp, err := Compose(c.items, &Options{Delta: delta})
		if err != nil {
			t.Fatal(err)
		}
		up, lo, err := comp.Epsilon(delta)
		t.Logf("%s: δ = %.6g: ε in [%.8g, %.8g] (width %.3g), reference ε %g", c.name, delta, lo, up, (up-lo)/up, c.eps)
		if err != nil || up < c.eps*(1-c.r) || lo > c.eps*(1+c.r) || !(lo > 0) || (up-lo)/up > 0.05 {
			t.Errorf("%s: δ = %g: ε in [%.10g, %.10g] (%v), reference %g", c.name, delta, lo, up, err, c.eps)
		}
	}
}

// The Chernoff ε is certified: δ at it is at most the δ asked. Against a closed form —
// a Gaussian of μ = 1, whose loss is N(μ²/2, μ²): min_λ (K(λ) − ln δ)/λ with K(λ) =
// λμ²/2 + λ²μ²/2 is μ²/2 + μ·√(2 ln(1/δ)) exactly; the upper lattice's moment generating
// function is at least the true one (its spread and upward moves raise E[e^(λL)]), so the
// lattice's Chernoff ε is at or above that, and within 1e-3 of it at h = 1e-3 — and above
// the true ε(δ). Against an exact enumeration (six (ε_i, 0) pairs, 30 releases each, on
// multiples of 1/4): δ at the Chernoff ε is at most δ.
func TestChernoffEpsilon(t *testing.T) {
	for _, delta := range []float64{1e-10, 1e-50, 1e-200} {
		e, lam, _ := chernoffEpsilon([]Item{{Gaussian{Sigma: 1, Sensitivity: 1}, 1}}, 1e-3, delta, nil)
		want := 0.5 + math.Sqrt(2*math.Log(1/delta))
		if !(e >= want && e <= want*(1+1e-3)) || !(e >= gaussianEpsilon(1, delta, true)) || !(lam > 0) {
			t.Errorf("Gaussian μ = 1, δ = %g: Chernoff ε %.10g (λ %g), closed form %.10g, true ε %.10g", delta, e, lam, want, gaussianEpsilon(1, delta, true))
		}
	}
	items, exact := sixPairs()
	for _, delta := range []float64{1e-6, 1e-13, 1e-37} {
		e, _, _ := chernoffEpsilon(items, 0.25, delta, nil)
		if got := exact.delta(e); !(got <= delta) {
			t.Errorf("six pairs, δ = %g: Chernoff ε %.10g has exact δ %.6g", delta, e, got)
		}
	}
	// Nothing certifies a δ at or below the mass at +∞.
	if e, _, inf := chernoffEpsilon([]Item{{EpsilonDelta{Epsilon: 1, Delta: 1e-9}, 10}}, 0.25, 1e-9, nil); !math.IsInf(e, 1) || !(inf >= 1e-8) {
		t.Errorf("δ below the δ-events' mass: Chernoff ε %g (mass at +∞ %g), want +Inf (and at least 10·1e-9)", e, inf)
	}
}

// Two k-ary randomized-response mechanisms (1000 releases of ε = 1.32004, k = 10, and
// 100 of ε = 1.16017, k = 6: three atoms each, off any common grid, so Compose deals them
// into 138 blocks) far in the tail, down to δ ≈ 8e-285, against testdata/rr_tail.json
// (gen_rr_tail.py: the exact multinomial sums, term by term at 40 digits): the default
// bracket of δ at ε holds the reference with delta_lower > 0 (widths 0.61 to 0.74 by
// default; main before these changes gave [2.7e-287, 8.13e-285] at ε = 1173), and so
// does the one at tolerance 0.05, within it; ε read at the reference δ holds ε.
func TestRandomizedResponseTail(t *testing.T) {
	if testing.Short() {
		t.Skip("about 10 s")
	}
	var ref struct {
		Cases []struct {
			Eps   float64 `json:"eps"`
			Delta string  `json:"delta"`
		} `json:"cases"`
	}
	b, err := os.ReadFile("testdata/rr_tail.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	items := []Item{{RandomizedResponse{Epsilon: 1.32004, K: 10}, 1000}, {RandomizedResponse{Epsilon: 1.16017, K: 6}, 100}}
	for _, c := range ref.Cases {
		want, _ := strconv.ParseFloat(c.Delta, 64)
		for _, tol := range []float64{0, 0.05} {
			if tol > 0 && c.Eps != 1173 {
				continue // 5 s
			}
			comp, err := Compose(items, &Options{Epsilon: c.Eps, Tolerance: tol})
			if err != nil {
				t.Fatal(err)
			}
			up, lo, _ := comp.Delta(c.Eps)
			t.Logf("ε = %g, tolerance %g: [%.6g, %.6g] width %.3g, reference %s", c.Eps, tol, lo, up, (up-lo)/up, c.Delta)
			if !(lo > 0) || up < want*(1-1e-12) || lo > want*(1+1e-12) || tol > 0 && (up-lo)/up > tol {
				t.Errorf("ε = %g, tolerance %g: [%.15g, %.15g], reference %s", c.Eps, tol, lo, up, c.Delta)
			}
		}
		comp, err := Compose(items, &Options{Delta: want})
		if err != nil {
			t.Fatal(err)
		}
		eu, el, err := comp.Epsilon(want)
		t.Logf("δ = %s: ε in [%.10g, %.10g]", c.Delta, el, eu)
		if err != nil || eu < c.Eps || el > c.Eps || !(el > 0) {
			t.Errorf("δ = %s: ε in [%.15g, %.15g] (%v), reference %g", c.Delta, el, eu, err, c.Eps)
		}
	}
}
