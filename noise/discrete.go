package noise

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/dpkit/dpkit"
)

// BernoulliExp returns true with probability exp(−num/den), exactly (CKS 2020,
// Algorithm 1). den must be > 0.
func BernoulliExp(src Source, num, den uint64) (bool, error) {
	if den == 0 {
		return false, &dpkit.ParamError{Pkg: "noise", Name: "den", Value: den, Want: "an integer > 0"}
	}
	r := bitReader{src: src}
	return r.bernoulliExp(num, den), nil
}

// DiscreteLaplace is the two-sided geometric distribution on the integers,
//
//	P(Z = z) = (1 − q)/(1 + q) · q^|z|,   q = e^(−rate),
//
// sampled exactly (CKS 2020, Algorithm 2). It is the noise of the geometric mechanism
// (rate = ε/Δ for an integer query of sensitivity Δ).
type DiscreteLaplace struct {
	rate float64
	num  uint64 // rate = num/den exactly, den a power of two ≤ 2^63
	den  uint64
}

// MinRate and MaxRate bound the rate of a DiscreteLaplace.
const (
	MinRate = 0x1p-40
	MaxRate = 0x1p20
)

// NewDiscreteLaplace returns the two-sided geometric distribution with the given rate,
// rounded down (never up: less privacy loss per unit of shift) to a multiple of 2^−63;
// that rounding changes the rate by less than 2^−23 relative at MinRate and by nothing
// for rates that are multiples of 2^−63 (every float64 ≥ 2^−10 with at most 53 significant
// bits above 2^−63). Rate reports the value used. rate must be in [MinRate, MaxRate].
func NewDiscreteLaplace(rate float64) (*DiscreteLaplace, error) {
	if math.IsNaN(rate) || rate < MinRate || rate > MaxRate {
		return nil, &dpkit.ParamError{Pkg: "noise", Name: "rate", Value: rate, Want: fmt.Sprintf("in [%g, %g]", MinRate, MaxRate)}
	}
	// Shift so that num < 2^63: den = 2^k with k ≤ 63.
	k := 63
	for math.Ldexp(rate, k) >= 0x1p63 {
		k--
	}
	num := uint64(math.Ldexp(rate, k)) // truncation: rounds down
	den := uint64(1) << k
	return &DiscreteLaplace{rate: float64(num) / float64(den), num: num, den: den}, nil
}

// Rate returns the rate actually used (exactly num/den).
func (d *DiscreteLaplace) Rate() float64 { return d.rate }

// Sample returns one draw. The construction is CKS Algorithm 2 with scale den/num:
// X ≥ 0 with P(X = x) ∝ e^(−x/den) (so P(⌊X/num⌋ ≥ y) = e^(−y·rate)), Y = ⌊X/num⌋
// computed from the 128-bit X, a fair sign, and rejection of "−0".
func (d *DiscreteLaplace) Sample(src Source) int64 {
	r := bitReader{src: src}
	for {
		y, ok := d.magnitude(&r)
		if !ok {
			continue // |Y| ≥ 2^62: see magnitude
		}
		neg := r.bit() == 1
		if neg && y == 0 {
			continue
		}
		if neg {
			return -int64(y)
		}
		return int64(y)
	}
}

// magnitude returns Y = ⌊X/num⌋ with P(X = x) ∝ e^(−x/den). It returns ok = false when
// Y ≥ 2^62; the caller redraws, which truncates the distribution at |Z| < 2^62: an
// event of probability at most exp(−2^62·rate) ≤ exp(−2^22) (documented in the package
// overview as the one inexactness of the integer samplers).
func (d *DiscreteLaplace) magnitude(r *bitReader) (uint64, bool) {
	var u uint64
	for {
		u = r.uniform(d.den)
		if r.bernoulliExpFrac(u, d.den) {
			break
		}
	}
	v := uint64(0)
	for r.bernoulliExp1() {
		v++
	}
	hi, lo := bits.Mul64(d.den, v)
	lo, c := bits.Add64(lo, u, 0)
	hi += c
	if hi >= d.num {
		return 0, false // the quotient would not fit in 64 bits
	}
	y, _ := bits.Div64(hi, lo, d.num)
	return y, y < 1<<62
}

// Variance returns the variance of the distribution, 2q/(1−q)², q = e^(−rate).
func (d *DiscreteLaplace) Variance() float64 {
	q := math.Exp(-d.rate)
	return 2 * q / (-math.Expm1(-d.rate) * -math.Expm1(-d.rate))
}

// DiscreteGaussian is the discrete Gaussian distribution on the integers,
//
//	P(Z = z) ∝ exp(−z²/(2σ²)),
//
// with an integer σ, sampled exactly (CKS 2020, Algorithm 3 with proposal scale t = σ).
type DiscreteGaussian struct {
	sigma uint64
	lap   DiscreteLaplace
	den   uint64 // 2σ²
}

// MaxSigma is the largest σ of a DiscreteGaussian (so that 2σ² < 2^63).
const MaxSigma = 1 << 31

// NewDiscreteGaussian returns the discrete Gaussian with parameter σ ∈ [1, MaxSigma].
func NewDiscreteGaussian(sigma uint64) (*DiscreteGaussian, error) {
	if sigma < 1 || sigma > MaxSigma {
		return nil, &dpkit.ParamError{Pkg: "noise", Name: "sigma", Value: sigma, Want: fmt.Sprintf("an integer in [1, %d]", uint64(MaxSigma))}
	}
	return &DiscreteGaussian{
		sigma: sigma,
		lap:   DiscreteLaplace{rate: 1 / float64(sigma), num: 1, den: sigma},
		den:   2 * sigma * sigma,
	}, nil
}

// Sigma returns σ.
func (g *DiscreteGaussian) Sigma() uint64 { return g.sigma }

// Sample returns one draw: Y from the discrete Laplace with scale t = σ, accepted with
// probability exp(−(|Y| − σ²/t)²/(2σ²)) = exp(−(|Y| − σ)²/(2σ²)) (CKS Algorithm 3).
// The acceptance rate is about √(2π)/(2√e) ≈ 0.76.
func (g *DiscreteGaussian) Sample(src Source) int64 {
	r := bitReader{src: src}
	for {
		y, ok := g.lap.magnitude(&r)
		if !ok {
			continue
		}
		neg := r.bit() == 1
		if neg && y == 0 {
			continue
		}
		var d uint64
		if y >= g.sigma {
			d = y - g.sigma
		} else {
			d = g.sigma - y
		}
		if hi, lo := bits.Mul64(d, d); !r.bernoulliExpWide(hi, lo, g.den) {
			continue
		}
		if neg {
			return -int64(y)
		}
		return int64(y)
	}
}

// DiscreteLaplaceScale returns one exact draw of the two-sided geometric distribution
// with integer scale t ≥ 1, P(Z = z) ∝ exp(−|z|/t) (CKS 2020, Algorithm 2 with
// s = 1, t: U uniform on [0, t) accepted with probability e^(−U/t), V ~ Geometric with
// P(V ≥ v) = e^(−v), magnitude U + tV, a fair sign, "−0" rejected), except that the
// magnitude saturates at 2^62: the result is exactly max(−2^62, min(2^62, Z)). Unlike
// DiscreteLaplace it supports scales up to 2^63 − 1 with no redraw, for callers (the
// smooth-sensitivity median) that clamp the result to a range narrower than 2^62
// anyway. t = 0 is treated as 1.
func DiscreteLaplaceScale(src Source, t uint64) int64 {
	if t == 0 {
		t = 1
	}
	r := bitReader{src: src}
	for {
		var u uint64
		for {
			u = r.uniform(t)
			if r.bernoulliExpFrac(u, t) {
				break
			}
		}
		v := uint64(0)
		for r.bernoulliExp1() {
			v++
		}
		hi, lo := bits.Mul64(t, v)
		lo, c := bits.Add64(lo, u, 0)
		hi += c
		y := uint64(1) << 62
		if hi == 0 && lo < y {
			y = lo
		}
		neg := r.bit() == 1
		if neg && y == 0 {
			continue
		}
		if neg {
			return -int64(y)
		}
		return int64(y)
	}
}
