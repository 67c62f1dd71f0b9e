package query

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/sensitivity"
	"gonum.org/v1/gonum/stat/distuv"
)

func TestReleaseParams(t *testing.T) {
	tab := mustLoad(t, salaryCSV, salarySchema())
	p := mustPrepare(t, tab, "SELECT COUNT(*) FROM t")
	for _, b := range []dpkit.Budget{{Epsilon: 0}, {Epsilon: math.NaN()}, {Epsilon: math.Inf(1)}, {Epsilon: -1}, {Epsilon: 1, Delta: 2}} {
		var pe *dpkit.ParamError
		if _, err := p.Release(b, noise.Seeded(1)); !errors.As(err, &pe) {
			t.Errorf("Release(%v) = %v, want *dpkit.ParamError", b, err)
		}
	}
	q := mustPrepare(t, tab, "SELECT MEDIAN(salary) FROM t")
	// The exact quantile sampler has no ε margin: ε = 1e-5 (refused by the old float
	// sampler) is answered; below the exponential mechanism's 2^-40 it is a ParamError.
	if _, err := q.Release(dpkit.Budget{Epsilon: 1e-5}, noise.Seeded(1)); err != nil {
		t.Errorf("median at ε = 1e-5: %v", err)
	}
	if _, err := q.Release(dpkit.Budget{Epsilon: 1e-13}, noise.Seeded(1)); !errors.As(err, new(*dpkit.ParamError)) {
		t.Errorf("median at ε = 1e-13: %v, want a ParamError", err)
	}
	a, err := q.Release(dpkit.Budget{Epsilon: 1, Delta: 1e-6}, noise.Seeded(1))
	if err != nil || a.Charged != (dpkit.Budget{Epsilon: 1}) {
		t.Errorf("Charged = %v, %v; want (1, 0)", a, err)
	}
}

// TestReleaseShapes checks what the server serialises: results, groups in declared
// order, the mechanism, scales and intervals.
func TestReleaseShapes(t *testing.T) {
	tab := mustLoad(t, salaryCSV, salarySchema())
	src := noise.Seeded(7)
	for _, tc := range []struct {
		sql, mech string
		scale     float64 // expected scale, relative tolerance 1e-5 (slack ≤ 2^-17 plus grid rounding ≤ 2^-39)
		grouped   bool
	}{
		{"SELECT COUNT(*) FROM t", "discrete laplace", 2, false},               // Δ = 1, ε = 0.5
		{"SELECT HISTOGRAM(dept) FROM t", "discrete laplace", 2, true},         // ℓ1 = 1
		{"SELECT SUM(salary) FROM t", "laplace (secure, snapped)", 2e5, false}, // Δ = 1e5
		{"SELECT AVG(salary) FROM t GROUP BY dept", "laplace (secure, snapped) sum / discrete laplace count", 4 * 45000, true},
		{"SELECT MEDIAN(salary) FROM t", "exponential (quantile)", 2 / 0.5, false}, // 2Δu/ε (exact sampler: no margin on ε)
	} {
		p := mustPrepare(t, tab, tc.sql)
		a, err := p.Release(dpkit.Budget{Epsilon: 0.5}, src)
		if err != nil {
			t.Fatalf("%s: %v", tc.sql, err)
		}
		if a.Mechanism != tc.mech || a.Scale < tc.scale || a.Scale > tc.scale*(1+1e-5) {
			t.Errorf("%s: mechanism %q scale %v, want %q %v", tc.sql, a.Mechanism, a.Scale, tc.mech, tc.scale)
		}
		if tc.grouped {
			if a.Result != nil || len(a.Groups) != 3 || a.Groups[0].Key != "eng" || a.Groups[2].Key != "hr" {
				t.Errorf("%s: %+v, want 3 groups eng, ops, hr", tc.sql, a)
			}
		} else if a.Result == nil || a.Groups != nil {
			t.Errorf("%s: %+v, want an ungrouped result", tc.sql, a)
		}
		if p.Query.Agg == Median {
			if v := *a.Result; v < 10000 || v > 100000 || v != math.Trunc(v) || a.CI95 != nil {
				t.Errorf("median release %v (CI %v): want an integer in the bounds, no CI", v, a.CI95)
			}
		} else if tc.grouped {
			for _, g := range a.Groups {
				if len(g.CI95) != 2 || g.CI95[0] > g.Value || g.CI95[1] < g.Value {
					t.Errorf("%s: group %s: CI95 %v around %v", tc.sql, g.Key, g.CI95, g.Value)
				}
			}
		} else if len(a.CI95) != 2 || a.CI95[0] >= a.CI95[1] {
			t.Errorf("%s: CI95 %v", tc.sql, a.CI95)
		}
	}
}

// TestReleaseCoverage checks the 95% intervals: over N seeded releases the exact value
// must be inside at least 95% of them. The number of misses is Binomial(N, ≤ 0.05); the
// test fails if it exceeds the 1 − 10^-6 quantile of Binomial(N, 0.05), so a correct
// interval fails with probability ≤ 10^-6.
func TestReleaseCoverage(t *testing.T) {
	n := 4000
	if testing.Short() {
		n = 1000
	}
	crit := binomialCritical(n, 0.05, 1e-6)
	s := Schema{Columns: []Column{{Name: "g", Type: String, Domain: []string{"a", "b"}}, {Name: "x", Type: Float, Min: -1, Max: 3}}}
	var b strings.Builder
	b.WriteString("g,x\n")
	for i := range 200 {
		b.WriteString([]string{"a", "b", "c"}[i%3] + "," + []string{"0.5", "2.75", "-1", "3", "1.25"}[i%5] + "\n")
	}
	tab := mustLoad(t, b.String(), s)
	src := noise.Seeded(42)
	for _, sql := range []string{
		"SELECT COUNT(*) FROM t WHERE x > 0", "SELECT SUM(x) FROM t", "SELECT AVG(x) FROM t",
		"SELECT SUM(x) FROM t GROUP BY g", "SELECT AVG(x) FROM t WHERE g = 'b'",
	} {
		miss := misses(t, mustPrepare(t, tab, sql), ReleaseOptions{Budget: dpkit.Budget{Epsilon: 0.3}}, n, 1, src)
		if float64(miss) > crit {
			t.Errorf("%s: exact value outside the CI95 in %d of %d releases (limit %v)", sql, miss, n, crit)
		}
	}
}

// TestQuantileDistribution compares the exponential mechanism's output frequencies with
// the exact distribution over all candidate outputs, computed independently by brute
// force: P(y) ∝ exp(ε'·u(y)/(2Δu)), u(y) = −|#{x_i < y} − p·n|, over y = 0..9. χ² test
// at the 1 − 10^-6 quantile (false-rejection probability 10^-6).
func TestQuantileDistribution(t *testing.T) {
	draws := 40000
	if testing.Short() {
		draws = 8000
	}
	s := Schema{Columns: []Column{{Name: "x", Type: Int, Min: 0, Max: 9}}}
	tab := mustLoad(t, "x\n2\n2\n7\n", s)
	for _, tc := range []struct {
		sql string
		p   float64
		nb  sensitivity.Neighbour
	}{
		{"SELECT MEDIAN(x) FROM t", 0.5, sensitivity.AddRemove},
		{"SELECT QUANTILE(x, 0.9) FROM t", 0.9, sensitivity.ReplaceOne},
	} {
		p, err := Prepare(tab, "t", tc.sql, tc.nb)
		if err != nil {
			t.Fatal(err)
		}
		const eps = 2.0
		epsEM := eps - (1+eps)*0x1p-16
		du := 1.0
		if tc.nb == sensitivity.ReplaceOne {
			du = 2
		}
		data := []float64{2, 2, 7}
		var prob [10]float64
		total := 0.0
		for y := range 10 {
			below := 0
			for _, x := range data {
				if x < float64(y) {
					below++
				}
			}
			prob[y] = math.Exp(-epsEM * math.Abs(float64(below)-tc.p*3) / (2 * du))
			total += prob[y]
		}
		var count [10]int
		src := noise.Seeded(3)
		for range draws {
			a, err := p.Release(dpkit.Budget{Epsilon: eps}, src)
			if err != nil {
				t.Fatal(err)
			}
			count[int(*a.Result)]++
		}
		chi2 := 0.0
		for y := range 10 {
			e := float64(draws) * prob[y] / total
			chi2 += (float64(count[y]) - e) * (float64(count[y]) - e) / e
		}
		if crit := (distuv.ChiSquared{K: 9}).Quantile(1 - 1e-6); chi2 > crit {
			t.Errorf("%s: χ² = %.1f > %.1f; counts %v, probabilities %v", tc.sql, chi2, crit, count, prob)
		}
	}
}

// binomialCritical returns the smallest k with P(X > k) ≤ alpha for X ~ Binomial(n, p).
func binomialCritical(n int, p, alpha float64) float64 {
	b := distuv.Binomial{N: float64(n), P: p}
	k := math.Floor(float64(n) * p)
	for 1-b.CDF(k) > alpha {
		k++
	}
	return k
}
