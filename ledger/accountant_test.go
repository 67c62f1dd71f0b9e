package ledger

import (
	"errors"
	"math"
	"math/big"
	"testing"

	"pgregory.net/rapid"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
)

// exactSum is an independent exact sum of float64s: big.Float with 4096 bits holds
// any sum of fewer than 2^900 float64 values exactly (exponents span 2^-1074..2^1023).
func exactSum(xs []float64) *big.Float {
	s := new(big.Float).SetPrec(4096)
	for _, x := range xs {
		s.Add(s, new(big.Float).SetPrec(4096).SetFloat64(x))
	}
	return s
}

func costGen() *rapid.Generator[dpkit.Budget] {
	return rapid.Custom(func(t *rapid.T) dpkit.Budget {
		return dpkit.Budget{
			Epsilon: rapid.OneOf(rapid.Float64Range(0, 0.5), rapid.SampledFrom([]float64{0, 0.1, 0.125, 1.0 / 3, 0.2})).Draw(t, "eps"),
			Delta:   rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(0, 1e-7)).Draw(t, "delta"),
		}
	})
}

// TestBasicFilterExact: the basic filter accepts a release iff the exact sums including
// it stay within the total (reference: 4096-bit big.Float sums).
func TestBasicFilterExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		total := dpkit.Budget{Epsilon: rapid.Float64Range(0, 3).Draw(t, "total eps"), Delta: rapid.Float64Range(0, 1e-6).Draw(t, "total delta")}
		acc, err := NewAccountant(total, Policy{Kind: Adaptive, Filter: BasicFilter})
		if err != nil {
			t.Fatal(err)
		}
		st := ZeroStats()
		var es, ds []float64
		for _, c := range rapid.SliceOfN(costGen(), 1, 40).Draw(t, "costs") {
			_, err := acc.Charge(st, c)
			want := exactSum(append(es, c.Epsilon)).Cmp(new(big.Float).SetFloat64(total.Epsilon)) <= 0 &&
				exactSum(append(ds, c.Delta)).Cmp(new(big.Float).SetFloat64(total.Delta)) <= 0
			if (err == nil) != want {
				t.Fatalf("charge %v after %d releases: err %v, want accepted=%v", c, st.Count, err, want)
			}
			if err != nil && !errors.Is(err, ErrBudgetExceeded) {
				t.Fatalf("refusal %v does not match ErrBudgetExceeded", err)
			}
			if err == nil {
				st = st.Add(c)
				es, ds = append(es, c.Epsilon), append(ds, c.Delta)
			}
		}
		checkRemaining(t, acc, st, costGen().Draw(t, "probe"))
	})
}

// checkRemaining: Remaining(c).Releases equals the number of c-releases actually
// accepted one after another (simulated up to 200), and NextEpsilon is accepted while
// the next float64 above it is refused.
func checkRemaining(t *rapid.T, acc Accountant, st Stats, c dpkit.Budget) {
	r := acc.Remaining(st, c)
	n, s := int64(0), st
	for ; n < 200; n++ {
		if _, err := acc.Charge(s, c); err != nil {
			break
		}
		ch, _ := acc.Charge(s, c)
		s = s.Add(ch)
	}
	if n < 200 && r.Releases != n || n == 200 && r.Releases < 200 {
		t.Fatalf("Remaining(%v).Releases = %d, simulation accepted %d", c, r.Releases, n)
	}
	_, err := acc.Charge(st, dpkit.Budget{Epsilon: 0, Delta: c.Delta})
	if r.NextAllowed != (err == nil) {
		t.Fatalf("NextAllowed = %v but a (0, %g) release: %v", r.NextAllowed, c.Delta, err)
	}
	if !r.NextAllowed {
		return
	}
	if _, err := acc.Charge(st, dpkit.Budget{Epsilon: r.NextEpsilon, Delta: c.Delta}); err != nil {
		t.Fatalf("NextEpsilon %v refused: %v", r.NextEpsilon, err)
	}
	if _, err := acc.Charge(st, dpkit.Budget{Epsilon: math.Nextafter(r.NextEpsilon, math.Inf(1)), Delta: c.Delta}); err == nil {
		t.Fatalf("one ulp above NextEpsilon %v accepted", r.NextEpsilon)
	}
}

// TestAdvancedFilterProperties: acceptance is monotone (a cheaper release is accepted
// whenever a dearer one is), Remaining matches simulation, and the advanced filter
// agrees with the closed-form rule evaluated in 512-bit arithmetic away from ties.
func TestAdvancedFilterProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		total := dpkit.Budget{Epsilon: rapid.Float64Range(0.01, 5).Draw(t, "total eps"), Delta: rapid.Float64Range(1e-12, 1e-3).Draw(t, "total delta")}
		fd := total.Delta * rapid.Float64Range(0.01, 1).Draw(t, "share")
		acc, err := NewAccountant(total, Policy{Kind: Adaptive, Filter: AdvancedFilter, FilterDelta: fd})
		if err != nil {
			t.Fatal(err)
		}
		a := acc.(*advancedAccountant)
		st := ZeroStats()
		for _, c := range rapid.SliceOfN(costGen(), 1, 30).Draw(t, "costs") {
			_, err := acc.Charge(st, c)
			cheaper := dpkit.Budget{Epsilon: c.Epsilon / 2, Delta: c.Delta / 2}
			if _, err2 := acc.Charge(st, cheaper); err == nil && err2 != nil {
				t.Fatalf("%v accepted but the cheaper %v refused", c, cheaper)
			}
			// Independent evaluation of sqrt(2 ln(1/δ') V) + V/2 ≤ ε with V, D exact.
			v, d := after(st, c, 1)
			const prec = 512
			vf := new(big.Float).SetPrec(prec).SetRat(v)
			lhs := new(big.Float).SetPrec(prec).Mul(vf, new(big.Float).SetPrec(prec).SetFloat64(-2*math.Log(fd)))
			lhs.Sqrt(lhs)
			lhs.Add(lhs, new(big.Float).SetPrec(prec).Quo(vf, new(big.Float).SetInt64(2)))
			gap, _ := new(big.Float).Sub(lhs, new(big.Float).SetFloat64(total.Epsilon)).Float64()
			dOK := d.Cmp(a.delta2) <= 0
			if math.Abs(gap) > 1e-12*total.Epsilon || !dOK { // away from the boundary (ln's ulp)
				if want := gap <= 0 && dOK; (err == nil) != want {
					t.Fatalf("charge %v: err %v, closed form says accepted=%v (gap %g)", c, err, want, gap)
				}
			}
			if err == nil {
				st = st.Add(c)
			}
		}
		checkRemaining(t, acc, st, costGen().Draw(t, "probe"))
	})
}

// TestAdvancedFilterSpentBeforeReleases: an advanced-filter budget reports (0, 0) spent
// until a release costs something (issue 25: it used to report δ' spent, equal to the
// total δ when --filter-delta is the whole of it), and δ' + Σδ from the first one on.
func TestAdvancedFilterSpentBeforeReleases(t *testing.T) {
	total := dpkit.Budget{Epsilon: 1, Delta: 1e-6}
	acc, err := NewAccountant(total, Policy{Kind: Adaptive, Filter: AdvancedFilter, FilterDelta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	st := ZeroStats()
	for _, c := range []dpkit.Budget{{}, {Epsilon: 0, Delta: 0}} { // free releases reveal nothing
		eps, delta, err := acc.Spent(st)
		if err != nil || eps != 0 || delta != 0 {
			t.Fatalf("after %d free releases: spent (%v, %v, %v), want (0, 0)", st.Count, eps, delta, err)
		}
		st = st.Add(c)
	}
	st = st.Add(dpkit.Budget{Epsilon: 0.01})
	eps, delta, err := acc.Spent(st)
	if err != nil || !(eps > 0.01) || delta < 1e-6 {
		t.Errorf("after one release of ε = 0.01: spent (%v, %v, %v), want ε above 0.01 and δ' = 1e-6", eps, delta, err)
	}
}

// TestFixedAndPlanRemaining: Remaining matches simulation for fixed and plan budgets.
func TestFixedAndPlanRemaining(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		total := dpkit.Budget{Epsilon: rapid.Float64Range(0.1, 3).Draw(t, "total eps"), Delta: rapid.Float64Range(0, 1e-5).Draw(t, "total delta")}
		var p Policy
		if rapid.Bool().Draw(t, "fixed") {
			p = Policy{Kind: Fixed, Releases: rapid.Int64Range(1, 30).Draw(t, "k")}
		} else {
			plan := rapid.SliceOfN(costGen(), 1, 10).Draw(t, "plan")
			sum := 0.0
			for i := range plan {
				plan[i].Delta = 0
				sum += plan[i].Epsilon
			}
			total.Epsilon = sum * 1.001 // pure plan: fits by basic composition
			p = Policy{Kind: Plan, Plan: plan}
		}
		rp, err := resolve(total, p)
		if err != nil {
			t.Fatal(err)
		}
		acc, err := NewAccountant(total, rp)
		if err != nil {
			t.Fatal(err)
		}
		st := ZeroStats()
		for range rapid.IntRange(0, 12).Draw(t, "spent") {
			r := acc.Remaining(st, dpkit.Budget{})
			if r.Releases == 0 {
				break
			}
			c, err := acc.Charge(st, dpkit.Budget{Epsilon: r.NextEpsilon})
			if err != nil {
				t.Fatal(err)
			}
			st = st.Add(c)
		}
		checkRemaining(t, acc, st, costGen().Draw(t, "probe"))
		if st.Count > 0 {
			// The slots used compose (exactly) within the total.
			e, d, err := acc.Spent(st)
			if err != nil || e > total.Epsilon*(1+1e-9) || d > total.Delta*(1+1e-9)+1e-300 {
				t.Fatalf("spent (%g, %g), %v: above the total %v", e, d, err, total)
			}
		}
	})
}

// TestFixedCalibration: the per-release cost is the exact inverse of the composition:
// pure DP splits the total evenly (k·ε0 = ε: ε0 = 0.1 for k = 10, ε = 1, within the
// bisection's 1e-12), and δ0 follows the δ/(2k) rule.
func TestFixedCalibration(t *testing.T) {
	p, err := resolve(dpkit.Budget{Epsilon: 1}, Policy{Kind: Fixed, Releases: 10})
	if err != nil {
		t.Fatal(err)
	}
	if e := p.PerRelease.Epsilon; e > 0.1 || e < 0.1*(1-1e-12) || p.PerRelease.Delta != 0 {
		t.Errorf("pure fixed: per release %v, want (0.1, 0) from below within 1e-12", *p.PerRelease)
	}
	p, err = resolve(dpkit.Budget{Epsilon: 1, Delta: 1e-5}, Policy{Kind: Fixed, Releases: 100})
	if err != nil {
		t.Fatal(err)
	}
	if want := 1e-5 / float64(2*100); p.PerRelease.Delta != want { // rounded division; the composition check below is what keeps it sound
		t.Errorf("δ0 = %g, want δ/(2k) = %g", p.PerRelease.Delta, want)
	}
	// Reference (compose.MaxEpsilonPerQuery is the exact inverse): 100 releases of the
	// calibrated cost give δ ≤ 1e-5 at ε = 1; better than basic composition's 0.01.
	r, err := compose.Delta([]compose.Mech{{Epsilon: p.PerRelease.Epsilon, Delta: p.PerRelease.Delta, Count: 100}}, 1, nil)
	if err != nil || r.Delta > 1e-5 || p.PerRelease.Epsilon <= 0.01 {
		t.Errorf("calibrated %v composes to %v, %v", *p.PerRelease, r, err)
	}
	// Infeasible: 10 releases with δ0 = 0.1 cannot fit δ = 0.5 (1 − 0.9^10 = 0.65).
	d0 := 0.1
	if _, err := resolve(dpkit.Budget{Epsilon: 1, Delta: 0.5}, Policy{Kind: Fixed, Releases: 10, ReleaseDelta: &d0}); !errors.Is(err, dpkit.ErrInfeasible) {
		t.Errorf("infeasible fixed: %v", err)
	}
}

// TestStatsEncoding: the storage form round-trips exactly, and malformed values are
// ErrNotLedger.
func TestStatsEncoding(t *testing.T) {
	st := ZeroStats().Add(dpkit.Budget{Epsilon: 0.1, Delta: 1e-300}).Add(dpkit.Budget{Epsilon: math.MaxFloat64, Delta: 5e-324})
	back, err := st.Encode().Decode()
	if err != nil || !back.Equal(st) {
		t.Fatalf("round trip: %+v, %v", back.Encode(), err)
	}
	for _, bad := range []EncodedStats{{-1, "0", "0", "0"}, {0, "x", "0", "0"}, {0, "0", "-1", "0"}, {0, "0", "0", "1/0"}} {
		if _, err := bad.Decode(); !errors.Is(err, ErrNotLedger) {
			t.Errorf("decode %+v: %v", bad, err)
		}
	}
}

// BenchmarkCharge: the decision at 10^5 recorded releases of distinct costs, whose
// exact sums are long rationals (the spend-path work besides the store's reads).
func BenchmarkCharge(b *testing.B) {
	const n = 100_000
	st := ZeroStats()
	for i := range n {
		st = st.Add(dpkit.Budget{Epsilon: 1e-3 * (1 + float64(i)/n), Delta: 1e-12 * (1 + float64(i)/n)})
	}
	enc := st.Encode()
	b.Logf("Σε = %d digits, Σε² = %d digits", len(enc.SumEpsilon), len(enc.SumEpsilonSq))
	total := dpkit.Budget{Epsilon: 1000, Delta: 1e-5}
	for _, p := range []Policy{{Kind: Adaptive, Filter: BasicFilter}, {Kind: Adaptive, Filter: AdvancedFilter, FilterDelta: 1e-6}} {
		acc, err := NewAccountant(total, p)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p.String()+"/history=1e5", func(b *testing.B) {
			for b.Loop() {
				s, err := enc.Decode() // as read from the store
				if err != nil {
					b.Fatal(err)
				}
				c, err := acc.Charge(s, dpkit.Budget{Epsilon: 1e-3, Delta: 1e-12})
				if err != nil {
					b.Fatal(err)
				}
				_ = s.Add(c).Encode() // as written back
			}
		})
	}
}
