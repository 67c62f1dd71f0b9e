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

// HBW Example 1 with corrected numbers: 1000 hospitals, each (0.01, 0)-DP, δ = 1e-6.
// Reference: homogeneousEpsilon, the exact curve of docs/errata.md KOV item 1 summed in
// float64 independently of compose and inverted by bisection (relative 1e-13); the
// comparison tolerance is 1e-9 relative, and the 4-digit values are those of the issue.
func TestAtMostHospitals(t *testing.T) {
	ms := []compose.Mech{{Epsilon: 0.01, Count: 1000}}
	un, err := AtMost(ms, 365, Unbounded, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	bd, err := AtMost(ms, 365, Bounded, 1e-6, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got       float64
		k         int
		fourDigit float64
	}{
		{"classic", un.Classic, 1000, 1.3654},
		{"unbounded 365", un.Epsilon, 365, 0.7901},
		{"bounded 730", bd.Epsilon, 730, 1.1513},
	} {
		ref := homogeneousEpsilon(0.01, c.k, 1e-6)
		if c.got < ref*(1-1e-12) || c.got > ref*(1+1e-9) {
			t.Errorf("%s: ε = %.15g, reference %.15g (want at or above, within 1e-9)", c.name, c.got, ref)
		}
		if math.Abs(c.got-c.fourDigit) > 5e-5 {
			t.Errorf("%s: ε = %v, want %v to 4 digits", c.name, c.got, c.fourDigit)
		}
	}
	// Parallel: 365 · 0.01 and 730 · 0.01, where 0.01 is the float64 nearest 0.01 (a
	// little above it): at or above the exact product (math/big), within one ulp.
	for _, c := range []struct {
		got float64
		s   int64
	}{{un.Parallel, 365}, {bd.Parallel, 730}} {
		exact := new(big.Float).SetPrec(200).Mul(big.NewFloat(0.01).SetPrec(200), new(big.Float).SetInt64(c.s))
		if new(big.Float).SetFloat64(c.got).Cmp(exact) < 0 || c.got > math.Nextafter(float64(c.s)*0.01, 10) {
			t.Errorf("parallel for s = %d: %v, want %v rounded up", c.s, c.got, exact)
		}
	}
	if !un.ParallelApplies || math.Abs(un.Parallel-3.65) > 1e-12 || math.Abs(bd.Parallel-7.3) > 1e-12 {
		t.Errorf("parallel = %v (applies %v), bounded %v; want 3.65 and 7.3", un.Parallel, un.ParallelApplies, bd.Parallel)
	}
	if !un.Exhaustive || un.Lower > un.Epsilon || un.Epsilon-un.Lower > 1e-9*un.Epsilon {
		t.Errorf("result %+v: want exhaustive, lower within 1e-9 below", un)
	}
}

// worstByEnumeration composes every subset of exactly size steps (C(k, size) of them)
// and returns the largest ε: the definition of the "at most m" guarantee, evaluated with
// no search at all.
func worstByEnumeration(steps []compose.Mech, size int, delta float64) (float64, error) {
	best := -1.0
	k := len(steps)
	for mask := 0; mask < 1<<k; mask++ {
		var idx []int
		for i := 0; i < k; i++ {
			if mask>>i&1 == 1 {
				idx = append(idx, i)
			}
		}
		if len(idx) != size {
			continue
		}
		r, err := compose.Epsilon(pick(steps, idx), delta, nil)
		if err != nil {
			return 0, err
		}
		best = math.Max(best, r.Epsilon)
	}
	return best, nil
}

// The branch-and-bound search against exhaustive enumeration, on workloads whose kinds
// trade ε against δ (not ordered by dominance). Both use compose for each subset, so
// they agree to rounding: 1e-9 relative.
func TestAtMostMatchesEnumeration(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := int64(rapid.IntRange(1, 4).Draw(t, "m"))
		rel := rapid.SampledFrom([]Relation{Unbounded, Bounded}).Draw(t, "relation")
		delta := rapid.SampledFrom([]float64{1e-2, 2e-3}).Draw(t, "delta")
		// δ_ℓ near delta/size make kinds trade ε against δ: the worst subset is then
		// often not the one with the largest ε values.
		nk := rapid.IntRange(1, 4).Draw(t, "kinds")
		var ms []compose.Mech
		k := 0
		for i := 0; i < nk; i++ {
			m := compose.Mech{
				Epsilon: rapid.Float64Range(0.05, 1).Draw(t, fmt.Sprintf("eps%d", i)),
				Count:   int64(rapid.IntRange(1, 3).Draw(t, fmt.Sprintf("n%d", i))),
			}
			if k+int(m.Count) > 9 {
				break
			}
			k += int(m.Count)
			ms = append(ms, m)
		}
		size := min(int(m), k)
		if rel == Bounded {
			size = min(2*int(m), k)
		}
		for i := range ms {
			f := rapid.SampledFrom([]float64{0, 0.5, 0.9, 0.99}).Draw(t, fmt.Sprintf("f%d", i))
			ms[i].Delta = f * delta / float64(size)
		}
		want, werr := worstByEnumeration(expand(ms), size, delta)
		got, err := AtMost(ms, m, rel, delta, nil)
		if werr != nil || err != nil {
			if errors.Is(werr, dpkit.ErrInfeasible) && errors.Is(err, dpkit.ErrInfeasible) {
				return
			}
			t.Fatalf("enumeration err %v, AtMost err %v", werr, err)
		}
		if got.Epsilon < want*(1-1e-12) || got.Epsilon > want*(1+1e-9)+1e-300 {
			t.Fatalf("AtMost(%v, m=%d, %v) = %v, enumeration %v", ms, m, rel, got.Epsilon, want)
		}
		if !got.Exhaustive {
			t.Fatalf("search not exhaustive on %d steps", k)
		}
	})
}

// A workload where the worst subset is not the one with the largest ε values: one step
// of (0.3, 0) against one of (0.299, 1.9e-3) at δ = 2e-3, m = 1. The first gives
// ε ≈ 0.2963, the second ≈ 0.2986 (its own δ leaves only about 1e-4 for the pure part);
// the test checks this premise with compose before checking AtMost.
func TestAtMostNotGreedy(t *testing.T) {
	a := compose.Mech{Epsilon: 0.3, Count: 1}
	b := compose.Mech{Epsilon: 0.299, Delta: 1.9e-3, Count: 1}
	ea, err := compose.Epsilon([]compose.Mech{a}, 2e-3, nil)
	if err != nil {
		t.Fatal(err)
	}
	eb, err := compose.Epsilon([]compose.Mech{b}, 2e-3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !(eb.Epsilon > ea.Epsilon) {
		t.Fatalf("test premise: %v should exceed %v", eb.Epsilon, ea.Epsilon)
	}
	r, err := AtMost([]compose.Mech{a, b}, 1, Unbounded, 2e-3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Epsilon != eb.Epsilon || len(r.Worst) != 1 || r.Worst[0] != b {
		t.Errorf("AtMost = %v (worst %v), want %v from %v", r.Epsilon, r.Worst, eb.Epsilon, b)
	}
	// Five steps of each, m = 5: all five (0.299, 3.96e-4) steps (≈ 1.4947) beat all
	// five (0.3, 0) (≈ 1.4675): the worst choice is at the far end of the interval of
	// choices the search halves.
	a.Count, b.Count, b.Delta = 5, 5, 3.96e-4
	want, err := worstByCounts([]compose.Mech{a, b}, 5, 2e-3)
	if err != nil {
		t.Fatal(err)
	}
	r, err = AtMost([]compose.Mech{a, b}, 5, Unbounded, 2e-3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Epsilon != want || len(r.Worst) != 1 || r.Worst[0] != b {
		t.Errorf("AtMost = %v (worst %v), want %v from all of %v", r.Epsilon, r.Worst, want, b)
	}
}

// Brute force against the views themselves: for RR/canonical steps (k ≤ 4), the
// guarantee of "at most m" (unbounded) is the largest true ε over point hypotheses c with
// ‖c‖₁ ≤ m against 0⃗, each computed by enumerating all 4^k views.
func TestAtMostBruteForceViews(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.IntRange(1, 4).Draw(t, "k")
		steps := make([]compose.Mech, k)
		for i := range steps {
			steps[i] = compose.Mech{
				Epsilon: rapid.Float64Range(0, 1.5).Draw(t, fmt.Sprintf("eps%d", i)),
				Delta:   rapid.SampledFrom([]float64{0, 1e-3}).Draw(t, fmt.Sprintf("delta%d", i)),
				Count:   1,
			}
		}
		m := rapid.IntRange(1, k).Draw(t, "m")
		delta := 0.05
		got, err := AtMost(steps, int64(m), Unbounded, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		zero := viewDist(steps, Point(make(Vector, k)))
		truth := 0.0
		for mask := 1; mask < 1<<k; mask++ {
			c := make(Vector, k)
			for i := range c {
				c[i] = mask>>i&1 == 1
			}
			if c.Ones() > m {
				continue
			}
			truth = math.Max(truth, trueEpsilon(viewDist(steps, Point(c)), zero, delta))
		}
		if got.Epsilon < truth*(1-1e-9) || got.Epsilon > truth*(1+1e-6)+1e-9 {
			t.Fatalf("AtMost = %v, brute force over views %v", got.Epsilon, truth)
		}
	})
}

// Properties: a constraint never makes ε larger than the classic value; ε grows with m;
// bounded ≥ unbounded; m ≥ k (unbounded) is the classic composition.
func TestAtMostProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var ms []compose.Mech
		for i := range rapid.IntRange(1, 3).Draw(t, "kinds") {
			ms = append(ms, compose.Mech{
				Epsilon: rapid.Float64Range(0.001, 0.5).Draw(t, fmt.Sprintf("eps%d", i)),
				Delta:   rapid.SampledFrom([]float64{0, 1e-8, 1e-7}).Draw(t, fmt.Sprintf("delta%d", i)),
				Count:   rapid.Int64Range(1, 40).Draw(t, fmt.Sprintf("n%d", i)),
			})
		}
		var k int64
		for _, m := range ms {
			k += m.Count
		}
		m := rapid.Int64Range(1, k).Draw(t, "m")
		// Above the largest floor the generator can reach, 1 − (1 − 1e-7)^120 ≈ 1.2e-5, so
		// that every drawn workload is feasible (at 1e-5, 101 × (ε, 1e-7) was not).
		const delta = 1e-4
		un, err := AtMost(ms, m, Unbounded, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		bd, err := AtMost(ms, m, Bounded, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		tol := 1e-9 * un.Classic
		if un.Epsilon > un.Classic+tol || bd.Epsilon > bd.Classic+tol {
			t.Fatalf("constrained ε %v / %v above classic %v", un.Epsilon, bd.Epsilon, un.Classic)
		}
		if bd.Epsilon < un.Epsilon-tol {
			t.Fatalf("bounded %v below unbounded %v", bd.Epsilon, un.Epsilon)
		}
		if m < k {
			next, err := AtMost(ms, m+1, Unbounded, delta, nil)
			if err != nil {
				t.Fatal(err)
			}
			if next.Epsilon < un.Epsilon-tol {
				t.Fatalf("m+1 gives %v below m's %v", next.Epsilon, un.Epsilon)
			}
		}
		all, err := AtMost(ms, k, Unbounded, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(all.Epsilon-all.Classic) > tol {
			t.Fatalf("m = k gives %v, classic %v", all.Epsilon, all.Classic)
		}
		if un.ParallelApplies {
			t.Logf("parallel %v vs GCE %v", un.Parallel, un.Epsilon)
		}
	})
}

// HBW Example 3 with the comparisons of docs/errata.md item 4: steps 1..k1 common,
// k1+1..k2 free-only, k2+1..k3 paid-only; B̃ = {c¹, c², 0⃗}. Unbounded compares c¹ and c²
// with 0⃗; bounded adds c¹ vs c², which differ at k1+1..k3.
func TestAllowedExample3(t *testing.T) {
	// k1 = 2 common steps ε = 0.1, 2 ad steps ε = 0.3, 3 paid steps ε = 0.2.
	ms := []compose.Mech{{Epsilon: 0.1, Count: 2}, {Epsilon: 0.3, Count: 2}, {Epsilon: 0.2, Count: 3}}
	c1, c2 := vec("1111000"), vec("1100111")
	const delta = 1e-6
	comp := func(ms ...compose.Mech) float64 {
		r, err := compose.Epsilon(ms, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.Epsilon
	}
	vsZero1 := comp(compose.Mech{Epsilon: 0.3, Count: 2}, compose.Mech{Epsilon: 0.1, Count: 2})
	vsZero2 := comp(compose.Mech{Epsilon: 0.2, Count: 3}, compose.Mech{Epsilon: 0.1, Count: 2})
	c1c2 := comp(compose.Mech{Epsilon: 0.3, Count: 2}, compose.Mech{Epsilon: 0.2, Count: 3})
	un, err := Allowed(ms, []Vector{c1, c2, vec("0000000")}, Unbounded, delta, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Max(vsZero1, vsZero2); math.Abs(un.Epsilon-want) > 1e-12*want {
		t.Errorf("unbounded ε = %v, want max(%v, %v)", un.Epsilon, vsZero1, vsZero2)
	}
	bd, err := Allowed(ms, []Vector{c1, c2, vec("0000000")}, Bounded, delta, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := math.Max(math.Max(vsZero1, vsZero2), c1c2); math.Abs(bd.Epsilon-want) > 1e-12*want {
		t.Errorf("bounded ε = %v, want %v", bd.Epsilon, want)
	}
	if !(un.Epsilon < un.Classic && bd.Epsilon < bd.Classic) {
		t.Errorf("constraint did not help: %v, %v, classic %v", un.Epsilon, bd.Epsilon, un.Classic)
	}
}

// Allowed with the explicit set {c : ‖c‖₁ ≤ m} agrees with AtMost.
func TestAllowedMatchesAtMost(t *testing.T) {
	ms := []compose.Mech{{Epsilon: 0.4, Count: 2}, {Epsilon: 0.1, Delta: 1e-3, Count: 3}}
	const k, m, delta = 5, 2, 1e-2
	var set []Vector
	for mask := 0; mask < 1<<k; mask++ {
		c := make(Vector, k)
		for i := range c {
			c[i] = mask>>i&1 == 1
		}
		if c.Ones() <= m {
			set = append(set, c)
		}
	}
	for _, rel := range []Relation{Unbounded, Bounded} {
		a, err := Allowed(ms, set, rel, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := AtMost(ms, m, rel, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(a.Epsilon-b.Epsilon) > 1e-12*b.Epsilon {
			t.Errorf("%v: Allowed %v, AtMost %v", rel, a.Epsilon, b.Epsilon)
		}
		if a.ParallelApplies {
			t.Errorf("%v: parallel composition reported for a workload with δ > 0", rel)
		}
	}
}

func TestMembershipErrors(t *testing.T) {
	ms := []compose.Mech{{Epsilon: 0.1, Count: 10}}
	for name, err := range map[string]error{
		"m = 0":        second(AtMost(ms, 0, Unbounded, 1e-6, nil)),
		"nan delta":    second(AtMost(ms, 3, Unbounded, math.NaN(), nil)),
		"relation":     second(AtMost(ms, 3, Relation(7), 1e-6, nil)),
		"no mechs":     second(AtMost(nil, 3, Unbounded, 1e-6, nil)),
		"neg epsilon":  second(AtMost([]compose.Mech{{Epsilon: -1, Count: 1}}, 3, Unbounded, 1e-6, nil)),
		"empty set":    second(Allowed(ms, nil, Unbounded, 1e-6, nil)),
		"short vector": second(Allowed(ms, []Vector{vec("1")}, Unbounded, 1e-6, nil)),
	} {
		if !isParamError(err) {
			t.Errorf("%s: err = %v, want *dpkit.ParamError", name, err)
		}
	}
	// δ below the floor of the worst subset: infeasible; the classic value is +Inf
	// when only the whole workload is infeasible.
	_, err := AtMost([]compose.Mech{{Epsilon: 0.1, Delta: 1e-3, Count: 10}}, 3, Unbounded, 1e-4, nil)
	if !errors.Is(err, dpkit.ErrInfeasible) {
		t.Errorf("err = %v, want infeasible", err)
	}
	r, err := AtMost([]compose.Mech{{Epsilon: 0.1, Delta: 1e-3, Count: 10}}, 3, Unbounded, 5e-3, nil)
	if err != nil || !math.IsInf(r.Classic, 1) {
		t.Errorf("AtMost = %+v, %v; want a result with Classic = +Inf", r, err)
	}
}

func second[T any](_ T, err error) error { return err }

// worstByCounts enumerates every choice of how many steps of each kind to take (a_ℓ ≤
// Count_ℓ, Σ a_ℓ = size) and returns the largest composed ε: the definition again, with
// larger counts than subset enumeration allows.
func worstByCounts(ms []compose.Mech, size int64, delta float64) (float64, error) {
	best := -1.0
	var rec func(i int, left int64, chosen []compose.Mech) error
	rec = func(i int, left int64, chosen []compose.Mech) error {
		if i == len(ms) {
			if left != 0 {
				return nil
			}
			r, err := compose.Epsilon(canonical(chosen), delta, nil)
			if err != nil {
				return err
			}
			best = math.Max(best, r.Epsilon)
			return nil
		}
		for a := int64(0); a <= min(ms[i].Count, left); a++ {
			next := chosen
			if a > 0 {
				next = append(append([]compose.Mech(nil), chosen...), compose.Mech{Epsilon: ms[i].Epsilon, Delta: ms[i].Delta, Count: a})
			}
			if err := rec(i+1, left-a, next); err != nil {
				return err
			}
		}
		return nil
	}
	return best, rec(0, size, nil)
}

// The search against enumeration of count vectors, with up to 3 kinds of up to 12 steps
// (intervals of several choices, so the interval halving is exercised). 1e-9 relative.
func TestAtMostMatchesCountEnumeration(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nk := rapid.IntRange(2, 3).Draw(t, "kinds")
		const delta = 1e-3
		m := rapid.Int64Range(1, 12).Draw(t, "m")
		var ms []compose.Mech
		var k int64
		for i := 0; i < nk; i++ {
			c := rapid.Int64Range(1, 12).Draw(t, fmt.Sprintf("n%d", i))
			ms = append(ms, compose.Mech{
				Epsilon: rapid.Float64Range(0.01, 0.5).Draw(t, fmt.Sprintf("eps%d", i)),
				Delta:   rapid.SampledFrom([]float64{0, 0.5, 0.9, 0.99}).Draw(t, fmt.Sprintf("f%d", i)) * delta / float64(m),
				Count:   c,
			})
			k += c
		}
		size := min(m, k)
		want, werr := worstByCounts(ms, size, delta)
		got, err := AtMost(ms, m, Unbounded, delta, nil)
		if werr != nil || err != nil {
			if errors.Is(werr, dpkit.ErrInfeasible) && errors.Is(err, dpkit.ErrInfeasible) {
				return
			}
			t.Fatalf("enumeration err %v, AtMost err %v", werr, err)
		}
		if got.Epsilon < want*(1-1e-12) || got.Epsilon > want*(1+1e-9) || !got.Exhaustive {
			t.Fatalf("AtMost(%v, m=%d) = %+v, enumeration %v", ms, m, got, want)
		}
	})
}
