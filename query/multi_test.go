package query

import (
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/privtest"
	"github.com/dpkit/dpkit/mechanism"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
	"github.com/dpkit/dpkit/sensitivity"
	"pgregory.net/rapid"
)

// TestMultiAggregateMatchesSingle: a query of several aggregates and grouping columns
// evaluates, group by group, to what single-aggregate ungrouped queries restricted to
// that group (WHERE g = … AND k = …) evaluate to — the reference TestEvaluateMatchesReference
// checks those.
func TestMultiAggregateMatchesSingle(t *testing.T) {
	aggs := []string{"COUNT(*)", "SUM(x)", "AVG(f)", "MEDIAN(x)", "QUANTILE(f, 0.25)", "SUM(f)"}
	rapid.Check(t, func(t *rapid.T) {
		rows := rapid.SliceOfN(genRow(8), 0, 50).Draw(t, "rows")
		tab, err := LoadCSV(strings.NewReader(refCSV(rows)), refSchema(3), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		chosen := rapid.SliceOfNDistinct(rapid.SampledFrom(aggs), 1, 4, func(s string) string { return s }).Draw(t, "aggs")
		groupBy := rapid.SampledFrom([][]string{nil, {"g"}, {"k"}, {"g", "k"}, {"k", "g"}}).Draw(t, "groupBy")
		sql := "SELECT " + strings.Join(chosen, ", ") + " FROM t"
		if groupBy != nil {
			sql += " GROUP BY " + strings.Join(groupBy, ", ")
		}
		p, err := Prepare(tab, "t", sql, sensitivity.AddRemove)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		got := p.Evaluate()
		single := func(agg, where string) float64 {
			q := "SELECT " + agg + " FROM t" + where
			sp, err := Prepare(tab, "t", q, sensitivity.AddRemove)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			return sp.Evaluate().Value
		}
		if groupBy == nil {
			for i, a := range chosen {
				if w := single(a, ""); !sameFloat(got.Values[i], w) {
					t.Fatalf("%s: %s = %v, alone %v", sql, a, got.Values[i], w)
				}
			}
			return
		}
		if want := len(refDomainG) * len(refDomainK) / map[int]int{1: 1, 2: 1}[len(groupBy)]; len(groupBy) == 2 && len(got.Groups) != want {
			t.Fatalf("%s: %d groups, want %d", sql, len(got.Groups), want)
		}
		for _, g := range got.Groups {
			var conds []string
			for j, c := range groupBy {
				if c == "g" {
					conds = append(conds, "g = '"+g.Keys[j]+"'")
				} else {
					conds = append(conds, "k = "+g.Keys[j])
				}
			}
			for i, a := range chosen {
				if w := single(a, " WHERE "+strings.Join(conds, " AND ")); !sameFloat(g.Values[i], w) {
					t.Fatalf("%s: group %v %s = %v, alone %v", sql, g.Keys, a, g.Values[i], w)
				}
			}
		}
	})
}

// TestGroupOrder: the groups of several declared columns are their domains' product,
// first column slowest, in declared order.
func TestGroupOrder(t *testing.T) {
	tab := mustLoad(t, refCSV(nil), refSchema(1))
	p := mustPrepare(t, tab, "SELECT COUNT(*), SUM(x) FROM t GROUP BY g, k")
	if len(p.Keys) != 15 || strings.Join(p.Keys[0], ",") != "a,0" || strings.Join(p.Keys[1], ",") != "a,1" || strings.Join(p.Keys[14], ",") != "c,4" {
		t.Errorf("keys %v", p.Keys)
	}
	a, err := p.Release(dpkit.Budget{Epsilon: 1}, noise.Seeded(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Groups) != 15 || strings.Join(a.Aggregates, "|") != "COUNT(*)|SUM(x)" || len(a.Groups[3].Values) != 2 || len(a.Groups[3].Intervals) != 2 || a.Result != nil || a.CI95 != nil {
		t.Errorf("answer %+v", a)
	}
}

// TestContributionBoundingPerGroup: with MaxGroups 2 and MaxRowsPerGroup 2, a unit keeps
// its two groups of smallest group key and, in each, its two rows of smallest row key —
// the keys of the documented rule (bounding.go), computed here with crypto/md5 from their
// definition, for the zero seed of Evaluate.
func TestContributionBoundingPerGroup(t *testing.T) {
	s := Schema{
		Columns: []Column{{Name: "u", Type: String}, {Name: "g", Type: String}, {Name: "x", Type: Int, Min: 0, Max: 10}},
		Unit:    &PrivacyUnit{Column: "u", MaxRows: 6, MaxGroups: 2, MaxRowsPerGroup: 2},
	}
	csv := "u,g,x\nu1,a,1\nu1,a,2\nu1,b,3\nu1,a,4\nu1,c,5\nu1,b,6\nu2,c,7\nu2,a,8\n"
	tab := mustLoad(t, csv, s)
	p := mustPrepare(t, tab, "SELECT COUNT(*), SUM(x) FROM t GROUP BY g")
	if !p.Selection || p.MaxGroups != 2 || p.MaxRowsPerGroup != 2 {
		t.Fatalf("plan %+v", p)
	}
	md5hex := func(text string) string { d := md5.Sum([]byte(text)); return hex.EncodeToString(d[:]) }
	seed := strings.Repeat("00", 16)
	groupKey := func(g string) string { return md5hex(seed + "/g/2:u1/1:" + g) }
	rowKey := func(g string, x int) string { return md5hex(fmt.Sprintf("%s/r/2:u1/1:%s/%d/1", seed, g, x)) }
	u1 := map[string][]int{"a": {1, 2, 4}, "b": {3, 6}, "c": {5}}
	groups := []string{"a", "b", "c"}
	slices.SortFunc(groups, func(a, b string) int { return strings.Compare(groupKey(a), groupKey(b)) })
	want := map[string][3]float64{"a": {1, 8, 1}, "c": {1, 7, 1}} // u2's rows
	for _, g := range groups[:2] {
		xs := slices.Clone(u1[g])
		slices.SortFunc(xs, func(a, b int) int { return strings.Compare(rowKey(g, a), rowKey(g, b)) })
		w := want[g]
		for _, x := range xs[:min(2, len(xs))] {
			w[0]++
			w[1] += float64(x)
		}
		w[2]++
		want[g] = w
	}
	got := p.Evaluate().Groups
	if len(got) != len(want) {
		t.Fatalf("groups %+v, want %v", got, want)
	}
	for _, g := range got {
		w := want[g.Key]
		if g.Values[0] != w[0] || g.Values[1] != w[1] || float64(g.Units) != w[2] {
			t.Errorf("group %s: count %v sum %v units %d, want %v", g.Key, g.Values[0], g.Values[1], g.Units, w)
		}
	}
	// ℓ1 = min(m, g·c) = 4, ℓ2 = √(2·2²) = √8.
	if c := p.Components[0]; c.L1 != 4 || c.L2 < math.Sqrt(8) || c.L2 > math.Sqrt(8)*(1+1e-15) {
		t.Errorf("count sensitivities %v, %v", c.L1, c.L2)
	}
}

// TestPartitionSelection: keys of a column without a domain are released by partition
// selection: δ = 0 and Gaussian noise are refused; a key held by a single unit is kept
// with probability ≤ δ (measured over 10^5 trials: the Clopper–Pearson lower bound of the
// rate, false-rejection probability 1e-6, must not exceed δ), and a key held by 5000
// units always (in 200 releases).
func TestPartitionSelection(t *testing.T) {
	var b strings.Builder
	b.WriteString("g,x\nrare,1\n")
	for i := range 5000 {
		b.WriteString("common," + strconv.Itoa(i%10) + "\n")
	}
	tab := mustLoad(t, b.String(), Schema{Columns: []Column{{Name: "g", Type: String}, {Name: "x", Type: Int, Min: 0, Max: 9}}})
	p := mustPrepare(t, tab, "SELECT COUNT(*), SUM(x) FROM t GROUP BY g")
	if !p.Selection || p.SelectionShare != 1.0/3 {
		t.Fatalf("plan: selection %v share %v", p.Selection, p.SelectionShare)
	}
	var pe *dpkit.ParamError
	if _, err := p.Release(dpkit.Budget{Epsilon: 1}, nil); !errors.As(err, &pe) || pe.Name != "delta" {
		t.Errorf("δ = 0: %v", err)
	}
	if _, err := p.ReleaseWith(ReleaseOptions{Gaussian: true, Mu: 1}, nil); !errors.As(err, &pe) || pe.Name != "mechanism" {
		t.Errorf("Gaussian with selection: %v", err)
	}
	ex := p.Evaluate()
	if len(ex.Groups) != 2 || ex.Groups[0].Key != "common" || ex.Groups[0].Units != 5000 || ex.Groups[1].Units != 1 {
		t.Fatalf("exact groups %+v", ex.Groups)
	}
	const delta = 0.01
	o := ReleaseOptions{Budget: dpkit.Budget{Epsilon: 1, Delta: delta}}
	_, sel, err := p.Mechanisms(o)
	if err != nil {
		t.Fatal(err)
	}
	src := noise.Seeded(5)
	const trials = 100000
	kept := 0
	for range trials {
		if sel.Keep(ex.Groups[1].Units, src) {
			kept++
		}
	}
	if lo, _ := privtest.ClopperPearson(kept, trials, 2e-6); lo > delta {
		t.Errorf("a one-unit key kept %d times in %d: rate ≥ %v > δ = %v", kept, trials, lo, delta)
	}
	for range 200 {
		a, err := p.ReleaseWith(o, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Groups) == 0 || a.Groups[0].Key != "common" {
			t.Fatalf("the 5000-unit key was dropped: %+v", a.Groups)
		}
		if a.Charged != (dpkit.Budget{Epsilon: 1, Delta: delta}) {
			t.Fatalf("charged %v", a.Charged)
		}
	}
}

// TestGaussianRelease: Gaussian noise at μ: every component gets μ² in equal shares per
// aggregate (AVG halves its share), the descriptor composes to at most μ, counts are
// integers, and quantiles are refused.
func TestGaussianRelease(t *testing.T) {
	tab := mustLoad(t, salaryCSV, salarySchema())
	p := mustPrepare(t, tab, "SELECT COUNT(*), SUM(salary), AVG(salary) FROM t GROUP BY dept")
	a, err := p.ReleaseWith(ReleaseOptions{Gaussian: true, Mu: 0.5}, noise.Seeded(2))
	if err != nil {
		t.Fatal(err)
	}
	m, err := mechanism.FromDescriptor(a.Descriptor)
	if err != nil {
		t.Fatal(err)
	}
	pm, _ := m.PLD()
	if g, ok := pm.(pld.Gaussian); !ok || g.Mu() > 0.5 || g.Mu() < 0.5*(1-1e-6) || a.Mu != 0.5 || a.Charged != (dpkit.Budget{}) {
		t.Errorf("release PLD %v, μ %v, charged %v", pm, a.Mu, a.Charged)
	}
	for _, g := range a.Groups {
		if v := g.Values[0]; v != math.Trunc(v) {
			t.Errorf("group %s: count %v not an integer", g.Key, v)
		}
	}
	if !strings.Contains(a.Mechanism, "discrete gaussian") || !strings.Contains(a.Mechanism, "gaussian (secure, snapped)") {
		t.Errorf("mechanism %q", a.Mechanism)
	}
	q := mustPrepare(t, tab, "SELECT COUNT(*), MEDIAN(salary) FROM t")
	var pe *dpkit.ParamError
	if _, err := q.ReleaseWith(ReleaseOptions{Gaussian: true, Mu: 0.5}, nil); !errors.As(err, &pe) || pe.Name != "mechanism" {
		t.Errorf("Gaussian median: %v", err)
	}
	if _, err := p.ReleaseWith(ReleaseOptions{Gaussian: true, Mu: -1}, nil); !errors.As(err, &pe) || pe.Name != "mu" {
		t.Errorf("μ < 0: %v", err)
	}
}

// TestGaussianCoverage: the 95% intervals of Gaussian counts and sums cover the exact
// value in ≥ 95% of seeded releases (binomial test, false rejection ≤ 1e-6, as
// TestReleaseCoverage).
func TestGaussianCoverage(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 600
	}
	crit := binomialCritical(n, 0.05, 1e-6)
	tab := mustLoad(t, refCSV([]refRow{{u: "u1", g: "a", k: 1, x: 20, f: 1}, {u: "u2", g: "b", k: 2, x: -3, f: 0.5}, {u: "u3", g: "a", k: 1, x: 70, f: -1}}), refSchema(1))
	src := noise.Seeded(9)
	for _, sql := range []string{"SELECT COUNT(*) FROM t GROUP BY g", "SELECT SUM(x) FROM t", "SELECT COUNT(*), SUM(f) FROM t GROUP BY k"} {
		miss := misses(t, mustPrepare(t, tab, sql), ReleaseOptions{Gaussian: true, Mu: 0.3}, n, 0, src)
		if float64(miss) > crit {
			t.Errorf("%s: %d misses of %d > %v", sql, miss, n, crit)
		}
	}
}

// TestQueryEmpiricalPrivacy: the KOV Thm 2.1 check of internal/privtest on releases of
// neighbouring tables (one row added): a Gaussian COUNT at μ = 1 against the curve
// points (ε, δ_μ(ε)), and the release indicator of a key held by the added row alone
// under partition selection against (ε_s, δ); deliberately mis-calibrated claims (μ/2,
// δ/10) are caught. Each check fails a correct release with probability ≤ 1e-7.
func TestQueryEmpiricalPrivacy(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 20000
	}
	schema := Schema{Columns: []Column{{Name: "g", Type: String}, {Name: "x", Type: Int, Min: 0, Max: 9}}}
	base := "g,x\na,1\na,2\nb,3\n"
	t0, t1 := mustLoad(t, base, schema), mustLoad(t, base+"c,4\n", schema)
	count := func(tab *Table, mu float64) func() float64 {
		p := mustPrepare(t, tab, "SELECT COUNT(*) FROM t")
		src := noise.Seeded(uint64(tab.Rows()))
		return func() float64 {
			a, err := p.ReleaseWith(ReleaseOptions{Gaussian: true, Mu: mu}, src)
			if err != nil {
				t.Fatal(err)
			}
			return *a.Result
		}
	}
	out0, out1 := privtest.Sample(n, count(t0, 1)), privtest.Sample(n, count(t1, 1))
	th := privtest.Grid(-1.5, 7.5, 10)
	for _, eps := range []float64{0, 0.5, 1, 2} {
		d, _ := pld.GaussianDelta(1, eps)
		if v := privtest.Violation(dpkit.Budget{Epsilon: eps, Delta: d}, out0, out1, th, 1e-7); v != "" {
			t.Errorf("Gaussian count at μ = 1, (%v, %v): %s", eps, d, v)
		}
	}
	d, _ := pld.GaussianDelta(0.5, 1)
	if v := privtest.Violation(dpkit.Budget{Epsilon: 1, Delta: d}, out0, out1, th, 1e-7); v == "" {
		t.Error("a μ = 1 Gaussian count passed the check of μ = 0.5")
	}
	// Partition selection: is key "c" (the added row's, alone) released?
	sel := func(tab *Table) func() float64 {
		p := mustPrepare(t, tab, "SELECT COUNT(*) FROM t GROUP BY g")
		_, s, err := p.Mechanisms(ReleaseOptions{Budget: dpkit.Budget{Epsilon: 1, Delta: 0.01}})
		if err != nil {
			t.Fatal(err)
		}
		ex := p.Evaluate()
		src := noise.Seeded(uint64(7 + tab.Rows()))
		return func() float64 {
			for _, g := range ex.Groups {
				if g.Key == "c" && s.Keep(g.Units, src) {
					return 1
				}
			}
			return 0
		}
	}
	s1, s0 := privtest.Sample(n, sel(t1)), privtest.Sample(n, sel(t0))
	if v := privtest.Violation(dpkit.Budget{Epsilon: 0.5, Delta: 0.01}, s1, s0, []float64{0.5}, 1e-7); v != "" {
		t.Errorf("partition selection: %s", v)
	}
	if v := privtest.Violation(dpkit.Budget{Epsilon: 0.5, Delta: 0.001}, s1, s0, []float64{0.5}, 1e-7); v == "" {
		t.Error("partition selection at δ = 0.01 passed the check of δ = 0.001")
	}
}

// TestMultiAggregateShares: the documented split — equal shares per aggregate and per
// selection, AVG halving its own — and ε parts that never add up to more than ε.
func TestMultiAggregateShares(t *testing.T) {
	tab := mustLoad(t, salaryCSV, salarySchema())
	p := mustPrepare(t, tab, "SELECT COUNT(*), AVG(salary), MEDIAN(salary) FROM t GROUP BY name")
	var shares []string
	for _, c := range p.Components {
		shares = append(shares, fmt.Sprint(c.Share))
	}
	if got := strings.Join(shares, " "); got != "0.25 0.125 0.125 0.25" || p.SelectionShare != 0.25 {
		t.Errorf("shares %s, selection %v", got, p.SelectionShare)
	}
	for _, eps := range []float64{1, 0.1, 1.0 / 3, 7e-3} {
		ms, sel, err := mustPrepare(t, tab, "SELECT COUNT(*), SUM(salary), COUNT(*) FROM t GROUP BY name").Mechanisms(ReleaseOptions{Budget: dpkit.Budget{Epsilon: eps, Delta: 1e-6}})
		if err != nil {
			t.Fatal(err)
		}
		c, _ := mechanism.NewComposition(append(ms, sel)...)
		if g := c.Guarantee(); g.Epsilon > eps || g.Delta > 1e-6 {
			t.Errorf("ε = %v: parts compose to %v", eps, g)
		}
	}
}
