package noise

import (
	"math"
	"math/bits"

	"github.com/dpkit/dpkit"
	"gonum.org/v1/gonum/mathext"
)

// HeavyTail is the distribution with density h(z) ∝ 1/(1 + |z|^γ), γ > 1, used with
// smooth sensitivity to give pure ε-DP (Nissim, Raskhodnikova and Smith 2007, Lemma 2.10;
// the lecture slides, docs/errata.md, slides item 3). Its normaliser is 2(π/γ)/sin(π/γ), and
// U = |Z|^γ/(1 + |Z|^γ) has the Beta(1/γ, 1 − 1/γ) distribution, which gives the CDF.
//
// Sampling is in floating point (rejection from a uniform-plus-Pareto envelope with
// acceptance ≥ ½); it is not exact to the last bit like the integer samplers. Releases
// that use it snap their output to a fixed grid (see mechanism.Median).
type HeavyTail struct{ gamma float64 }

// NewHeavyTail returns the distribution for γ finite and > 1.
func NewHeavyTail(gamma float64) (*HeavyTail, error) {
	if math.IsNaN(gamma) || math.IsInf(gamma, 0) || gamma <= 1 {
		return nil, &dpkit.ParamError{Pkg: "noise", Name: "gamma", Value: gamma, Want: "a finite number > 1"}
	}
	return &HeavyTail{gamma: gamma}, nil
}

// Gamma returns γ.
func (h *HeavyTail) Gamma() float64 { return h.gamma }

// Float64 returns a uniform float64 in [0, 1) with 53 random bits.
func Float64(src Source) float64 { return float64(src.Uint64()>>11) * 0x1p-53 }

// Sample returns one draw. Envelope: g(z) ∝ min(1, z^(−γ)) on z ≥ 0, mass 1 on [0, 1)
// and 1/(γ−1) beyond; h/g = 1/(1+z^γ) on [0, 1) and z^γ/(1+z^γ) beyond, both ≥ ½.
func (h *HeavyTail) Sample(src Source) float64 {
	g := h.gamma
	pUniform := (g - 1) / g
	for {
		var z, accept float64
		if Float64(src) < pUniform {
			z = Float64(src)
			accept = 1 / (1 + math.Pow(z, g))
		} else {
			u := uniformFine(src) // (0, 1], resolution down to 2^−1074
			z = math.Pow(u, -1/(g-1))
			accept = 1 / (1 + math.Pow(z, -g))
		}
		if Float64(src) < accept {
			if src.Uint64()&1 == 1 {
				return -z
			}
			return z
		}
	}
}

// uniformFine returns a uniform number in (0, 1] with every binade represented: the
// exponent is geometric (leading zero bits of random words, down to 2^−1074) and the
// 52 bits below the leading one are random, so small values keep their full relative
// resolution. It extends the sampled tail of HeavyTail from |z| ≈ 2^(53/(γ−1)) (a
// 53-bit uniform) to 2^(1074/(γ−1)).
func uniformFine(src Source) float64 {
	e := -1
	for e > -1074 {
		w := src.Uint64()
		if w != 0 {
			e -= bits.LeadingZeros64(w)
			break
		}
		e -= 64
	}
	e = max(e, -1074)
	m := src.Uint64() >> 12                           // 52 random fraction bits
	x := math.Ldexp(1+math.Ldexp(float64(m), -52), e) // [2^e, 2^(e+1)) (rounded if subnormal)
	if x > 1 || x == 0 {
		return 1
	}
	return x
}

// AbsCDF returns P(|Z| ≤ z) = I_u(1/γ, 1 − 1/γ), u = z^γ/(1 + z^γ).
func (h *HeavyTail) AbsCDF(z float64) float64 {
	if z <= 0 {
		return 0
	}
	if math.IsInf(z, 1) {
		return 1
	}
	zg := math.Pow(z, h.gamma)
	u := zg / (1 + zg)
	if math.IsInf(zg, 1) {
		u = 1
	}
	return mathext.RegIncBeta(1/h.gamma, 1-1/h.gamma, u)
}

// AbsQuantile returns the z with P(|Z| ≤ z) = p, p in [0, 1).
func (h *HeavyTail) AbsQuantile(p float64) float64 {
	u := mathext.InvRegIncBeta(1/h.gamma, 1-1/h.gamma, p)
	return math.Pow(u/(1-u), 1/h.gamma)
}

// Variance returns E Z² = sin(π/γ)/sin(3π/γ) for γ > 3 (from ∫ z^(s−1)/(1+z^γ) dz =
// (π/γ)/sin(πs/γ)), and +Inf for γ ≤ 3.
func (h *HeavyTail) Variance() float64 {
	if h.gamma <= 3 {
		return math.Inf(1)
	}
	return math.Sin(math.Pi/h.gamma) / math.Sin(3*math.Pi/h.gamma)
}
