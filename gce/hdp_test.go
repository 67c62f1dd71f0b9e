package gce

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// RefineTuples by hand (Alg. 3 with FIFO queues, exact rationals):
//
//	T0 = [(00, 1/2), (11, 1/2)], T1 = [(01, 1/3), (10, 2/3)]
//	1. (00,1/2) vs (01,1/3): match 1/3, queue (00,1/6)   T0 = [(11,1/2), (00,1/6)]
//	2. (11,1/2) vs (10,2/3): match 1/2, queue (10,1/6)   T1 = [(10,1/6)]
//	3. (00,1/6) vs (10,1/6): match 1/6, nothing left
func TestRefineTuplesByHand(t *testing.T) {
	t0 := []Tuple{{vec("00"), rat("1/2")}, {vec("11"), rat("1/2")}}
	t1 := []Tuple{{vec("01"), rat("1/3")}, {vec("10"), rat("2/3")}}
	u0, u1, err := RefineTuples(t0, t1)
	if err != nil {
		t.Fatal(err)
	}
	want0 := []string{"00 1/3", "11 1/2", "00 1/6"}
	want1 := []string{"01 1/3", "10 1/2", "10 1/6"}
	if got := tupleText(u0); !slices.Equal(got, want0) {
		t.Errorf("U0 = %v, want %v", got, want0)
	}
	if got := tupleText(u1); !slices.Equal(got, want1) {
		t.Errorf("U1 = %v, want %v", got, want1)
	}
	// Inputs unchanged.
	if t0[0].W.Cmp(rat("1/2")) != 0 || t1[1].W.Cmp(rat("2/3")) != 0 {
		t.Errorf("inputs modified: %v %v", tupleText(t0), tupleText(t1))
	}
}

func tupleText(ts []Tuple) []string {
	var s []string
	for _, t := range ts {
		s = append(s, t.B.String()+" "+t.W.RatString())
	}
	return s
}

func TestRefineTuplesErrors(t *testing.T) {
	ok := []Tuple{{vec("0"), rat("1")}}
	for name, tc := range map[string][2][]Tuple{
		"unequal totals": {ok, {{vec("1"), rat("1/2")}}},
		"zero weight":    {{{vec("0"), rat("0")}, {vec("1"), rat("1")}}, ok},
		"negative":       {ok, {{vec("0"), rat("-1")}, {vec("1"), rat("2")}}},
		"nil weight":     {ok, {{vec("1"), nil}}},
	} {
		if _, _, err := RefineTuples(tc[0], tc[1]); !isParamError(err) {
			t.Errorf("%s: err = %v, want *dpkit.ParamError", name, err)
		}
	}
}

func isParamError(err error) bool {
	var pe *dpkit.ParamError
	return errors.As(err, &pe)
}

// genHypothesis draws a distribution over distinct vectors of length k with rational
// weights n_i / Σ n.
func genHypothesis(t *rapid.T, k int, label string) Hypothesis {
	n := rapid.IntRange(1, min(5, 1<<k)).Draw(t, label+"-support")
	codes := rapid.SliceOfNDistinct(rapid.IntRange(0, 1<<k-1), n, n, rapid.ID[int]).Draw(t, label+"-vectors")
	nums := rapid.SliceOfN(rapid.Int64Range(1, 30), n, n).Draw(t, label+"-weights")
	var total int64
	for _, x := range nums {
		total += x
	}
	h := make(Hypothesis, n)
	for i, c := range codes {
		b := make(Vector, k)
		for j := range b {
			b[j] = c>>j&1 == 1
		}
		h[i] = Tuple{B: b, W: big.NewRat(nums[i], total)}
	}
	return h
}

// Property: RefineTuples returns a coupling: equal matched weights, both marginals
// preserved exactly, at most |T0|+|T1|−1 pairs.
func TestRefineTuplesCoupling(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 4).Draw(t, "k")
		p0, p1 := genHypothesis(t, k, "p0"), genHypothesis(t, k, "p1")
		u0, u1, err := RefineTuples(p0, p1)
		if err != nil {
			t.Fatal(err)
		}
		if len(u0) != len(u1) || len(u0) > len(p0)+len(p1)-1 {
			t.Fatalf("lengths %d, %d for inputs %d, %d", len(u0), len(u1), len(p0), len(p1))
		}
		for i := range u0 {
			if u0[i].W.Cmp(u1[i].W) != 0 || u0[i].W.Sign() <= 0 {
				t.Fatalf("pair %d: weights %s, %s", i, u0[i].W.RatString(), u1[i].W.RatString())
			}
		}
		for side, pair := range [][2][]Tuple{{p0, u0}, {p1, u1}} {
			m := map[string]*big.Rat{}
			for _, u := range pair[1] {
				if m[u.B.String()] == nil {
					m[u.B.String()] = new(big.Rat)
				}
				m[u.B.String()].Add(m[u.B.String()], u.W)
			}
			if len(m) != len(pair[0]) {
				t.Fatalf("side %d: %d vectors, want %d", side, len(m), len(pair[0]))
			}
			for _, p := range pair[0] {
				if got := m[p.B.String()]; got == nil || got.Cmp(p.W) != 0 {
					t.Fatalf("side %d: marginal of %s = %v, want %s", side, p.B, got, p.W.RatString())
				}
			}
		}
	})
}

// docs/errata.md, HBW item 1: two randomized-response steps with ε = 1 and 10,
// p0 = ½[(1,0)] + ½[(0,1)], p1 = ½[(0,0)] + ½[(0,1)]. RefineTuples matches (1,0)–(0,0)
// (differ at step 1: ε = 1) and (0,1)–(0,1) (identical: ε = 0); the paper's recipe
// ln(½e¹ + ½e⁰) = 0.620 is below the true ε at δ = 0, 0.99997 (computed here by
// enumerating the 16 views).
func TestErrataCounterexample(t *testing.T) {
	steps := steps1(compose.Mech{Epsilon: 1}, compose.Mech{Epsilon: 10})
	p0 := Hypothesis{{vec("10"), rat("1/2")}, {vec("01"), rat("1/2")}}
	p1 := Hypothesis{{vec("00"), rat("1/2")}, {vec("01"), rat("1/2")}}

	truth := trueEpsilon(viewDist(steps, p0), viewDist(steps, p1), 0)
	if truth < 0.99997 || truth > 1 {
		t.Fatalf("brute-force ε = %v, want in [0.99997, 1] (errata)", truth)
	}

	res, err := HDP(steps, p0, p1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The paper's recipe from the same coupling.
	recipe := 0.0
	for _, p := range res.Pairs {
		w, _ := p.W.Float64()
		recipe += w * math.Exp(p.Epsilon)
	}
	recipe = math.Log(recipe)
	if math.Abs(recipe-0.6201) > 1e-4 {
		t.Errorf("paper's recipe = %v, want 0.620 (errata)", recipe)
	}
	if recipe >= truth {
		t.Errorf("recipe %v is not below the truth %v: the counterexample does not show", recipe, truth)
	}
	if res.Rule != General || res.Epsilon < truth {
		t.Errorf("HDP = %+v, want the general rule and ε ≥ %v", res, truth)
	}
	// The general rule gives max ε_i = 1 here (δ = 0), within compose's rounding.
	if math.Abs(res.Epsilon-1) > 1e-9 {
		t.Errorf("HDP ε = %v, want 1 within 1e-9", res.Epsilon)
	}
}

// Brute-force check of HDP: random canonical (ε, δ) steps (k ≤ 4) and random hypotheses;
// the reported (ε, δ) must bound both hockey-stick divergences of the mixtures, computed
// by enumerating all 4^k views. Tolerance: the enumeration's float64 rounding,
// relative 1e-9 of δ plus 1e-12 absolute. A pair of point masses must moreover be tight:
// it is exactly the composition of the differing steps (within 1e-6 relative, the
// bisection and compose agreeing to far better than that).
func TestHDPBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 4).Draw(t, "k")
		steps := make([]compose.Mech, k)
		for i := range steps {
			steps[i] = compose.Mech{
				Epsilon: rapid.Float64Range(0, 2).Draw(t, fmt.Sprintf("eps%d", i)),
				Delta:   rapid.SampledFrom([]float64{0, 0, 1e-3, 0.02}).Draw(t, fmt.Sprintf("delta%d", i)),
				Count:   1,
			}
		}
		p0, p1 := genHypothesis(t, k, "p0"), genHypothesis(t, k, "p1")
		delta := rapid.SampledFrom([]float64{0.05, 0.1, 0.3}).Draw(t, "delta")
		res, err := HDP(steps, p0, p1, delta, nil)
		if errors.Is(err, dpkit.ErrInfeasible) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		a, b := viewDist(steps, p0), viewDist(steps, p1)
		if hs := hockey(a, b, res.Epsilon); hs > delta*(1+1e-9)+1e-12 {
			t.Fatalf("HDP %+v: hockey-stick at ε is %v > δ = %v", res, hs, delta)
		}
		if len(p0) == 1 && len(p1) == 1 {
			truth := trueEpsilon(a, b, delta)
			if math.Abs(res.Epsilon-truth) > 1e-6*math.Max(truth, 1e-3) {
				t.Fatalf("point masses %s, %s: ε = %v, brute force %v", p0[0].B, p1[0].B, res.Epsilon, truth)
			}
		}
	})
}

func TestHDPRules(t *testing.T) {
	steps := []compose.Mech{{Epsilon: 0.5, Count: 3}}
	zero := Point(vec("000"))
	// p1 uniform over the three vectors with one 1: every pair differs at one step.
	p1 := Hypothesis{{vec("100"), rat("1/3")}, {vec("010"), rat("1/3")}, {vec("001"), rat("1/3")}}
	res, err := HDP(steps, zero, p1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Every pair has ε = 0.5 at δ = 0: both rules give 0.5.
	if math.Abs(res.Epsilon-0.5) > 1e-9 || len(res.Pairs) != 3 {
		t.Errorf("HDP = %+v, want ε = 0.5 over 3 pairs", res)
	}
	// p1 = ½[000] + ½[111] against the point mass 000: pairs (000,000) ε 0 and
	// (000,111) ε 1.5 at δ = 0. Point-mass rule: ln(½ + ½e^1.5) = 1.0744; general: 1.5.
	res, err = HDP(steps, zero, Hypothesis{{vec("000"), rat("1/2")}, {vec("111"), rat("1/2")}}, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := math.Log(0.5 + 0.5*math.Exp(1.5))
	if res.Rule != PointMass || res.Epsilon < want || res.Epsilon > want*(1+1e-9) {
		t.Errorf("HDP = %+v, want point-mass ε = %v", res, want)
	}
	// Identical hypotheses: ε = 0 at any δ.
	res, err = HDP(steps, p1, p1, 0, nil)
	if err != nil || res.Epsilon != 0 {
		t.Errorf("identical hypotheses: %+v, %v; want ε = 0", res, err)
	}
}

func TestHDPErrors(t *testing.T) {
	steps := []compose.Mech{{Epsilon: 1, Count: 2}}
	good := Point(vec("00"))
	for name, tc := range map[string]struct {
		ms     []compose.Mech
		p0, p1 Hypothesis
		delta  float64
	}{
		"nan delta":    {steps, good, good, math.NaN()},
		"delta > 1":    {steps, good, good, 1.5},
		"no steps":     {nil, good, good, 0},
		"bad epsilon":  {[]compose.Mech{{Epsilon: math.Inf(1), Count: 2}}, good, good, 0},
		"short vector": {steps, good, Point(vec("0")), 0},
		"sum below 1":  {steps, good, Hypothesis{{vec("01"), rat("1/2")}}, 0},
		"duplicate":    {steps, Hypothesis{{vec("01"), rat("1/2")}, {vec("01"), rat("1/2")}}, good, 0},
		"empty":        {steps, Hypothesis{}, good, 0},
	} {
		if _, err := HDP(tc.ms, tc.p0, tc.p1, tc.delta, nil); !isParamError(err) {
			t.Errorf("%s: err = %v, want *dpkit.ParamError", name, err)
		}
	}
	// δ below the floor of the only differing step: infeasible.
	_, err := HDP([]compose.Mech{{Epsilon: 1, Delta: 0.1, Count: 2}}, good, Point(vec("11")), 0.01, nil)
	if !errors.Is(err, dpkit.ErrInfeasible) {
		t.Errorf("err = %v, want infeasible", err)
	}
}

func TestParseVector(t *testing.T) {
	for _, s := range []string{"", "012", "1 0", "abc"} {
		if _, err := ParseVector(s); !isParamError(err) {
			t.Errorf("ParseVector(%q): err = %v, want *dpkit.ParamError", s, err)
		}
	}
	b, err := ParseVector("0110")
	if err != nil || b.String() != "0110" || b.Ones() != 2 || !slices.Equal(Differ(b, vec("1100")), []int{0, 2}) {
		t.Errorf("ParseVector(0110) = %v, %v", b, err)
	}
}
