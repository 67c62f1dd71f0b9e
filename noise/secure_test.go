package noise

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/dpkit/dpkit"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestSnap: round half up on the grid, exact at ties, translation invariant by whole
// steps, clamped far out, NaN → 0.
func TestSnap(t *testing.T) {
	cases := []struct {
		x    float64
		k    int
		want int64
	}{
		{0, 0, 0}, {0.5, 0, 1}, {-0.5, 0, 0}, {1.5, 0, 2}, {-1.5, 0, -1}, {0.49999999999999994, 0, 0},
		{2.5, 0, 3}, {-2.5, 0, -2}, {0.75, -2, 3}, {0.625, -2, 3}, {-0.625, -2, -2},
		{1e300, 0, clampGrid}, {-1e300, 0, -clampGrid}, {math.Inf(1), -10, clampGrid},
		{math.NaN(), 0, 0}, {5e-324, 0, 0}, {3, 1, 2}, {-3, 1, -1},
	}
	for _, c := range cases {
		if got := snap(c.x, c.k); got != c.want {
			t.Errorf("snap(%v, 2^%d) = %d, want %d", c.x, c.k, got, c.want)
		}
	}
	// Neighbours at distance Δ snap to integers at distance ≤ ⌈Δ/g⌉.
	src := Seeded(5)
	for range 10000 {
		x := (Float64(src) - 0.5) * 100
		delta := Float64(src) * 3
		a, b := snap(x, -3), snap(x+delta, -3)
		if d := b - a; d < 0 || d > int64(math.Ceil(delta*8)) {
			t.Fatalf("snap(%v) = %d, snap(%v) = %d: distance %d > ⌈Δ/g⌉ = %v", x, a, x+delta, b, d, math.Ceil(delta*8))
		}
	}
	if unsnap(1<<62, 1000) != math.MaxFloat64 || unsnap(-1<<62, 1000) != -math.MaxFloat64 {
		t.Error("unsnap does not clamp to ±MaxFloat64")
	}
}

// TestSecureLaplaceParams: granularity a power of two near Δ/2^40, t·ε ≥ D exactly
// (so Epsilon() ≤ ε), scale within 2^−38 relative of Δ/ε.
func TestSecureLaplaceParams(t *testing.T) {
	for _, c := range [][2]float64{{1, 1}, {1, 0.1}, {1, 1e-3}, {3.7, 0.25}, {1e-200, 2}, {1e200, 0.5}, {1, 50}, {0.001, 1e-6}, {1, 1000}} {
		delta, eps := c[0], c[1]
		s, err := NewSecureLaplace(delta, eps)
		if err != nil {
			t.Fatalf("NewSecureLaplace(%v, %v): %v", delta, eps, err)
		}
		g := s.Granularity()
		if f, _ := math.Frexp(g); f != 0.5 {
			t.Errorf("granularity %v not a power of two", g)
		}
		if s.Epsilon() > eps {
			t.Errorf("(%v, %v): Epsilon %v > ε", delta, eps, s.Epsilon())
		}
		// D/t ≤ ε checked in exact arithmetic: t·ε − D ≥ 0 (FMA is exact in sign here).
		if math.FMA(float64(s.GridScale()), eps, -float64(s.GridSensitivity())) < 0 {
			t.Errorf("(%v, %v): t·ε < D", delta, eps)
		}
		if float64(s.GridSensitivity()) < delta/g {
			t.Errorf("(%v, %v): grid sensitivity %d < Δ/g = %v", delta, eps, s.GridSensitivity(), delta/g)
		}
		if r := s.Scale() / (delta / eps); r < 1-1e-15 || r > 1+0x1p-20 {
			t.Errorf("(%v, %v): scale %v is %v × Δ/ε", delta, eps, s.Scale(), r)
		}
		if s.GridScale() > maxGridT {
			t.Errorf("grid scale %d too large", s.GridScale())
		}
	}
	for _, bad := range [][2]float64{{0, 1}, {1, 0}, {math.NaN(), 1}, {1, math.Inf(1)}, {-1, 1}, {1e-310, 1}} {
		var pe *dpkit.ParamError
		if _, err := NewSecureLaplace(bad[0], bad[1]); !errors.As(err, &pe) {
			t.Errorf("NewSecureLaplace(%v, %v) = %v, want ParamError", bad[0], bad[1], err)
		}
	}
}

// TestSecureOutputsOnGrid: every release is a multiple of the granularity, whatever the
// input (the defence against Mironov's attack), and releases of huge inputs do not
// overflow.
func TestSecureOutputsOnGrid(t *testing.T) {
	src := Seeded(6)
	l, _ := NewSecureLaplace(1, 0.5)
	gs, _ := NewSecureGaussian(1, 2)
	st, _ := NewStaircase(1, 1, 0.3)
	for _, x := range []float64{0, 0.1, 1.0 / 3, -7.123456789, 1e6 + 0.3, math.MaxFloat64, -math.MaxFloat64} {
		for _, add := range []struct {
			name string
			g    float64
			f    func(Source, float64) float64
		}{{"laplace", l.Granularity(), l.Add}, {"gaussian", gs.Granularity(), gs.Add}, {"staircase", st.Granularity(), st.Add}} {
			y := add.f(src, x)
			if math.IsInf(y, 0) || math.IsNaN(y) {
				t.Errorf("%s(%v) = %v", add.name, x, y)
			}
			if q := y / add.g; q != math.Trunc(q) {
				t.Errorf("%s(%v) = %v is not a multiple of %v", add.name, x, y, add.g)
			}
		}
	}
}

// TestSecureLaplaceDistribution: the noise Z·g against the continuous Laplace(t·g)
// distribution with the DKW bound; the discrete CDF differs from the continuous one by at
// most about 1/t ≈ 2^−39, far below the DKW band. False-rejection probability frp.
func TestSecureLaplaceDistribution(t *testing.T) {
	s, _ := NewSecureLaplace(2, 0.7)
	src := Seeded(7)
	b := s.Scale()
	xs := make([]float64, draws(100000, 10000))
	for i := range xs {
		xs[i] = s.Noise(src)
	}
	dkw(t, "SecureLaplace", xs, func(x float64) float64 {
		if x < 0 {
			return 0.5 * math.Exp(x/b)
		}
		return 1 - 0.5*math.Exp(-x/b)
	}, frp)
}

// gaussianChiSquare tests draws of the grid noise Z (in grid steps) of a SecureGaussian
// against the discrete Gaussian N_ℤ(0, S²) with S = ⌈σ/g⌉ computed HERE from the σ that
// was asked for and the granularity (never from the sampler's own parameters, so a
// sampler with the wrong σ is caught). Bins: 40 cells with edges at the integers
// nearest to the continuous quantiles S·Φ⁻¹(i/40), the outer two open. Cell
// probabilities use P[Y ≤ m] for the discrete Gaussian, which differs from
// Φ((m + ½)/S) by less than 1/S ≤ 2^−29 here (Euler–Maclaurin for the unimodal
// e^(−y²/2S²), plus the Poisson-summation normaliser within e^(−2π²S²) of √(2π)S):
// with n ≤ 10^6 draws that moves an expected count by < 0.002, negligible against the
// χ² resolution. Every cell expects ≥ 1000 draws (n/40 with n ≥ 4·10^4), where the χ²
// approximation of the statistic's tail is accurate. It returns the statistic and the
// critical value at false-rejection probability alpha (df 39).
func gaussianChiSquare(draw func() int64, sigma, g float64, n int, alpha float64) (stat, crit float64) {
	S := math.Ceil(sigma / g)
	const bins = 40
	edges := make([]float64, bins-1) // integer edges: cell i is [edges[i−1], edges[i])
	for i := range edges {
		q := distuv.UnitNormal.Quantile(float64(i+1) / bins)
		edges[i] = math.Round(S * q)
	}
	cdfBelow := func(m float64) float64 { // P[Y < m] = P[Y ≤ m − 1] ≈ Φ((m − ½)/S)
		return 0.5 * math.Erfc(-(m-0.5)/S/math.Sqrt2)
	}
	p := make([]float64, bins)
	prev := 0.0
	for i := range edges {
		c := cdfBelow(edges[i])
		p[i] = c - prev
		prev = c
	}
	p[bins-1] = 1 - prev
	counts := make([]float64, bins)
	for range n {
		z := float64(draw())
		i, _ := slices.BinarySearch(edges, z) // number of edges ≤ … : cell index
		if i < len(edges) && edges[i] == z {
			i++
		}
		counts[i]++
	}
	for i := range p {
		e := float64(n) * p[i]
		stat += (counts[i] - e) * (counts[i] - e) / e
	}
	return stat, distuv.ChiSquared{K: bins - 1}.Quantile(1 - alpha)
}

// TestSecureGaussianDistribution: the grid noise of NewSecureGaussian(1, σ) against the
// exact discrete Gaussian with S = ⌈σ/g⌉ (χ² with 40 cells, gaussianChiSquare),
// false-rejection probability frp per σ, 10^6 draws (5·10^4 under -short). Also a DKW
// test of Z·g against N(0, σ²) with the σ asked for (the discrete CDF is within ~1/S
// of the continuous one). The χ² test is shown to reject a sampler whose σ is scaled
// by 0.9 in TestSecureGaussianTestDetectsBrokenSigma.
func TestSecureGaussianDistribution(t *testing.T) {
	for i, sigma := range []float64{3, 0.37} {
		s, err := NewSecureGaussian(1, sigma)
		if err != nil {
			t.Fatal(err)
		}
		if r := s.Sigma() / sigma; r < 1 || r > 1+0x1p-28 {
			t.Errorf("Sigma %v for σ = %v", s.Sigma(), sigma)
		}
		src := Seeded(8 + uint64(i))
		n := draws(1000000, 50000)
		g := s.Granularity()
		stat, crit := gaussianChiSquare(func() int64 { return int64(s.Noise(src) / g) }, sigma, g, n, frp/4)
		if stat > crit {
			t.Errorf("σ=%v: χ² = %.1f > %.1f (df 39, false-rejection probability %g)", sigma, stat, crit, frp/4)
		}
		xs := make([]float64, draws(100000, 10000))
		for i := range xs {
			xs[i] = s.Noise(src)
		}
		dkw(t, "SecureGaussian", xs, func(x float64) float64 { return 0.5 * math.Erfc(-x/(sigma*math.Sqrt2)) }, frp/4)
	}
}

// TestSecureGaussianTestDetectsBrokenSigma proves the χ² test above can fail: a sampler
// built exactly like NewSecureGaussian but with its integer σ scaled by 0.9 (the
// deliberate breakage of issue #4) is rejected, with the draw counts of the real test
// (also under -short). With 5·10^4 draws the expected statistic under that
// alternative is ≈ 39 + 5·10^4·0.017 ≈ 900, against a critical value ≈ 100.
func TestSecureGaussianTestDetectsBrokenSigma(t *testing.T) {
	const sigma = 3.0
	good, err := NewSecureGaussian(1, sigma)
	if err != nil {
		t.Fatal(err)
	}
	brokenS, err := NewDiscreteGaussian(uint64(0.9 * float64(good.GridSigma())))
	if err != nil {
		t.Fatal(err)
	}
	broken := &SecureGaussian{k: good.k, d: good.d, gauss: *brokenS}
	src := Seeded(18)
	g := broken.Granularity()
	stat, crit := gaussianChiSquare(func() int64 { return int64(broken.Noise(src) / g) }, sigma, g, draws(1000000, 50000), frp/4)
	if stat <= crit {
		t.Errorf("σ·0.9 sampler not detected: χ² = %.1f ≤ %.1f", stat, crit)
	}
}

// exactDiscreteGaussianDelta computes δ(ε) of N_ℤ(0, S²) against its shift by D by
// direct summation of (P0(z) − e^ε P1(z))₊ over |z| ≤ 40S (the tails beyond are below
// e^(−800)): the definition of the hockey-stick divergence, independent of DeltaBound.
func exactDiscreteGaussianDelta(S, D int64, eps float64) float64 {
	s := float64(S)
	norm := 0.0
	for z := -40 * S; z <= 40*S; z++ {
		norm += math.Exp(-float64(z*z) / (2 * s * s))
	}
	d := 0.0
	for z := -40 * S; z <= 40*S; z++ {
		p0 := math.Exp(-float64(z*z)/(2*s*s)) / norm
		p1 := math.Exp(-float64((z-D)*(z-D))/(2*s*s)) / norm
		d += math.Max(0, p0-math.Exp(eps)*p1)
	}
	return d
}

// TestDeltaBound: DeltaBound is never below the exact δ of the discrete Gaussian
// (direct summation, relative accuracy ~1e-13) and, for S ≥ 100, within 3% + 1/S of it.
func TestDeltaBound(t *testing.T) {
	for _, c := range []struct {
		S, D int64
	}{{2, 1}, {5, 1}, {5, 3}, {20, 7}, {100, 30}, {400, 100}} {
		for _, eps := range []float64{0, 0.1, 0.5, 1, 3} {
			exact := exactDiscreteGaussianDelta(c.S, c.D, eps)
			bound := discreteGaussianDelta(float64(c.S), float64(c.D), eps)
			if bound < exact*(1-1e-12) {
				t.Errorf("S=%d D=%d ε=%v: bound %.6g below exact %.6g", c.S, c.D, eps, bound, exact)
			}
			if c.S >= 100 && bound > exact*1.03+2/float64(c.S) {
				t.Errorf("S=%d D=%d ε=%v: bound %.6g loose (exact %.6g)", c.S, c.D, eps, bound, exact)
			}
		}
	}
}

// Issue 24: NewSecureLaplace looped forever when ⌈D/ε⌉ ≥ 2^64 (ε = 5e-20), the grid
// sensitivity D overflowed uint64 at ε ≳ 10^7, and DeltaBound(10^7) of
// NewSecureGaussian(1, 1) never returned (a float64 loop counter past 2^53). Each now
// returns: a clear error for a grid scale beyond 2^48, D ≤ 2^50 + dims with ε' = D/t ≤ ε
// at any large ε, and a δ bound (the smallest positive float64: the true value is 0 to
// within e^−(2^40)).
func TestSecureExtremes(t *testing.T) {
	for _, eps := range []float64{5e-20, 1e-300} {
		if _, err := NewSecureLaplace(1, eps); err == nil {
			t.Errorf("ε = %g: accepted, want an error naming the grid scale", eps)
		}
	}
	for _, eps := range []float64{1e7, 1e12, 1e300} {
		s, err := NewSecureLaplace(1, eps)
		if err != nil {
			t.Fatalf("ε = %g: %v", eps, err)
		}
		if s.GridSensitivity() > 1<<50 || s.Epsilon() > eps || s.GridScale() < 1 {
			t.Errorf("ε = %g: D = %d, t = %d, ε' = %g", eps, s.GridSensitivity(), s.GridScale(), s.Epsilon())
		}
	}
	g, err := NewSecureGaussian(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, eps := range []float64{1e7, 1e12, 1e300} {
		if d := g.DeltaBound(eps); d != math.SmallestNonzeroFloat64 {
			t.Errorf("DeltaBound(%g) = %g, want the smallest positive float64", eps, d)
		}
	}
	if g, err := NewSecureGaussian(1e300, 1); err != nil || g.GridSensitivity() > 1<<50 {
		t.Errorf("Δ/σ = 1e300: %v, D = %d", err, g.GridSensitivity())
	}
}

// Found by FuzzSecureGaussian: DeltaBound(474) of NewSecureGaussian(7.714285714285715,
// 0.5) came out as 5e-324 while DeltaBound(475) was 4e-118 — below the truth, from the
// subnormal tail Φ(−38.3) ≈ 1e-321 times e^474. With S ≈ 1.1e9 grid steps the discrete
// Gaussian's curve is the continuous μ-GDP curve, μ = D/S = 15.428571429103613, to far
// better than 1e-6; that curve at ε = 474 is 7.777432861209484e-118 and at 500
// 2.4337708484067632e-135 (mpmath 1.3.0 at 50 digits, Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)).
func TestDeltaBoundFarTail(t *testing.T) {
	s, err := NewSecureGaussian(7.714285714285715, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if mu := float64(s.GridSensitivity()) / float64(s.GridSigma()); mu != 15.428571429103613 {
		t.Fatalf("μ = %.17g: the reference is for 15.428571429103613", mu)
	}
	for _, c := range []struct{ eps, want float64 }{{474, 7.777432861209484e-118}, {500, 2.4337708484067632e-135}} {
		if got := s.DeltaBound(c.eps); got < c.want*(1-1e-6) || got > c.want*(1+1e-6) {
			t.Errorf("DeltaBound(%g) = %g, want %g within 1e-6", c.eps, got, c.want)
		}
	}
}
