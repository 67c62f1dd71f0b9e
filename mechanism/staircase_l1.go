package mechanism

import (
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
)

// StaircaseL1Options configures a multi-dimensional ℓ1 staircase mechanism.
type StaircaseL1Options struct {
	Epsilon     float64 `json:"epsilon"`     // required, in [2^-12, 2^20]
	Sensitivity float64 `json:"sensitivity"` // required: the ℓ1 sensitivity Δ of the vector query, > 0
	Dimension   int     `json:"dimension"`   // required: the number of coordinates, 2
}

func (StaircaseL1Options) kind() string                { return "staircase_l1" }
func (o StaircaseL1Options) build() (Mechanism, error) { return NewStaircaseL1(o) }

func init() { register[StaircaseL1Options]("staircase_l1", "epsilon", "sensitivity", "dimension") }

var _ Mechanism = (*StaircaseL1)(nil)

// StaircaseL1 is the correlated multi-dimensional staircase mechanism of Kairouz's
// thesis, §2.3 (eq. (2.8), Thm 2.3.1): noise whose density is a staircase in the ℓ1
// norm, with the γ that minimises the expected ℓ1 error (StaircaseL1Gamma). For a
// two-dimensional query of ℓ1 sensitivity Δ it is the optimal ε-DP noise for the ℓ1 cost;
// its expected cost falls as 2^(1/3)·Δ·e^(−ε/3) at large ε, against e^(−ε/4) for
// independent one-dimensional staircases at ε/2 each and 2Δ/ε for Laplace noise (thesis
// Cor 2.3.2). Noise is exact on a power-of-two grid (noise.StaircaseL1). The thesis
// proves optimality for d = 2 and conjectures it beyond; dpkit offers d = 2.
type StaircaseL1 struct {
	eps, sens float64
	s         *noise.StaircaseL1
}

// NewStaircaseL1 validates o and returns the mechanism.
func NewStaircaseL1(o StaircaseL1Options) (*StaircaseL1, error) {
	if err := dpkit.CheckPositive("epsilon", o.Epsilon); err != nil {
		return nil, dpkit.InPackage("mechanism", err)
	}
	if err := dpkit.CheckPositive("sensitivity", o.Sensitivity); err != nil {
		return nil, dpkit.InPackage("mechanism", err)
	}
	if o.Dimension != 2 {
		return nil, &dpkit.ParamError{Pkg: "mechanism", Name: "dimension", Value: o.Dimension, Want: "2 (the dimension of the thesis's Thm 2.3.1)"}
	}
	s, err := noise.NewStaircaseL1(o.Epsilon, o.Sensitivity, StaircaseL1Gamma(o.Epsilon, o.Dimension), o.Dimension)
	if err != nil {
		return nil, dpkit.InPackage("mechanism", err)
	}
	return &StaircaseL1{eps: o.Epsilon, sens: o.Sensitivity, s: s}, nil
}

// Descriptor returns {"kind":"staircase_l1","version":1,"epsilon":…,"sensitivity":…,
// "dimension":2}.
func (m *StaircaseL1) Descriptor() Descriptor {
	return Describe(StaircaseL1Options{Epsilon: m.eps, Sensitivity: m.sens, Dimension: m.s.Dims()})
}

// Guarantee returns (ε, 0).
func (m *StaircaseL1) Guarantee() dpkit.Budget { return dpkit.Budget{Epsilon: m.eps} }

// PLD returns the exact three-point pair of the grid distribution (pld.StaircaseL1: its
// privacy loss takes the values −ε, 0 and ε, and the axis shift of ℓ1 norm M is the worst),
// with the grid's ε (never above the ε asked for) and its period and step in grid units.
func (m *StaircaseL1) PLD() (pld.Mechanism, error) {
	return pld.StaircaseL1{Epsilon: m.s.Epsilon(), Period: m.s.GridPeriod(), Step: m.s.GridStep()}, nil
}

// Epsilon returns ε; Sensitivity the ℓ1 sensitivity Δ; Dimension the number of
// coordinates; Gamma the γ of the grid distribution (r/M); Granularity the grid spacing.
func (m *StaircaseL1) Epsilon() float64     { return m.eps }
func (m *StaircaseL1) Sensitivity() float64 { return m.sens }
func (m *StaircaseL1) Dimension() int       { return m.s.Dims() }
func (m *StaircaseL1) Gamma() float64       { return m.s.Gamma() }
func (m *StaircaseL1) Granularity() float64 { return m.s.Granularity() }

// Scale returns the period of the staircase (≥ Δ), the natural scale of the noise.
func (m *StaircaseL1) Scale() float64 { return m.s.Period() }

// Cost returns the expected ℓ1 norm of the noise, E‖X‖₁, of the continuous staircase
// with the grid distribution's ε, period and γ (thesis eq. (2.9)); the grid adds at most
// one grid step per coordinate.
func (m *StaircaseL1) Cost() float64 {
	return m.s.Period() * StaircaseL1Cost(m.s.Epsilon(), m.s.Gamma(), m.s.Dims())
}

// NormBound returns w with P(‖released − value‖₁ ≥ w) ≤ β, from the grid distribution's
// exact norm law (noise.StaircaseL1): the central ball ‖z‖₁ < r has 2r² − 2r + 1 points
// of weight 1, the block [r + jM, r + (j+1)M) has norms n with 4n points of weight
// b^(j+1) each, and the total weighs Z = C + α/u + β/u² (u = e^ε − 1). The smallest
// grid norm n' with P(‖z‖₁ ≥ n') ≤ β is found by bisection over the block (or ball) that
// holds it; w = (n'·g)(1 + 1e-9) + g covers the snapping (≤ g/2 per coordinate) and
// the float rounding of the tail sums (relative error below 1e-11 for the at most 10^5
// blocks reached from ε ≥ 2^−12, so each tail is inflated by 1e-9 before it is compared
// with β).
func (m *StaircaseL1) NormBound(beta float64) (float64, error) {
	if err := checkBeta(beta); err != nil {
		return 0, dpkit.InPackage("mechanism", err)
	}
	eps := m.s.Epsilon()
	M, r := float64(m.s.GridPeriod()), float64(m.s.GridStep())
	b, t := math.Exp(-eps), 1/math.Expm1(eps)
	ball := func(x float64) float64 { return 2*x*x - 2*x + 1 } // #{‖z‖₁ < x}, x ≥ 1
	alpha, bet := 4*M*r+2*M*(M-1), 4*M*M
	z := ball(r) + alpha*t + bet*t*t
	// tailFrom(j) = Σ_{i≥j} b^(i+1)(α + βi) / Z: the mass of the blocks j, j+1, …
	tailFrom := func(j float64) float64 {
		return math.Pow(b, j+1) * (alpha/(1-b) + bet*(j/(1-b)+b/((1-b)*(1-b)))) / z
	}
	const inflate = 1 + 1e-9
	var n float64 // the smallest norm n' with P(‖z‖₁ ≥ n') ≤ β
	if (alpha*t+bet*t*t)/z*inflate > beta {
		// in a block: the first j whose following blocks hold ≤ β
		j := 0.0
		for tailFrom(j+1)*inflate > beta {
			j++
		}
		lo := r + j*M // P(‖z‖₁ ≥ lo + s) = tail(j+1) + b^(j+1)·2[(lo+M)(lo+M−1) − (lo+s)(lo+s−1)]/Z
		wj, next := math.Pow(b, j+1), tailFrom(j+1)
		s, _ := numeric.BisectInt(-1, int64(M), func(s int64) (bool, error) {
			x := lo + float64(s)
			return (next+wj*2*((lo+M)*(lo+M-1)-x*(x-1))/z)*inflate > beta, nil
		})
		n = lo + float64(s) + 1
	} else {
		outer := (alpha*t + bet*t*t) / z
		s, _ := numeric.BisectInt(0, int64(r), func(x int64) (bool, error) {
			return (outer+(ball(r)-ball(float64(x)))/z)*inflate > beta, nil
		})
		n = float64(s) + 1
	}
	g := m.s.Granularity()
	return n*g*inflate + g, nil
}

// ReleaseVector returns values (of length Dimension, finite) plus staircase noise.
func (m *StaircaseL1) ReleaseVector(values []float64, src noise.Source) ([]float64, error) {
	if len(values) != m.s.Dims() {
		return nil, &dpkit.ParamError{Pkg: "mechanism", Name: "values", Value: len(values), Want: "a vector of Dimension = 2 coordinates"}
	}
	for i, v := range values {
		if err := checkValue(indexName("values", i), v); err != nil {
			return nil, dpkit.InPackage("mechanism", err)
		}
	}
	out := m.s.Add(sourceOr(src), [2]float64{values[0], values[1]})
	return out[:], nil
}

// staircaseC returns c_k = Σ_{i≥0} i^k b^i for k = 0…3 (thesis §2.3.3), b = e^(−ε), with
// 1 − b computed without cancellation:
//
//	c0 = 1/(1−b), c1 = b/(1−b)², c2 = b(1+b)/(1−b)³, c3 = b(1+4b+b²)/(1−b)⁴.
func staircaseC(eps float64) [4]float64 {
	b, omb := math.Exp(-eps), -math.Expm1(-eps)
	return [4]float64{1 / omb, b / (omb * omb), b * (1 + b) / (omb * omb * omb), b * (1 + 4*b + b*b) / (omb * omb * omb * omb)}
}

// staircaseS returns S_m(γ) = Σ_{j=1}^m C(m,j)·c_{m−j}·(b + (1−b)γ^j) and its derivative
// in γ, for m ≤ 3: the thesis's normalisation sum (a(γ) = d!/(2^d Δ^d S_d(γ))). Every
// term is positive.
func staircaseS(m int, eps, gamma float64, c [4]float64) (s, ds float64) {
	b, omb := math.Exp(-eps), -math.Expm1(-eps)
	binom := [4][4]float64{{1}, {1, 1}, {1, 2, 1}, {1, 3, 3, 1}}
	gj := 1.0 // γ^(j−1)
	for j := 1; j <= m; j++ {
		s += binom[m][j] * c[m-j] * (b + omb*gj*gamma)
		ds += binom[m][j] * c[m-j] * omb * float64(j) * gj
		gj *= gamma
	}
	return s, ds
}

// StaircaseL1Cost returns E‖X‖₁/Δ for the d-dimensional ℓ1 staircase density of the
// thesis, eq. (2.8), with parameters ε and γ (d = 1 or 2). Integrating r·f over the ℓ1
// layers (volume (2r)^d/d!) gives
//
//	E‖X‖₁ = Δ · d/(d+1) · S_{d+1}(γ)/S_d(γ),
//
// which for d = 2 is the thesis's eq. (2.9) and for d = 1 the one-dimensional E|X|
// (noise.StaircaseMoment). It returns NaN for other d or for γ outside [0, 1].
func StaircaseL1Cost(eps, gamma float64, dims int) float64 {
	if dims < 1 || dims > 2 || !(gamma >= 0 && gamma <= 1) || !(eps > 0) {
		return math.NaN()
	}
	c := staircaseC(eps)
	num, _ := staircaseS(dims+1, eps, gamma, c)
	den, _ := staircaseS(dims, eps, gamma, c)
	return float64(dims) / float64(dims+1) * num / den
}

// StaircaseL1Gamma returns the γ ∈ [0, 1] that minimises StaircaseL1Cost (the thesis's
// γ*, Thm 2.3.1; for d = 1 it is 1/(1 + e^(ε/2)), Geng–Viswanath Thm 4). The cost is a
// ratio N/D of polynomials in γ with cost(0) = cost(1) (the same distribution); its
// derivative's numerator N'D − ND' is positive near 0, negative on (γ_max, γ*) and
// positive again up to 1, where γ_max is a local maximum at most γ*/3.7 (for d = 2,
// checked at 60 digits for ε from 2^−12 to 2^20 by the reference generator). γ* is
// therefore found by halving from 1 until the cost falls (a point of (γ_max, γ*)) and
// bisecting the last halving's bracket to adjacent floats or 1e-15 relative. It returns 0
// when γ* is below the smallest normal float64 (ε above about 2100) and NaN for d outside
// {1, 2} or ε ≤ 0.
func StaircaseL1Gamma(eps float64, dims int) float64 {
	if dims < 1 || dims > 2 || !(eps > 0) {
		return math.NaN()
	}
	c := staircaseC(eps)
	falling := func(g float64) (bool, error) {
		n, dn := staircaseS(dims+1, eps, g, c)
		d, dd := staircaseS(dims, eps, g, c)
		return dn*d-n*dd < 0, nil
	}
	hi := 1.0
	if f, _ := falling(hi); f {
		return 1
	}
	for {
		lo := hi / 2
		if lo < 0x1p-1022 {
			return 0
		}
		if f, _ := falling(lo); f {
			lo, hi, _ = numeric.Bisect(lo, hi, falling, numeric.Stop{RelTol: 1e-15, Geometric: true})
			return lo + (hi-lo)/2
		}
		hi = lo
	}
}
