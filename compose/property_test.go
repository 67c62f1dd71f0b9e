package compose

import (
	"errors"
	"math"
	"testing"

	"github.com/dpkit/dpkit"
	"pgregory.net/rapid"
)

// Ordering of bounds (KOV §3): the exact optimum is at most the KOV bound (Thm 3.4/3.5),
// which is at most basic composition.
func TestPropertyOrdering(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		eps := rapid.Float64Range(1e-3, 2).Draw(t, "eps")
		d0 := rapid.SampledFrom([]float64{0, 1e-9, 1e-6}).Draw(t, "delta0")
		k := rapid.Int64Range(1, 5000).Draw(t, "k")
		ms := []Mech{{Epsilon: eps, Delta: d0, Count: k}}
		floor := Floor(ms)
		delta := floor + rapid.Float64Range(1e-9, 0.1).Draw(t, "slack")
		ex, err := Epsilon(ms, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		kov, err := EpsilonBy(KOV, ms, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		basic := sumEps(ms)
		if ex.Epsilon > kov.Epsilon*(1+1e-12) || kov.Epsilon > basic*(1+1e-12) {
			t.Fatalf("exact %v, kov %v, basic %v out of order", ex.Epsilon, kov.Epsilon, basic)
		}
	})
}

// ε is non-decreasing in k and non-increasing in δ; the inversion is consistent:
// Delta(Epsilon(δ)) ≤ δ.
func TestPropertyMonotoneAndInverse(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		eps := rapid.Float64Range(1e-3, 1).Draw(t, "eps")
		k := rapid.Int64Range(1, 20000).Draw(t, "k")
		delta := rapid.Float64Range(1e-12, 0.5).Draw(t, "delta")
		a, err := Epsilon([]Mech{{Epsilon: eps, Count: k}}, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Epsilon([]Mech{{Epsilon: eps, Count: k + 1}}, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		if b.Epsilon < a.Epsilon*(1-1e-12) {
			t.Fatalf("ε decreased with k: %v → %v", a.Epsilon, b.Epsilon)
		}
		c, err := Epsilon([]Mech{{Epsilon: eps, Count: k}}, delta/2, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Epsilon < a.Epsilon*(1-1e-12) {
			t.Fatalf("ε decreased when δ halved: %v → %v", a.Epsilon, c.Epsilon)
		}
		d, err := Delta([]Mech{{Epsilon: eps, Count: k}}, a.Epsilon, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d.Delta > delta {
			t.Fatalf("Delta(Epsilon(%v)) = %v > δ", delta, d.Delta)
		}
	})
}

// The curve of k copies equals the curve of the same workload split into groups.
func TestPropertyGroupingInvariant(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		eps := rapid.Float64Range(1e-2, 1).Draw(t, "eps")
		k := rapid.Int64Range(2, 500).Draw(t, "k")
		j := rapid.Int64Range(1, k-1).Draw(t, "split")
		a, err := Epsilon([]Mech{{Epsilon: eps, Delta: 1e-7, Count: k}}, 1e-3, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Epsilon([]Mech{{Epsilon: eps, Delta: 1e-7, Count: j}, {Epsilon: eps, Delta: 1e-7, Count: k - j}}, 1e-3, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.Epsilon != b.Epsilon {
			t.Fatalf("%v vs %v", a.Epsilon, b.Epsilon)
		}
	})
}

// Heterogeneous exact composition (product of binomials) equals brute-force enumeration
// over all 2^k sign vectors for small distinct workloads (independent reference: the
// definition in the package doc, summed directly).
func TestHeterogeneousBruteForce(t *testing.T) {
	eps := []float64{0.3, 1.1, 0.05, 0.7, 0.2, 0.9, 0.45, 0.6}
	var ms []Mech
	for _, e := range eps {
		ms = append(ms, Mech{Epsilon: e, Count: 1})
	}
	c, err := NewCurve(ms, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Exact() {
		t.Fatal("8 distinct values should be exact")
	}
	for _, target := range []float64{0, 0.5, 1.3, 2.2, 3.9} {
		want := 0.0
		for mask := 0; mask < 1<<len(eps); mask++ {
			prob, loss := 1.0, 0.0
			for i, e := range eps {
				p := math.Exp(e) / (1 + math.Exp(e))
				if mask&(1<<i) != 0 {
					prob, loss = prob*p, loss+e
				} else {
					prob, loss = prob*(1-p), loss-e
				}
			}
			if loss > target {
				want += prob * -math.Expm1(target-loss)
			}
		}
		up, lo, err := c.Delta(target)
		if err != nil {
			t.Fatal(err)
		}
		if up < want*(1-1e-14) || lo > want*(1+1e-14) || (up-want) > 1e-11*want+1e-16 {
			t.Errorf("ε̃=%v: [%v, %v] vs brute force %v", target, lo, up, want)
		}
	}
}

// A certified bracket must meet the tolerance asked for, and not widen as it shrinks.
func TestBracketShrinks(t *testing.T) {
	ms := distinctWorkload(40, 0.02, 0.1)
	var widths []float64
	tols := []float64{1e-1, 1e-2, 1e-3, 1e-5}
	for _, tol := range tols {
		r, err := Epsilon(ms, 1e-6, &Options{Tolerance: tol})
		if err != nil {
			t.Fatal(err)
		}
		if r.Exact {
			t.Fatal("40 distinct values should be bracketed")
		}
		widths = append(widths, (r.Epsilon-r.Lower)/r.Epsilon)
	}
	for i, w := range widths {
		if w > tols[i] || (i > 0 && w > widths[i-1]) {
			t.Fatalf("widths %v do not shrink to the tolerances %v", widths, tols)
		}
	}
}

func TestValidation(t *testing.T) {
	cases := []struct {
		ms    []Mech
		delta float64
	}{
		{nil, 1e-6},
		{[]Mech{{Epsilon: math.NaN(), Count: 1}}, 1e-6},
		{[]Mech{{Epsilon: -1, Count: 1}}, 1e-6},
		{[]Mech{{Epsilon: 1, Delta: 2, Count: 1}}, 1e-6},
		{[]Mech{{Epsilon: 1, Count: 0}}, 1e-6},
		{[]Mech{{Epsilon: 1, Count: 1}}, math.NaN()},
		{[]Mech{{Epsilon: 1, Count: 1}}, 1.5},
	}
	for _, c := range cases {
		_, err := Epsilon(c.ms, c.delta, nil)
		var pe *dpkit.ParamError
		if !errors.As(err, &pe) {
			t.Errorf("%v, δ=%v: want ParamError, got %v", c.ms, c.delta, err)
		}
	}
	_, err := Epsilon([]Mech{{Epsilon: 1, Delta: 1e-3, Count: 30}}, 1e-3, nil)
	if !errors.Is(err, dpkit.ErrInfeasible) {
		t.Errorf("δ below the floor: want ErrInfeasible, got %v", err)
	}
	if _, err := Epsilon([]Mech{{Epsilon: 1, Count: 1}}, 1e-6, &Options{Tolerance: 2}); err == nil {
		t.Error("tolerance 2 accepted")
	}
}

// At the floor exactly the answer is basic composition's Σ ε_ℓ (δ(Σε) = floor).
func TestFloorTarget(t *testing.T) {
	ms := []Mech{{Epsilon: 0.5, Delta: 0, Count: 4}}
	r, err := Epsilon(ms, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Epsilon < 2 || r.Epsilon > 2*(1+1e-14) {
		t.Fatalf("ε at δ = 0: %v, want 2", r.Epsilon)
	}
}

// Pure DP: k queries of ε/k fit a total (ε, 0) exactly when Σ is exact in binary
// (8 × 0.125 = 1), found by the CLI's tests.
func TestPureDPExactSum(t *testing.T) {
	k, err := MaxQueries(dpkit.Budget{Epsilon: 0.125}, dpkit.Budget{Epsilon: 1})
	if err != nil || k != 8 {
		t.Fatalf("MaxQueries = %d, %v; want 8", k, err)
	}
	r, err := Delta([]Mech{{Epsilon: 0.125, Count: 8}}, 1, nil)
	if err != nil || r.Delta != 0 {
		t.Fatalf("δ(Σε) = %v, %v; want 0", r.Delta, err)
	}
}
