package pld

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/floats/scalar"
)

// TestRealFFTAgainstDoubleDouble: the float64 real transform and its inverse against
// the double-double FFT (ddFFT, accurate to about 2^-100) of the same sequences, for
// n = 8 … 2^14 and windows of support. The error must stay within the factor Convolve
// charges per transform, 7u·(log₂n + 1) of the output's 2-norm (see realFFT), and — a
// check that the factor is not vacuous — the observed error is far below it.
func TestRealFFTAgainstDoubleDouble(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for lg := 3; lg <= 14; lg++ {
		n := 1 << lg
		p := newRealFFT(n)
		z := make([]complex128, n/2)
		for trial := range 4 {
			x := make([]float64, n)
			lo, hi := 0, n
			if trial > 0 {
				lo, hi = rng.IntN(n/2), n/2+rng.IntN(n/2)+1
			}
			for i := lo; i < hi; i++ {
				x[i] = math.Exp(-20 * rng.Float64()) // positive, spread over 9 decades
			}
			// Reference: dd transform of x.
			ref := make([]cdd, n)
			for i, v := range x {
				ref[i].re = dd{v, 0}
			}
			ddFFT(ref, ddTwiddles(n), false)
			X := p.forward(x, lo, hi, z)
			errSq, normSq := 0.0, 0.0
			for k := range n {
				var got complex128
				if k <= n/2 {
					got = X[k]
				} else {
					got = complex(real(X[n-k]), -imag(X[n-k]))
				}
				dr, di := real(got)-(ref[k].re.hi+ref[k].re.lo), imag(got)-(ref[k].im.hi+ref[k].im.lo)
				errSq += dr*dr + di*di
				normSq += ref[k].re.hi*ref[k].re.hi + ref[k].im.hi*ref[k].im.hi
			}
			bound := 7 * u * float64(lg+1)
			rel := math.Sqrt(errSq / normSq)
			t.Logf("n=%d forward rel %.3g = %.3f of bound", n, rel, rel/bound)
			if rel > bound/4 {
				t.Errorf("n=%d trial %d: forward relative error %.3g, bound %.3g", n, trial, rel, bound)
			}
			// Inverse of the exact spectrum (rounded) against n·x.
			Xr := make([]complex128, n/2+1)
			for k := range Xr {
				Xr[k] = complex(ref[k].re.hi, ref[k].im.hi)
			}
			out := make([]float64, n)
			p.inverse(Xr, out, z)
			errSq, normSq = 0, 0
			for i, v := range out {
				d := v - float64(n)*x[i]
				errSq += d * d
				normSq += float64(n) * float64(n) * x[i] * x[i]
			}
			if rel := math.Sqrt(errSq / normSq); rel > bound/4+2*u {
				t.Errorf("n=%d trial %d: inverse relative error %.3g, bound %.3g", n, trial, rel, bound)
			}
		}
	}
}

// TestRealFFTIndex: the transform of a unit impulse at j is e^(−2πijk/n) (a check of the
// bit reversal and the stage order independent of ddFFT).
func TestRealFFTIndex(t *testing.T) {
	for _, n := range []int{8, 16, 32, 1024} {
		p := newRealFFT(n)
		z := make([]complex128, n/2)
		for _, j := range []int{0, 1, 2, 3, n/2 - 1, n / 2, n - 1} {
			x := make([]float64, n)
			x[j] = 1
			X := p.forward(x, 0, n, z)
			for k, v := range X {
				s, c := math.Sincos(-2 * math.Pi * float64(j*k%n) / float64(n))
				if math.Abs(real(v)-c) > 1e-14 || math.Abs(imag(v)-s) > 1e-14 {
					t.Fatalf("n=%d impulse %d: X_%d = %v, want %v", n, j, k, v, complex(c, s))
				}
			}
			out := make([]float64, n)
			p.inverse(X, out, z)
			for i, v := range out {
				want := 0.0
				if i == j {
					want = float64(n)
				}
				if !scalar.EqualWithinAbs(v, want, 1e-12*float64(n)) {
					t.Fatalf("n=%d impulse %d: inverse[%d] = %g, want %g", n, j, i, v, want)
				}
			}
		}
	}
}

// TestTwiddles64: the product-table twiddles equal the Taylor-series ones rounded to
// float64 (both within 2^-100 of exact, so they may differ only where an exact value lies
// within that of a rounding boundary: at most one unit in the last place).
func TestTwiddles64(t *testing.T) {
	for _, n := range []int{1 << 10, 1 << 11, 1 << 13, 1 << 15} {
		got := twiddles64(n)
		for k, w := range computeTwiddles(n) {
			if dr, di := math.Abs(real(got[k])-w.re.hi), math.Abs(imag(got[k])-w.im.hi); dr > 0 || di > 0 {
				if dr > ulp(w.re.hi) || di > ulp(w.im.hi) {
					t.Fatalf("n=%d k=%d: %v, want %v", n, k, got[k], complex(w.re.hi, w.im.hi))
				}
				t.Logf("n=%d k=%d: one ulp apart (a near-tie)", n, k)
			}
		}
	}
}

func ulp(x float64) float64 { return math.Abs(math.Nextafter(x, math.Inf(1)) - x) }

// TestLargeFFTPlan: lengths above maxCachedFFT come from a pool; the plan works the same
// (an impulse's transform, and back).
func TestLargeFFTPlan(t *testing.T) {
	n := 2 * maxCachedFFT
	x := make([]float64, n)
	x[5] = 1
	for range 2 {
		withRealFFT(n, func(p *realFFT) {
			z, done := p.scratch()
			defer done()
			X := p.forward(x, 0, n, z)
			for _, k := range []int{0, 1, 1000, n / 4, n / 2} {
				s, c := math.Sincos(-2 * math.Pi * float64(5*k%n) / float64(n))
				if math.Abs(real(X[k])-c) > 1e-14 || math.Abs(imag(X[k])-s) > 1e-14 {
					t.Fatalf("X_%d = %v, want %v", k, X[k], complex(c, s))
				}
			}
			out := make([]float64, 8)
			p.inverse(X, out, z)
			for i, v := range out {
				if want := float64(n) * x[i]; !scalar.EqualWithinAbs(v, want, 1e-9) {
					t.Fatalf("inverse[%d] = %g, want %g", i, v, want)
				}
			}
		})
	}
}
