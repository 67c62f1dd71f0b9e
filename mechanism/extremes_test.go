package mechanism

import (
	"math"
	"math/big"
	"testing"

	"github.com/dpkit/dpkit/noise"
	"gonum.org/v1/gonum/stat/distuv"
)

// Regression tests for the mechanism cases of issue #24, each at the input that failed.

// TestGaussianHugeEpsilon: NewGaussian at ε = 1e300 never returned (the certificate's
// threshold loop ran a float64 counter past 2^53). It is now calibrated at
// MaxCalibrationEpsilon and reports the ε asked for.
func TestGaussianHugeEpsilon(t *testing.T) {
	m, err := NewGaussian(GaussianOptions{Epsilon: 1e300, Delta: 1e-5, Sensitivity: 1})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := NewGaussian(GaussianOptions{Epsilon: MaxCalibrationEpsilon, Delta: 1e-5, Sensitivity: 1})
	if m.Guarantee().Epsilon != 1e300 || m.Sigma() != ref.Sigma() {
		t.Errorf("ε = 1e300: %v, σ %v (at 2^10: %v)", m.Guarantee(), m.Sigma(), ref.Sigma())
	}
	if d := m.Sampler().DeltaBound(MaxCalibrationEpsilon); d > 1e-5 {
		t.Errorf("certified δ(2^10) = %v", d)
	}
}

// TestGaussianSmallEpsilonFeasible: ε = 1e-4, δ ≤ 1e-12 and ε = 0.01, δ ≤ 1e-100 were
// reported infeasible (the certification stepped σ by 2^-28 at most 200 times) although
// σ·1.0001 certifies.
func TestGaussianSmallEpsilonFeasible(t *testing.T) {
	for _, c := range [][2]float64{{1e-4, 1e-12}, {1e-4, 1e-15}, {0.01, 1e-100}, {0.01, 1e-200}} {
		m, err := NewGaussian(GaussianOptions{Epsilon: c[0], Delta: c[1], Sensitivity: 1})
		if err != nil {
			t.Errorf("ε=%v δ=%v: %v", c[0], c[1], err)
			continue
		}
		if d := m.Sampler().DeltaBound(c[0]); d > c[1] {
			t.Errorf("ε=%v δ=%v: certified δ %v", c[0], c[1], d)
		}
		if r := m.Sigma() / m.CalibratedSigma(); r < 1 || r > 1.0001 {
			t.Errorf("ε=%v δ=%v: grid σ / analytic σ = %v", c[0], c[1], r)
		}
	}
}

// TestIntervalTinyBeta: Laplace.Interval and Geometric.Interval hung at β ≤ 1e-300
// (subnormal β included) once the number of grid steps passed 2^53, e.g. ε = 1e-3,
// β = 1e-300 (grid scale 1.4e14) and ε = 1e-4, β = 1e-200. The result meets β by the
// log-space tail, checked here in 200-bit arithmetic, and one step less does not (up to
// the documented 1e-12·(1 + |ln β|) margin).
func TestIntervalTinyBeta(t *testing.T) {
	check := func(name string, rate, steps, beta float64) {
		t.Helper()
		// ln P(|Z| ≥ m) = ln 2 − r·m − ln(1 + e^(−r)), with r·m exact in big.Float.
		lnTail := func(m float64) float64 {
			rm, _ := new(big.Float).SetPrec(200).Mul(big.NewFloat(rate), big.NewFloat(m)).Float64()
			return math.Ln2 - rm - math.Log1p(math.Exp(-rate))
		}
		lb := math.Log(beta)
		if math.IsInf(steps, 0) || math.IsNaN(steps) || lnTail(steps) > lb {
			t.Errorf("%s β=%v: %v steps, ln tail %v > ln β %v", name, beta, steps, lnTail(steps), lb)
		}
		if steps > 1 && steps < 0x1p53 && lnTail(steps-1) <= lb-2e-12*(1-lb) {
			t.Errorf("%s β=%v: %v steps is not the smallest", name, beta, steps)
		}
	}
	for _, eps := range []float64{1e-3, 1e-2, 1e-4} {
		m, err := NewLaplace(LaplaceOptions{Epsilon: eps, Sensitivity: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, beta := range []float64{1e-200, 1e-300, 1e-310, 5e-324} {
			w, err := m.Interval(beta)
			if err != nil {
				t.Fatal(err)
			}
			check("laplace", 1/float64(m.Sampler().GridScale()), w/m.Granularity(), beta)
		}
	}
	g, _ := NewGeometric(GeometricOptions{Epsilon: 0x1p-40, Sensitivity: 1})
	w, err := g.Interval(5e-324)
	if err != nil {
		t.Fatal(err)
	}
	check("geometric", g.Rate(), float64(w), 5e-324)
}

// countingSource counts the 64-bit words drawn.
type countingSource struct {
	src noise.Source
	n   int
}

func (c *countingSource) Uint64() uint64 { c.n++; return c.src.Uint64() }

// TestRandomizedResponseDraws: k-ary randomized response drew ≈ k uniform categories per
// release at large ε (k = 2^26 did not finish in 10 s). Now a release costs O(1) draws:
// at most 8 words on average here (a round needs about 2), at every k and ε.
func TestRandomizedResponseDraws(t *testing.T) {
	for _, c := range []struct {
		k   int
		eps float64
	}{{1 << 26, 30}, {1 << 30, 40}, {1 << 26, 0.5}, {2, 50}, {1000, 7}} {
		m, err := NewRandomizedResponse(RandomizedResponseOptions{Epsilon: c.eps, Categories: c.k})
		if err != nil {
			t.Fatal(err)
		}
		src := &countingSource{src: noise.Seeded(uint64(c.k))}
		const n = 2000
		for i := 0; i < n; i++ {
			if _, err := m.Release(i%c.k, src); err != nil {
				t.Fatal(err)
			}
		}
		if avg := float64(src.n) / n; avg > 8 {
			t.Errorf("k=%d ε=%v: %.1f words per release", c.k, c.eps, avg)
		}
	}
}

// TestRandomizedResponseDistribution: the sampler's output frequencies against the
// exact probabilities e^ε̂/(e^ε̂ + k − 1) and 1/(e^ε̂ + k − 1), ε̂ = s·ln 2 + y
// recomputed here from the split, for splits with s = 0, s < ⌈log2(k−1)⌉ and s capped.
// χ² over the k cells; each case fails a correct sampler with probability 1e-6.
func TestRandomizedResponseDistribution(t *testing.T) {
	n := 400000
	if testing.Short() {
		n = 40000
	}
	for _, c := range []struct {
		k   int
		eps float64
	}{{4, 0.3}, {4, 1}, {4, 5}, {7, 2.5}} {
		m, _ := NewRandomizedResponse(RandomizedResponseOptions{Epsilon: c.eps, Categories: c.k})
		epsHat := float64(m.s)*math.Ln2 + float64(m.num)/float64(m.den)
		if epsHat > c.eps || epsHat < c.eps-1e-12 {
			t.Errorf("k=%d ε=%v: ε̂ = %v", c.k, c.eps, epsHat)
		}
		z := math.Exp(epsHat) + float64(c.k-1)
		src := noise.Seeded(uint64(100*c.k) + uint64(c.eps*10))
		counts := make([]float64, c.k)
		for i := 0; i < n; i++ {
			y, _ := m.Release(1, src)
			counts[y]++
		}
		chi := 0.0
		for j, o := range counts {
			p := 1 / z
			if j == 1 {
				p = math.Exp(epsHat) / z
			}
			e := p * float64(n)
			chi += (o - e) * (o - e) / e
		}
		if crit := (distuv.ChiSquared{K: float64(c.k - 1)}).Quantile(1 - 1e-6); chi > crit {
			t.Errorf("k=%d ε=%v: χ² = %.1f > %.1f", c.k, c.eps, chi, crit)
		}
	}
}

// TestReleaseBeyondClamp: the secure samplers clamp the snapped value to ±2^60 grid
// steps, which for Δ = 1, ε = 1 (g = 2^-40) moved every value beyond 2^20 = 1048576 to
// 1048576 silently. Releases now add the noise in exact integer arithmetic at any
// magnitude.
func TestReleaseBeyondClamp(t *testing.T) {
	lap, _ := NewLaplace(LaplaceOptions{Epsilon: 1, Sensitivity: 1})
	gau, _ := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-6, Sensitivity: 1})
	src := noise.Seeded(9)
	for _, x := range []float64{5e6, -5e6, 0x1p60, 1e15, 3e100, -1e300, math.MaxFloat64} {
		for name, rel := range map[string]func(float64, noise.Source) (float64, error){"laplace": lap.Release, "gaussian": gau.Release} {
			v, err := rel(x, src)
			if err != nil {
				t.Fatal(err)
			}
			// The noise is within 60 scales; beyond that the answer is the value's float
			// neighbourhood.
			if math.Abs(v-x) > 60*math.Max(1, math.Abs(x)*0x1p-52) {
				t.Errorf("%s(%v) = %v", name, x, v)
			}
		}
	}
}

// TestGridRelease: gridRelease against the exact value computed in big.Float for values
// on both sides of 2^53 grid steps, the half-way case and the overflow of x/g.
func TestGridRelease(t *testing.T) {
	for _, c := range []struct {
		x float64
		k int
		z int64
	}{
		{0.5, 0, 0}, {-0.5, 0, 0}, {1.5, 0, -3}, {0x1p52 + 1, 0, 0}, {0x1p52 + 0.5, 0, 0},
		{0x1p53, 0, 1}, {0x1p53 + 2, 0, -1}, {0x1p60, -40, 12345}, {1e300, -60, 1 << 61},
		{-1e300, -1000, -(1 << 61)}, {math.MaxFloat64, -1, 1 << 62}, {3.25, -1, 7},
	} {
		// exact: ⌊x/g + ½⌋ + z, times g, nearest float64
		a := new(big.Float).SetPrec(4000).SetFloat64(c.x)
		a.SetMantExp(a, -c.k)
		a.Add(a, big.NewFloat(0.5))
		n, _ := a.Int(nil)
		if a.Sign() < 0 && !a.IsInt() {
			n.Sub(n, big.NewInt(1)) // Int truncates toward zero; want the floor
		}
		n.Add(n, big.NewInt(c.z))
		want, _ := new(big.Float).SetMantExp(new(big.Float).SetInt(n), c.k).Float64()
		want = math.Max(-math.MaxFloat64, math.Min(math.MaxFloat64, want))
		if got := gridRelease(c.x, c.k, c.z); got != want {
			t.Errorf("gridRelease(%v, %d, %d) = %v, want %v", c.x, c.k, c.z, got, want)
		}
	}
}

// TestSnapExact: the median snapped ⌊a + ½⌋ as Floor(a + 0.5), one step off for
// |a| ∈ [2^52, 2^53) (a + 0.5 rounds to even): 2^52 + 1 became 2^52 + 2.
func TestSnapExact(t *testing.T) {
	for _, c := range []struct {
		a    float64
		want int64
	}{{0x1p52 + 1, 1<<52 + 1}, {0x1p52 + 3, 1<<52 + 3}, {-(0x1p52 + 1), -(1<<52 + 1)},
		{0x1p53 - 1, 1<<53 - 1}, {2.5, 3}, {-2.5, -2}, {0.49999999999999994, 0}, {0x1p60, 1 << 60}} {
		if got := snap(c.a); got != c.want {
			t.Errorf("snap(%v) = %d, want %d", c.a, got, c.want)
		}
	}
	if old := int64(math.Floor(0x1p52 + 1 + 0.5)); old == 1<<52+1 {
		t.Error("the old formula is right here: the regression input does not reproduce")
	}
}

// TestGridReleaseInt: gridReleaseInt is gridRelease rounded to the nearest integer
// (halves up), checked against big.Float for grids finer and coarser than 1 and at the
// int64 range's ends (saturated).
func TestGridReleaseInt(t *testing.T) {
	for _, c := range []struct {
		x    int64
		k    int
		z    int64
		want int64
	}{
		{5, -30, 0, 5}, {5, -30, 1 << 29, 6}, {5, -30, (1 << 29) - 1, 5}, {5, -30, -(1 << 29), 5}, {5, -30, -(1 << 29) - 1, 4},
		{-7, -2, 3, -6}, {7, 0, -3, 4}, {7, 2, 1, 12}, {6, 2, 0, 8}, {5, 2, 0, 4}, {-6, 2, 0, -4},
		{math.MaxInt64, -10, 1 << 40, math.MaxInt64}, {math.MinInt64, -10, -(1 << 40), math.MinInt64},
		{1 << 40, -30, 12345, 1<<40 + 0}, {3, 3, 2, 16},
	} {
		if got := gridReleaseInt(c.x, c.k, c.z); got != c.want {
			t.Errorf("gridReleaseInt(%d, %d, %d) = %d, want %d", c.x, c.k, c.z, got, c.want)
		}
	}
	m, _ := NewGaussian(GaussianOptions{Epsilon: 1, Delta: 1e-6, Sensitivity: 1})
	src := noise.Seeded(4)
	sum, sum2 := 0.0, 0.0
	const n = 20000
	for range n {
		v, err := m.ReleaseInt(100, src)
		if err != nil {
			t.Fatal(err)
		}
		sum += float64(v - 100)
		sum2 += float64(v-100) * float64(v-100)
	}
	// Mean 0 and variance ≤ σ² + 1/4: 6 standard errors (false rejection < 1e-8).
	if sd := math.Sqrt(m.Variance() + 0.25); math.Abs(sum/n) > 6*sd/math.Sqrt(n) || sum2/n > (m.Variance()+0.25)*1.1 {
		t.Errorf("ReleaseInt noise: mean %v, second moment %v (σ² = %v)", sum/n, sum2/n, m.Variance())
	}
}
