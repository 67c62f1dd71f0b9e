package mechanism

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"strings"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
)

// partitionCases are parameter sets for the exact and property checks: ordinary ones,
// several keys per unit, δ near 1, tiny and subnormal δ', e^ε' past the float64 range,
// and a small ε' whose recursion is long.
var partitionCases = []PartitionSelectionOptions{
	{Epsilon: 1, Delta: 1e-5, MaxPartitions: 1},
	{Epsilon: math.Log(3), Delta: 1e-6, MaxPartitions: 1},
	{Epsilon: 0.1, Delta: 1e-10, MaxPartitions: 10},
	{Epsilon: 2, Delta: 1e-9, MaxPartitions: 3},
	{Epsilon: 5, Delta: 1e-300, MaxPartitions: 1},
	{Epsilon: 1, Delta: 1e-320, MaxPartitions: 7}, // δ' subnormal
	{Epsilon: 0.5, Delta: 0.3, MaxPartitions: 1},
	{Epsilon: 0.5, Delta: 0.999, MaxPartitions: 1},
	{Epsilon: 40, Delta: 1e-3, MaxPartitions: 1},
	{Epsilon: 800, Delta: 1e-3, MaxPartitions: 1}, // e^ε' overflows float64
	{Epsilon: 1e-3, Delta: 1e-8, MaxPartitions: 1},
}

func newPS(t *testing.T, o PartitionSelectionOptions) *PartitionSelection {
	t.Helper()
	m, err := NewPartitionSelection(o)
	if err != nil {
		t.Fatalf("%+v: %v", o, err)
	}
	return m
}

// TestPartitionSelectionReference compares the keep and drop probabilities with the
// 80-digit evaluation of Theorem 1's recursion in testdata/partition.json
// (testdata/gen_partition.py). Soundness: the sampled keep probability is never above
// the exact π(n) (the drop probability never below 1 − π(n)), up to the reference's
// 30 printed digits. Accuracy: each step rounds at most five operations outward by an
// ulp (e^ε' and e^(−ε') are up to three ulps off, each product and difference one), a
// relative 2^−49 of the step's value; while p < ½ these add up to a relative (n+2)·2^−49
// of p(n). Once the drop probability r is carried, an error made at step j is
// contracted by e^(−ε') per step, but the values it is relative to, r_j·e^(−ε'(n−j)),
// are at most r(n) + δ'/(1 − e^(−ε')) (r − δ' cancels near the end), so the absolute
// error of r(n) is at most (n+2)·2^−49·(r(n) + δ'/(1 − e^(−ε'))).
func TestPartitionSelectionReference(t *testing.T) {
	raw, err := os.ReadFile("testdata/partition.json")
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Cases []struct {
			Name          string
			Epsilon       float64
			Delta         float64
			MaxPartitions int64 `json:"max_partitions"`
			Certain       int64
			Rows          []struct {
				N          int64
				Keep, Drop string
			}
		}
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	parse := func(s string) *big.Float {
		f, _, err := big.ParseFloat(s, 10, 200, big.ToNearestEven)
		if err != nil {
			t.Fatalf("reference value %q: %v", s, err)
		}
		return f
	}
	const refRel = 1e-29 // the reference's 30 significant digits
	for _, c := range ref.Cases {
		m := newPS(t, PartitionSelectionOptions{Epsilon: c.Epsilon, Delta: c.Delta, MaxPartitions: c.MaxPartitions})
		if m.CertainKeep() < c.Certain || m.CertainKeep() > c.Certain+1 {
			t.Errorf("%s: CertainKeep = %d, exact recursion reaches 1 at %d (want that or one more)", c.Name, m.CertainKeep(), c.Certain)
		}
		per := m.PerPartition()
		geo := per.Delta / -math.Expm1(-per.Epsilon) // δ'/(1 − e^(−ε'))
		for _, row := range c.Rows {
			keep, drop := parse(row.Keep), parse(row.Drop)
			tol := 0x1p-49 * float64(row.N+2)
			if keep.Cmp(big.NewFloat(0.5)) < 0 {
				p := m.ProbabilityKeep(row.N)
				k, _ := keep.Float64()
				if p > k*(1+refRel) {
					t.Errorf("%s n=%d: keep %.17g above the exact %s: unsound", c.Name, row.N, p, row.Keep)
				}
				if p < k*(1-tol) {
					t.Errorf("%s n=%d: keep %.17g below the exact %s by more than relative %.2g", c.Name, row.N, p, row.Keep, tol)
				}
				continue
			}
			r := m.DropProbability(row.N)
			d, _ := drop.Float64()
			if r < d*(1-refRel) {
				t.Errorf("%s n=%d: drop %.17g below the exact %s: unsound", c.Name, row.N, r, row.Drop)
			}
			if r > d+tol*(d+geo)+0x1p-1070 {
				t.Errorf("%s n=%d: drop %.17g above the exact %s by more than %.2g·(r + δ'/(1 − e^(−ε')))", c.Name, row.N, r, row.Drop, tol)
			}
		}
	}
}

// expLowerBound returns a lower bound of e^x (x ≥ 0) as a big.Float: a partial sum of
// its Taylor series with every operation rounded toward −∞ (all terms are positive).
func expLowerBound(x float64) *big.Float {
	const prec = 256
	bx := new(big.Float).SetPrec(prec).SetMode(big.ToNegativeInf).SetFloat64(x)
	sum := new(big.Float).SetPrec(prec).SetMode(big.ToNegativeInf).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetMode(big.ToNegativeInf).SetInt64(1)
	for j := int64(1); ; j++ {
		term.Mul(term, bx)
		term.Quo(term, new(big.Float).SetInt64(j))
		if j > int64(3*x)+10 && term.Cmp(new(big.Float).Mul(sum, big.NewFloat(0x1p-250))) < 0 {
			return sum
		}
		sum.Add(sum, term)
	}
}

// TestPartitionSelectionPrivacy checks the privacy claim independently of the code
// that built the table: for every count n from 0 to past CertainKeep, with p the keep
// probabilities actually sampled (p(n) = 1 − DropProbability(n), exact in big.Float)
// and e^ε' replaced by a lower bound (which makes each check harder to pass),
//
//	p(n+1) ≤ e^ε'·p(n) + δ'              and  p(n) ≤ e^ε'·p(n+1) + δ'
//	1 − p(n) ≤ e^ε'·(1 − p(n+1)) + δ'    and  1 − p(n+1) ≤ e^ε'·(1 − p(n)) + δ'
//
// which is (ε', δ')-DP of the one-key selection between neighbouring counts n and
// n+1 (its only outputs are keep and drop). The right-hand sides are rounded toward
// −∞ and the left-hand sides are exact, so a pass is a proof for these parameters.
// It also checks k·ε' ≤ ε and k·δ' ≤ δ exactly (basic composition over the keys).
func TestPartitionSelectionPrivacy(t *testing.T) {
	const prec = 2400 // exact for sums of float64 values and 256-bit products
	newF := func() *big.Float { return new(big.Float).SetPrec(prec).SetMode(big.ToNegativeInf) }
	for _, o := range partitionCases {
		if testing.Short() && o.Epsilon < 0.01 {
			continue
		}
		m := newPS(t, o)
		per := m.PerPartition()
		k := new(big.Float).SetInt64(o.MaxPartitions)
		if newF().Mul(k, big.NewFloat(per.Epsilon)).Cmp(big.NewFloat(o.Epsilon)) > 0 ||
			newF().Mul(k, big.NewFloat(per.Delta)).Cmp(big.NewFloat(o.Delta)) > 0 {
			t.Errorf("%+v: k·(ε', δ') = %d·%v exceeds (ε, δ)", o, o.MaxPartitions, per)
		}
		eLo := expLowerBound(per.Epsilon)
		dP := newF().SetFloat64(per.Delta)
		keep := func(n int64) (p, q *big.Float) { // p(n) and 1 − p(n), exactly
			one := newF().SetInt64(1)
			if pk := m.ProbabilityKeep(n); pk < 0.5 { // exact below ½
				p = newF().SetFloat64(pk)
				return p, newF().Sub(one, p)
			}
			q = newF().SetFloat64(m.DropProbability(n)) // exact from ½ on
			return newF().Sub(one, q), q
		}
		check := func(lhs, rhsP *big.Float) bool { // lhs ≤ eLo·rhsP + δ'
			rhs := newF().Mul(eLo, rhsP)
			rhs.Add(rhs, dP)
			return lhs.Cmp(rhs) <= 0
		}
		pPrev, qPrev := keep(0)
		if pPrev.Sign() != 0 {
			t.Fatalf("%+v: p(0) = %v, want 0", o, pPrev)
		}
		for n := int64(0); n <= m.CertainKeep()+1; n++ {
			p, q := keep(n + 1)
			switch {
			case !check(p, pPrev):
				t.Fatalf("%+v n=%d: p(n+1) > e^ε' p(n) + δ'", o, n)
			case !check(pPrev, p):
				t.Fatalf("%+v n=%d: p(n) > e^ε' p(n+1) + δ'", o, n)
			case !check(qPrev, q):
				t.Fatalf("%+v n=%d: 1 − p(n) > e^ε' (1 − p(n+1)) + δ'", o, n)
			case !check(q, qPrev):
				t.Fatalf("%+v n=%d: 1 − p(n+1) > e^ε' (1 − p(n)) + δ'", o, n)
			}
			pPrev, qPrev = p, q
		}
	}
}

// TestPartitionSelectionCatchesBrokenRule makes sure the privacy check above can fail:
// the same check on π computed with δ' doubled after the first step, or with e^ε'
// rounded up instead of down, finds a violation.
func TestPartitionSelectionCatchesBrokenRule(t *testing.T) {
	m := newPS(t, PartitionSelectionOptions{Epsilon: 1, Delta: 1e-5, MaxPartitions: 1})
	eLo := expLowerBound(1)
	violates := func(p []float64) bool {
		for n := 0; n+1 < len(p); n++ {
			lhs := new(big.Float).SetPrec(2400).SetFloat64(p[n+1])
			rhs := new(big.Float).SetPrec(2400).SetMode(big.ToNegativeInf).Mul(eLo, big.NewFloat(p[n]))
			rhs.Add(rhs, big.NewFloat(1e-5))
			if lhs.Cmp(rhs) > 0 {
				return true
			}
		}
		return false
	}
	var good, loose, upward []float64
	for n := int64(0); n < 8; n++ {
		good = append(good, m.ProbabilityKeep(n))
	}
	loose = append([]float64{0, 1e-5}, good[2:]...)
	loose[2] = math.E*1e-5 + 2e-5 // δ' doubled at n = 2
	upward = []float64{0, 1e-5, math.Nextafter(math.Nextafter(math.E*1e-5+1e-5, 1), 1)}
	if violates(good) {
		t.Fatal("the mechanism's own table fails the check")
	}
	if !violates(loose) || !violates(upward) {
		t.Fatal("a keep probability above the recursion passed the check: the check cannot fail")
	}
}

// TestPartitionSelectionSingleUnit: a key held by one unit is kept with probability
// exactly δ' = δ/k (from the table), and empirically: over T draws the number of keeps
// lies in the two-sided Clopper–Pearson interval at level 10^−6 around it
// (false-rejection probability 10^−6 per case). The same for a count in the middle of
// the recursion and one just below CertainKeep.
func TestPartitionSelectionSingleUnit(t *testing.T) {
	trials := 1_000_000
	if testing.Short() {
		trials = 100_000
	}
	const alpha = 1e-6
	src := noise.Seeded(22)
	for _, o := range []PartitionSelectionOptions{
		{Epsilon: 1, Delta: 1e-3, MaxPartitions: 1},
		{Epsilon: 1, Delta: 1e-2, MaxPartitions: 4},
	} {
		m := newPS(t, o)
		if got, want := m.ProbabilityKeep(1), o.Delta/float64(o.MaxPartitions); got != want {
			t.Errorf("%+v: ProbabilityKeep(1) = %g, want δ/k = %g", o, got, want)
		}
		mid := int64(1)
		for m.ProbabilityKeep(mid) < 0.3 {
			mid++
		}
		for _, n := range []int64{1, mid, m.CertainKeep() - 1} {
			p := m.ProbabilityKeep(n)
			kept := 0
			for range trials {
				if m.Keep(n, src) {
					kept++
				}
			}
			lo, hi := clopperPearson(kept, trials, alpha)
			if p < lo || p > hi {
				t.Errorf("%+v n=%d: kept %d of %d, 1−10^−6 interval [%.5g, %.5g] excludes the table's %.5g", o, n, kept, trials, lo, hi, p)
			}
		}
	}
}

// TestPartitionSelectionShape: monotone in the unit count, 0 at 0 units, 1 from
// CertainKeep on, Keep deterministic at both ends, thousands of units kept for sure.
func TestPartitionSelectionShape(t *testing.T) {
	src := noise.Seeded(1)
	for _, o := range partitionCases {
		m := newPS(t, o)
		prevP, prevR := 0.0, 1.0
		for n := int64(-2); n <= m.CertainKeep()+3; n++ {
			p, r := m.ProbabilityKeep(n), m.DropProbability(n)
			if p < prevP || r > prevR {
				t.Fatalf("%+v: not monotone at n=%d: keep %g after %g, drop %g after %g", o, n, p, prevP, r, prevR)
			}
			if (n >= m.CertainKeep()) != (p == 1 && r == 0) {
				t.Fatalf("%+v n=%d: keep %g, drop %g, CertainKeep %d", o, n, p, r, m.CertainKeep())
			}
			prevP, prevR = p, r
		}
		if m.Keep(0, src) || m.Keep(-1, src) || !m.Keep(m.CertainKeep(), src) || !m.Keep(math.MaxInt64, src) {
			t.Errorf("%+v: Keep wrong at 0, −1, CertainKeep or MaxInt64", o)
		}
	}
	// Thousands of units: kept with certainty at ordinary parameters, even with ten
	// keys per unit (ε' = 0.01).
	for _, c := range []struct {
		o PartitionSelectionOptions
		n int64
	}{
		{PartitionSelectionOptions{Epsilon: 1, Delta: 1e-5, MaxPartitions: 1}, 1000},
		{PartitionSelectionOptions{Epsilon: 1, Delta: 1e-10, MaxPartitions: 10}, 5000},
	} {
		if p := newPS(t, c.o).ProbabilityKeep(c.n); p != 1 {
			t.Errorf("%+v: %d units kept with probability %g, want 1", c.o, c.n, p)
		}
	}
}

// TestPartitionSelectionStride: past 2^20 steps the table stores every stride-th value
// and recomputes the others; they must equal the values of one sequential pass.
func TestPartitionSelectionStride(t *testing.T) {
	if testing.Short() {
		t.Skip("3·10^6-step table")
	}
	m := newPS(t, PartitionSelectionOptions{Epsilon: 1e-5, Delta: 1e-12, MaxPartitions: 1})
	if m.stride < 2 {
		t.Fatalf("stride %d: the case no longer exercises the strided table", m.stride)
	}
	st := psState{}
	for n := int64(0); n <= m.CertainKeep(); n++ {
		if got := m.state(n); got != st {
			t.Fatalf("n=%d: looked up %+v, sequential %+v", n, got, st)
		}
		if n < m.CertainKeep() {
			st = m.step(st)
		}
	}
}

func TestPartitionSelectionRefuses(t *testing.T) {
	for _, c := range []struct {
		o    PartitionSelectionOptions
		name string
		msg  string
	}{
		{PartitionSelectionOptions{Epsilon: 1, Delta: 0, MaxPartitions: 1}, "delta", "needs δ > 0"},
		{PartitionSelectionOptions{Epsilon: 1, Delta: 1, MaxPartitions: 1}, "delta", "in (0, 1)"},
		{PartitionSelectionOptions{Epsilon: 1, Delta: math.NaN(), MaxPartitions: 1}, "delta", "in (0, 1)"},
		{PartitionSelectionOptions{Epsilon: 1, Delta: -1e-9, MaxPartitions: 1}, "delta", "in (0, 1)"},
		{PartitionSelectionOptions{Epsilon: 0, Delta: 1e-6, MaxPartitions: 1}, "epsilon", "> 0"},
		{PartitionSelectionOptions{Epsilon: math.Inf(1), Delta: 1e-6, MaxPartitions: 1}, "epsilon", "> 0"},
		{PartitionSelectionOptions{Epsilon: math.NaN(), Delta: 1e-6, MaxPartitions: 1}, "epsilon", "> 0"},
		{PartitionSelectionOptions{Epsilon: 1, Delta: 1e-6, MaxPartitions: 0}, "max_partitions", "[1, 2^40]"},
		{PartitionSelectionOptions{Epsilon: 1, Delta: 1e-6, MaxPartitions: 1 << 41}, "max_partitions", "[1, 2^40]"},
		{PartitionSelectionOptions{Epsilon: 1e-9, Delta: 1e-6, MaxPartitions: 1}, "epsilon", "2^24 steps"},
		{PartitionSelectionOptions{Epsilon: 1, Delta: 1e-6, MaxPartitions: 1 << 30}, "epsilon", "2^24 steps"},
	} {
		_, err := NewPartitionSelection(c.o)
		var pe *dpkit.ParamError
		if !errors.As(err, &pe) || pe.Name != c.name || pe.Pkg != "mechanism" || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%+v: error %v, want a mechanism ParamError on %s mentioning %q", c.o, err, c.name, c.msg)
		}
	}
}

func TestPartitionSelectionAccounting(t *testing.T) {
	m := newPS(t, PartitionSelectionOptions{Epsilon: 1, Delta: 1e-6, MaxPartitions: 3})
	if g := m.Guarantee(); g != (dpkit.Budget{Epsilon: 1, Delta: 1e-6}) {
		t.Errorf("Guarantee = %v", g)
	}
	items := m.PLDItems()
	per := m.PerPartition()
	if len(items) != 1 || items[0].Count != 3 || items[0].Mechanism != (pld.EpsilonDelta{Epsilon: per.Epsilon, Delta: per.Delta}) {
		t.Errorf("PLDItems = %+v, want 3 × (%v)", items, per)
	}
	if math.Abs(per.Epsilon-1.0/3) > 1e-16 || math.Abs(per.Delta-1e-6/3) > 1e-22 {
		t.Errorf("PerPartition = %v, want (1/3, 1e-6/3) rounded down", per)
	}
	// Composed by pld, the selection's ε at its δ is at most the guarantee's: the lower
	// end of pld's bracket (≤ the exact value) must not exceed it.
	c, err := pld.Compose(items, &pld.Options{Delta: 1e-6})
	if err != nil {
		t.Fatal(err)
	}
	up, lo, err := c.Epsilon(1e-6)
	if err != nil {
		t.Fatal(err)
	}
	if lo > 1 {
		t.Errorf("3 × (ε', δ') composed: ε at δ = 1e-6 is at least %g > 1 = the guarantee's", lo)
	}
	t.Logf("ε bracket at δ=1e-6: [%g, %g]", lo, up)
	if p, err := m.PLD(); err != nil || p != (pld.EpsilonDelta{Epsilon: 1, Delta: 1e-6}) {
		t.Errorf("PLD = %v, %v", p, err)
	}
	const form = `{"kind":"partition_selection","version":1,"epsilon":1,"delta":0.000001,"max_partitions":3}`
	if got := m.Descriptor().String(); got != form {
		t.Errorf("Descriptor = %s, want %s", got, form)
	}
	var d Descriptor
	if err := json.Unmarshal([]byte(`{"kind":"partition_selection","version":1,"epsilon":1,"delta":0,"max_partitions":3}`), &d); err != nil {
		t.Fatal(err)
	}
	if _, err := FromDescriptor(d); err == nil || !strings.Contains(err.Error(), "needs δ > 0") {
		t.Errorf("a descriptor with delta 0 rebuilt: %v", err)
	}
}

// TestDirectedRounding checks the outward-rounded operations against exact big.Float
// arithmetic on ordinary, tiny, subnormal and huge operands: the result bounds the
// exact value on the stated side and is within one ulp of it.
func TestDirectedRounding(t *testing.T) {
	vals := []float64{0, 5e-324, 1e-310, 0x1p-960, 1e-300, 1e-17, 1e-5, 1.0 / 3, 0.5,
		1 - 0x1p-53, 1, math.E, 1e10, 1e300, math.MaxFloat64}
	exact := func(x float64) *big.Float { return new(big.Float).SetPrec(4200).SetFloat64(x) }
	within := func(got float64, want *big.Float, below bool) bool {
		g := exact(got)
		c := g.Cmp(want)
		if below && c > 0 || !below && c < 0 {
			return false
		}
		// one step further inward must reach the exact value (two steps for results
		// below 2^−900, which are stepped outward without testing the residue)
		if c == 0 {
			return true
		}
		in := got
		for range 1 + btoi(math.Abs(got) < 0x1p-900) {
			if below {
				in = nextUp(in)
			} else {
				in = nextDown(in)
			}
		}
		if math.IsInf(in, 0) {
			return true
		}
		ci := exact(in).Cmp(want)
		return below && ci >= 0 || !below && ci <= 0
	}
	for _, a := range vals {
		for _, b := range vals {
			prod := new(big.Float).SetPrec(4200).Mul(exact(a), exact(b))
			if !math.IsInf(a*b, 0) {
				if !within(rdMul(a, b), prod, true) || !within(ruMul(a, b), prod, false) {
					t.Errorf("%g·%g: rdMul %g, ruMul %g", a, b, rdMul(a, b), ruMul(a, b))
				}
			} else if rdMul(a, b) != math.MaxFloat64 {
				t.Errorf("%g·%g overflows: rdMul = %g, want MaxFloat64", a, b, rdMul(a, b))
			}
			if a+b <= math.MaxFloat64 {
				sum := new(big.Float).SetPrec(4200).Add(exact(a), exact(b))
				diff := new(big.Float).SetPrec(4200).Sub(exact(a), exact(b))
				if !within(rdAdd(a, b), sum, true) || !within(rdSub(a, b), diff, true) || !within(ruSub(a, b), diff, false) {
					t.Errorf("%g±%g: rdAdd %g, rdSub %g, ruSub %g", a, b, rdAdd(a, b), rdSub(a, b), ruSub(a, b))
				}
			}
		}
		for _, k := range []int64{1, 3, 7, 10, 1 << 40} {
			y := rdDiv(a, k)
			ky := new(big.Float).SetPrec(4200).Mul(exact(y), new(big.Float).SetInt64(k))
			kyUp := new(big.Float).SetPrec(4200).Mul(exact(nextUp(y)), new(big.Float).SetInt64(k))
			if ky.Cmp(exact(a)) > 0 || (a > 0 && kyUp.Cmp(exact(a)) <= 0) {
				t.Errorf("rdDiv(%g, %d) = %g is not the largest y with k·y ≤ x", a, k, y)
			}
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func BenchmarkPartitionSelection(b *testing.B) {
	for _, o := range []PartitionSelectionOptions{
		{Epsilon: 1, Delta: 1e-5, MaxPartitions: 1},
		{Epsilon: 0.1, Delta: 1e-10, MaxPartitions: 10},
	} {
		b.Run(fmt.Sprintf("New/eps=%g,k=%d", o.Epsilon, o.MaxPartitions), func(b *testing.B) {
			for b.Loop() {
				if _, err := NewPartitionSelection(o); err != nil {
					b.Fatal(err)
				}
			}
		})
		m, _ := NewPartitionSelection(o)
		src := noise.Secure()
		b.Run(fmt.Sprintf("Keep/eps=%g,k=%d", o.Epsilon, o.MaxPartitions), func(b *testing.B) {
			n := m.CertainKeep() / 2
			for b.Loop() {
				m.Keep(n, src)
			}
		})
	}
}
