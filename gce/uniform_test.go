package gce

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"testing"

	"pgregory.net/rapid"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// Cor. 7 / eq. (4) against exact rationals: with x = 1 + expm1(ε') (the float64 value of
// expm1, made an exact rational, so that x keeps ε's relative accuracy for tiny ε), e^ε = ((1 + x)^k − 1)/(2^k − 1) and δ = 2^{k−1} k δ'/(2^k − 1) are
// evaluated in math/big; the float64 result must be at or above, within 1e-12 relative
// (the inexact steps are the final float conversion and math.Log1p, and expm1's
// rounding, ~1e-16 relative per step; the result is moved up by 1e-12 by design).
func TestCorollary7Exact(t *testing.T) {
	for _, c := range []struct {
		eps, delta float64
		k          int64
	}{{0.1, 1e-6, 1}, {0.1, 1e-6, 10}, {1, 0, 20}, {0.01, 1e-8, 200}, {2, 1e-5, 50}, {1e-9, 0, 3}} {
		got, err := Corollary7(c.eps, c.delta, c.k)
		if err != nil {
			t.Fatal(err)
		}
		x := new(big.Rat).Add(big.NewRat(1, 1), new(big.Rat).SetFloat64(math.Expm1(c.eps)))
		num := new(big.Rat).Add(big.NewRat(1, 1), x)
		pow := big.NewRat(1, 1)
		for range c.k {
			pow.Mul(pow, num)
		}
		two := new(big.Rat).SetInt(new(big.Int).Lsh(big.NewInt(1), uint(c.k)))
		den := new(big.Rat).Sub(two, big.NewRat(1, 1))
		ratio := new(big.Rat).Quo(new(big.Rat).Sub(pow, big.NewRat(1, 1)), den)
		// ε = ln(ratio) = log1p(ratio − 1), evaluated from the exact ratio − 1.
		rm1, _ := new(big.Rat).Sub(ratio, big.NewRat(1, 1)).Float64()
		want := math.Log1p(rm1)
		if got.Epsilon < want*(1-1e-13) || got.Epsilon > want*(1+1e-11) {
			t.Errorf("Cor. 7 (%v, %v, k=%d): ε = %.17g, exact %.17g", c.eps, c.delta, c.k, got.Epsilon, want)
		}
		d := new(big.Rat).Mul(new(big.Rat).SetFloat64(c.delta), big.NewRat(c.k, 1))
		d.Mul(d, new(big.Rat).Quo(new(big.Rat).Quo(two, big.NewRat(2, 1)), den))
		wantD, _ := d.Float64()
		if got.Delta < wantD || got.Delta > wantD*(1+1e-11) {
			t.Errorf("Cor. 7 (%v, %v, k=%d): δ = %.17g, exact %.17g", c.eps, c.delta, c.k, got.Delta, wantD)
		}
	}
}

// eq. (3) with the point-mass rule for heterogeneous steps, by enumerating every b ≠ 0⃗
// (k ≤ 8) in float64 (sums of ≤ 255 positive terms: relative error ≤ 1e-13). The result
// must be within 1e-11 relative and not below by more than the enumeration's error.
func TestUniformPriorSimpleEnumeration(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 8).Draw(t, "k")
		ms := make([]compose.Mech, k)
		for i := range ms {
			ms[i] = compose.Mech{Epsilon: rapid.Float64Range(0, 2).Draw(t, fmt.Sprintf("e%d", i)),
				Delta: rapid.Float64Range(0, 1e-3).Draw(t, fmt.Sprintf("d%d", i)), Count: 1}
		}
		var se, sd, te, tde float64 // se = Σ expm1(ε_b): log1p(se/n) keeps tiny ε accurate
		for mask := 1; mask < 1<<k; mask++ {
			var eb, db float64
			for i := range ms {
				if mask>>i&1 == 1 {
					eb += ms[i].Epsilon
					db += ms[i].Delta
				}
			}
			se += math.Expm1(eb)
			sd += db
			te += math.Exp(-eb)
			tde += math.Exp(-eb) * db
		}
		n := float64(int(1)<<k - 1)
		wantE := math.Log1p(se / n)
		wantD := math.Max(sd/n, tde/te)
		got, err := UniformPriorSimple(ms)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.Epsilon-wantE) > 1e-11*wantE+1e-15 || got.Epsilon < wantE*(1-1e-13) {
			t.Fatalf("ε = %v, enumeration %v", got.Epsilon, wantE)
		}
		if math.Abs(got.Delta-wantD) > 1e-11*wantD || got.Delta < wantD*(1-1e-13) {
			t.Fatalf("δ = %v, enumeration %v", got.Delta, wantD)
		}
	})
}

// Theorem 3 with simple composition as CompGuarantee is Cor. 7 (HBW, proof of Cor. 7):
// ε̂_i = ε + (k−i)·ln((1+e^ε)/2). Checked through the same combination code UniformPrior
// uses (including the tail bound for k > 64), to 1e-11 relative.
func TestTheorem3BasicIsCorollary7(t *testing.T) {
	for _, k := range []int64{1, 5, 64, 65, 300} {
		const eps = 0.2
		ms := []compose.Mech{{Epsilon: eps, Count: k}}
		got, err := uniformCombine(ms, k, func(step compose.Mech, rest []compose.Mech) (float64, error) {
			e := step.Epsilon
			for _, m := range rest {
				e += float64(m.Count) * half(m).Epsilon
			}
			return e, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Corollary7(eps, 0, k)
		if got < want.Epsilon*(1-1e-11) || got > want.Epsilon*(1+1e-11) {
			t.Errorf("k = %d: Thm 3 with simple composition %v, Cor. 7 %v", k, got, want.Epsilon)
		}
	}
}

// Brute force: for canonical (ε, δ) steps (k ≤ 4), the views of 0⃗ and of U(B \ {0⃗})
// are enumerated; UniformPrior's (ε, δ) must bound both hockey-stick divergences
// (tolerance: the enumeration's rounding, 1e-9 relative + 1e-12).
func TestUniformPriorBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 4).Draw(t, "k")
		ms := make([]compose.Mech, k)
		for i := range ms {
			ms[i] = compose.Mech{Epsilon: rapid.Float64Range(0, 2).Draw(t, fmt.Sprintf("e%d", i)),
				Delta: rapid.SampledFrom([]float64{0, 1e-3}).Draw(t, fmt.Sprintf("d%d", i)), Count: 1}
		}
		delta := rapid.SampledFrom([]float64{0.01, 0.1}).Draw(t, "delta")
		res, err := UniformPrior(ms, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		var p1 Hypothesis
		n := int64(1)<<k - 1
		for mask := 1; mask < 1<<k; mask++ {
			b := make(Vector, k)
			for i := range b {
				b[i] = mask>>i&1 == 1
			}
			p1 = append(p1, Tuple{B: b, W: big.NewRat(1, n)})
		}
		a, b := viewDist(ms, Point(make(Vector, k))), viewDist(ms, p1)
		for _, e := range []float64{res.Epsilon, res.Theorem3} {
			if hs := hockey(a, b, e); hs > delta*(1+1e-9)+1e-12 {
				t.Fatalf("%+v: hockey-stick at ε = %v is %v > δ", res, e, hs)
			}
		}
		if res.Epsilon > res.WorstCase || res.Epsilon > res.Theorem3 {
			t.Fatalf("ε = %v above min(Thm 3 %v, worst case %v)", res.Epsilon, res.Theorem3, res.WorstCase)
		}
	})
}

// The 2^−64 tail bound: k = 100 steps, all components composed one by one in the test
// (compose.Epsilon of {M} ∪ (k−i)·S_½(M)) and combined in float64; UniformPrior must be
// at or above, within 1e-9 relative (the bound's share of the weight is 2^−64).
func TestUniformPriorTail(t *testing.T) {
	const k, eps, delta = 100, 0.1, 1e-6
	m := compose.Mech{Epsilon: eps, Count: 1}
	h := half(m)
	s := 0.0
	for i := 1; i <= k; i++ {
		ms := []compose.Mech{m}
		if k-i > 0 {
			ms = append(ms, compose.Mech{Epsilon: h.Epsilon, Count: int64(k - i)})
		}
		r, err := compose.Epsilon(ms, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		s += math.Ldexp(1, -i) * math.Exp(r.Epsilon)
	}
	want := math.Log(s / (1 - math.Ldexp(1, -k)))
	got, err := UniformPrior([]compose.Mech{{Epsilon: eps, Count: k}}, delta, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Theorem3 < want*(1-1e-12) || got.Theorem3 > want*(1+1e-9) {
		t.Errorf("Thm 3 = %.15g, all components %.15g", got.Theorem3, want)
	}
	if !(got.Epsilon < got.WorstCase) {
		t.Errorf("uniform prior %v not below worst case %v", got.Epsilon, got.WorstCase)
	}
	// Thm 3 with exact composition beats Cor. 6 and eq. (4) here.
	c6, err := Corollary6([]compose.Mech{{Epsilon: eps, Count: k}}, delta, nil)
	if err != nil {
		t.Fatal(err)
	}
	c7, _ := Corollary7(eps, 0, k)
	if !(got.Theorem3 <= c6.Epsilon && c6.Epsilon <= c7.Epsilon) {
		t.Errorf("Thm 3 %v, Cor. 6 %v, Cor. 7 %v: want increasing", got.Theorem3, c6.Epsilon, c7.Epsilon)
	}
}

func TestUniformPriorSingleStep(t *testing.T) {
	// k = 1: U(B \ {0⃗}) is the point 1: the classic guarantee of the step (up to the
	// 1e-12 relative the combination is moved up by).
	res, err := UniformPrior([]compose.Mech{{Epsilon: 0.7, Delta: 1e-4, Count: 1}}, 1e-3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Theorem3 < res.WorstCase || res.Theorem3 > res.WorstCase*(1+2e-12) {
		t.Errorf("k = 1: Thm 3 %v, classic %v", res.Theorem3, res.WorstCase)
	}
}

func TestSubsample(t *testing.T) {
	m := compose.Mech{Epsilon: 1, Delta: 1e-5, Count: 3}
	s, err := Subsample(m, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	// e^ε' = (1 + e)/2 exactly; δ' = δ/2 exactly.
	if want := math.Log((1 + math.E) / 2); s.Epsilon < want || s.Epsilon > want*(1+2e-12) || s.Delta != 5e-6 || s.Count != 3 {
		t.Errorf("S_½ = %v, want (%v, 5e-6) × 3", s, want)
	}
	if s1, _ := Subsample(m, 1); s1 != m {
		t.Errorf("q = 1 changed the mechanism: %v", s1)
	}
	for _, q := range []float64{0, -0.5, 1.5, math.NaN()} {
		if _, err := Subsample(m, q); !isParamError(err) {
			t.Errorf("q = %v: err = %v, want *dpkit.ParamError", q, err)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		e := rapid.Float64Range(0, 50).Draw(t, "eps")
		q1 := rapid.Float64Range(1e-6, 1).Draw(t, "q1")
		q2 := rapid.Float64Range(q1, 1).Draw(t, "q2")
		a, _ := Subsample(compose.Mech{Epsilon: e, Count: 1}, q1)
		b, _ := Subsample(compose.Mech{Epsilon: e, Count: 1}, q2)
		if a.Epsilon > b.Epsilon*(1+1e-11) || b.Epsilon > e*(1+1e-11) {
			t.Fatalf("ε'(q1=%v) = %v, ε'(q2=%v) = %v, ε = %v: want ordered", q1, a.Epsilon, q2, b.Epsilon, e)
		}
	})
}

func TestUniformErrors(t *testing.T) {
	if _, err := UniformPrior(nil, 1e-6, nil); !isParamError(err) {
		t.Errorf("no steps: %v", err)
	}
	if _, err := UniformPrior([]compose.Mech{{Epsilon: 1, Count: 2}}, -1, nil); !isParamError(err) {
		t.Errorf("negative delta: %v", err)
	}
	_, err := UniformPrior([]compose.Mech{{Epsilon: 1, Delta: 0.1, Count: 2}}, 0.01, nil)
	if !errors.Is(err, dpkit.ErrInfeasible) {
		t.Errorf("δ below the floor: %v, want infeasible", err)
	}
	_, err = Corollary6([]compose.Mech{{Epsilon: 1, Delta: 0.1, Count: 2}}, 0.01, nil)
	if !errors.Is(err, dpkit.ErrInfeasible) {
		t.Errorf("Cor. 6 δ below a step's δ: %v, want infeasible", err)
	}
}
