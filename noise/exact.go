package noise

import (
	"math"
	"math/bits"

	"github.com/dpkit/dpkit"
)

// Uniform returns a uniform integer in [0, n), exactly. n must be ≥ 1 (Uniform(src, 0)
// returns 0).
func Uniform(src Source, n uint64) uint64 {
	if n == 0 {
		return 0
	}
	r := bitReader{src: src}
	return r.uniform(n)
}

// Bernoulli returns true with probability p, exactly for the float64 value p (every
// float64 is a dyadic rational, whose binary expansion is compared with random bits).
// p must be in [0, 1].
func Bernoulli(src Source, p float64) (bool, error) {
	if math.IsNaN(p) || p < 0 || p > 1 {
		return false, &dpkit.ParamError{Pkg: "noise", Name: "p", Value: p, Want: "in [0, 1]"}
	}
	r := bitReader{src: src}
	return r.bernoulliFloat(p), nil
}

// bernoulliFloat: p = m·2^(e−53) with m < 2^53; the expansion is z leading zero bits
// followed by the bits of m.
func (r *bitReader) bernoulliFloat(p float64) bool {
	if p >= 1 {
		return true
	}
	if p <= 0 {
		return false
	}
	frac, exp := math.Frexp(p) // p = frac·2^exp, frac ∈ [½, 1), exp ≤ 0
	m := uint64(math.Ldexp(frac, 53))
	// p = m·2^(exp−53); the first significant bit is at fractional position 1 − exp.
	zeros := uint(-exp)
	for zeros > 0 {
		c := min(zeros, 64)
		// the next c random bits must all be 0 to stay below p
		if less, ok := r.lessN(0, c); ok {
			return less
		}
		zeros -= c
	}
	less, ok := r.lessN(m<<11, 53)
	return ok && less
}

// lessN is less restricted to the first c ≤ 64 bits of q.
func (r *bitReader) lessN(q uint64, c uint) (less, decided bool) {
	for c > 0 {
		if r.n == 0 {
			r.w, r.n = r.src.Uint64(), 64
		}
		m := min(r.n, c)
		d := r.w ^ q
		if lz := uint(bits.LeadingZeros64(d)); lz < m {
			less = q&(1<<(63-lz)) != 0
			r.w <<= lz + 1
			r.n -= lz + 1
			return less, true
		}
		r.w <<= m
		r.n -= m
		q <<= m
		c -= m
	}
	return false, false
}

// Dyadic returns num and den = 2^k with num/den = x rounded down to a multiple of
// 2^−63 (num < 2^63), the exact parameter the exponential samplers use for a float64
// rate. x must be finite, ≥ 0 and < 2^62.
func Dyadic(x float64) (num, den uint64, err error) {
	if math.IsNaN(x) || x < 0 || x >= 0x1p62 {
		return 0, 0, &dpkit.ParamError{Pkg: "noise", Name: "x", Value: x, Want: "in [0, 2^62)"}
	}
	k := 63
	for k > 0 && math.Ldexp(x, k) >= 0x1p63 {
		k--
	}
	return uint64(math.Ldexp(x, k)), uint64(1) << k, nil
}

// BernoulliExpFloat returns true with probability exp(−γ̃), exactly, where γ̃ is γ
// rounded down to a multiple of 2^−63 (so the probability is at most a factor
// e^(2^−63) above exp(−γ)). γ must be in [0, 2^62).
func BernoulliExpFloat(src Source, gamma float64) (bool, error) {
	num, den, err := Dyadic(gamma)
	if err != nil {
		return false, &dpkit.ParamError{Pkg: "noise", Name: "gamma", Value: gamma, Want: "in [0, 2^62)"}
	}
	r := bitReader{src: src}
	return r.bernoulliExp(num, den), nil
}

// BernoulliExpSum returns true with probability exp(−(whole + num/den)), exactly
// (CKS 2020, Algorithm 1: whole independent Bernoulli(e^(−1)) trials and one
// Bernoulli(e^(−num/den)), stopping at the first failure). It lets callers whose
// exponent has a large integer part and a fine fractional part (such as the exponential
// mechanism, with fractions num/2^63) sample exactly without overflow. den must be > 0.
func BernoulliExpSum(src Source, whole, num, den uint64) (bool, error) {
	if den == 0 {
		return false, &dpkit.ParamError{Pkg: "noise", Name: "den", Value: den, Want: "an integer > 0"}
	}
	r := bitReader{src: src}
	for ; whole > 0; whole-- {
		if !r.bernoulliExp1() {
			return false, nil
		}
	}
	return r.bernoulliExp(num, den), nil
}
