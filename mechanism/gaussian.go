package mechanism

import (
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
)

// Calibration selects how the Gaussian mechanism's σ is derived from (ε, δ).
type Calibration int

const (
	// Analytic is the analytic Gaussian mechanism of Balle and Wang (2018, Thm 8): the
	// smallest σ whose exact δ(ε) is ≤ δ, found by bisection. Valid for every ε > 0.
	Analytic Calibration = iota
	// Classic is σ = Δ·√(2 ln(1.25/δ))/ε (Dwork and Roth 2014, Thm A.1), valid for
	// ε < 1 only.
	Classic
)

func (c Calibration) String() string {
	if c == Classic {
		return "classic"
	}
	return "analytic"
}

// MarshalText writes "analytic" or "classic".
func (c Calibration) MarshalText() ([]byte, error) {
	if c != Analytic && c != Classic {
		return nil, perr("calibration", int(c), "Analytic or Classic")
	}
	return []byte(c.String()), nil
}

// UnmarshalText reads "analytic" or "classic".
func (c *Calibration) UnmarshalText(b []byte) error {
	switch string(b) {
	case "analytic":
		*c = Analytic
	case "classic":
		*c = Classic
	default:
		return perr("calibration", string(b), `"analytic" or "classic"`)
	}
	return nil
}

// GaussianOptions configures a Gaussian mechanism.
type GaussianOptions struct {
	Epsilon     float64     `json:"epsilon"`     // required, finite and > 0
	Delta       float64     `json:"delta"`       // required, in [MinDelta, 1)
	Sensitivity float64     `json:"sensitivity"` // ℓ2 sensitivity; required, > 0
	Calibration Calibration `json:"calibration,omitempty"`
	// Dimension is the number of coordinates released together (ReleaseVector); 0 means
	// 1 (scalar). Sensitivity is then the ℓ2 sensitivity of the vector.
	Dimension int `json:"dimension,omitempty"`
}

func (GaussianOptions) kind() string                { return "gaussian" }
func (o GaussianOptions) build() (Mechanism, error) { return NewGaussian(o) }

// MinDelta is the smallest δ accepted by NewGaussian: below it the Gaussian tails
// underflow float64 and δ(ε) could not be certified.
const MinDelta = 1e-290

// Gaussian is the Gaussian mechanism: f(D) + N(0, σ²), (ε, δ)-DP for a real-valued f of
// ℓ2 sensitivity Δ. The noise is the discrete Gaussian on a power-of-two grid (package
// noise, SecureGaussian) with parameter Sigma() ≥ the calibrated σ, and its δ(ε) is
// certified by noise.SecureGaussian.DeltaBound, which accounts for the grid.
//
// Vectors (Dimension d ≥ 2, ReleaseVector): every coordinate is snapped to the grid and
// receives independent discrete Gaussian noise with the same S. Snapping can lengthen
// the shift, so the accounting uses the grid ℓ2 sensitivity D₂ = Δ/g + √d (Minkowski,
// noise.NewSecureGaussianL2), and δ(ε) is certified by the concentrated-DP bound of
// Canonne, Kamath and Steinke 2020 for the multivariate discrete Gaussian (Thm 14,
// ρ = D₂²/(2S²), converted by their Cor. 13; see noise.NewSecureGaussianL2). σ is
// raised until that certified δ meets the target, so a vector release needs somewhat
// more noise than the analytic calibration of a continuous Gaussian (≈ 8% more σ at
// ε = 1, δ = 1e-5): CalibratedSigma reports the continuous σ, Sigma the one used.
type Gaussian struct {
	eps, delta, sens float64
	dim              int
	cal              Calibration
	sigma            float64 // calibrated continuous σ
	mu               float64 // > 0 for a Gaussian calibrated by μ (NewGaussianMu)
	s                *noise.SecureGaussian
	dg               *noise.DiscreteGaussian // the grid noise, N_ℤ(0, S²)
}

// MaxCalibrationEpsilon is the largest ε the Gaussian is calibrated at: a request for a
// larger ε is calibrated at this one (a mechanism that is (2^10, δ)-DP is (ε, δ)-DP for
// every ε ≥ 2^10), which keeps the grid and its certificate in range for any ε
// (ε = 1e300 included). Guarantee still reports the ε asked for.
const MaxCalibrationEpsilon = 0x1p10

// NewGaussian validates o, calibrates σ and returns the mechanism.
func NewGaussian(o GaussianOptions) (*Gaussian, error) {
	if err := checkEpsilonPositive(o.Epsilon); err != nil {
		return nil, err
	}
	if math.IsNaN(o.Delta) || o.Delta < MinDelta || o.Delta >= 1 {
		return nil, perr("delta", o.Delta, "in [1e-290, 1)")
	}
	if err := dpkit.InPackage("mechanism", dpkit.CheckPositive("sensitivity", o.Sensitivity)); err != nil {
		return nil, err
	}
	dim := o.Dimension
	if dim == 0 {
		dim = 1
	}
	if dim < 0 || dim > 1<<20 {
		return nil, perr("dimension", o.Dimension, "an integer in [0, 2^20]")
	}
	eps := math.Min(o.Epsilon, MaxCalibrationEpsilon)
	var sigma float64
	var err error
	switch o.Calibration {
	case Analytic:
		sigma, err = AnalyticGaussianSigma(eps, o.Delta, o.Sensitivity)
	case Classic:
		sigma, err = ClassicGaussianSigma(eps, o.Delta, o.Sensitivity)
	default:
		err = perr("calibration", int(o.Calibration), "Analytic or Classic")
	}
	if err != nil {
		return nil, err
	}
	build := func(s float64) (*noise.SecureGaussian, error) { return noise.NewSecureGaussian(o.Sensitivity, s) }
	if dim >= 2 {
		build = func(s float64) (*noise.SecureGaussian, error) {
			return noise.NewSecureGaussianL2(o.Sensitivity, s, dim)
		}
	}
	g, err := certifiedSampler(eps, o.Delta, sigma, build)
	if err != nil {
		return nil, err
	}
	dg, err := noise.NewDiscreteGaussian(g.GridSigma())
	if err != nil {
		return nil, err
	}
	return &Gaussian{eps: o.Epsilon, delta: o.Delta, sens: o.Sensitivity, dim: dim, cal: o.Calibration, sigma: sigma, s: g, dg: dg}, nil
}

// certifiedSampler returns the grid sampler with (nearly) the smallest σ ≥ sigma whose
// certified δ(ε) (noise.SecureGaussian.DeltaBound) is ≤ delta (see raiseSigma).
func certifiedSampler(eps, delta, sigma float64, build func(float64) (*noise.SecureGaussian, error)) (*noise.SecureGaussian, error) {
	meets := func(g *noise.SecureGaussian) bool { return g.DeltaBound(eps) <= delta }
	return raiseSigma(sigma, build, meets, "mechanism: no finite σ certifies this (ε, δ) for the grid Gaussian")
}

// raiseSigma returns the grid sampler with (nearly) the smallest σ ≥ sigma that meets:
// σ itself when it does, else a doubling search for a σ that does and a geometric
// bisection down to a relative 2^−28. The sampler returned is always one that was
// built and checked. (The grid parameter S is an integer ≥ 2^30, so 2^−28 is a few
// steps of S.) No finite σ meeting it is a *dpkit.InfeasibleError with message msg.
func raiseSigma(sigma float64, build func(float64) (*noise.SecureGaussian, error), meets func(*noise.SecureGaussian) bool, msg string) (*noise.SecureGaussian, error) {
	var best *noise.SecureGaussian
	// tooSmall is true while σ does not meet (monotone up to the grid's rounding;
	// whatever the search does, only a checked sampler is kept).
	tooSmall := func(s float64) (bool, error) {
		g, err := build(s)
		if err != nil {
			return false, err
		}
		if meets(g) {
			best = g
			return false, nil
		}
		return true, nil
	}
	small, err := tooSmall(sigma)
	if err != nil || !small {
		return best, err
	}
	lo, hi, found, err := numeric.ExpandUp(sigma, 2, math.MaxFloat64, tooSmall)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, &dpkit.InfeasibleError{Msg: msg}
	}
	if _, _, err := numeric.Bisect(lo, hi, tooSmall, numeric.Stop{RelTol: 0x1p-28, Geometric: true}); err != nil {
		return nil, err
	}
	return best, nil
}

// Dimension returns the number of coordinates d (1 for scalar releases).
func (m *Gaussian) Dimension() int { return m.dim }

// Descriptor returns {"kind":"gaussian","version":1,"epsilon":…,"delta":…,
// "sensitivity":…} (with "calibration":"classic" and "dimension" where they apply), or
// {"kind":"gaussian_mu","version":1,"mu":…,"sensitivity":…} for NewGaussianMu.
func (m *Gaussian) Descriptor() Descriptor {
	if m.mu > 0 {
		o := GaussianMuOptions{Mu: m.mu, Sensitivity: m.sens}
		if m.dim > 1 {
			o.Dimension = m.dim
		}
		return Describe(o)
	}
	o := GaussianOptions{Epsilon: m.eps, Delta: m.delta, Sensitivity: m.sens, Calibration: m.cal}
	if m.dim > 1 {
		o.Dimension = m.dim
	}
	return Describe(o)
}

// Guarantee returns (ε, δ).
func (m *Gaussian) Guarantee() dpkit.Budget { return dpkit.Budget{Epsilon: m.eps, Delta: m.delta} }

// Epsilon returns ε.
func (m *Gaussian) Epsilon() float64 { return m.eps }

// Delta returns δ.
func (m *Gaussian) Delta() float64 { return m.delta }

// Sensitivity returns the ℓ2 sensitivity Δ.
func (m *Gaussian) Sensitivity() float64 { return m.sens }

// CalibratedSigma returns σ from the calibration (continuous Gaussian).
func (m *Gaussian) CalibratedSigma() float64 { return m.sigma }

// Sigma returns the parameter S·g of the noise actually added (≥ CalibratedSigma).
func (m *Gaussian) Sigma() float64 { return m.s.Sigma() }

// Granularity returns the spacing of the output grid.
func (m *Gaussian) Granularity() float64 { return m.s.Granularity() }

// Sampler returns the secure sampler.
func (m *Gaussian) Sampler() *noise.SecureGaussian { return m.s }

// Variance returns Sigma()², an upper bound on the variance of the discrete Gaussian
// noise (its variance is below σ², Canonne–Kamath–Steinke 2020, Prop. 19).
func (m *Gaussian) Variance() float64 { s := m.Sigma(); return s * s }

// Interval returns w with Pr[|Y| ≥ w] ≤ β: w = g·(1 + ⌈S·z⌉), z = Φ⁻¹(1 − β/2), using
// P[Y ≥ m] ≤ Φ̄((m−1)/S) for the discrete Gaussian (its unimodal sum is below the
// integral from m − 1, and its normaliser is at least √(2π)S).
func (m *Gaussian) Interval(beta float64) (float64, error) {
	if err := checkBeta(beta); err != nil {
		return 0, err
	}
	z := math.Sqrt2 * math.Erfcinv(beta) * (1 + 1e-12)
	steps := 1 + math.Ceil(float64(m.s.GridSigma())*z)
	return steps * m.s.Granularity(), nil
}

// VectorBound returns w with Pr[max_i |Y_i| ≥ w] ≤ β for the d coordinates (ℓ∞): the
// per-coordinate interval at β/d (union bound). For d = 1 it is Interval(β).
func (m *Gaussian) VectorBound(beta float64) (float64, error) {
	if err := checkBeta(beta); err != nil {
		return 0, err
	}
	return m.Interval(beta / float64(m.dim))
}

// L2Bound returns w with Pr[‖Y‖₂ ≥ w] ≤ β for the noise vector Y (Laurent–Massart χ²
// bound applied to the discrete Gaussian, noise.SecureGaussian.NormBound), in value
// units: w ≈ σ√(d + 2√(d ln(1/β)) + 2 ln(1/β)).
func (m *Gaussian) L2Bound(beta float64) (float64, error) {
	if err := checkBeta(beta); err != nil {
		return 0, err
	}
	w, err := m.s.NormBound(beta)
	if err != nil {
		return 0, err
	}
	return w * m.s.Granularity(), nil
}

// Release returns value plus noise. It is for Dimension 1; value must be finite.
func (m *Gaussian) Release(value float64, src noise.Source) (float64, error) {
	return release(m, m.dim, value, src)
}

// ReleaseVector returns values plus independent noise per coordinate; len(values) must
// equal Dimension and every value must be finite.
func (m *Gaussian) ReleaseVector(values []float64, src noise.Source) ([]float64, error) {
	return releaseVector(m, m.dim, values, src)
}

// gaussianDelta returns an upper bound on δ(ε) of the continuous Gaussian mechanism
// with noise σ and sensitivity Δ: pld.GaussianDelta at μ = Δ/σ rounded up (δ grows
// with μ), the curve of Balle and Wang 2018, Thm 8, evaluated without cancellation and
// raised by its certified relative error.
func gaussianDelta(eps, sigma, sens float64) (float64, error) {
	return pld.GaussianDelta(quoUp(sens, sigma), eps)
}

// AnalyticGaussianSigma returns the σ of the analytic Gaussian mechanism (Balle and
// Wang 2018, Thm 8): a σ whose certified δ(ε) (pld.GaussianDelta) is ≤ δ, at most 1e-13
// relative above the smallest such σ (bisection, numeric.Bisect, on the monotone δ(σ)).
func AnalyticGaussianSigma(eps, delta, sens float64) (float64, error) {
	if err := checkEpsilonPositive(eps); err != nil {
		return 0, err
	}
	if math.IsNaN(delta) || delta < MinDelta || delta >= 1 {
		return 0, perr("delta", delta, "in [1e-290, 1)")
	}
	if err := dpkit.InPackage("mechanism", dpkit.CheckPositive("sensitivity", sens)); err != nil {
		return 0, err
	}
	tooSmall := func(sigma float64) (bool, error) {
		d, err := gaussianDelta(eps, sigma, sens)
		return d > delta, err
	}
	// Bracket: double up from Δ while σ is too small, or halve down while it is not.
	lo, hi := sens, sens
	if small, err := tooSmall(sens); err != nil {
		return 0, err
	} else if small {
		var found bool
		if lo, hi, found, err = numeric.ExpandUp(sens, 2, math.MaxFloat64, tooSmall); err != nil {
			return 0, err
		} else if !found {
			return 0, &dpkit.InfeasibleError{Msg: "mechanism: no finite σ reaches this δ"}
		}
	} else {
		for lo > sens*1e-300 {
			lo /= 2
			small, err := tooSmall(lo)
			if err != nil {
				return 0, err
			}
			if small {
				break
			}
			hi = lo
		}
		if small, _ := tooSmall(lo); !small {
			return hi, nil // δ met at every σ ≥ Δ·1e-300: the smallest σ the search tries
		}
	}
	_, hi, err := numeric.Bisect(lo, hi, tooSmall, numeric.Stop{RelTol: 1e-13})
	return hi, err
}

// ClassicGaussianSigma returns σ = Δ·√(2 ln(1.25/δ))/ε (Dwork and Roth 2014, Thm A.1),
// rounded up by 1e-15 relative; it requires ε < 1. (The KOV Thm 4.3 calibration for
// composition is false for large ε, docs/errata.md, KOV item 8, and is not offered.)
func ClassicGaussianSigma(eps, delta, sens float64) (float64, error) {
	if err := checkEpsilonPositive(eps); err != nil {
		return 0, err
	}
	if eps >= 1 {
		return 0, perr("epsilon", eps, "< 1 for the classic calibration (use Analytic)")
	}
	if math.IsNaN(delta) || delta < MinDelta || delta >= 1 {
		return 0, perr("delta", delta, "in [1e-290, 1)")
	}
	if err := dpkit.InPackage("mechanism", dpkit.CheckPositive("sensitivity", sens)); err != nil {
		return 0, err
	}
	return sens * math.Sqrt(2*math.Log(1.25/delta)) / eps * (1 + 1e-15), nil
}

func (m *Gaussian) gridExp() int                  { return math.Ilogb(m.s.Granularity()) }
func (m *Gaussian) sample(src noise.Source) int64 { return m.dg.Sample(src) }

// ReleaseInt returns the release of an integer value rounded to the nearest integer
// (halves up): the discrete Gaussian release of an integer query (a count). The
// rounding is post-processing of Release's grid output, so Guarantee and PLD are
// unchanged; the noise added to the integer is the grid noise rounded, of variance at
// most Sigma()² + 1/4. It is computed exactly for every int64 (saturating at the int64
// range) and is for Dimension 1.
func (m *Gaussian) ReleaseInt(value int64, src noise.Source) (int64, error) {
	if m.dim != 1 {
		return 0, perr("value", value, "a vector of dimension coordinates (use ReleaseIntVector)")
	}
	return gridReleaseInt(value, m.gridExp(), m.sample(sourceOr(src))), nil
}

// ReleaseIntVector is ReleaseInt for each of Dimension integer values.
func (m *Gaussian) ReleaseIntVector(values []int64, src noise.Source) ([]int64, error) {
	if len(values) != m.dim {
		return nil, perr("values", len(values), "dimension coordinates")
	}
	src = sourceOr(src)
	k := m.gridExp()
	out := make([]int64, len(values))
	for i, v := range values {
		out[i] = gridReleaseInt(v, k, m.sample(src))
	}
	return out, nil
}

// MinGaussianMu is the smallest μ of NewGaussianMu: the grid mechanism's PLD has
// μ' ≤ Δ/σ + 2^−29, so a μ much below 2^−29 cannot be met.
const MinGaussianMu = 0x1p-26

// GaussianMuOptions configures a Gaussian mechanism by its Gaussian-DP parameter μ
// (Dong, Roth and Su, "Gaussian differential privacy", 2022) instead of (ε, δ).
type GaussianMuOptions struct {
	Mu          float64 `json:"mu"`                  // required, finite and > 0
	Sensitivity float64 `json:"sensitivity"`         // ℓ2 sensitivity; required, > 0
	Dimension   int     `json:"dimension,omitempty"` // coordinates released together; 0 means 1
}

func (GaussianMuOptions) kind() string                { return "gaussian_mu" }
func (o GaussianMuOptions) build() (Mechanism, error) { return NewGaussianMu(o) }

func init() { register[GaussianMuOptions]("gaussian_mu", "mu", "sensitivity") }

// NewGaussianMu returns the grid Gaussian mechanism with the least noise whose PLD (see
// Gaussian.PLD: a continuous Gaussian with μ' = (D+1)/S, or (D₂ + √d)/S for vectors) has
// μ' ≤ Mu: σ starts at Δ/μ and is raised (doubling, then geometric bisection to 2^−28)
// until the grid's μ' meets Mu, so the release is Mu-GDP up to the additive term of
// Gaussian.PLD. Its privacy is a curve, not a point: Guarantee reports the curve's point
// at ε = 0, δ = 2Φ(μ'/2) − 1 (the total variation, pld.GaussianDelta, rounded up).
func NewGaussianMu(o GaussianMuOptions) (*Gaussian, error) {
	if err := positive("mu", o.Mu); err != nil {
		return nil, err
	}
	if o.Mu < MinGaussianMu {
		return nil, perr("mu", o.Mu, "≥ 2^-26 (the grid adds up to 2^-29 to μ, see Gaussian.PLD)")
	}
	if err := positive("sensitivity", o.Sensitivity); err != nil {
		return nil, err
	}
	dim := o.Dimension
	if dim == 0 {
		dim = 1
	}
	if dim < 0 || dim > 1<<20 {
		return nil, perr("dimension", o.Dimension, "an integer in [0, 2^20]")
	}
	sigma := o.Sensitivity / o.Mu
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return nil, perr("mu", o.Mu, "sensitivity/mu finite and > 0 in float64")
	}
	m := &Gaussian{sens: o.Sensitivity, dim: dim, sigma: sigma, mu: o.Mu}
	meets := func(g *noise.SecureGaussian) bool {
		m.s = g
		pm, _ := m.PLD()
		return quoUp(pm.(pld.Gaussian).Sensitivity, pm.(pld.Gaussian).Sigma) <= o.Mu
	}
	build := func(s float64) (*noise.SecureGaussian, error) {
		return noise.NewSecureGaussianL2(o.Sensitivity, s, dim)
	}
	best, err := raiseSigma(sigma, build, meets, "mechanism: no finite σ gives this μ on the grid")
	if err != nil {
		return nil, err
	}
	m.s = best
	if m.dg, err = noise.NewDiscreteGaussian(best.GridSigma()); err != nil {
		return nil, err
	}
	pm, _ := m.PLD()
	tv, err := pld.GaussianDelta(quoUp(pm.(pld.Gaussian).Sensitivity, pm.(pld.Gaussian).Sigma), 0)
	if err != nil {
		return nil, err
	}
	m.delta = tv
	return m, nil
}

// Mu returns the μ the mechanism was calibrated to by NewGaussianMu (0 for NewGaussian).
func (m *Gaussian) Mu() float64 { return m.mu }
