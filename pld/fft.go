package pld

import (
	"math/bits"
	"sync"
)

// realFFT is the discrete Fourier transform of real sequences of length n (a power of
// two ≥ 8), written so that its rounding error is the one Higham bounds for the
// radix-2 Cooley–Tukey FFT ("Accuracy and Stability of Numerical Algorithms", 2nd ed.,
// Thm 24.2: ‖ŷ − y‖₂ ≤ t·η/(1 − t·η)·‖y‖₂ for t stages, η = μ + γ₄(√2 + μ), μ the
// twiddle factors' relative error), which Convolve's error bound relies on:
//
//   - twiddle factors are double-double values rounded to float64 (twiddles64),
//     so μ ≤ u;
//   - the length-n/2 complex transform is decimation in time, two radix-2 stages fused
//     per pass (a radix-2² pass performs exactly the floating-point operations of the
//     two stages, the second stage's twiddle e^(−2πi(j+h)/4h) being −i times the
//     j-th, both rounded from exact values);
//   - a real sequence x is packed as z_j = x_{2j} + i·x_{2j+1} (exact), and the
//     transform of x follows from Z = F z by one more radix-2 stage,
//     X_k = E_k + w^k O_k, X_{k+n/2} = E_k − w^k O_k, on E_k = (Z_k + conj Z_{n/2−k})/2,
//     O_k = −i·(Z_k − conj Z_{n/2−k})/2 (one rounded addition per component, halving
//     exact; that map is an isometry): log₂n stages in all, and one extra rounding u;
//   - the inverse (Hermitian spectrum to real sequence, unscaled) undoes those steps:
//     Y_k = (X_k + X_{k+n/2}) + i·w^(−k)(X_k − X_{k+n/2}), a stage of norm √2 on
//     Hermitian input whose roundings stay within η of its output's norm, then the
//     length-n/2 inverse transform of Y, whose real and imaginary parts are x_{2j} and
//     x_{2j+1}.
//
// With μ ≤ u, η ≤ 6.66u, and log₂n·η + u ≤ 7u·(log₂n + 1): Convolve's per-transform
// factor. A plan is read-only (safe for concurrent use); callers pass the scratch.
type realFFT struct {
	n     int
	rev   []int32      // bit reversal of the n/2 complex points
	tw    []complex128 // tw[h−1+j] = e^(−2πij/2h): the twiddles of the stage of span h
	split []complex128 // split[k] = e^(−2πik/n), k ≤ n/4
	pool  sync.Pool    // scratch of n/2 complex points
}

var (
	realFFTs  sync.Map // n → *realFFT, n ≤ maxCachedFFT
	largeFFTs sync.Map // n → *sync.Pool of *realFFT, n > maxCachedFFT
)

// maxCachedFFT is the largest length whose plan is kept for the life of the process
// (about 22 bytes per point with its scratch: 23 MB at 2^20); longer plans live in a
// sync.Pool, so they are reused by consecutive convolutions and freed when idle.
const maxCachedFFT = 1 << 20

// withRealFFT calls f with the plan for sequences of length n.
func withRealFFT(n int, f func(p *realFFT)) {
	if n > maxCachedFFT {
		pool, _ := largeFFTs.LoadOrStore(n, &sync.Pool{New: func() any { return newRealFFT(n) }})
		p := pool.(*sync.Pool).Get().(*realFFT)
		defer pool.(*sync.Pool).Put(p)
		f(p)
		return
	}
	p, ok := realFFTs.Load(n)
	if !ok {
		p, _ = realFFTs.LoadOrStore(n, newRealFFT(n))
	}
	f(p.(*realFFT))
}

func newRealFFT(n int) *realFFT {
	m := n / 2
	w := twiddles64(n) // e^(−2πik/n), k < n/2
	p := &realFFT{n: n, rev: make([]int32, m), tw: make([]complex128, m-1), split: make([]complex128, m/2+1)}
	shift := 64 - uint(bits.Len(uint(m))-1)
	for i := range p.rev {
		p.rev[i] = int32(bits.Reverse64(uint64(i)) >> shift)
	}
	for h := 1; h < m; h *= 2 {
		for j := range h {
			p.tw[h-1+j] = w[j*(n/(2*h))]
		}
	}
	copy(p.split, w)
	return p
}

// scratch returns a buffer of n/2 complex points, and the function to return it.
func (p *realFFT) scratch() ([]complex128, func()) {
	z, _ := p.pool.Get().(*[]complex128)
	if z == nil {
		s := make([]complex128, p.n/2)
		z = &s
	}
	return *z, func() { p.pool.Put(z) }
}

// transform returns the coefficients X_0, …, X_{n/2} of the real sequence that is
// x[lo:hi] at its own indices and 0 elsewhere (hi ≤ n).
func (p *realFFT) transform(x []float64, lo, hi int) []complex128 {
	z, done := p.scratch()
	defer done()
	return p.forward(x, lo, hi, z)
}

// forward is transform with the scratch z (length n/2).
func (p *realFFT) forward(x []float64, lo, hi int, z []complex128) []complex128 {
	m := p.n / 2
	clear(z)
	for j := lo / 2; j < (hi+1)/2; j++ {
		var re, im float64
		if 2*j >= lo {
			re = x[2*j]
		}
		if 2*j+1 < hi {
			im = x[2*j+1]
		}
		z[p.rev[j]] = complex(re, im)
	}
	p.fft(z)
	X := make([]complex128, m+1)
	for k := 0; k <= m/2; k++ {
		zk, zm := z[k], z[(m-k)&(m-1)]
		e := complex(0.5*(real(zk)+real(zm)), 0.5*(imag(zk)-imag(zm)))
		o := complex(0.5*(imag(zk)+imag(zm)), 0.5*(real(zm)-real(zk))) // −i·(Z_k − conj Z_{m−k})/2
		t := p.split[k] * o
		X[k] = e + t
		if k != m-k {
			d := e - t
			X[m-k] = complex(real(d), -imag(d))
		}
	}
	return X
}

// inverse writes Σ_k X_k e^(2πijk/n), j < len(out) (unscaled; X_{n−k} = conj X_k), to
// out. z is scratch of length n/2.
func (p *realFFT) inverse(X []complex128, out []float64, z []complex128) {
	m := p.n / 2
	for k := 0; k <= m/2; k++ {
		xk, xc := X[k], X[m-k] // X_{k+m} = conj X_{m−k}
		e := complex(real(xk)+real(xc), imag(xk)-imag(xc))
		d := complex(real(xk)-real(xc), imag(xk)+imag(xc))
		w := p.split[k]
		o := complex(real(w), -imag(w)) * d
		// Y_k = E + i·O and Y_{m−k} = conj E + i·conj O; z holds conj Y (bit-reversed):
		// the inverse transform is the conjugate of the forward one of conj Y.
		z[p.rev[k]] = complex(real(e)-imag(o), -(imag(e) + real(o)))
		if k != m-k && k != 0 {
			z[p.rev[m-k]] = complex(real(e)+imag(o), imag(e)-real(o))
		}
	}
	p.fft(z)
	for j := range out {
		v := z[j/2]
		if j%2 == 0 {
			out[j] = real(v)
		} else {
			out[j] = -imag(v)
		}
	}
}

// fft transforms z (length n/2, in bit-reversed order) in place to natural order:
// Z_k = Σ_j z_j e^(−2πijk/(n/2)), by radix-2 stages of spans 1, 2, …, n/4, fused in
// pairs.
func (p *realFFT) fft(z []complex128) {
	m := len(z)
	h := 1
	if bits.TrailingZeros(uint(m))%2 == 1 { // an odd number of stages: span 1 alone
		for b := 0; b+1 < m; b += 2 {
			x0, x1 := z[b], z[b+1]
			z[b], z[b+1] = x0+x1, x0-x1
		}
		h = 2
	}
	if h == 1 && m >= 4 { // spans 1 and 2: the twiddles are 1, 1 and −i (exact)
		for b := 0; b+3 < m; b += 4 {
			x0, x1, x2, x3 := z[b], z[b+1], z[b+2], z[b+3]
			a0, a1, a2, a3 := x0+x1, x0-x1, x2+x3, x2-x3
			t4 := complex(imag(a3), -real(a3))
			z[b], z[b+2] = a0+a2, a0-a2
			z[b+1], z[b+3] = a1+t4, a1-t4
		}
		h = 4
	}
	for ; h < m; h *= 4 {
		w1s, w2s := p.tw[h-1:2*h-1], p.tw[2*h-1:4*h-1]
		for b := 0; b < m; b += 4 * h {
			z0, z1, z2, z3 := z[b:b+h], z[b+h:b+2*h], z[b+2*h:b+3*h], z[b+3*h:b+4*h]
			w3s := w2s[h : 2*h]
			for j := range z0 {
				w1, w2, w3 := w1s[j], w2s[j], w3s[j]
				x0, x1, x2, x3 := z0[j], z1[j], z2[j], z3[j]
				t1, t3 := w1*x1, w1*x3
				a0, a1, a2, a3 := x0+t1, x0-t1, x2+t3, x2-t3
				t2, t4 := w2*a2, w3*a3
				z0[j], z2[j] = a0+t2, a0-t2
				z1[j], z3[j] = a1+t4, a1-t4
			}
		}
	}
}

// twiddles64 returns e^(−2πik/n), k < n/2, each a double-double value rounded to
// float64 (relative error ≤ u/2 + 2^-100 ≤ u). Below n = 2^10 the values are those of
// ddTwiddles (a Taylor series each); beyond, products w_n^(aB+b) = w_(n/B)^a · w_n^b of two
// short double-double tables (B = 2^⌈log₂(n/2)/2⌉; one complex double-double product,
// error about 2^-102 on unit factors), about 20 times cheaper: tens of
// milliseconds (0.1 s at 2^22 points, against 1.6 s).
func twiddles64(n int) []complex128 {
	out := make([]complex128, n/2)
	round := func(w cdd) complex128 { return complex(w.re.hi, w.im.hi) }
	if n < 1<<10 {
		for k, w := range ddTwiddles(n) {
			out[k] = round(w)
		}
		return out
	}
	B := 1 << ((bits.Len(uint(n/2)) - 1 + 1) / 2)
	fine := make([]cdd, B)
	for b := range fine {
		fine[b] = ddTwiddle(n, b)
	}
	coarse := ddTwiddles(n / B) // w_(n/B)^a = w_n^(aB), a < n/(2B)
	for k := range out {
		out[k] = round(cddMul(coarse[k/B], fine[k%B]))
	}
	return out
}
