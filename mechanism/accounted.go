package mechanism

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// Accounted is a mechanism known only by its noise or by its guarantee: one that ran
// outside dpkit and is recorded for accounting (e.g. "Gaussian noise of σ = 100 on a
// query of sensitivity 1"). It has a Guarantee, a PLD and a Descriptor but no release
// method. FromDescriptor returns one for the kinds laplace_noise, gaussian_noise,
// geometric_noise, epsilon_delta and subsampled.
type Accounted struct {
	desc Descriptor
	g    dpkit.Budget
	pm   pld.Mechanism
}

// Guarantee returns the (ε, δ) the description implies, never below the truth (see the
// Params type of each kind).
func (m *Accounted) Guarantee() dpkit.Budget { return m.g }

// PLD returns the mechanism's exact privacy loss distribution (package pld).
func (m *Accounted) PLD() (pld.Mechanism, error) { return m.pm, nil }

// Descriptor returns the description the mechanism was built from.
func (m *Accounted) Descriptor() Descriptor { return m.desc }

// LaplaceNoise describes continuous Laplace noise of scale b (density e^(−|x|/b)/2b)
// added to a query of ℓ1 sensitivity Δ: (Δ/b, 0)-DP, PLD pld.Laplace.
type LaplaceNoise struct {
	Scale       float64 `json:"scale"`       // b, finite > 0
	Sensitivity float64 `json:"sensitivity"` // Δ, finite > 0
}

// GaussianNoise describes continuous Gaussian noise N(0, σ²) added to a query of ℓ2
// sensitivity Δ: μ-Gaussian DP with μ = Δ/σ, PLD pld.Gaussian. Its privacy is a curve,
// not a point, and no (ε, δ) was declared: Guarantee reports the trivially true (0, 1);
// account it by its PLD.
type GaussianNoise struct {
	Sigma       float64 `json:"sigma"`       // σ, finite > 0
	Sensitivity float64 `json:"sensitivity"` // Δ, finite > 0
}

// GeometricNoise describes two-sided geometric noise P(z) ∝ e^(−|z|/t) (t = Scale)
// added to an integer query of sensitivity Δ: (Δ/t, 0)-DP, PLD pld.DiscreteLaplace.
type GeometricNoise struct {
	Scale       float64 `json:"scale"`       // t, finite > 0
	Sensitivity int64   `json:"sensitivity"` // Δ, an integer in [1, 2^53]
}

// EpsilonDelta describes any (ε, δ)-DP mechanism: accounted by the canonical pair of
// KOV eq. (17)/(18), which dominates every (ε, δ)-DP mechanism (KOV Thm 2.4).
type EpsilonDelta struct {
	Epsilon float64 `json:"epsilon"` // finite ≥ 0
	Delta   float64 `json:"delta"`   // in [0, 1]
}

// Subsampled describes Base run on a Poisson subsample (each row kept independently
// with probability Rate), under add/remove neighbours: PLD pld.PoissonSubsampled (Zhu,
// Dong and Wang 2022, Thm 11). Base must be one of laplace_noise, gaussian_noise,
// geometric_noise, epsilon_delta. The guarantee is amplified from Base's (ε, δ) to
// (ln(1 + q(e^ε − 1)), qδ) (Balle, Barthe and Gaboardi 2018, "Privacy amplification by
// subsampling", Thm 8), rounded up.
type Subsampled struct {
	Rate float64    `json:"rate"` // q in (0, 1]
	Base Descriptor `json:"base"`
}

// Text is a free-text note in place of a mechanism (what the ledger held before it
// recorded descriptors, when the text was not in the command line's KIND:key=value
// syntax). It names no mechanism: FromDescriptor refuses it.
type Text struct {
	Text string `json:"text"`
}

func (LaplaceNoise) kind() string   { return "laplace_noise" }
func (GaussianNoise) kind() string  { return "gaussian_noise" }
func (GeometricNoise) kind() string { return "geometric_noise" }
func (EpsilonDelta) kind() string   { return "epsilon_delta" }
func (Subsampled) kind() string     { return "subsampled" }
func (Text) kind() string           { return "text" }

func perr(name string, v any, want string) error {
	return &dpkit.ParamError{Pkg: "mechanism", Name: name, Value: v, Want: want}
}

func positive(name string, v float64) error {
	return dpkit.InPackage("mechanism", dpkit.CheckPositive(name, v))
}

// quoUp returns a float64 ≥ a/b for a, b > 0 finite.
func quoUp(a, b float64) float64 {
	q := a / b
	if math.FMA(q, b, -a) < 0 {
		q = math.Nextafter(q, math.Inf(1))
	}
	return q
}

func (p LaplaceNoise) build() (Mechanism, error) {
	if err := positive("scale", p.Scale); err != nil {
		return nil, err
	}
	if err := positive("sensitivity", p.Sensitivity); err != nil {
		return nil, err
	}
	eps := quoUp(p.Sensitivity, p.Scale)
	if math.IsInf(eps, 0) {
		return nil, perr("scale", p.Scale, "sensitivity/scale finite")
	}
	return &Accounted{desc: Describe(p), g: dpkit.Budget{Epsilon: eps}, pm: pld.Laplace{Scale: p.Scale, Sensitivity: p.Sensitivity}}, nil
}

func (p GaussianNoise) build() (Mechanism, error) {
	if err := positive("sigma", p.Sigma); err != nil {
		return nil, err
	}
	if err := positive("sensitivity", p.Sensitivity); err != nil {
		return nil, err
	}
	if mu := p.Sensitivity / p.Sigma; !(mu > 0) || math.IsInf(mu, 0) {
		return nil, perr("sigma", p.Sigma, "sensitivity/sigma finite and > 0 in float64")
	}
	return &Accounted{desc: Describe(p), g: dpkit.Budget{Epsilon: 0, Delta: 1}, pm: pld.Gaussian{Sigma: p.Sigma, Sensitivity: p.Sensitivity}}, nil
}

func (p GeometricNoise) build() (Mechanism, error) {
	if err := positive("scale", p.Scale); err != nil {
		return nil, err
	}
	if p.Sensitivity < 1 || p.Sensitivity > 1<<53 {
		return nil, perr("sensitivity", p.Sensitivity, "an integer in [1, 2^53]")
	}
	eps := quoUp(float64(p.Sensitivity), p.Scale)
	if math.IsInf(eps, 0) {
		return nil, perr("scale", p.Scale, "sensitivity/scale finite")
	}
	return &Accounted{desc: Describe(p), g: dpkit.Budget{Epsilon: eps}, pm: pld.DiscreteLaplace{Scale: p.Scale, Sensitivity: p.Sensitivity}}, nil
}

func (p EpsilonDelta) build() (Mechanism, error) {
	if err := dpkit.InPackage("mechanism", dpkit.InPackage("mechanism", dpkit.CheckEpsilon("epsilon", p.Epsilon))); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("mechanism", dpkit.InPackage("mechanism", dpkit.CheckDelta("delta", p.Delta))); err != nil {
		return nil, err
	}
	return &Accounted{desc: Describe(p), g: dpkit.Budget{Epsilon: p.Epsilon, Delta: p.Delta}, pm: pld.EpsilonDelta{Epsilon: p.Epsilon, Delta: p.Delta}}, nil
}

func (p Subsampled) build() (Mechanism, error) {
	if math.IsNaN(p.Rate) || p.Rate <= 0 || p.Rate > 1 {
		return nil, perr("rate", p.Rate, "a sampling rate in (0, 1]")
	}
	switch p.Base.Kind {
	case "laplace_noise", "gaussian_noise", "geometric_noise", "epsilon_delta":
	default:
		return nil, perr("base.kind", p.Base.Kind, "one of laplace_noise, gaussian_noise, geometric_noise, epsilon_delta")
	}
	base, err := FromDescriptor(p.Base)
	if err != nil {
		return nil, err
	}
	bp, _ := base.PLD()
	pm := pld.PoissonSubsampled{Base: bp, Rate: p.Rate}
	if err := pm.Validate(); err != nil {
		return nil, dpkit.InPackage("mechanism", err)
	}
	return &Accounted{desc: Describe(p), g: amplify(base.Guarantee(), p.Rate), pm: pm}, nil
}

// amplify returns (ln(1 + q(e^ε − 1)), qδ), each rounded up (Balle, Barthe and
// Gaboardi 2018, Thm 8: Poisson subsampling at rate q under add/remove neighbours).
func amplify(b dpkit.Budget, q float64) dpkit.Budget {
	if q == 1 {
		return b
	}
	const slack = 1 + 0x1p-48 // covers the few roundings of Expm1, ×, Log1p
	eps := b.Epsilon
	if x := math.Expm1(b.Epsilon); !math.IsInf(x, 0) {
		eps = math.Min(b.Epsilon, math.Log1p(q*x)*slack)
	}
	return dpkit.Budget{Epsilon: eps, Delta: math.Min(1, math.Nextafter(q*b.Delta, 2))}
}

func (p Text) build() (Mechanism, error) {
	return nil, perr("mechanism", fmt.Sprintf("text %q", p.Text), "a mechanism descriptor (a free-text note names no mechanism)")
}

// DescribePLD returns the descriptor of the pld mechanism m (the forms of the command
// line's KIND:key=value syntax): pld.Laplace → laplace_noise, pld.Gaussian →
// gaussian_noise, pld.DiscreteLaplace → geometric_noise, pld.RandomizedResponse →
// randomized_response, pld.Exponential and pld.EpsilonDelta → epsilon_delta (the
// canonical pair that pld.Exponential is accounted by), pld.PoissonSubsampled →
// subsampled. The descriptor rebuilds (FromDescriptor) a mechanism whose PLD has the
// same privacy loss distribution as m.
func DescribePLD(m pld.Mechanism) (Descriptor, error) {
	switch m := m.(type) {
	case pld.Laplace:
		return Describe(LaplaceNoise{Scale: m.Scale, Sensitivity: m.Sensitivity}), nil
	case pld.Gaussian:
		return Describe(GaussianNoise{Sigma: m.Sigma, Sensitivity: m.Sensitivity}), nil
	case pld.DiscreteLaplace:
		return Describe(GeometricNoise{Scale: m.Scale, Sensitivity: m.Sensitivity}), nil
	case pld.RandomizedResponse:
		return Describe(RandomizedResponseOptions{Epsilon: m.Epsilon, Categories: m.K}), nil
	case pld.Exponential:
		return Describe(EpsilonDelta{Epsilon: m.Epsilon}), nil
	case pld.EpsilonDelta:
		return Describe(EpsilonDelta{Epsilon: m.Epsilon, Delta: m.Delta}), nil
	case pld.PoissonSubsampled:
		base, err := DescribePLD(m.Base)
		if err != nil {
			return Descriptor{}, err
		}
		return Describe(Subsampled{Rate: m.Rate, Base: base}), nil
	}
	return Descriptor{}, perr("mechanism", fmt.Sprintf("%T", m), "a pld mechanism with a descriptor kind")
}
