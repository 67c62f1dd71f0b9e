package pld

import (
	"math"
	"testing"
)

// Convolve's two FFT paths (everything, and exact bulks with FFT tails) agree with the
// direct convolution, accumulated in double-double arithmetic (error ~1e-30 relative),
// within the tracked Rel and Err, on lattices with a heavy bulk and a long light tail (the shape
// that made the plain FFT bound large).
func TestConvolveSplitWithinErr(t *testing.T) {
	mk := func(n, c int, w, tail float64) *Lattice {
		l := &Lattice{H: 0.01, Mass: make([]float64, n)}
		for i := range l.Mass {
			x := float64(i - c)
			l.Mass[i] = math.Exp(-x*x/(2*w*w)) + tail*math.Exp(-math.Abs(x)/float64(n))
		}
		s := total(l.Mass)
		for i := range l.Mass {
			l.Mass[i] /= s
		}
		return l
	}
	cases := []struct{ a, b *Lattice }{
		{mk(3000, 200, 20, 1e-6), mk(3000, 200, 20, 1e-6)},     // split, distinct
		{mk(2500, 100, 8, 1e-9), nil},                          // split, squaring
		{mk(6000, 3000, 900, 1e-3), mk(6000, 3000, 900, 1e-3)}, // bulk too wide: plain FFT
	}
	for n, c := range cases {
		a, b := c.a, c.b
		if b == nil {
			b = a
		}
		got := Convolve(a, b)
		if got.Err == 0 {
			t.Fatalf("case %d: expected an FFT path (Err > 0)", n)
		}
		hi := make([]float64, len(a.Mass)+len(b.Mass)-1)
		lo := make([]float64, len(hi))
		for i, x := range a.Mass {
			for j, y := range b.Mass {
				p := x * y
				pe := math.FMA(x, y, -p) // x·y = p + pe exactly
				s := hi[i+j] + p         // TwoSum
				bb := s - hi[i+j]
				e := (hi[i+j] - (s - bb)) + (p - bb)
				hi[i+j], lo[i+j] = s, lo[i+j]+e+pe
			}
		}
		// Each bin within Rel of the exact value, plus absolute deviations summing to at
		// most Err (the Lattice bound, here checked bin by bin).
		excess := 0.0
		for i := range hi {
			d := math.Abs((got.Mass[i] - hi[i]) - lo[i])
			excess += math.Max(0, d-got.Rel*(hi[i]+lo[i]))
		}
		if excess > got.Err {
			t.Errorf("case %d: deviation beyond Rel = %g is %g, above Err %g", n, got.Rel, excess, got.Err)
		}
	}
}

// Adaptive self-composition (coarsening the powers, composeCoarse for narrow ones) of a
// Gaussian release must bracket the closed form of μ√k-GDP (Balle & Wang 2018, Thm 8,
// here via GaussianDelta), for k with scattered bits, to a relative ε width of 1e-3.
func TestSelfComposeAdaptiveGaussian(t *testing.T) {
	const mu = 0.002
	for _, k := range []int64{1, 3, 1000, 1 << 12, 40961, 1_000_003} {
		p := newPLD(mu/startRatio, 1e-40, gaussianSpec{mu})
		p.errTol = 1e-17 // as Compose allows at δ = 1e-10
		c := p.selfComposeAdaptive(k, math.Inf(1), coarseRatio)
		// 2e-3 at δ = 1e-10 and k = 10^6: the coarsenings' errors (20 of them) are
		// largest relative to the curve far in the tail.
		checkGaussianBracket(t, c, mu, k, func(delta float64) float64 { return math.Max(1e-3, 2e-3*math.Log10(1/delta)/10) })
		if k > 1<<12 && c.H() == p.H() {
			t.Errorf("k=%d: the powers were never coarsened", k)
		}
	}
}

// checkGaussianBracket checks that c, the k-fold composition of a μ-GDP release, brackets
// the closed form of μ√k-GDP (GaussianEpsilon) at δ = 1e-3, 1e-6, 1e-10 within a relative
// width width(δ).
func checkGaussianBracket(t *testing.T, c *PLD, mu float64, k int64, width func(delta float64) float64) {
	t.Helper()
	muK := mu * math.Sqrt(float64(k))
	for _, delta := range []float64{1e-3, 1e-6, 1e-10} {
		want, _ := GaussianEpsilon(muK, delta)
		up, lo := c.Epsilon(delta)
		if up < want*(1-1e-12) || lo > want*(1+1e-12) {
			t.Errorf("k=%d δ=%g: [%.12g, %.12g] misses exact %.12g", k, delta, lo, up, want)
		}
		if w := width(delta); (up-lo)/want > w {
			t.Errorf("k=%d δ=%g: bracket [%g, %g] wider than %g relative", k, delta, lo, up, w)
		}
	}
}

// The double-double FFT convolution agrees with direct double-double sums to within its
// bound (√size × the 2-norm bound) plus one float64 rounding per bin.
func TestDDConvolve(t *testing.T) {
	mk := func(n int, seed float64) []float64 {
		m := make([]float64, n)
		for i := range m {
			x := float64(i) - float64(n)/3
			m[i] = math.Exp(-x*x/(2*seed*seed)) + 1e-12*math.Exp(-math.Abs(x)/50)
		}
		s := total(m)
		for i := range m {
			m[i] /= s
		}
		return m
	}
	for _, c := range [][2]int{{7, 5}, {300, 200}, {2000, 1500}} {
		a, b := mk(c[0], 3+float64(c[0])/20), mk(c[1], 2+float64(c[1])/30)
		got, bound := ddConvolve(a, b)
		dev := 0.0
		for k := range got {
			var hi, lo float64
			for i := max(0, k-len(b)+1); i <= min(k, len(a)-1); i++ {
				p := a[i] * b[k-i]
				pe := math.FMA(a[i], b[k-i], -p)
				s, e := twoSum(hi, p)
				hi, lo = s, lo+e+pe
			}
			ex := hi + lo
			dev += math.Max(0, math.Abs(got[k]-ex)-2*u*ex)
		}
		if lim := bound * math.Sqrt(float64(len(got))); dev > lim || bound > 1e-25 {
			t.Errorf("sizes %v: deviation %g, bound %g (√size·bound %g)", c, dev, bound, lim)
		}
	}
}
