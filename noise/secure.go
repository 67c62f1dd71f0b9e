package noise

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
)

// Secure continuous noise (Mironov 2012, "On significance of the least significant bits
// for differential privacy"; Google, "Secure Noise Generation", 2020). Adding a
// floating-point Laplace or Gaussian sample to a value leaks the value through the set
// of floating-point numbers the sum can take. Instead the value is snapped to a grid of
// power-of-two spacing g (the granularity), integer noise with the exact discrete
// distribution is added on the grid, and the result is converted back:
//
//	x' = ⌊x/g + ½⌋ (an integer; x/g is exact because g is a power of two),
//	release = (x' + Z)·g.
//
// The set of possible outputs, g·ℤ, does not depend on x. Snapping can move two values
// at distance Δ to integers at distance up to ⌈Δ/g⌉, so the privacy accounting uses
// the grid sensitivity ⌈Δ/g⌉ (round-half-up is translation invariant, so integer
// distances are preserved exactly). The granularity is chosen so that Δ/g ≈ 2^40 when
// possible: the over-noising caused by the grid is then below 2^−39 relative.
//
// Values are clamped to |x/g| ≤ 2^60 before snapping (clamping is 1-Lipschitz, so it
// cannot increase sensitivity) and outputs beyond ±MaxFloat64 are clamped (post-
// processing).

const (
	gridBits  = 40      // target Δ/g ≈ 2^gridBits
	maxGridT  = 1 << 48 // largest Laplace scale in grid units
	maxGridD  = 50      // D = ⌈Δ/g⌉ ≤ 2^maxGridD (a large ε or Δ/σ coarsens the grid instead)
	clampGrid = 1 << 60 // |x'| ≤ clampGrid
)

// pow2Floor returns the largest power of two ≤ x (x > 0 finite) as an exponent.
func log2Floor(x float64) int {
	_, e := math.Frexp(x) // x = f·2^e, f ∈ [½, 1)
	return e - 1
}

func log2Ceil(x float64) int {
	f, e := math.Frexp(x)
	if f == 0.5 {
		return e - 1
	}
	return e
}

// snap returns ⌊x/g + ½⌋ clamped to ±clampGrid, for g = 2^k.
func snap(x float64, k int) int64 {
	a := math.Ldexp(x, -k) // exact unless it underflows, where |a| < ½ rounds to 0 anyway
	if math.IsNaN(a) {
		return 0
	}
	if a >= clampGrid {
		return clampGrid
	}
	if a <= -clampGrid {
		return -clampGrid
	}
	f := math.Floor(a)
	n := int64(f)
	if a-f >= 0.5 { // a − ⌊a⌋ is exact
		n++
	}
	return n
}

// unsnap returns (n)·2^k as a float64, clamped to ±MaxFloat64 (post-processing).
func unsnap(n int64, k int) float64 {
	v := math.Ldexp(float64(n), k)
	return math.Max(-math.MaxFloat64, math.Min(math.MaxFloat64, v))
}

func checkGrid(k int, name string, v float64) error {
	if k < -1022 || k > 1023-62 {
		return &dpkit.ParamError{Pkg: "noise", Name: name, Value: v, Want: "a value whose grid 2^k (k = ⌊log2⌋ − 40) is a normal float64 with room for 2^62 steps"}
	}
	return nil
}

// SecureLaplace adds discrete Laplace noise on a power-of-two grid: the secure form of
// the Laplace mechanism with sensitivity Δ and privacy ε (the lecture slides, "Laplace
// mechanism"; snapping as described above).
//
// With grid sensitivity D = ⌈Δ/g⌉ and grid scale t = ⌈D/ε⌉, the noise is
// P(Z = z) ∝ exp(−|z|/t), and the release is ε'-DP with ε' = D/t ≤ ε exactly
// (neighbouring snapped values differ by at most D grid steps). The equivalent
// continuous scale t·g exceeds Δ/ε by at most a factor (1 + g/Δ)(1 + 1/t).
// One inexactness: draws with |Z| ≥ 2^62 are redrawn, which changes the distribution
// by less than exp(−2^14), below the smallest positive float64.
type SecureLaplace struct {
	k    int // g = 2^k
	d, t uint64
	lap  DiscreteLaplace
}

// NewSecureLaplace returns the sampler for sensitivity Δ > 0 and ε > 0 (both finite).
func NewSecureLaplace(sensitivity, epsilon float64) (*SecureLaplace, error) {
	return NewSecureLaplaceL1(sensitivity, epsilon, 1)
}

// NewSecureLaplaceL1 returns the sampler for vectors of dims coordinates whose ℓ1
// sensitivity is Δ. Snapping each coordinate can add up to one grid step per
// coordinate, so the grid sensitivity is D = ⌈Δ/g⌉ + dims − 1 (if Σ|a_i| ≤ A then
// Σ⌈|a_i|⌉ ≤ ⌈A⌉ + dims − 1). dims must be in [1, 2^20].
func NewSecureLaplaceL1(sensitivity, epsilon float64, dims int) (*SecureLaplace, error) {
	if dims < 1 || dims > 1<<20 {
		return nil, &dpkit.ParamError{Pkg: "noise", Name: "dims", Value: dims, Want: "an integer in [1, 2^20]"}
	}
	if err := dpkit.InPackage("noise", dpkit.CheckPositive("sensitivity", sensitivity)); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("noise", dpkit.CheckPositive("epsilon", epsilon)); err != nil {
		return nil, err
	}
	b := sensitivity / epsilon
	if math.IsInf(b, 0) || b == 0 {
		return nil, &dpkit.ParamError{Pkg: "noise", Name: "epsilon", Value: epsilon, Want: "Δ/ε finite and > 0 in float64"}
	}
	k := log2Floor(math.Min(sensitivity, b)) - gridBits
	if lc := log2Ceil(b) - 47; k < lc { // keep t = b/g ≤ 2^48
		k = lc
	}
	if lc := log2Ceil(sensitivity) - maxGridD; k < lc { // keep D = ⌈Δ/g⌉ ≤ 2^50 (large ε)
		k = lc
	}
	if err := checkGrid(k, "sensitivity", sensitivity); err != nil {
		return nil, err
	}
	d := uint64(math.Ceil(math.Ldexp(sensitivity, -k))) + uint64(dims-1) // Δ/g exact; ⌈⌉ exact
	// t = ⌈D/ε⌉ is checked as a float64 before it is converted: beyond 2^64 the
	// conversion is undefined (it once made this loop run forever at ε = 5e-20).
	tf := math.Ceil(float64(d) / epsilon)
	if !(tf >= 1 && tf <= maxGridT) {
		return nil, &dpkit.ParamError{Pkg: "noise", Name: "epsilon", Value: epsilon, Want: fmt.Sprintf("large enough that the grid scale ⌈D/ε⌉ is at most 2^48 (here ε ≥ %g for sensitivity %g)", float64(d)/maxGridT, sensitivity)}
	}
	t := uint64(tf)
	for float64(t)*epsilon < float64(d) || math.FMA(float64(t), epsilon, -float64(d)) < 0 {
		t++ // make t·ε ≥ D exactly (t ≤ 2^48 + 1, so float64(t) is exact)
	}
	return &SecureLaplace{k: k, d: d, t: t, lap: DiscreteLaplace{rate: 1 / float64(t), num: 1, den: t}}, nil
}

// Granularity returns g, the spacing of the output grid (a power of two).
func (s *SecureLaplace) Granularity() float64 { return math.Ldexp(1, s.k) }

// GridSensitivity returns D = ⌈Δ/g⌉ and GridScale the scale t of the integer noise.
func (s *SecureLaplace) GridSensitivity() uint64 { return s.d }

// GridScale returns t, the scale of the integer noise in grid steps.
func (s *SecureLaplace) GridScale() uint64 { return s.t }

// Scale returns t·g, the scale of the noise in the units of the value.
func (s *SecureLaplace) Scale() float64 { return math.Ldexp(float64(s.t), s.k) }

// Epsilon returns the exact privacy parameter D/t of the release, rounded up to a
// float64; it is at most the ε given to NewSecureLaplace.
func (s *SecureLaplace) Epsilon() float64 { return divUp(s.d, s.t) }

// divUp returns a float64 ≥ a/b.
func divUp(a, b uint64) float64 {
	q := float64(a) / float64(b)
	if math.FMA(q, float64(b), -float64(a)) < 0 {
		q = math.Nextafter(q, math.Inf(1))
	}
	return q
}

// Variance returns the variance of the noise in value units: g²·2q/(1−q)², q = e^(−1/t).
func (s *SecureLaplace) Variance() float64 {
	g := s.Granularity()
	return g * g * s.lap.Variance()
}

// Add returns the release of x: x snapped to the grid plus noise, in g·ℤ.
// x must not be NaN (NaN is released as if it were 0).
func (s *SecureLaplace) Add(src Source, x float64) float64 {
	return unsnap(snap(x, s.k)+s.lap.Sample(src), s.k)
}

// Noise returns a noise draw Z·g alone (for inspection and tests).
func (s *SecureLaplace) Noise(src Source) float64 { return unsnap(s.lap.Sample(src), s.k) }

// SecureGaussian adds discrete Gaussian noise (CKS 2020) on a power-of-two grid: the
// secure form of the Gaussian mechanism with ℓ2 sensitivity Δ and noise σ.
// The integer noise has parameter S = ⌈σ/g⌉ ≥ σ/g and the grid sensitivity is
// D = ⌈Δ/g⌉; DeltaBound gives a certified upper bound on its δ(ε).
// One inexactness: proposals with |Y| ≥ 2^62 are redrawn (probability below
// exp(−2^18)).
type SecureGaussian struct {
	k     int
	d     uint64
	gauss DiscreteGaussian
	dims  int     // 0 or 1: scalar; ≥ 2: vectors with ℓ2 sensitivity Δ
	l2    float64 // grid ℓ2 sensitivity bound Δ/g + √dims (rounded up), for dims ≥ 2
}

// NewSecureGaussian returns the sampler for sensitivity Δ > 0 and σ > 0 (finite).
func NewSecureGaussian(sensitivity, sigma float64) (*SecureGaussian, error) {
	if err := dpkit.InPackage("noise", dpkit.CheckPositive("sensitivity", sensitivity)); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("noise", dpkit.CheckPositive("sigma", sigma)); err != nil {
		return nil, err
	}
	k := log2Floor(math.Min(sensitivity, sigma)) - 30
	if lc := log2Ceil(sigma) - 31; k < lc { // keep S ≤ 2^31
		k = lc
	}
	if lc := log2Ceil(sensitivity) - maxGridD; k < lc { // keep D ≤ 2^50 (Δ ≫ σ)
		k = lc
	}
	if err := checkGrid(k, "sensitivity", sensitivity); err != nil {
		return nil, err
	}
	d := uint64(math.Ceil(math.Ldexp(sensitivity, -k)))
	s := uint64(math.Ceil(math.Ldexp(sigma, -k)))
	g, err := NewDiscreteGaussian(s)
	if err != nil {
		return nil, err
	}
	return &SecureGaussian{k: k, d: d, gauss: *g}, nil
}

// NewSecureGaussianL2 returns the sampler for vectors of dims ∈ [1, 2^20] coordinates
// whose ℓ2 sensitivity is Δ, each coordinate receiving independent discrete Gaussian
// noise on the grid (the same grid and S as NewSecureGaussian(Δ, σ)). For dims = 1 it
// is NewSecureGaussian.
//
// Grid sensitivity. With a = (x − x')/g, snapping moves coordinate i by an integer v_i
// with |v_i| ≤ ⌈|a_i|⌉ ≤ |a_i| + 1 (round-half-up commutes with integer shifts), so
//
//	‖v‖₂ ≤ ‖ |a| + 1 ‖₂ ≤ ‖a‖₂ + √dims ≤ Δ/g + √dims =: D₂
//
// (Minkowski); D₂ is rounded up (GridL2Sensitivity). Since g ≈ min(Δ, σ)/2^30, the
// √dims term adds at most 2^−20 relative for dims ≤ 2^20.
//
// Privacy. DeltaBound(ε) for dims ≥ 2 is the concentrated-DP bound of Canonne, Kamath
// and Steinke 2020: the 1-D discrete Gaussian satisfies D_α(N_ℤ(0,S²) ‖ N_ℤ(μ,S²)) ≤
// αμ²/(2S²) for integer μ (CKS Prop. 5 / §2.2), Rényi divergences of independent
// coordinates add, so an integer shift v gives D_α ≤ α‖v‖²/(2S²) ≤ αρ with ρ =
// D₂²/(2S²) (CKS Thm 14, the multivariate discrete Gaussian is ρ-CDP); and ρ-CDP
// implies (ε, δ)-DP for every α > 1 with (CKS Cor. 13)
//
//	δ = exp((α−1)(αρ − ε)) · (1 − 1/α)^α / (α − 1),
//
// which follows from (1 − e^(ε−L))₊ ≤ e^((α−1)(L−ε))·(1−1/α)^α/(α−1) for every
// privacy-loss value L and E e^((α−1)L) = e^((α−1)D_α). Any α gives a valid bound; α is
// optimised numerically and the result rounded up.
func NewSecureGaussianL2(sensitivity, sigma float64, dims int) (*SecureGaussian, error) {
	if dims < 1 || dims > 1<<20 {
		return nil, &dpkit.ParamError{Pkg: "noise", Name: "dims", Value: dims, Want: "an integer in [1, 2^20]"}
	}
	s, err := NewSecureGaussian(sensitivity, sigma)
	if err != nil || dims == 1 {
		return s, err
	}
	s.dims = dims
	l2 := math.Ldexp(sensitivity, -s.k) + math.Sqrt(float64(dims)) // Ldexp exact; + rounds
	s.l2 = math.Nextafter(math.Nextafter(l2, math.Inf(1)), math.Inf(1))
	return s, nil
}

// Dims returns the number of coordinates the sampler was built for (1 for scalars).
func (s *SecureGaussian) Dims() int { return max(s.dims, 1) }

// GridL2Sensitivity returns the bound D₂ on the ℓ2 distance of snapped neighbours in
// grid steps: ⌈Δ/g⌉ for scalars, Δ/g + √dims rounded up for vectors.
func (s *SecureGaussian) GridL2Sensitivity() float64 {
	if s.dims >= 2 {
		return s.l2
	}
	return float64(s.d)
}

// Granularity returns g, the spacing of the output grid (a power of two).
func (s *SecureGaussian) Granularity() float64 { return math.Ldexp(1, s.k) }

// GridSensitivity returns D = ⌈Δ/g⌉.
func (s *SecureGaussian) GridSensitivity() uint64 { return s.d }

// GridSigma returns S, the parameter of the integer noise in grid steps.
func (s *SecureGaussian) GridSigma() uint64 { return s.gauss.sigma }

// Sigma returns S·g, the noise parameter in the units of the value (≥ the σ asked for).
func (s *SecureGaussian) Sigma() float64 { return math.Ldexp(float64(s.gauss.sigma), s.k) }

// Add returns the release of x: x snapped to the grid plus noise, in g·ℤ.
func (s *SecureGaussian) Add(src Source, x float64) float64 {
	return unsnap(snap(x, s.k)+s.gauss.Sample(src), s.k)
}

// Noise returns a noise draw Z·g alone (for inspection and tests).
func (s *SecureGaussian) Noise(src Source) float64 { return unsnap(s.gauss.Sample(src), s.k) }

// DeltaBound returns an upper bound on δ(ε) of the discrete Gaussian with parameter S
// and integer sensitivity D (both directions are equal by symmetry). With
// c = ⌈D/2 − εS²/D⌉ − 1 the exact value is (CKS 2020, Thm 7)
//
//	δ(ε) = P[Y ≤ c] − e^ε P[Y ≤ c − D],   Y ~ N_ℤ(0, S²).
//
// The bound replaces the discrete tails by Gaussian integrals: with f(y) = e^(−y²/2S²)
// unimodal and normaliser C = √(2π)S·θ, 1 ≤ θ ≤ 1 + 3e^(−2π²S²) (Poisson summation),
//
//	P[Y ≤ c]     ≤ Φ((c+1)/S) + [c ≥ 0]/(√(2π)S),
//	P[Y ≤ c−D]   ≥ (Φ((c−D)/S) − [c−D > 0]/(√(2π)S)) / θ,
//
// and the result is inflated by 1e-12 relative to the terms, covering the error of
// math.Erfc and of the arithmetic. It is at least the smallest positive float64.
//
// For a sampler built by NewSecureGaussianL2 with dims ≥ 2 it is instead the CDP bound
// described there, with ρ = D₂²/(2S²).
func (s *SecureGaussian) DeltaBound(eps float64) float64 {
	if s.dims >= 2 {
		return cdpDelta(rhoUp(s.l2, float64(s.gauss.sigma)), eps)
	}
	return discreteGaussianDelta(float64(s.gauss.sigma), float64(s.d), eps)
}

// rhoUp returns a float64 ≥ D²/(2S²).
func rhoUp(D, S float64) float64 { return D * D / (2 * S * S) * (1 + 0x1p-48) }

// cdpDelta returns an upper bound on δ(ε) of a ρ-CDP mechanism:
// min over α > 1 of exp((α−1)(αρ − ε))·(1 − 1/α)^α/(α − 1) (CKS 2020, Cor. 13). The
// minimisation is a golden-section search over ln(α − 1) (any α is valid); the chosen
// value is evaluated in log space and raised by 1e-12 times the sum of the magnitudes of
// its terms (each is computed to a few ulps), so the result is an upper bound.
func cdpDelta(rho, eps float64) float64 {
	if rho <= 0 {
		return 0
	}
	logd := func(a float64) (v, mag float64) {
		t1 := (a - 1) * (a*rho - eps)
		t2 := -math.Log(a - 1)
		t3 := a * math.Log1p(-1/a)
		return t1 + t2 + t3, math.Abs(t1) + math.Abs(t2) + math.Abs(t3)
	}
	lo, hi := math.Log(1e-9), math.Log(math.Max(4, 4*(eps+1)/rho))
	f := func(x float64) float64 { v, _ := logd(1 + math.Exp(x)); return v }
	x, _ := numeric.GoldenSection(f, lo, hi, 0, 200)
	v, mag := logd(1 + math.Exp(x))
	d := math.Exp(v + 1e-12*(mag+1))
	return math.Max(math.Min(d, 1), math.SmallestNonzeroFloat64)
}

// NormBound returns w (in grid steps) with Pr[‖Y‖₂ ≥ w] ≤ β for Y ∈ ℤ^dims of i.i.d.
// discrete Gaussians N_ℤ(0, S²) (the grid noise of one release; multiply by the
// granularity for value units). Chernoff bound of Laurent and Massart (2000, Lemma 1):
// for the discrete Gaussian, E e^(λY²) = Z(S')/Z(S) with S'² = S²/(1 − 2λS²), and the
// Poisson-summation normaliser Z(s) = √(2π)s·θ(s), 1 ≤ θ(s) ≤ 1 + 3e^(−2π²s²), gives
// E e^(λY²) ≤ θ(S)(1 − 2λS²)^(−1/2): the χ² moment generating function times θ. Hence
// Pr[‖Y‖² ≥ S²(d + 2√(dx) + 2x)] ≤ θ^d e^(−x); x = ln(1/β) + d ln θ. Rounded up by
// 1e-12 relative. β must be in (0, 1).
func (s *SecureGaussian) NormBound(beta float64) (float64, error) {
	if math.IsNaN(beta) || beta <= 0 || beta >= 1 {
		return 0, &dpkit.ParamError{Pkg: "noise", Name: "beta", Value: beta, Want: "in (0, 1)"}
	}
	return normBound(float64(s.gauss.sigma), s.Dims(), beta), nil
}

func normBound(S float64, d int, beta float64) float64 {
	df := float64(d)
	x := math.Log(1/beta) + df*math.Log1p(3*math.Exp(-2*math.Pi*math.Pi*S*S))
	return S * math.Sqrt(df+2*math.Sqrt(df*x)+2*x) * (1 + 1e-12)
}

func discreteGaussianDelta(S, D, eps float64) float64 {
	// δ is the largest value of P[Y ≤ c] − e^ε P[Y ≤ c − D] over integers c, reached at
	// the largest c below w = D/2 − εS²/D; w is rounded, so the neighbours of that c
	// are tried too.
	//
	// The neighbours are counted by an integer offset: c0 itself may be beyond 2^53,
	// where c0 + 1 == c0 (a float loop counter there never ended, at ε = 10^7 for
	// Δ = σ = 1). Past 2^52 in size, c0 is rounded by up to one; but then w is at least
	// 2^52/S ≥ 2^21 standard deviations below 0 (D ≤ 2^50, S ≤ 2^31), where every term
	// is 0 in float64 and the result is the smallest positive float64, an upper bound.
	w := D/2 - eps*S*S/D
	c0 := math.Ceil(w) - 1
	best := 0.0
	for i := -1; i <= 1; i++ {
		best = math.Max(best, gaussianTailBound(S, D, eps, c0+float64(i)))
	}
	return math.Max(math.Min(best, 1), math.SmallestNonzeroFloat64)
}

// gaussianTailBound is the bound of DeltaBound at one threshold c, computed in log space
// (numeric.LogNormCDF): the tail P[Y ≤ c − D] can lie far below the normal float64 range
// (Δ/σ ≈ 15 at ε = 474: Φ(−38.3) ≈ 1e-321, a subnormal with three digits, whose error,
// times e^ε, once made the bound come out below the truth). Each logarithm is moved by
// its error bound in the safe direction (8u + 4u(z² + 1), and the rounding of the sum
// ε + ln B − ln A), and the result rounded up by 1e-12.
func gaussianTailBound(S, D, eps, c float64) float64 {
	bump := 1 / (math.Sqrt(2*math.Pi) * S)
	logErr := func(z float64) float64 { return 8*0x1p-53 + 4*0x1p-53*(z*z+1) + 1e-13 }
	za := (c + 1) / S
	la := numeric.LogNormCDF(za)
	if math.IsInf(la, -1) {
		return 0 // P[Y ≤ c] is below e^(−10^300): nothing (the caller rounds up to 5e-324)
	}
	if c >= 0 {
		la = math.Log(math.Exp(la) + bump)
	}
	la += logErr(za)
	zb := (c - D) / S
	var lb float64
	if c-D > 0 {
		b := 0.5*math.Erfc(-zb/math.Sqrt2) - bump // ≥ ½ − bump: far from underflow
		if b <= 0 {
			return math.Exp(la) * (1 + 1e-12)
		}
		lb = math.Log(b)
	} else {
		lb = numeric.LogNormCDF(zb)
	}
	lb -= math.Log1p(3*math.Exp(-2*math.Pi*math.Pi*S*S)) + logErr(zb)
	x := eps + lb - la
	x += 2 * 0x1p-53 * (math.Abs(eps) + math.Abs(lb) + math.Abs(la))
	if x >= 0 || math.IsNaN(x) {
		if math.IsNaN(x) {
			return math.Exp(la) * (1 + 1e-12) // A alone bounds it
		}
		return 0 // A ≤ e^ε·B even so: this threshold adds nothing
	}
	return math.Exp(la) * -math.Expm1(x) * (1 + 1e-12)
}

func (s *SecureLaplace) String() string {
	return fmt.Sprintf("SecureLaplace(g=2^%d, D=%d, t=%d)", s.k, s.d, s.t)
}
