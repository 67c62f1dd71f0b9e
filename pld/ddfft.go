package pld

import (
	"math"
	"math/bits"
	"sync"
)

// Double-double arithmetic (a value is hi + lo, |lo| ≤ ulp(hi)/2; Dekker 1971, Hida, Li &
// Bailey 2001), used for FFT convolutions whose float64 error bound would exceed what a
// tiny δ target allows: its unit roundoff is about 2^-104 instead of 2^-53.
type dd struct{ hi, lo float64 }

// twoSum returns s = fl(a+b) and the exact error a + b − s (Knuth).
func twoSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	return s, (a - (s - bb)) + (b - bb)
}

// quickTwoSum is twoSum for |a| ≥ |b|.
func quickTwoSum(a, b float64) (s, e float64) {
	s = a + b
	return s, b - (s - a)
}

func ddAdd(x, y dd) dd {
	s, e := twoSum(x.hi, y.hi)
	t, f := twoSum(x.lo, y.lo)
	e += t
	s, e = quickTwoSum(s, e)
	e += f
	s, e = quickTwoSum(s, e)
	return dd{s, e}
}

func ddNeg(x dd) dd { return dd{-x.hi, -x.lo} }

func ddMul(x, y dd) dd {
	p := x.hi * y.hi
	e := math.FMA(x.hi, y.hi, -p) // x.hi·y.hi = p + e exactly
	e += x.hi*y.lo + x.lo*y.hi
	s, e := quickTwoSum(p, e)
	return dd{s, e}
}

// ddMulF multiplies by a float64 (exactly representable factors stay exact up to the
// dd rounding).
func ddMulF(x dd, f float64) dd { return ddMul(x, dd{f, 0}) }

// ddDivF divides by a float64 (long division: the remainder x − q1·f is exact by FMA).
func ddDivF(x dd, f float64) dd {
	q1 := x.hi / f
	r := math.FMA(-q1, f, x.hi) + x.lo
	q2 := r / f
	s, e := quickTwoSum(q1, q2)
	return dd{s, e}
}

// cdd is a complex number in double-double.
type cdd struct{ re, im dd }

func cddMul(a, b cdd) cdd {
	return cdd{
		ddAdd(ddMul(a.re, b.re), ddNeg(ddMul(a.im, b.im))),
		ddAdd(ddMul(a.re, b.im), ddMul(a.im, b.re)),
	}
}

func cddAdd(a, b cdd) cdd { return cdd{ddAdd(a.re, b.re), ddAdd(a.im, b.im)} }
func cddSub(a, b cdd) cdd { return cdd{ddAdd(a.re, ddNeg(b.re)), ddAdd(a.im, ddNeg(b.im))} }

// ddTwoPi is 2π to double-double precision (2π = 6.283185307179586476925286766559…).
var ddTwoPi = dd{6.283185307179586, 2.4492935982947064e-16}

// ddSinCos returns sin x and cos x for 0 ≤ x ≤ π/4 by their Taylor series (the terms
// beyond x^27/27! are below 1e-31 there).
func ddSinCos(x dd) (s, c dd) {
	x2 := ddMul(x, x)
	term := x // x^(2i+1)/(2i+1)!
	s = x
	for i := 1; i <= 14; i++ {
		term = ddMul(term, x2)
		term = ddDivF(term, float64((2*i)*(2*i+1)))
		if i%2 == 1 {
			s = ddAdd(s, ddNeg(term))
		} else {
			s = ddAdd(s, term)
		}
	}
	term = dd{1, 0}
	c = dd{1, 0}
	for i := 1; i <= 14; i++ {
		term = ddMul(term, x2)
		term = ddDivF(term, float64((2*i-1)*(2*i)))
		if i%2 == 1 {
			c = ddAdd(c, ddNeg(term))
		} else {
			c = ddAdd(c, term)
		}
	}
	return s, c
}

// twiddleCache holds ddTwiddles by size (read-only once built).
var twiddleCache sync.Map // int → []cdd

// ddTwiddles returns e^(−2πik/n), k < n/2, for n a power of two ≥ 8 (cached).
func ddTwiddles(n int) []cdd {
	if w, ok := twiddleCache.Load(n); ok {
		return w.([]cdd)
	}
	w, _ := twiddleCache.LoadOrStore(n, computeTwiddles(n))
	return w.([]cdd)
}

// computeTwiddles returns e^(−2πik/n), k < n/2.
func computeTwiddles(n int) []cdd {
	w := make([]cdd, n/2)
	for k := range w {
		w[k] = ddTwiddle(n, k)
	}
	return w
}

// ddTwiddle returns e^(−2πik/n) for 0 ≤ k < n/2, reducing the angle to [0, π/4] by the
// symmetries of sine and cosine.
func ddTwiddle(n, k int) cdd {
	angle := func(j int) (s, c dd) { // sin, cos of 2πj/n, 0 ≤ j ≤ n/8
		return ddSinCos(ddMulF(ddTwoPi, float64(j)/float64(n)))
	}
	var s, c dd // of θ = 2πk/n
	switch {
	case 8*k <= n:
		s, c = angle(k)
	case 4*k <= n: // θ = π/2 − φ
		sp, cp := angle(n/4 - k)
		s, c = cp, sp
	case 8*k <= 3*n: // θ = π/2 + φ
		sp, cp := angle(k - n/4)
		s, c = cp, ddNeg(sp)
	default: // θ = π − φ
		sp, cp := angle(n/2 - k)
		s, c = sp, ddNeg(cp)
	}
	return cdd{c, ddNeg(s)}
}

// ddFFT transforms x in place (size a power of two ≥ 8): X_k = Σ_j x_j e^(∓2πijk/n),
// the sign − for the forward transform, + for the inverse (unscaled).
func ddFFT(x []cdd, w []cdd, inverse bool) {
	n := len(x)
	shift := 64 - uint(bits.Len(uint(n))-1)
	for i := range x {
		j := int(bits.Reverse64(uint64(i)) >> shift)
		if i < j {
			x[i], x[j] = x[j], x[i]
		}
	}
	for size := 2; size <= n; size *= 2 {
		half, step := size/2, n/size
		for start := 0; start < n; start += size {
			for k := range half {
				t := w[k*step]
				if inverse {
					t.im = ddNeg(t.im)
				}
				v := cddMul(x[start+k+half], t)
				u := x[start+k]
				x[start+k] = cddAdd(u, v)
				x[start+k+half] = cddSub(u, v)
			}
		}
	}
}

// ddConvolve returns a ⊛ b (length len(a)+len(b)−1) computed by FFT in double-double,
// each bin rounded once to float64, and a bound on the 2-norm of the error before that
// rounding: Higham's bound (as in Convolve) with the double-double unit roundoff
// (2^-104, times 16 for the few roundings of each double-double operation and the
// twiddles' accuracy).
func ddConvolve(a, b []float64) (c []float64, bound float64) {
	size := len(a) + len(b) - 1
	n := max(8, 1<<bits.Len(uint(size-1)))
	w := ddTwiddles(n)
	// Both real inputs in one complex transform: x = a + i·b.
	x := make([]cdd, n)
	for i, v := range a {
		x[i].re = dd{v, 0}
	}
	for i, v := range b {
		x[i].im = dd{v, 0}
	}
	ddFFT(x, w, false)
	// A_k = (X_k + conj X_{n−k})/2, B_k = (X_k − conj X_{n−k})/(2i); C = A·B.
	y := make([]cdd, n)
	for k := range n {
		xk, xm := x[k], x[(n-k)%n]
		xmc := cdd{xm.re, ddNeg(xm.im)}
		A := cdd{ddMulF(ddAdd(xk.re, xmc.re), 0.5), ddMulF(ddAdd(xk.im, xmc.im), 0.5)}
		d := cddSub(xk, xmc) // = 2i·B
		B := cdd{ddMulF(d.im, 0.5), ddMulF(ddNeg(d.re), 0.5)}
		y[k] = cddMul(A, B)
	}
	ddFFT(y, w, true)
	c = make([]float64, size)
	inv := 1 / float64(n)
	for i := range c {
		c[i] = ddMulF(y[i].re, inv).hi
	}
	const u2 = 0x1p-104
	logN := float64(bits.Len(uint(n)))
	na1, na2, nb1, nb2 := total(a), norm2(a), total(b), norm2(b)
	// The packed transform counts as the two forward ones (its input's norm is at most
	// ‖a‖ + ‖b‖); the unpacking adds a few roundings per coefficient.
	bound = 4 * 7 * 16 * u2 * logN * ((na2+nb2)*(na1+nb1) + na2*nb2)
	return c, bound
}
