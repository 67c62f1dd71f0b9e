package mechanism

import (
	"errors"
	"math"
	"math/big"
	"slices"
	"testing"

	"github.com/dpkit/dpkit/noise"
	"gonum.org/v1/gonum/stat/distuv"
)

// idealQuantileLogWeights returns ln P(point j) (unnormalised) of the ideal exponential
// mechanism for the p-quantile, ε·u(j)/(2Δu) with u(j) = −|#{x_i < y_j} − p·n|,
// for the grid indices lo … hi: the definition, computed directly from the data (an
// independent reference for the run-based exact sampler; the sampler's distribution
// differs from it only by the utility quantization, ≤ 2^−40 relative in the exponent).
func idealQuantileLogWeights(vals []int64, lo, hi int64, p, eps, du float64) []float64 {
	out := make([]float64, hi-lo+1)
	n := float64(len(vals))
	for j := lo; j <= hi; j++ {
		below := 0
		for _, v := range vals {
			if v < j {
				below++
			}
		}
		out[j-lo] = -eps * math.Abs(float64(below)-p*n) / (2 * du)
	}
	return out
}

// chiSquare returns the χ² statistic of counts against probabilities (cells with
// expected count below 5 are merged into one) and its degrees of freedom.
func chiSquare(counts, probs []float64, total float64) (chi, df float64) {
	var restO, restE float64
	cells := 0
	for i := range counts {
		e := probs[i] * total
		if e < 5 {
			restO += counts[i]
			restE += e
			continue
		}
		chi += (counts[i] - e) * (counts[i] - e) / e
		cells++
	}
	if restE > 0 {
		chi += (restO - restE) * (restO - restE) / restE
		cells++
	} else if restO > 0 {
		chi = math.Inf(1) // an outcome of probability 0
	}
	return chi, float64(cells - 1)
}

func normalise(logw []float64) []float64 {
	top := slices.Max(logw)
	p := make([]float64, len(logw))
	s := 0.0
	for i, l := range logw {
		p[i] = math.Exp(l - top)
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

// TestQuantileDistribution: the sampled points against the exact probabilities, χ² over
// the grid points (merged where rare), for an integer grid, a fine float grid with
// clustered data (most points in long runs far from the quantile), a very peaked ε, no
// data (uniform) and p at the ends. Each case fails a correct sampler with probability
// 1e-6.
func TestQuantileDistribution(t *testing.T) {
	n := 50000
	if testing.Short() {
		n = 10000
	}
	cases := []struct {
		name string
		o    QuantileOptions
		vals []float64
	}{
		{"int", QuantileOptions{Epsilon: 1, Sensitivity: 1, P: 0.5, Lower: 0, Upper: 20, Step: 1}, []float64{3, 3, 5, 8, 13, 13, 13, 20}},
		{"int p=0.9 ε=0.3", QuantileOptions{Epsilon: 0.3, Sensitivity: 2, P: 0.9, Lower: -5, Upper: 15, Step: 1}, []float64{-5, 0, 1, 2, 2, 9, 14}},
		{"fine grid", QuantileOptions{Epsilon: 2, Sensitivity: 1, P: 0.9, Lower: 0, Upper: 1, Step: 0x1p-12}, clustered(30, 0.5, 0x1p-8)},
		{"peaked", QuantileOptions{Epsilon: 40, Sensitivity: 1, P: 0.5, Lower: 0, Upper: 50, Step: 1}, []float64{10, 11, 12, 30, 31, 32, 33}},
		// ⌈p·n⌉ = 1 is the best run while ⌊p·n⌋ = 0 is not (|1 − 0.6| < |0 − 0.6|): the
		// maximum utility was searched from ⌊p·n⌋ only, so every release was refused as
		// "a Bernoulli probability above 1" (found by the service's FuzzQueryBody).
		{"best run at ⌈p·n⌉", QuantileOptions{Epsilon: 10, Sensitivity: 1, P: 0.2, Lower: 0, Upper: 30, Step: 1}, []float64{5, 12, 25}},
		{"empty", QuantileOptions{Epsilon: 1, Sensitivity: 1, P: 0.5, Lower: 0, Upper: 30, Step: 1}, nil},
		{"p=0", QuantileOptions{Epsilon: 1, Sensitivity: 1, P: 0, Lower: 0, Upper: 10, Step: 1}, []float64{4, 5, 6}},
		{"p=1", QuantileOptions{Epsilon: 1, Sensitivity: 1, P: 1, Lower: 0, Upper: 10, Step: 1}, []float64{4, 5, 6}},
	}
	for ci, c := range cases {
		m, err := NewQuantile(c.o)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := m.jl, m.jh
		idx := make([]int64, len(c.vals))
		for i, v := range c.vals {
			idx[i] = int64(math.Floor(v/c.o.Step + 0.5)) // the nearest grid point (all inside the bounds)
		}
		probs := normalise(idealQuantileLogWeights(idx, lo, hi, c.o.P, c.o.Epsilon, c.o.Sensitivity))
		counts := make([]float64, len(probs))
		src := noise.Seeded(uint64(1000 + ci))
		for range n {
			y, err := m.Release(c.vals, src)
			if err != nil {
				t.Fatal(err)
			}
			counts[int64(y/c.o.Step)-lo]++
		}
		chi, df := chiSquare(counts, probs, float64(n))
		if df < 1 {
			continue
		}
		if crit := (distuv.ChiSquared{K: df}).Quantile(1 - 1e-6); chi > crit {
			t.Errorf("%s: χ² = %.1f > %.1f (df %v)", c.name, chi, crit, df)
		}
	}
}

// clustered returns k values spread evenly over [c, c + w].
func clustered(k int, c, w float64) []float64 {
	out := make([]float64, k)
	for i := range out {
		out[i] = c + w*float64(i)/float64(k)
	}
	return out
}

// TestQuantileEmpiricalPrivacy: the KOV Thm 2.1 check of privacy_test.go on neighbouring
// datasets (one value added, Δu = 1), and a mechanism run at 3ε against a claim of ε
// caught. Each check fails a correct mechanism with probability ≤ privacyAlpha.
func TestQuantileEmpiricalPrivacy(t *testing.T) {
	n := 100000
	if testing.Short() {
		n = 20000
	}
	d0 := []float64{2, 4, 4, 5, 7, 9}
	d1 := append(slices.Clone(d0), 0)
	o := QuantileOptions{Epsilon: 1, Sensitivity: 1, P: 0.5, Lower: 0, Upper: 12, Step: 1}
	m, _ := NewQuantile(o)
	o3 := o
	o3.Epsilon = 3
	m3, _ := NewQuantile(o3)
	src := noise.Seeded(77)
	run := func(m *Quantile, d []float64) func() float64 {
		return func() float64 { y, _ := m.Release(d, src); return y }
	}
	th := grid(0.5, 11.5, 12)
	if v := violation(m.Guarantee(), sample(n, run(m, d0)), sample(n, run(m, d1)), th, privacyAlpha); v != "" {
		t.Errorf("quantile %v: %s", m.Guarantee(), v)
	}
	if v := violation(m.Guarantee(), sample(n, run(m3, d0)), sample(n, run(m3, d1)), th, privacyAlpha); v == "" {
		t.Error("a quantile mechanism at 3ε passed the check of ε")
	}
}

// TestQuantileOutputsOnGrid: whatever the data (inside, outside the bounds, off the
// grid), the release is a multiple of Step in [Lower, Upper]; NaN is refused.
func TestQuantileOutputsOnGrid(t *testing.T) {
	m, err := NewQuantile(QuantileOptions{Epsilon: 0.5, Sensitivity: 3, P: 0.25, Lower: -3.3, Upper: 7.1, Step: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	src := noise.Seeded(5)
	data := []float64{-100, 1e300, 0.1, 3.14159, 7.1, -3.3, 2, 2, 2}
	for range 2000 {
		y, err := m.Release(data, src)
		if err != nil {
			t.Fatal(err)
		}
		if y < -3.3 || y > 7.1 || y/0.25 != math.Trunc(y/0.25) {
			t.Fatalf("release %v off the grid", y)
		}
	}
	if _, err := m.Release([]float64{1, math.NaN()}, src); err == nil {
		t.Error("NaN accepted")
	}
	if _, err := m.ReleaseSorted([]float64{1, 0.5}, src); err == nil {
		t.Error("unsorted values accepted by ReleaseSorted")
	}
	if _, err := m.ReleaseSorted([]float64{0.3}, src); err == nil {
		t.Error("a value off the grid accepted by ReleaseSorted")
	}
}

// TestQuantileFewDraws: O(1) rounds per release, measured in 64-bit words drawn, on a
// grid of 2^40 points with 20000 values in 0.1% of it (a float column's grid), where a
// proposal uniform over points would be accepted once in ~10^3 and one uniform over
// runs once in ~10^4.
func TestQuantileFewDraws(t *testing.T) {
	m, err := NewQuantile(QuantileOptions{Epsilon: 1, Sensitivity: 1, P: 0.5, Lower: 0, Upper: 1, Step: 0x1p-40})
	if err != nil {
		t.Fatal(err)
	}
	vals := clustered(20000, 0.3, 0.001)
	for i := range vals {
		vals[i] = math.Round(vals[i]*0x1p40) * 0x1p-40
	}
	src := &countingSource{src: noise.Seeded(3)}
	const reps = 50
	for range reps {
		if _, err := m.ReleaseSorted(vals, src); err != nil {
			t.Fatal(err)
		}
	}
	if avg := float64(src.n) / reps; avg > 400 {
		t.Errorf("%.0f words per release", avg)
	}
}

// TestBernoulliPow2Exp: the exact trial against its probability 2^m·e^(−y0), binomial
// test at false-rejection probability 1e-7 per case (normal approximation, > 10^3
// expected successes and failures); y0 < m·ln 2 is refused.
func TestBernoulliPow2Exp(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	src := noise.Seeded(11)
	for _, c := range []struct {
		y0 *big.Rat
		m  int64
	}{{big.NewRat(1, 3), 0}, {big.NewRat(7, 4), 2}, {big.NewRat(3, 2), 2}, {big.NewRat(301, 10), 40}, {big.NewRat(5, 1), 1}, {big.NewRat(139, 100), 2}} {
		yf, _ := c.y0.Float64()
		p := math.Ldexp(math.Exp(-yf), int(c.m))
		hits := 0
		for range n {
			ok, err := bernoulliPow2Exp(src, c.y0, c.m)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				hits++
			}
		}
		sd := math.Sqrt(float64(n) * p * (1 - p))
		if z := math.Abs(float64(hits)-float64(n)*p) / sd; z > 5.33 { // two-sided 1e-7
			t.Errorf("y0=%v m=%d: %d of %d, want p = %v (z = %.1f)", c.y0, c.m, hits, n, p, z)
		}
	}
	if _, err := bernoulliPow2Exp(src, big.NewRat(13, 10), 2); err == nil { // 2·ln 2 = 1.386 > 1.3
		t.Error("a probability above 1 was sampled")
	}
}

// TestLn2Bound: the bounds contain ln 2 = 0.693147180559945309417232121458176568075500134
// (OEIS A002162) and have the stated width.
func TestLn2Bound(t *testing.T) {
	ln2, _ := new(big.Rat).SetString("0.693147180559945309417232121458176568075500134360255254120680009")
	for _, p := range []uint{8, 64, 128, 200} {
		lo, hi := ln2Interval(p)
		if lo.Cmp(ln2) > 0 || hi.Cmp(ln2) < 0 {
			t.Errorf("p=%d: [%s, %s] misses ln 2", p, lo.FloatString(30), hi.FloatString(30))
		}
	}
	if ln2Up < math.Ln2 || new(big.Rat).SetFloat64(ln2Up).Cmp(ln2) < 0 {
		t.Error("ln2Up is below ln 2")
	}
}

// TestQuantileInvalid: bad options name the field.
func TestQuantileInvalid(t *testing.T) {
	for name, o := range map[string]QuantileOptions{
		"p":     {Epsilon: 1, Sensitivity: 1, P: 1.5, Lower: 0, Upper: 1, Step: 1},
		"step":  {Epsilon: 1, Sensitivity: 1, P: 0.5, Lower: 0, Upper: 1, Step: 0.3},
		"upper": {Epsilon: 1, Sensitivity: 1, P: 0.5, Lower: 0.2, Upper: 0.3, Step: 1},
	} {
		_, err := NewQuantile(o)
		var pe interface{ Error() string }
		if err == nil || !errors.As(err, &pe) {
			t.Errorf("%s: accepted %+v", name, o)
		}
	}
}

// TestQuantileUtilityExact: q_k = ⌊−|k − p·n|/h + ½⌋ in integer arithmetic against the
// same quantity in exact rationals (big.Rat), for p with short and long expansions,
// p = 0 and 1, and several utility grids.
func TestQuantileUtilityExact(t *testing.T) {
	for _, du := range []float64{1, 3, 0x1p-30, 1e6} {
		for _, p := range []float64{0.5, 0.9, 1.0 / 3, 0, 1, 1e-300, 0.999999999} {
			m, err := NewQuantile(QuantileOptions{Epsilon: 1, Sensitivity: du, P: p, Lower: 0, Upper: 100, Step: 1})
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{0, 1, 7, 1000003} {
				r := &quantileRuns{m: m, n: n}
				pn := new(big.Rat).Mul(new(big.Rat).SetFloat64(p), new(big.Rat).SetInt64(int64(n)))
				h := new(big.Rat).SetFloat64(m.ex.UtilityGranularity())
				for _, k := range []int{0, 1, n / 3, n / 2, n} {
					d := new(big.Rat).Sub(new(big.Rat).SetInt64(int64(k)), pn)
					d.Abs(d).Neg(d).Quo(d, h).Add(d, big.NewRat(1, 2))
					want := new(big.Int).Div(d.Num(), d.Denom())
					if got := r.q(k); got.Cmp(want) != 0 {
						t.Errorf("Δu=%v p=%v n=%d k=%d: q = %v, want %v", du, p, n, k, got, want)
					}
				}
			}
		}
	}
}
