package mechanism

import (
	"errors"
	"gonum.org/v1/gonum/floats/scalar"
	"math"
	"math/big"
	"pgregory.net/rapid"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"gonum.org/v1/gonum/stat/distuv"
)

// hockeyStickGaussian integrates (p0(x) − e^ε p1(x))₊ for p0 = N(0, σ²), p1 = N(Δ, σ²)
// by composite Simpson on [−40σ, x*] (x* = Δ/2 − εσ²/Δ, where the integrand's sign
// changes), 200000 panels: the definition of δ(ε), independent of the closed form.
func hockeyStickGaussian(eps, sigma, sens float64) float64 {
	xs := sens/2 - eps*sigma*sigma/sens
	lo := -40 * sigma
	if xs <= lo {
		return 0
	}
	const n = 200000
	h := (xs - lo) / n
	f := func(x float64) float64 {
		p0 := math.Exp(-x*x/(2*sigma*sigma)) / (math.Sqrt(2*math.Pi) * sigma)
		p1 := math.Exp(-(x-sens)*(x-sens)/(2*sigma*sigma)) / (math.Sqrt(2*math.Pi) * sigma)
		return math.Max(0, p0-math.Exp(eps)*p1)
	}
	s := f(lo) + f(xs)
	for i := 1; i < n; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		s += w * f(lo+float64(i)*h)
	}
	return s * h / 3
}

// gaussianDeltaOf is gaussianDelta without its error (the arguments are valid).
func gaussianDeltaOf(eps, sigma, sens float64) float64 {
	d, err := gaussianDelta(eps, sigma, sens)
	if err != nil {
		panic(err)
	}
	return d
}

// TestGaussianDelta: the curve the calibration uses (pld.GaussianDelta at μ = Δ/σ
// rounded up) against direct integration of the hockey-stick divergence; tolerance
// 1e-7 relative (Simpson's error) — and never below it by more than that.
func TestGaussianDelta(t *testing.T) {
	for _, c := range [][3]float64{{1, 3, 1}, {0.1, 20, 1}, {2, 1, 1}, {5, 0.7, 1}, {1, 4, 2.5}} {
		eps, sigma, sens := c[0], c[1], c[2]
		got, want := gaussianDeltaOf(eps, sigma, sens), hockeyStickGaussian(eps, sigma, sens)
		if !scalar.EqualWithinRel(got, want, 1e-7) {
			t.Errorf("gaussianDelta(%v, %v, %v) = %.10g, integral %.10g", eps, sigma, sens, got, want)
		}
	}
}

// TestAnalyticGaussianSigma: σ* meets δ, a σ 1e-9 smaller does not (so σ* is the tight
// value to 1e-9), analytic ≤ classic where classic applies, and the grid mechanism's
// certified δ meets the target.
func TestAnalyticGaussianSigma(t *testing.T) {
	for _, eps := range []float64{0.05, 0.5, 1, 4, 20} {
		for _, delta := range []float64{1e-3, 1e-6, 1e-12} {
			s, err := AnalyticGaussianSigma(eps, delta, 1)
			if err != nil {
				t.Fatal(err)
			}
			if d := gaussianDeltaOf(eps, s, 1); d > delta {
				t.Errorf("ε=%v δ=%v: δ(σ*) = %v > δ", eps, delta, d)
			}
			if d := gaussianDeltaOf(eps, s*(1-1e-9), 1); d <= delta {
				t.Errorf("ε=%v δ=%v: σ* = %v not tight (δ(σ*(1−1e-9)) = %v)", eps, delta, s, d)
			}
			if eps < 1 {
				c, _ := ClassicGaussianSigma(eps, delta, 1)
				if s > c {
					t.Errorf("ε=%v δ=%v: analytic %v > classic %v", eps, delta, s, c)
				}
			}
			m, err := NewGaussian(GaussianOptions{Epsilon: eps, Delta: delta, Sensitivity: 1})
			if err != nil {
				t.Fatal(err)
			}
			if m.Sampler().DeltaBound(eps) > delta || m.Sigma() < s {
				t.Errorf("ε=%v δ=%v: grid δ %v, σ %v < %v", eps, delta, m.Sampler().DeltaBound(eps), m.Sigma(), s)
			}
			if m.Sigma() > s*(1+1e-6) {
				t.Errorf("ε=%v δ=%v: grid σ %v much above %v", eps, delta, m.Sigma(), s)
			}
		}
	}
}

// TestLaplaceAccuracy: Interval meets β exactly for the grid noise (P(|Z| ≥ m) =
// 2q^m/(1+q) computed independently here) and is within one step of b·ln(1/β);
// VectorBound is the interval at β/k; Variance is within 1e-9 of 2b².
func TestLaplaceAccuracy(t *testing.T) {
	m, _ := NewLaplace(LaplaceOptions{Epsilon: 0.5, Sensitivity: 2, Dimension: 10})
	b := m.Scale()
	for _, beta := range []float64{0.5, 0.05, 1e-6} {
		w, _ := m.Interval(beta)
		steps := w / m.Granularity()
		q := math.Exp(-1 / float64(m.Sampler().GridScale()))
		if tail := 2 * math.Pow(q, steps) / (1 + q); tail > beta*(1+1e-9) {
			t.Errorf("β=%v: tail at w = %v", beta, tail)
		}
		if !scalar.EqualWithinAbs(w, b*math.Log(1/beta), 1e-6*b) {
			t.Errorf("β=%v: w = %v, b·ln(1/β) = %v", beta, w, b*math.Log(1/beta))
		}
		v, _ := m.VectorBound(beta)
		if !scalar.EqualWithinAbs(v, b*math.Log(10/beta), 1e-6*b) {
			t.Errorf("β=%v: vector bound %v, b·ln(k/β) = %v", beta, v, b*math.Log(10/beta))
		}
	}
	if r := m.Variance() / (2 * b * b); !scalar.EqualWithinAbs(r, 1, 1e-9) {
		t.Errorf("Variance %v vs 2b² %v", m.Variance(), 2*b*b)
	}
	// The grid sensitivity accounts for rounding every coordinate.
	if d := m.Sampler().GridSensitivity(); float64(d) < 2/m.Granularity()+9 {
		t.Errorf("grid sensitivity %d does not include the per-coordinate rounding", d)
	}
	out, err := m.ReleaseVector(make([]float64, 10), noise.Seeded(1))
	if err != nil || len(out) != 10 {
		t.Fatal(err)
	}
}

// TestGeometricAccuracy: Interval and Variance against sums of the pmf.
func TestGeometricAccuracy(t *testing.T) {
	m, _ := NewGeometric(GeometricOptions{Epsilon: 0.3, Sensitivity: 2})
	q := math.Exp(-m.Rate())
	pmf := func(z float64) float64 { return (1 - q) / (1 + q) * math.Pow(q, math.Abs(z)) }
	v := 0.0
	for z := -2000.0; z <= 2000; z++ {
		v += z * z * pmf(z)
	}
	if !scalar.EqualWithinRel(v, m.Variance(), 1e-9) {
		t.Errorf("Variance %v, summed %v", m.Variance(), v)
	}
	w, _ := m.Interval(0.05)
	tail := func(w float64) float64 {
		s := 0.0
		for z := w; z <= 3000; z++ {
			s += 2 * pmf(z)
		}
		return s
	}
	if tail(float64(w)) > 0.05 || tail(float64(w-1)) <= 0.05 {
		t.Errorf("Interval(0.05) = %d: tails %v, %v", w, tail(float64(w)), tail(float64(w-1)))
	}
	if p, err := m.Pair(); err == nil || p != nil {
		t.Error("Pair for sensitivity 2 should be an error")
	}
	m1, _ := NewGeometric(GeometricOptions{Epsilon: 0.3, Sensitivity: 1})
	p, err := m1.Pair()
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := p.Epsilon(0); !scalar.EqualWithinAbs(e, 0.3, 1e-12) {
		t.Errorf("geometric pair ε = %v", e)
	}
	if got := m1.Release(math.MaxInt64-1, noise.Seeded(2)); got < math.MaxInt64-200 {
		t.Errorf("Release near MaxInt64 = %d", got)
	}
}

// TestStaircaseAccuracy: Interval against the tail summed period by period from the
// density (eq. 2.8), and the staircase beating Laplace's variance at large ε.
func TestStaircaseAccuracy(t *testing.T) {
	for _, eps := range []float64{0.5, 2, 6} {
		m, err := NewStaircase(StaircaseOptions{Epsilon: eps, Sensitivity: 1})
		if err != nil {
			t.Fatal(err)
		}
		gamma, b, period := m.Gamma(), math.Exp(-eps), m.Scale()
		a := (1 - b) / (2 * period * (b + (1-b)*gamma))
		tail := func(w float64) float64 { // P(|X| ≥ w) by summing pieces
			s := 0.0
			for k := 0.0; k < 5000; k++ {
				for _, piece := range [][3]float64{{k, k + gamma, math.Pow(b, k)}, {k + gamma, k + 1, math.Pow(b, k+1)}} {
					lo, hi := piece[0]*period, piece[1]*period
					if hi > w {
						s += 2 * a * piece[2] * (hi - math.Max(lo, w))
					}
				}
			}
			return s
		}
		for _, beta := range []float64{0.3, 0.05, 1e-4} {
			w, _ := m.Interval(beta)
			if tl := tail(w); tl > beta*(1+1e-9) {
				t.Errorf("ε=%v β=%v: tail at %v is %v", eps, beta, w, tl)
			}
			if tl := tail(w * 0.99); tl <= beta {
				t.Errorf("ε=%v β=%v: interval %v loose (tail at 0.99w %v)", eps, beta, w, tl)
			}
		}
		if eps >= 2 {
			if m.Variance() > 2/(eps*eps) {
				t.Errorf("ε=%v: staircase variance %v ≥ Laplace %v", eps, m.Variance(), 2/(eps*eps))
			}
		}
	}
}

// TestExponential: log-sum-exp stability for huge utilities, χ² of Select against
// Probabilities (false-rejection probability 1e-7), and the utility bound.
func TestExponential(t *testing.T) {
	m, _ := NewExponential(ExponentialOptions{Epsilon: 1, Sensitivity: 1})
	u := []float64{1e300, 1e300 - 2e284, 1e300 - 4e284, -1e300}
	p, err := m.Probabilities(u)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, x := range p {
		if math.IsNaN(x) {
			t.Fatal("NaN probability")
		}
		sum += x
	}
	if !scalar.EqualWithinAbs(sum, 1, 1e-15) {
		t.Errorf("probabilities sum to %v", sum)
	}
	u = []float64{0, 1, 2, 3, 5}
	p, _ = m.Probabilities(u)
	// Reference: exp(u/2)/Σ exp(u/2) evaluated directly (no overflow at these sizes).
	z := 0.0
	for _, x := range u {
		z += math.Exp(x / 2)
	}
	for i, x := range u {
		if !scalar.EqualWithinAbs(p[i], math.Exp(x/2)/z, 1e-15) {
			t.Errorf("p[%d] = %v, want %v", i, p[i], math.Exp(x/2)/z)
		}
	}
	src := noise.Seeded(3)
	n := 100000
	if testing.Short() {
		n = 10000
	}
	counts := make([]float64, len(u))
	for range n {
		i, _ := m.Select(u, src)
		counts[i]++
	}
	stat := 0.0
	for i := range u {
		e := float64(n) * p[i]
		stat += (counts[i] - e) * (counts[i] - e) / e
	}
	if crit := (distuv.ChiSquared{K: float64(len(u) - 1)}).Quantile(1 - 1e-7); stat > crit {
		t.Errorf("Select χ² = %v > %v", stat, crit)
	}
	gap, _ := m.UtilityBound(5, 0.05)
	// the lecture slides: (2Δ/ε)(ln n + ln(1/β)); the quantized mechanism adds one grid step h and
	// a relative 2^−40 (D·h/Δ), so the bound lies within 1e-9 relative above it.
	if want := 2 * (math.Log(5) + math.Log(20)); gap < want || gap > want*(1+1e-9) {
		t.Errorf("UtilityBound = %v, want %v (+ ≤ 1e-9 relative)", gap, want)
	}
	// The bound holds: Pr[u(r) ≤ OPT − gap] ≤ e^(−t) — check on the exact probabilities.
	bad := 0.0
	for i, x := range u {
		if x <= 5-gap {
			bad += p[i]
		}
	}
	if bad > 0.05 {
		t.Errorf("mass below OPT − gap = %v > β", bad)
	}
}

// TestRandomizedResponse: the pairs' ε (region.Pair.Epsilon at δ) equal the guarantee
// (tolerance 1e-12), and releases follow the pair (χ², false-rejection prob. 1e-7).
func TestRandomizedResponse(t *testing.T) {
	for _, k := range []int{2, 5} {
		m, _ := NewRandomizedResponse(RandomizedResponseOptions{Epsilon: 1.2, Categories: k})
		p, err := m.Pair()
		if err != nil {
			t.Fatal(err)
		}
		if e, _ := p.Epsilon(0); !scalar.EqualWithinAbs(e, 1.2, 1e-12) {
			t.Errorf("k=%d: pair ε = %v", k, e)
		}
		src := noise.Seeded(uint64(k))
		n := draws(100000, 10000)
		counts := make([]float64, k)
		for range n {
			y, _ := m.Release(0, src)
			counts[y]++
		}
		stat := 0.0
		for i := range counts {
			e := float64(n) * p.P0[i]
			stat += (counts[i] - e) * (counts[i] - e) / e
		}
		if crit := (distuv.ChiSquared{K: float64(k - 1)}).Quantile(1 - 1e-7); stat > crit {
			t.Errorf("k=%d: χ² = %v > %v", k, stat, crit)
		}
	}
	m4, _ := NewRandomizedResponse4(RandomizedResponse4Options{Epsilon: 0.8, Delta: 0.1})
	p, _ := m4.Pair()
	if e, _ := p.Epsilon(0.1); !scalar.EqualWithinAbs(e, 0.8, 1e-9) {
		t.Errorf("rr4 pair ε at δ = 0.1: %v", e)
	}
	src := noise.Seeded(9)
	n := draws(100000, 10000)
	counts := make([]float64, 4)
	for range n {
		y, _ := m4.Release(1, src)
		counts[y]++
	}
	stat := 0.0
	for i := 1; i < 4; i++ {
		e := float64(n) * p.P1[i]
		stat += (counts[i] - e) * (counts[i] - e) / e
	}
	if counts[0] != 0 {
		t.Error("rr4 released 0 for bit 1")
	}
	if crit := (distuv.ChiSquared{K: 2}).Quantile(1 - 1e-7); stat > crit {
		t.Errorf("rr4 χ² = %v > %v", stat, crit)
	}
}

func draws(long, short int) int {
	if testing.Short() {
		return short
	}
	return long
}

// TestMedian: calibrations follow docs/errata.md, slides item 3, releases stay in bounds, and the
// release concentrates near the median for a large, well-spread dataset.
func TestMedian(t *testing.T) {
	m, err := NewMedian(MedianOptions{Epsilon: 1, Lower: 0, Upper: 100})
	if err != nil {
		t.Fatal(err)
	}
	// heavy tail: α = β = ε/(2(γ+1)) = 0.1 (docs/errata.md, slides item 3), α/(1 + 2^−29) and
	// β − 2^−37 after the rounding allowances (tolerance 2^−26 relative).
	if m.Gamma() != 4 || m.Alpha() > 0.1 || m.Alpha() < 0.1*(1-0x1p-26) || m.Beta() > 0.1-0x1p-37 || m.Beta() < 0.1*(1-0x1p-26) {
		t.Errorf("heavy-tail calibration α=%v β=%v γ=%v", m.Alpha(), m.Beta(), m.Gamma())
	}
	ml, _ := NewMedian(MedianOptions{Epsilon: 1, Delta: 1e-6, Lower: 0, Upper: 100})
	// Laplace: α = ε/2 (errata), β̂ = ln(1 + (ε/2)/(ε/2 + ln(1/δ))) from the discrete
	// proof in the Median doc comment; Beta is β̂ minus the allowances 2^−37 + α·2^−29 (+ ulps). Both are
	// close to errata's ε/(2 ln(2/δ)) = 0.0344 (within 1%).
	bhat := math.Log1p(0.5 / (0.5 + math.Log(1e6)))
	if ml.Alpha() > 0.5 || ml.Alpha() < 0.5*(1-0x1p-26) || ml.Beta() > bhat || ml.Beta() < bhat-0x1p-36-0.5*0x1p-29-1e-15 || !scalar.EqualWithinRel(ml.Beta(), 1/(2*math.Log(2e6)), 0.01) {
		t.Errorf("Laplace calibration α=%v β=%v (β̂ %v)", ml.Alpha(), ml.Beta(), bhat)
	}
	xs := make([]float64, 1001)
	for i := range xs {
		xs[i] = float64(i) / 10 // median 50
	}
	src := noise.Seeded(5)
	for _, mm := range []*Median{m, ml} {
		near := 0
		for range 200 {
			y, err := mm.Release(xs, src)
			if err != nil {
				t.Fatal(err)
			}
			if y < 0 || y > 100 || y != math.Round(y/mm.Granularity())*mm.Granularity() {
				t.Fatalf("release %v out of bounds or off the grid", y)
			}
			if math.Abs(y-50) < 5 {
				near++
			}
		}
		if near < 150 {
			t.Errorf("only %d of 200 releases within 5 of the median", near)
		}
	}
}

func TestInvalidOptions(t *testing.T) {
	nan := math.NaN()
	errs := map[string]error{}
	_, errs["epsilon"] = NewLaplace(LaplaceOptions{Epsilon: nan, Sensitivity: 1})
	_, errs["sensitivity"] = NewLaplace(LaplaceOptions{Epsilon: 1, Sensitivity: -1})
	_, errs["delta"] = NewGaussian(GaussianOptions{Epsilon: 1, Delta: 0, Sensitivity: 1})
	_, errs["calibration"] = NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-5, Sensitivity: 1, Calibration: 7})
	_, errs["categories"] = NewRandomizedResponse(RandomizedResponseOptions{Epsilon: 1, Categories: 1})
	_, errs["upper"] = NewMedian(MedianOptions{Epsilon: 1, Lower: 1, Upper: 1})
	_, errs["Cost"] = NewStaircase(StaircaseOptions{Epsilon: 1, Sensitivity: 1, Cost: 9})
	for name, err := range errs {
		var pe *dpkit.ParamError
		if !errors.As(err, &pe) || pe.Name != name {
			t.Errorf("want ParamError on %s, got %v", name, err)
		}
		if name != "Cost" && pe.Pkg != "mechanism" { // the staircase's names are its owner's
			t.Errorf("%s: error %v names package %q, want mechanism", name, err, pe.Pkg)
		}
	}
	if _, err := ClassicGaussianSigma(1.5, 1e-5, 1); err == nil {
		t.Error("classic calibration accepted ε ≥ 1")
	}
	m, _ := NewLaplace(LaplaceOptions{Epsilon: 1, Sensitivity: 1})
	if _, err := m.Release(math.Inf(1), nil); err == nil {
		t.Error("Release(+Inf) accepted")
	}
	if _, err := m.Interval(1); err == nil {
		t.Error("Interval(1) accepted")
	}
}

// TestGeometricRateNeverAboveEpsilon: the discrete Laplace rate r used for an integer
// query of sensitivity Δ satisfies r·Δ ≤ ε exactly (checked in rationals), so the release
// is ε-DP (ε/Δ rounded to nearest could be above; the constructor steps it down).
func TestGeometricRateNeverAboveEpsilon(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		eps := rapid.Float64Range(1e-3, 10).Draw(t, "eps")
		sens := rapid.Int64Range(1, 1<<20).Draw(t, "sens")
		m, err := NewGeometric(GeometricOptions{Epsilon: eps, Sensitivity: sens})
		if err != nil {
			t.Skip(err) // ε/Δ outside the sampler's range
		}
		loss := new(big.Rat).Mul(new(big.Rat).SetFloat64(m.Rate()), new(big.Rat).SetInt64(sens))
		if loss.Cmp(new(big.Rat).SetFloat64(eps)) > 0 {
			t.Fatalf("rate %v · Δ %v > ε %v", m.Rate(), sens, eps)
		}
	})
}
