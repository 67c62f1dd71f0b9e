package mechanism

import (
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
)

// ExponentialOptions configures an exponential mechanism.
type ExponentialOptions struct {
	Epsilon     float64 `json:"epsilon"`     // required, finite, ≥ MinExponentialEpsilon
	Sensitivity float64 `json:"sensitivity"` // of the utility u(D, r) in D, for every r; required, ≥ 2^−1000
	// Monotonic declares that for neighbours D, D' all utilities move in the same
	// direction; the mechanism may then use ε·u/Δ instead of ε·u/(2Δ) (McSherry–Talwar).
	Monotonic bool `json:"monotonic,omitempty"`
}

func (ExponentialOptions) kind() string                { return "exponential" }
func (o ExponentialOptions) build() (Mechanism, error) { return NewExponential(o) }

// MinExponentialEpsilon is the smallest ε of an exponential mechanism: the exact sampler
// spends 2^−62 of ε on rounding (see Exponential), at most 2^−22 of ε from this value on.
const MinExponentialEpsilon = 0x1p-40

// Exponential is the exponential mechanism (McSherry and Talwar 2007; the lecture slides,
// "Exponential mechanism"): it selects r with probability ∝ exp(ε u(D, r)/(2Δu)) and is
// ε-DP. What is released is exactly the following mechanism, whose privacy loss is
// proven ≤ ε for every finite utility vector, however large (rounding included):
//
//  1. Quantize. h = 2^(⌊log2 Δu⌋ − 40) is a power of two fixed by Δu alone (never by
//     the data). Every utility becomes the integer q_r = ⌊u_r/h + ½⌋, computed exactly
//     (u_r/h is exact; integers beyond 2^62 are held in math/big). Round-half-up is
//     monotone and commutes with integer shifts, so |u_r − u'_r| ≤ Δu gives
//     |q_r − q'_r| ≤ D := ⌈Δu/h⌉ ∈ [2^40, 2^41] — the grid sensitivity — and monotone
//     neighbours stay monotone.
//  2. Exponents. λ is a float64 (an exact dyadic rational) with c·λ·D + 2^−62 ≤ ε,
//     checked in exact rational arithmetic (c = 2, or 1 when Monotonic). For every r,
//     γ_r = λ(q_max − q_r) is computed exactly (big-integer product) and truncated to
//     γ̃_r = ⌊2^63·γ_r⌋/2^63, so γ̃_r = γ_r − e_r with 0 ≤ e_r < η := 2^−63, whatever
//     the size of the utilities.
//  3. Sampling. A uniform candidate is accepted with probability exp(−γ̃_r) by the
//     exact Bernoulli of package noise (integer part: Bernoulli(e^(−1)) trials); the
//     best candidate has γ̃ = 0, so at most n candidates are drawn on average. The
//     output r has probability exactly P(r) = e^(λq_r + e_r) / Σ_s e^(λq_s + e_s).
//
// Privacy (the argument of McSherry–Talwar with the rounding terms kept): for
// neighbours, the numerator ratio is ≤ e^(λD + η) and the normaliser ratio Z'/Z ≤
// max_s e^(λ(q'_s − q_s) + e'_s − e_s) ≤ e^(λD + η), so ln P(r)/P'(r) ≤ 2λD + 2η ≤ ε;
// when utilities move in one direction one of the two factors is ≤ e^η, giving
// λD + 2η ≤ ε. ExactEpsilon reports c·λ·D + 2η (rounded up), which is ≤ ε; the
// selection probabilities differ from the ideal ε/(cΔu) mechanism's by the factor
// (D·h/Δu)(1 + O(2^−22)) ≤ 1 + 2^−40 in the exponent plus the h/2 quantization.
type Exponential struct {
	eps, sens float64
	mono      bool
	k         int     // utility grid h = 2^k
	d         uint64  // grid sensitivity ⌈Δ/h⌉
	lambda    float64 // exponent per grid unit, c·λ·D + 2^−62 ≤ ε exactly
}

// NewExponential validates o.
func NewExponential(o ExponentialOptions) (*Exponential, error) {
	if err := checkEpsilonPositive(o.Epsilon); err != nil {
		return nil, err
	}
	if o.Epsilon < MinExponentialEpsilon {
		return nil, perr("epsilon", o.Epsilon, "finite and ≥ 2^-40 (MinExponentialEpsilon)")
	}
	if err := dpkit.InPackage("mechanism", dpkit.CheckPositive("sensitivity", o.Sensitivity)); err != nil {
		return nil, err
	}
	if o.Sensitivity < 0x1p-1000 {
		return nil, perr("sensitivity", o.Sensitivity, "finite and ≥ 2^-1000 (the utility grid Δ·2^-40 must be a normal float64)")
	}
	m := &Exponential{eps: o.Epsilon, sens: o.Sensitivity, mono: o.Monotonic}
	m.k = log2FloorExp(o.Sensitivity) - 40
	m.d = uint64(math.Ceil(math.Ldexp(o.Sensitivity, -m.k))) // Δ/h exact, in [2^40, 2^41)
	c := m.c()
	lambda := (o.Epsilon - 0x1p-61) / (float64(c) * float64(m.d))
	for lambda > 0 && !m.lambdaValid(lambda) {
		lambda = math.Nextafter(lambda, 0)
	}
	if !(lambda > 0) {
		return nil, &dpkit.InfeasibleError{Msg: "mechanism: no positive exponent meets ε after rounding"}
	}
	m.lambda = lambda
	return m, nil
}

func (m *Exponential) c() uint64 {
	if m.mono {
		return 1
	}
	return 2
}

// lambdaValid reports whether c·λ·D + 2^−62 ≤ ε in exact rational arithmetic.
func (m *Exponential) lambdaValid(lambda float64) bool {
	lhs := new(big.Rat).SetFloat64(lambda)
	lhs.Mul(lhs, new(big.Rat).SetInt(new(big.Int).SetUint64(m.c()*m.d)))
	lhs.Add(lhs, new(big.Rat).SetFloat64(0x1p-62))
	return lhs.Cmp(new(big.Rat).SetFloat64(m.eps)) <= 0
}

func log2FloorExp(x float64) int {
	_, e := math.Frexp(x)
	return e - 1
}

// Guarantee returns (ε, 0); the exact loss of the released distribution is
// ExactEpsilon() ≤ ε.
func (m *Exponential) Guarantee() dpkit.Budget { return dpkit.Budget{Epsilon: m.eps} }

// Descriptor returns {"kind":"exponential","version":1,"epsilon":…,"sensitivity":…}
// (and "monotonic":true where declared).
func (m *Exponential) Descriptor() Descriptor {
	return Describe(ExponentialOptions{Epsilon: m.eps, Sensitivity: m.sens, Monotonic: m.mono})
}

// Epsilon returns ε; Sensitivity Δu.
func (m *Exponential) Epsilon() float64     { return m.eps }
func (m *Exponential) Sensitivity() float64 { return m.sens }

// ExactEpsilon returns a float64 ≥ c·λ·D + 2^−62, the proven privacy loss of the released
// distribution (see Exponential); it is ≤ Epsilon().
func (m *Exponential) ExactEpsilon() float64 {
	r := new(big.Rat).SetFloat64(m.lambda)
	r.Mul(r, new(big.Rat).SetInt(new(big.Int).SetUint64(m.c()*m.d)))
	r.Add(r, new(big.Rat).SetFloat64(0x1p-62))
	f, _ := r.Float64()
	if new(big.Rat).SetFloat64(f).Cmp(r) < 0 {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// UtilityGranularity returns h, the spacing of the utility grid; GridSensitivity D =
// ⌈Δu/h⌉; Lambda the exponent λ per grid unit (all exact).
func (m *Exponential) UtilityGranularity() float64 { return math.Ldexp(1, m.k) }
func (m *Exponential) GridSensitivity() uint64     { return m.d }
func (m *Exponential) Lambda() float64             { return m.lambda }

func checkUtilities(u []float64) error {
	if len(u) == 0 {
		return perr("utilities", "[]", "at least one candidate")
	}
	for i, x := range u {
		if math.IsNaN(x) || math.IsInf(x, 0) { // name built only on error
			return checkValue(indexName("utilities", i), x)
		}
	}
	return nil
}

// quantize returns ⌊u·2^(−k) + ½⌋ exactly.
func quantize(u float64, k int) *big.Int {
	a := math.Ldexp(u, -k) // exact unless it underflows (then |a| < ½: 0) or overflows
	if !math.IsInf(a, 0) && math.Abs(a) < 0x1p62 {
		f := math.Floor(a)
		n := int64(f)
		if a-f >= 0.5 { // exact
			n++
		}
		return big.NewInt(n)
	}
	// |u/h| ≥ 2^62 > 2^53: u/h is an integer, M·2^s with M the 53-bit significand.
	frac, e := math.Frexp(u)
	q := big.NewInt(int64(math.Ldexp(frac, 53)))
	return q.Lsh(q, uint(e-53-k))
}

// exponent is γ̃ = whole + frac/2^63 for one candidate.
type exponent struct {
	whole *big.Int // ≥ 0
	frac  uint64   // < 2^63
}

// exponents returns γ̃_r = ⌊2^63·λ(q_max − q_r)⌋/2^63 for every candidate, exactly.
func (m *Exponential) exponents(utilities []float64) ([]exponent, error) {
	if err := checkUtilities(utilities); err != nil {
		return nil, err
	}
	q := make([]*big.Int, len(utilities))
	qmax := (*big.Int)(nil)
	for i, u := range utilities {
		q[i] = quantize(u, m.k)
		if qmax == nil || q[i].Cmp(qmax) > 0 {
			qmax = q[i]
		}
	}
	out := make([]exponent, len(utilities))
	x := new(big.Int)
	for i := range q {
		out[i] = m.gamma(x.Sub(qmax, q[i]))
	}
	return out, nil
}

// gamma returns γ̃ = ⌊2^63·λ·g⌋/2^63 for g = q_max − q ≥ 0, exactly (λ = L·2^(e−53),
// L < 2^53 an integer, so 2^63·λ·g = L·g·2^(e+10)). g is not modified.
func (m *Exponential) gamma(g *big.Int) exponent {
	frac, e := math.Frexp(m.lambda)
	x := new(big.Int).Mul(g, big.NewInt(int64(math.Ldexp(frac, 53))))
	if shift := e - 53 + 63; shift >= 0 {
		x.Lsh(x, uint(shift))
	} else {
		x.Rsh(x, uint(-shift)) // x ≥ 0: floor
	}
	lo := new(big.Int).And(x, mask63).Uint64()
	return exponent{whole: x.Rsh(x, 63), frac: lo}
}

var mask63 = new(big.Int).SetUint64(1<<63 - 1)

// approx returns γ̃ as a float64 (for Probabilities only).
func (g exponent) approx() float64 {
	w, _ := new(big.Float).SetInt(g.whole).Float64()
	return w + math.Ldexp(float64(g.frac), -63)
}

// Probabilities returns the probabilities of the released distribution,
// exp(−γ̃_r)/Σ_s exp(−γ̃_s) (see Exponential), evaluated in float64 (relative error
// ~1e-15; exponents are shifted by the best candidate's, so huge utilities do not
// overflow). They are within the quantization of the ideal exp(εu_r/(2Δu))/Σ.
func (m *Exponential) Probabilities(utilities []float64) ([]float64, error) {
	ex, err := m.exponents(utilities)
	if err != nil {
		return nil, err
	}
	p := make([]float64, len(ex))
	sum := 0.0
	for i, g := range ex {
		p[i] = math.Exp(-g.approx())
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	return p, nil
}

// UtilityBound returns the accuracy bound of the lecture slides ("Accuracy of the exponential
// mechanism") for the released distribution: with probability at least 1 − β the
// selected r has u(D, r) > OPT − gap for n candidates, where
//
//	gap = (h/λ)(ln n + ln(1/β) + 2^−63) + h ≈ (2Δu/ε)(ln n + ln(1/β))
//
// (Δu/ε when monotonic). Proof: the best candidate has γ̃ = 0, so Z ≥ 1 and
// P[γ̃_r ≥ τ − η] ≤ n·e^(−τ+η); u_r ≤ OPT − gap implies q_max − q_r ≥ gap/h − 1.
// The result is rounded up by 1e-12 relative.
func (m *Exponential) UtilityBound(n int, beta float64) (float64, error) {
	if err := checkBeta(beta); err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, perr("n", n, "an integer ≥ 1")
	}
	h := m.UtilityGranularity()
	tau := math.Log(float64(n)) + math.Log(1/beta) + 0x1p-63
	return (h/m.lambda*tau + h) * (1 + 1e-12), nil
}

// Select returns the index of the selected candidate (see Exponential for the exact
// sampler). Utilities must be finite.
func (m *Exponential) Select(utilities []float64, src noise.Source) (int, error) {
	ex, err := m.exponents(utilities)
	if err != nil {
		return 0, err
	}
	src = sourceOr(src)
	n := uint64(len(ex))
	const chunk = uint64(1) << 62
	bigChunk := new(big.Int).SetUint64(chunk)
	rest := new(big.Int)
outer:
	for {
		i := noise.Uniform(src, n)
		g := ex[i]
		rest.Set(g.whole)
		for !rest.IsUint64() || rest.Uint64() > chunk {
			// exponent ≥ 2^62 in its integer part: exact, chunk by chunk (the first
			// chunk fails except with probability e^(−2^62))
			if ok, _ := noise.BernoulliExpSum(src, chunk, 0, 1); !ok {
				continue outer
			}
			rest.Sub(rest, bigChunk)
		}
		if ok, _ := noise.BernoulliExpSum(src, rest.Uint64(), g.frac, 1<<63); ok {
			return int(i), nil
		}
	}
}

// ReportNoisyMax returns argmax_r (u_r + G_r) with G_r i.i.d. Gumbel noise of scale
// 2Δu/ε (Δu/ε when monotonic). By the Gumbel-max identity its output distribution is
// exactly the exponential mechanism's, so it is sampled with Select's exact sampler
// (quantized utilities, exact exponents, no floating-point noise) and has the same
// proven guarantee, ExactEpsilon() ≤ ε.
func (m *Exponential) ReportNoisyMax(utilities []float64, src noise.Source) (int, error) {
	return m.Select(utilities, src)
}
