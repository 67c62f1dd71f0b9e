package noise

import (
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
)

// Staircase is the staircase distribution of Geng and Viswanath (2012), KOV §4.1 and
// the thesis §2.3, eq. (2.8) with d = 1: for ε > 0, period Δ and γ ∈ [0, 1],
//
//	f(x) = e^(−kε)·a        for |x| ∈ [kΔ, (k+γ)Δ),
//	f(x) = e^(−(k+1)ε)·a    for |x| ∈ [(k+γ)Δ, (k+1)Δ),    k = 0, 1, …,
//	a = (1 − b) / (2Δ(b + (1 − b)γ)),   b = e^(−ε).
//
// Adding it to a query of sensitivity Δ is ε-DP, since f(x) ≤ e^ε f(x + t) for |t| ≤ Δ.
// It is sampled securely on a grid of power-of-two spacing g: the period becomes
// M = ⌈Δ/g⌉ steps and the step boundary r = ⌊γM + ½⌋, and the integer noise has
//
//	P(Z = n) ∝ b^⌊|n|/M⌋ · (1 if |n| mod M < r else b),
//
// which is ε-DP for integer shifts up to M (the ratio of P at any two points of
// [−M, M] is at most 1/b, and P(n)/P(n+M) = 1/b beyond), hence for the snapped query.
// r is at least 1 (the central step always holds 0); when γM < ½ the grid cannot
// represent γ and the central step is one point wide.
//
// Every draw is exact and takes a bounded expected number of random words at every ε:
// the magnitudes split into the central step |n| < r (weight 1 each) and the blocks
// [r + jM, r + (j+1)M), j ≥ 0, of weight b^(j+1) each (the upper part of period j and
// the lower part of period j+1), so
//
//	P(central) = (2r − 1)/(2r − 1 + 2M/(e^ε − 1)),
//
// drawn by comparing random bits with its binary expansion (computed from certified
// bounds on e^ε − 1, expansion.go); then a uniform point of the central step, or a
// geometric block index j, a uniform position in the block and a fair sign. (An earlier
// sampler drew a period and accepted its upper part with probability b: about 1/(γ + b)
// rounds a draw, which never ended once γM < ½ at large ε.)
type Staircase struct {
	eps, delta, gamma float64
	k                 int
	m, r              uint64
	geo               DiscreteLaplace // rate ε (rounded down to a multiple of 2^−63)
	central           *expansion      // P(central)
}

// Staircase limits: ε in [MinStaircaseEpsilon, MaxRate].
const MinStaircaseEpsilon = 0x1p-12

// staircaseGrid validates ε, Δ and γ of a staircase distribution (one or two dimensions)
// and returns the grid exponent k (g = 2^k, Δ/g ∈ [2^31, 2^32)) and the geometric sampler
// of rate ε rounded down to a multiple of 2^−63.
func staircaseGrid(eps, delta, gamma float64) (int, *DiscreteLaplace, error) {
	if err := dpkit.CheckPositive("epsilon", eps); err != nil {
		return 0, nil, err
	}
	if eps < MinStaircaseEpsilon || eps > MaxRate {
		return 0, nil, &dpkit.ParamError{Name: "epsilon", Value: eps, Want: "in [2^-12, 2^20] (use Laplace noise for smaller ε)"}
	}
	if err := dpkit.CheckPositive("sensitivity", delta); err != nil {
		return 0, nil, err
	}
	if math.IsNaN(gamma) || gamma < 0 || gamma > 1 {
		return 0, nil, &dpkit.ParamError{Name: "gamma", Value: gamma, Want: "in [0, 1]"}
	}
	k := log2Floor(delta) - 31 // M ≈ 2^31…2^32
	if err := checkGrid(k, "sensitivity", delta); err != nil {
		return 0, nil, err
	}
	geo, err := NewDiscreteLaplace(eps)
	return k, geo, err
}

// NewStaircase returns the staircase distribution for ε, Δ > 0 and γ ∈ [0, 1].
func NewStaircase(eps, delta, gamma float64) (*Staircase, error) {
	k, geo, err := staircaseGrid(eps, delta, gamma)
	if err != nil {
		return nil, err
	}
	m := uint64(math.Ceil(math.Ldexp(delta, -k)))
	r := max(1, uint64(math.Floor(gamma*float64(m)+0.5)))
	central := tailOdds{num: geo.num, den: geo.den, a: new(big.Int).SetUint64(2*r - 1),
		c: []*big.Int{new(big.Int).SetUint64(2 * m)}}
	return &Staircase{eps: geo.rate, delta: delta, gamma: gamma, k: k, m: m, r: r, geo: *geo,
		central: newExpansion(central.bounds)}, nil
}

// Epsilon returns the privacy parameter of the noise: ε rounded down to a multiple of
// 2^−63, never above the ε asked for.
func (s *Staircase) Epsilon() float64 { return s.eps }

// Granularity returns the grid spacing g.
func (s *Staircase) Granularity() float64 { return math.Ldexp(1, s.k) }

// Period returns the period M·g (≥ Δ) and Gamma the effective γ = r/M.
func (s *Staircase) Period() float64 { return math.Ldexp(float64(s.m), s.k) }

// Gamma returns the effective γ = r/M of the grid distribution.
func (s *Staircase) Gamma() float64 { return float64(s.r) / float64(s.m) }

// GridPeriod returns M, the period in grid steps, and GridStep r, the central step's
// width in grid steps (the parameters of the integer distribution, for its privacy loss
// distribution pld.Staircase).
func (s *Staircase) GridPeriod() uint64 { return s.m }
func (s *Staircase) GridStep() uint64   { return s.r }

// sample returns the integer noise (see Staircase for the construction).
func (s *Staircase) sample(src Source) int64 {
	r := bitReader{src: src}
	if r.bernoulliExpansion(s.central) {
		return int64(r.uniform(2*s.r-1)) - int64(s.r-1)
	}
	for {
		j, ok := s.geo.magnitude(&r)
		if !ok || j >= 1<<29 {
			continue // probability < exp(−2^17): see the package overview
		}
		n := s.r + j*s.m + r.uniform(s.m)
		if r.bit() == 1 {
			return -int64(n)
		}
		return int64(n)
	}
}

// Add returns the release of x: x snapped to the grid plus staircase noise, in g·ℤ.
func (s *Staircase) Add(src Source, x float64) float64 {
	return unsnap(snap(x, s.k)+s.sample(src), s.k)
}

// Noise returns a noise draw (for inspection and tests).
func (s *Staircase) Noise(src Source) float64 { return unsnap(s.sample(src), s.k) }

// StaircaseMoment returns E|X|^p (p = 1 or 2) of the continuous staircase distribution
// with parameters ε, Δ, γ (thesis §2.3 computation, d = 1):
//
//	E|X|   = aΔ² [2γc1 + γ²c0 + b(2c1 + c0 − 2γc1 − γ²c0)]
//	E X²   = (2aΔ³/3) [3γc2 + 3γ²c1 + γ³c0 + b(3(1−γ)c2 + 3(1−γ²)c1 + (1−γ³)c0)]
//
// with c0 = 1/(1−b), c1 = b/(1−b)², c2 = (b² + b)/(1−b)³ and a as in Staircase.
func StaircaseMoment(eps, delta, gamma float64, p int) float64 {
	b := math.Exp(-eps)
	omb := -math.Expm1(-eps)
	c0, c1, c2 := 1/omb, b/(omb*omb), (b*b+b)/(omb*omb*omb)
	a := omb / (2 * delta * (b + omb*gamma))
	if p == 1 {
		return a * delta * delta * (2*gamma*c1 + gamma*gamma*c0 + b*(2*c1+c0-2*gamma*c1-gamma*gamma*c0))
	}
	g2, g3 := gamma*gamma, gamma*gamma*gamma
	return 2 * a * delta * delta * delta / 3 *
		(3*gamma*c2 + 3*g2*c1 + g3*c0 + b*(3*(1-gamma)*c2+3*(1-g2)*c1+(1-g3)*c0))
}

// StaircaseGammaL1 returns the γ that minimises E|X| (Geng–Viswanath 2012, Thm 4):
// γ* = 1/(1 + e^(ε/2)).
func StaircaseGammaL1(eps float64) float64 { return 1 / (1 + math.Exp(eps/2)) }

// StaircaseGammaL2 returns the γ that minimises the variance E X² (Geng–Viswanath
// 2012, Thm 5), with b = e^(−ε):
//
//	γ* = −b/(1−b) + (b − 2b² + 2b⁴ − b⁵)^(1/3) / (2^(1/3) (1−b)²).
func StaircaseGammaL2(eps float64) float64 {
	b := math.Exp(-eps)
	omb := -math.Expm1(-eps)
	v := b - 2*b*b + 2*b*b*b*b - b*b*b*b*b
	g := -b/omb + math.Cbrt(v)/(math.Cbrt(2)*omb*omb)
	return math.Max(0, math.Min(1, g))
}
