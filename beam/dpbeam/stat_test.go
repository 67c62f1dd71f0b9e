package dpbeam

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/mechanism"
)

// frp is the false-rejection probability of each statistical check below: the
// probability, over the randomness, that a correct implementation fails it. The noise
// and the partition selection draw from seeded sources (testOptions.noiseSeed, one
// stream per aggregation and partition), so each test's outcome is reproducible; only
// TestBoundingManyRows' row sampling uses the production generator (it is what it
// checks), so that one check may fail with probability frp on any run.
const frp = 1e-6

// dkwBound is the Dvoretzky–Kiefer–Wolfowitz bound (Massart's constant): for n i.i.d.
// draws, P(sup |F_n − F| > ε) ≤ 2e^(−2nε²), so ε = sqrt(ln(2/α)/(2n)) at level α.
func dkwBound(n int, alpha float64) float64 { return math.Sqrt(math.Log(2/alpha) / (2 * float64(n))) }

// ksDistance returns sup |F_n − F| for the sample xs, where left(x) = P(X < x) (equal
// to cdf(x) for a continuous law; cdf(x − 1) for an integer one): both one-sided limits
// are compared at every sample value.
func ksDistance(xs []float64, cdf, left func(float64) float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := float64(len(s))
	d := 0.0
	for i := 0; i < len(s); {
		j := i
		for j < len(s) && s[j] == s[i] {
			j++
		}
		// F_n(x−) = i/n, F_n(x) = j/n
		d = math.Max(d, math.Max(math.Abs(float64(j)/n-cdf(s[i])), math.Abs(float64(i)/n-left(s[i]))))
		i = j
	}
	return d
}

// clopperPearson returns the two-sided (1 − a) Clopper–Pearson interval for x
// successes in n trials.
func clopperPearson(x, n int, a float64) (lo, hi float64) {
	if x > 0 {
		lo = distuv.Beta{Alpha: float64(x), Beta: float64(n - x + 1)}.Quantile(a / 2)
	}
	hi = 1
	if x < n {
		hi = distuv.Beta{Alpha: float64(x + 1), Beta: float64(n - x)}.Quantile(1 - a/2)
	}
	return lo, hi
}

// TestNoisyOutputs: the noise the pipeline adds has the mechanism's law. Each of P
// public partitions holds one unit with one row (count 1, amount 10); Count with
// Laplace noise (geometric, rate ε/k per partition, max_partitions k = 2) and SumPerKey
// with Gaussian noise (σ of the mechanism calibrated for k = 2 partitions) are run with
// noise on, and the errors (noisy − exact) are compared with the noise's CDF by the
// DKW bound at level frp: the exact two-sided geometric CDF, and the normal CDF with
// the mechanism's σ (its grid, g ≤ σ·2^−30, moves the CDF by less than 10^−8). The same
// statistic against the CDF of noise 1.5 times wider must exceed the bound: the test
// can tell a wrong scale.
func TestNoisyOutputs(t *testing.T) {
	const parts = 4000
	var rows []row
	public := make([]int, parts)
	for i := range parts {
		public[i] = i
		rows = append(rows, row{User: fmt.Sprintf("u%d", i), Day: i, Amount: 10})
	}
	spec, p, s, pcol := privateRows(t, rows, PrivacySpecParams{Job: "noise", Budget: dpkit.Budget{Epsilon: 3, Delta: 1e-5}}, testOptions{noiseSeed: 101})
	pp := PartitionParams{Partition: "Day", MaxPartitions: 2, MaxContributions: 1, PublicPartitions: public}
	counts, err := Count(s, pcol, CountParams{PartitionParams: pp, Budget: dpkit.Budget{Epsilon: 1}})
	if err != nil {
		t.Fatal(err)
	}
	gauss := SumParams{PartitionParams: pp, Value: "Amount", Min: 0, Max: 20, Noise: GaussianNoise, Budget: dpkit.Budget{Epsilon: 1, Delta: 1e-6}}
	sums, err := SumPerKey(s, pcol, gauss)
	if err != nil {
		t.Fatal(err)
	}
	gotC, gotS := collect(s, t, counts, "counts"), collect(s, t, sums, "sums")
	if _, err := spec.Reserve(context.Background(), newLedger(t, dpkit.Budget{Epsilon: 10, Delta: 1e-3}), "data", ReserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := run(t, p); err != nil {
		t.Fatal(err)
	}
	geo, err := noiseSpec{Kind: LaplaceNoise, Budget: dpkit.Budget{Epsilon: 1}, K: 2, Sensitivity: 1, Integer: true}.build()
	if err != nil {
		t.Fatal(err)
	}
	gau, err := noiseSpec{Kind: GaussianNoise, Budget: gauss.Budget, K: 2, Sensitivity: 20}.build()
	if err != nil {
		t.Fatal(err)
	}
	var errC, errS []float64
	for _, e := range gotC() {
		errC = append(errC, float64(e.V.(int64)-1))
	}
	for _, e := range gotS() {
		errS = append(errS, e.V.(float64)-10)
	}
	if len(errC) != parts || len(errS) != parts {
		t.Fatalf("released %d counts and %d sums, want %d each (public partitions)", len(errC), len(errS), parts)
	}
	// Two-sided geometric with q = e^(−rate): P(Z ≤ z) = 1 − q^(z+1)/(1+q) for z ≥ 0,
	// q^(−z)/(1+q) for z < 0.
	geoCDF := func(rate float64) func(float64) float64 {
		q := math.Exp(-rate)
		return func(z float64) float64 {
			if z >= 0 {
				return 1 - math.Pow(q, z+1)/(1+q)
			}
			return math.Pow(q, -z) / (1 + q)
		}
	}
	sigma := gau.gau.Sigma()
	normCDF := func(sd float64) func(float64) float64 {
		return func(x float64) float64 { return distuv.Normal{Sigma: sd}.CDF(x) }
	}
	bound := dkwBound(parts, frp)
	for _, c := range []struct {
		name       string
		xs         []float64
		cdf, wider func(float64) float64
		step       float64 // the lattice of an integer law (0: continuous)
	}{
		{"count (geometric)", errC, geoCDF(geo.geo.Rate()), geoCDF(geo.geo.Rate() / 1.5), 1},
		{"sum (Gaussian)", errS, normCDF(sigma), normCDF(1.5 * sigma), 0},
	} {
		left := func(f func(float64) float64) func(float64) float64 {
			return func(x float64) float64 { return f(x - c.step) }
		}
		if d := ksDistance(c.xs, c.cdf, left(c.cdf)); d > bound {
			t.Errorf("%s: KS distance %.4f to the mechanism's noise > %.4f (DKW, n = %d, α = %g)", c.name, d, bound, parts, frp)
		}
		if d := ksDistance(c.xs, c.wider, left(c.wider)); d <= bound {
			t.Errorf("%s: KS distance %.4f to noise 1.5× wider ≤ %.4f: the check has no power", c.name, d, bound)
		}
	}
	// The Gaussian's σ is calibrated for 2 partitions per unit: ℓ2 sensitivity √2·20.
	// Independent reference: the analytic Gaussian σ of mechanism (Balle and Wang) for
	// that sensitivity; the grid may raise σ by a relative 10^−6 or so.
	ref, err := mechanism.AnalyticGaussianSigma(1, 1e-6, 20*math.Sqrt2)
	if err != nil {
		t.Fatal(err)
	}
	if sigma < ref || sigma > ref*(1+1e-4) {
		t.Errorf("σ = %.9g, want the analytic σ %.9g for ℓ2 sensitivity √2·20 (up to +0.01%%)", sigma, ref)
	}
}

// TestSelectionRates: with DP partition selection (ε = 1, δ = 10^−2, one partition per
// unit), the fraction of partitions released among P partitions of n units each lies in
// the (1 − frp) Clopper–Pearson interval of mechanism.PartitionSelection's keep
// probability, for n = 1 (probability δ) and for an n where it is near ½.
func TestSelectionRates(t *testing.T) {
	sel := dpkit.Budget{Epsilon: 1, Delta: 1e-2}
	ps, err := mechanism.NewPartitionSelection(mechanism.PartitionSelectionOptions{Epsilon: sel.Epsilon, Delta: sel.Delta, MaxPartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	mid := int64(1)
	for ps.ProbabilityKeep(mid) < 0.3 {
		mid++
	}
	const parts = 3000
	for _, n := range []int64{1, mid} {
		t.Run(fmt.Sprintf("units=%d", n), func(t *testing.T) {
			var rows []row
			for d := range parts {
				for u := range n {
					rows = append(rows, row{User: fmt.Sprintf("u%d-%d", d, u), Day: d})
				}
			}
			spec, p, s, pcol := privateRows(t, rows, PrivacySpecParams{Job: "rates", Budget: dpkit.Budget{Epsilon: 2, Delta: 1e-2}}, testOptions{noiseSeed: 102 + uint64(n)})
			counts, err := Count(s, pcol, CountParams{PartitionParams: PartitionParams{Partition: "Day", MaxPartitions: 1, MaxContributions: 1, Selection: sel}, Budget: dpkit.Budget{Epsilon: 1}})
			if err != nil {
				t.Fatal(err)
			}
			got := collect(s, t, counts, "counts")
			if _, err := spec.Reserve(context.Background(), newLedger(t, dpkit.Budget{Epsilon: 10, Delta: 0.1}), "data", ReserveOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := run(t, p); err != nil {
				t.Fatal(err)
			}
			kept := len(got())
			want := ps.ProbabilityKeep(n)
			lo, hi := clopperPearson(kept, parts, frp)
			if want < lo || want > hi {
				t.Errorf("%d of %d partitions of %d units released: interval [%.4f, %.4f] excludes the keep probability %.4f", kept, parts, n, lo, hi, want)
			}
		})
	}
}

// TestBoundingManyRows: units with many rows are bounded exactly, and the sampling is
// uniform.
//
//   - 50 units with 2000 rows each over 100 days (amount 1), max_partitions 3,
//     max_contributions 2: with noise off, the counts and sums over all partitions are
//     exactly 50·3·2 = 300.
//   - 3000 units with one row on each of days 0..9, max_partitions 1: each unit's day
//     is uniform (the keyed hash as a random function), so the released counts pass a
//     χ² test of uniformity at level frp.
//   - 3000 units with 10 rows of amounts 0..9 on one day, max_contributions 1, sampled
//     with fresh randomness (no test seed): the mean kept amount is 4.5 within z·σ/√n,
//     σ = √8.25, z the two-sided normal quantile at level frp.
func TestBoundingManyRows(t *testing.T) {
	var heavy, spread, amounts []row
	for u := range 50 {
		for i := range 2000 {
			heavy = append(heavy, row{User: fmt.Sprintf("h%d", u), Day: i % 100, Amount: 1})
		}
	}
	for u := range 3000 {
		for d := range 10 {
			spread = append(spread, row{User: fmt.Sprintf("s%d", u), Day: d})
			amounts = append(amounts, row{User: fmt.Sprintf("a%d", u), Day: 0, Amount: float64(d)})
		}
	}
	spec, err := testSpec(PrivacySpecParams{Job: "bounding", Budget: dpkit.Budget{Epsilon: 20, Delta: 1e-3}}, testOptions{noNoise: true})
	if err != nil {
		t.Fatal(err)
	}
	p, s := beam.NewPipelineWithRoot()
	sel := dpkit.Budget{Epsilon: 1, Delta: 1e-5}
	lap := dpkit.Budget{Epsilon: 1}
	type out struct{ count, sum, mean func() []kv }
	build := func(rows []row, k, c int64) out {
		pcol, err := MakePrivate(s, beam.CreateList(s, rows), spec, "User")
		if err != nil {
			t.Fatal(err)
		}
		pp := PartitionParams{Partition: "Day", MaxPartitions: k, MaxContributions: c, Selection: sel}
		cnt, err := Count(s, pcol, CountParams{PartitionParams: pp, Budget: lap})
		if err != nil {
			t.Fatal(err)
		}
		sum, err := SumPerKey(s, pcol, SumParams{PartitionParams: pp, Value: "Amount", Min: 0, Max: 10, Budget: lap})
		if err != nil {
			t.Fatal(err)
		}
		mean, err := MeanPerKey(s, pcol, SumParams{PartitionParams: pp, Value: "Amount", Min: 0, Max: 10, Budget: lap})
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s-%d-%d", rows[0].User[:1], k, c)
		return out{collect(s, t, cnt, name+"count"), collect(s, t, sum, name+"sum"), collect(s, t, mean, name+"mean")}
	}
	h, sp, am := build(heavy, 3, 2), build(spread, 1, 5), build(amounts, 5, 1)
	if _, err := spec.Reserve(context.Background(), newLedger(t, dpkit.Budget{Epsilon: 100, Delta: 0.1}), "data", ReserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := run(t, p); err != nil {
		t.Fatal(err)
	}

	var total int64
	var sum float64
	for _, e := range h.count() {
		total += e.V.(int64)
	}
	for _, e := range h.sum() {
		sum += e.V.(float64)
	}
	if total != 300 || sum != 300 {
		t.Errorf("heavy units: counts sum to %d and sums to %g, want 50·3·2 = 300", total, sum)
	}

	counts := make([]float64, 10)
	for _, e := range sp.count() {
		counts[e.K.(int)] = float64(e.V.(int64))
	}
	chi := 0.0
	for _, c := range counts {
		chi += (c - 300) * (c - 300) / 300
	}
	if crit := (distuv.ChiSquared{K: 9}).Quantile(1 - frp); chi > crit {
		t.Errorf("partition choice: counts %v, χ² = %.1f > %.1f (df 9, α = %g)", counts, chi, crit, frp)
	}

	got := am.mean()
	if len(got) != 1 {
		t.Fatalf("amounts: %d partitions released, want 1", len(got))
	}
	z := distuv.UnitNormal.Quantile(1 - frp/2)
	if m, tol := got[0].V.(float64), z*math.Sqrt(8.25/3000); math.Abs(m-4.5) > tol {
		t.Errorf("mean of the sampled amounts %.4f, want 4.5 ± %.4f (uniform sampling of one row of 0..9)", m, tol)
	}
	if c := am.count(); len(c) != 1 || c[0].V.(int64) != 3000 {
		t.Errorf("amounts: count %v, want 3000 (one row per unit)", c)
	}
}

// TestNoisyQuantiles: the noisy tree's quantiles of a large partition are close to the
// exact ones. 20200 units hold one value each, 0..100 two hundred times over, on one
// public partition (max_contributions 1): the exact quantiles at ranks 0.1, 0.5, 0.9
// are 10, 50 and 90. A child count of the tree's first levels is ≥ 1262, against noise
// of scale 4/ε = 4 (Laplace) or σ ≈ 12 (Gaussian, (1, 10^−6)): a rank moves by less
// than 0.002 unless the noise exceeds 40 scales, so each quantile is within 1 of the
// exact one except with probability far below frp.
func TestNoisyQuantiles(t *testing.T) {
	var rows []row
	for u := range 20200 {
		rows = append(rows, row{User: fmt.Sprintf("u%d", u), Day: 1, Amount: float64(u % 101)})
	}
	spec, p, s, pcol := privateRows(t, rows, PrivacySpecParams{Job: "quantiles", Budget: dpkit.Budget{Epsilon: 2, Delta: 1e-6}}, testOptions{noiseSeed: 103})
	ranks := []float64{0.1, 0.5, 0.9}
	var outs []func() []kv
	for i, b := range []dpkit.Budget{{Epsilon: 1}, {Epsilon: 1, Delta: 1e-6}} {
		q, err := QuantilesPerKey(s, pcol, QuantilesParams{
			PartitionParams: PartitionParams{Partition: "Day", MaxPartitions: 1, MaxContributions: 1, PublicPartitions: []int{1}},
			Value:           "Amount", Min: 0, Max: 100, Ranks: ranks, Noise: NoiseKind(i), Budget: b})
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, collect(s, t, q, fmt.Sprint("q", i)))
	}
	if _, err := spec.Reserve(context.Background(), newLedger(t, dpkit.Budget{Epsilon: 10, Delta: 1e-3}), "data", ReserveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := run(t, p); err != nil {
		t.Fatal(err)
	}
	for i, out := range outs {
		got := out()
		if len(got) != 1 {
			t.Fatalf("%v: %d partitions, want 1", NoiseKind(i), len(got))
		}
		for j, q := range got[0].V.([]float64) {
			if want := 100 * ranks[j]; math.Abs(q-want) > 1 {
				t.Errorf("%v noise: quantile %g = %g, want %g ± 1", NoiseKind(i), ranks[j], q, want)
			}
		}
	}
}
