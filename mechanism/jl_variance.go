package mechanism

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
)

// JLVarianceOptions configures the Johnson–Lindenstrauss mechanism for the variance
// queries of a matrix: the fields of JLCutOptions (total ε and δ, η and ν of a variance).
type JLVarianceOptions JLCutOptions

func (JLVarianceOptions) kind() string                { return "jl_variance" }
func (o JLVarianceOptions) build() (Mechanism, error) { return NewJLVariance(o) }

func init() { register[JLVarianceOptions]("jl_variance", "epsilon", "delta", "eta", "nu") }

var _ Mechanism = (*JLVariance)(nil)

// MaxJLVarianceDraws bounds r·(n + d), the Gaussian draws of one release of an n × d
// matrix.
const MaxJLVarianceDraws = 1 << 28

// JLVariance is the Johnson–Lindenstrauss mechanism for the variance queries
// v(A, x) = ‖Ax‖² = xᵀAᵀAx of Blocki, Blum, Datta and Sheffet (2012), with the optimal
// composition of KOV App. C.1 and a per-row guarantee derived here. For an n × d matrix
// A whose rows have ℓ2 norm at most 1, with neighbouring matrices differing in one row by
// Euclidean distance at most 1 (the release depends on A only through AᵀA, so adding or
// removing one row is such a change; replacing a row by an arbitrary one is two), it
// releases a sketch from which every variance is answered:
//
//  1. r = ⌈8 ln(2/ν)/η²⌉ rows, δ0 = δ/(2r) and ε0 the largest per-row ε whose r-fold
//     exact composition meets (ε, δ), as for JLCut.
//  2. w the smallest weight (to 1e-6 relative, rounded up) with δ_row(ε0) ≤ δ0, where
//     δ_row is the per-row curve below, evaluated as a certified upper sum (jlRowDelta).
//  3. Y = R·A′ with A′ = [A; w·I_d], the (n + d) × d matrix A with w·I_d stacked under it,
//     and R an r × (n + d) matrix of independent N(0, 1) draws. A′ᵀA′ = AᵀA + w²I:
//     BBDS raise every singular value of A to at least w; dpkit uses this form, and the
//     analysis below is its own.
//  4. A variance is answered as ‖Yx‖²/r − w²‖x‖² (VarianceSketch.Variance), the
//     covariance as YᵀY/r − w²I (VarianceSketch.Covariance).
//
// Privacy of one row (derived here; BBDS state theirs with other constants). A row is
// y = Σ_j g_j a_j + w·h with g ~ N(0, I_n), h ~ N(0, I_d). Let the neighbour replace
// row a_i by b_i, ‖b_i − a_i‖ ≤ 1, and write N = Σ_(j≠i) g_j a_j + w·h ~ N(0, Σ) with
// Σ ⪰ w²I, independent of γ = g_i: the row is N + γa_i under A and N + γb_i under the
// neighbour. Revealing γ too can only help a distinguisher (the row is a post-processing
// of (γ, row)), and given γ the two are Gaussians with covariance Σ and means γa_i, γb_i:
// a Gaussian mechanism with μ = |γ|·‖Σ^(−1/2)(b_i − a_i)‖ ≤ |γ|/w. Gaussian pairs are
// ordered in μ, so each row is dominated by (γ, N(0, 1)) against (γ, N(|γ|/w, 1)),
// γ ~ N(0, 1), whose curve is
//
//	δ_row(ε0) = E_γ[δ_G(ε0; |γ|/w)] = 2∫_0^∞ φ(γ)·δ_G(ε0; γ/w) dγ,
//	δ_G(ε; μ) = Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2)   (Balle & Wang 2018, Thm 8).
//
// For rows of unbounded norm this is the supremum over neighbours (a_i = t·e₁,
// b_i = t·e₁ + e₂ with t → ∞ reveals γ), so w is the smallest weight this per-row
// analysis allows; with rows of norm ≤ 1 it is sound and not tight. The r rows are
// independent given A, each (ε0, δ0)-DP, and compose to (ε, δ) (KOV Thm 3.3).
//
// Accuracy: for a query x fixed in advance, Yx = R·(A′x), so ‖Yx‖² = (‖Ax‖² + w²‖x‖²)·χ²_r
// exactly. The Chernoff bounds P(χ²_r ≥ (1 + η)r) ≤ ((1 + η)e^(−η))^(r/2) and
// P(χ²_r ≤ (1 − η)r) ≤ ((1 − η)e^η)^(r/2) are each at most ν/2 for r ≥ 8 ln(2/ν)/η² and
// η ∈ (0, 1) (there η − ln(1 + η) ≥ η²/4 and −η − ln(1 − η) ≥ η²/4), so with probability
// at least 1 − ν the answer lies in [(1 − η)v − τ, (1 + η)v + τ], τ = η·w²·‖x‖²
// (AdditiveError). The Gaussian draws are made in floating point from the secure source,
// as for JLCut.
type JLVariance struct {
	o JLVarianceOptions
	jlRows
	w float64
}

// NewJLVariance validates o and derives r, ε0, δ0 and w.
func NewJLVariance(o JLVarianceOptions) (*JLVariance, error) {
	rows, err := newJLRows(o.Epsilon, o.Delta, o.Eta, o.Nu)
	if err != nil {
		return nil, err
	}
	w, err := jlVarianceWeight(rows.eps0, rows.delta0)
	if err != nil {
		return nil, err
	}
	return &JLVariance{o: o, jlRows: rows, w: w}, nil
}

// Descriptor returns {"kind":"jl_variance","version":1,"epsilon":…,"delta":…,"eta":…,"nu":…}.
func (m *JLVariance) Descriptor() Descriptor { return Describe(m.o) }

// Weight returns w; Options the options.
func (m *JLVariance) Weight() float64            { return m.w }
func (m *JLVariance) Options() JLVarianceOptions { return m.o }

// AdditiveError returns τ = η·w²·‖x‖², the additive error of the variance in direction x:
// with probability at least 1 − ν the answer lies in [(1 − η)·v − τ, (1 + η)·v + τ].
// Rounded up by 1e-12 relative.
func (m *JLVariance) AdditiveError(x []float64) float64 {
	return m.o.Eta * m.w * m.w * normSq(x) * (1 + 1e-12)
}

func normSq(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return s
}

// VarianceSketch is a released sketch Y = R·[A; w·I] of a matrix's covariance.
type VarianceSketch struct {
	r    int64
	w    float64
	rows [][]float64 // r × d
}

// Release returns the sketch of the matrix with the given rows (n ≥ 1 rows of d ≥ 1
// finite entries, each row of ℓ2 norm at most 1). It needs r·(n + d) ≤ MaxJLVarianceDraws.
func (m *JLVariance) Release(rows [][]float64, src noise.Source) (*VarianceSketch, error) {
	n := len(rows)
	if n < 1 || len(rows[0]) < 1 {
		return nil, perr("rows", n, "a matrix of at least one row and one column")
	}
	d := len(rows[0])
	if draws := float64(m.r) * float64(n+d); draws > MaxJLVarianceDraws {
		return nil, perr("rows", n, fmt.Sprintf("a matrix with r·(n + d) ≤ 2^28 Gaussian draws (r = %d, d = %d)", m.r, d))
	}
	for i, row := range rows {
		if len(row) != d {
			return nil, perr(indexName("rows", i), len(row), fmt.Sprintf("%d entries", d))
		}
		for j, v := range row {
			if math.IsNaN(v) || math.Abs(v) > 1 {
				return nil, perr(fmt.Sprintf("rows[%d][%d]", i, j), v, "in [−1, 1] (every row has ℓ2 norm ≤ 1)")
			}
		}
		if s := normSq(row); s > 1 {
			return nil, perr(indexName("rows", i), math.Sqrt(s), "a row of ℓ2 norm ≤ 1")
		}
	}
	return m.sketch(rows, sourceOr(src)), nil
}

// sketch returns R·[A; w·I] for validated rows (the privacy tests call it with rows of
// norm above 1, where the per-row analysis is tight).
func (m *JLVariance) sketch(rows [][]float64, src noise.Source) *VarianceSketch {
	d := len(rows[0])
	sk := &VarianceSketch{r: m.r, w: m.w, rows: make([][]float64, m.r)}
	for k := range sk.rows {
		y := make([]float64, d)
		for _, row := range rows {
			g := gaussian(src)
			for c, v := range row {
				y[c] += g * v
			}
		}
		for c := range y {
			y[c] += m.w * gaussian(src)
		}
		sk.rows[k] = y
	}
	return sk
}

// Dimension returns d, the number of columns.
func (s *VarianceSketch) Dimension() int { return len(s.rows[0]) }

// Variance returns the estimate ‖Yx‖²/r − w²‖x‖² of ‖Ax‖² (x of Dimension finite entries).
// It is unbiased: E‖Yx‖² = r·(‖Ax‖² + w²‖x‖²).
func (s *VarianceSketch) Variance(x []float64) (float64, error) {
	if len(x) != s.Dimension() {
		return 0, perr("x", len(x), fmt.Sprintf("%d entries, one per column", s.Dimension()))
	}
	for i, v := range x {
		if err := checkValue(indexName("x", i), v); err != nil {
			return 0, dpkit.InPackage("mechanism", err)
		}
	}
	sum := 0.0
	for _, row := range s.rows {
		v := 0.0
		for c, a := range row {
			v += a * x[c]
		}
		sum += v * v
	}
	return sum/float64(s.r) - s.w*s.w*normSq(x), nil
}

// Covariance returns the sanitised covariance matrix YᵀY/r − w²I (d × d), whose quadratic
// form is Variance.
func (s *VarianceSketch) Covariance() [][]float64 {
	d := s.Dimension()
	c := make([][]float64, d)
	for i := range c {
		c[i] = make([]float64, d)
	}
	for _, row := range s.rows {
		for i, a := range row {
			for j, b := range row {
				c[i][j] += a * b
			}
		}
	}
	for i := range c {
		for j := range c[i] {
			c[i][j] /= float64(s.r)
		}
		c[i][i] -= s.w * s.w
	}
	return c
}

// jlVarianceWeight returns the smallest w (bisected to 1e-6 relative, answered from the
// side that met the target) with jlRowDelta(ε0, w, δ0) ≤ δ0, searched in
// [2^−1000, 2^1000] upwards from 10^−3·ln(2/δ0)/ε0 (or from 2^−1000 if that already
// meets it); the curve falls as w grows.
func jlVarianceWeight(eps0, delta0 float64) (float64, error) {
	tooSmall := func(w float64) (bool, error) { return jlRowDelta(eps0, w, delta0) > delta0, nil }
	const floor, ceil = 0x1p-1000, 0x1p1000
	x0 := math.Max(floor, math.Min(ceil, 1e-3*math.Log(2/delta0)/eps0))
	if small, _ := tooSmall(x0); !small {
		if small, _ := tooSmall(floor); !small {
			return floor, nil
		}
		x0 = floor
	}
	lo, hi, found, err := numeric.ExpandUp(x0, 4, ceil, tooSmall)
	if err == nil && !found {
		return 0, &dpkit.InfeasibleError{Msg: fmt.Sprintf("mechanism: no weight w ≤ 2^1000 makes a row (ε0=%g, δ0=%g)-DP", eps0, delta0)}
	}
	if err == nil {
		_, hi, err = numeric.Bisect(lo, hi, tooSmall, numeric.Stop{RelTol: 1e-6, Geometric: true})
	}
	return hi, err
}

// jlRowDelta returns an upper bound on a row's curve δ_row(ε0) = 2∫_0^∞ φ(γ)·δ_G(ε0; γ/w) dγ
// (JLVariance), accurate near target. δ_G(ε0; γ/w) grows with γ, so on a cell [γ_j, γ_(j+1)]
// the integrand is at most φ(γ)·δ_G(ε0; γ_(j+1)/w), and
//
//	δ_row ≤ (1 − 2Φ̄(a))·δ_G(ε0; a/w) + 2Σ_j (Φ̄(γ_j) − Φ̄(γ_(j+1)))·δ_G(ε0; γ_(j+1)/w) + 2Φ̄(G)
//
// for any a = γ_0 < … < γ_J = G (δ_G ≤ 1 above G). a and G are chosen so that the first and
// last terms are at most 1e-3·target each; each cell is halved (down to 1e-5 wide) until
// δ_G grows by at most 2% across it, and the next one starts at the width that kept it
// below 1% (or half as wide again). The sum then over-states δ_row by about 1% (tested
// against a 40-digit quadrature), which moves w by well under 1%. δ_G is
// pld.GaussianDelta's upper bound; the cell masses are differences of erfc values with
// relative error below 1e-10 (cells at least 1e-5 wide), covered by inflating the sum by
// 1e-9, and 2^−1060 per term covers underflow.
func jlRowDelta(eps0, w, target float64) float64 {
	tail := func(x float64) float64 { return math.Erfc(x/math.Sqrt2) / 2 } // Φ̄(x)
	dg := func(g float64) float64 {
		if g <= 0 {
			return 0
		}
		d, err := pld.GaussianDelta(g/w, eps0)
		if err != nil {
			return 1 // g/w overflowed: δ_G ≤ 1
		}
		return d
	}
	stop := numeric.Stop{RelTol: 1e-3, AbsTol: 1e-6}
	const top = 40.0 // 2Φ̄(40) < 1e-349
	G := top
	if 2*tail(top) <= 1e-3*target {
		_, G, _ = numeric.Bisect(0, top, func(x float64) (bool, error) { return 2*tail(x) > 1e-3*target, nil }, stop)
	}
	a := 0.0
	if dg(G) <= 1e-3*target {
		a = G
	} else if dg(0x1p-20) <= 1e-3*target {
		a, _, _ = numeric.Bisect(0x1p-20, G, func(x float64) (bool, error) { return dg(x) <= 1e-3*target, nil }, stop)
	}
	sum := (1-2*tail(a))*dg(a) + 2*tail(G)
	const minStep = 1e-5
	terms := 2
	step := math.Max((G-a)/64, minStep)
	for g, h := a, dg(a); g < G; terms++ {
		next := math.Min(G, g+step)
		hn := dg(next)
		if hn > 1.02*h && step > minStep {
			step = math.Max(step/2, minStep)
			continue
		}
		sum += 2 * (tail(g) - tail(next)) * hn
		if hn <= 1.01*h {
			step *= 1.5
		} else {
			step = math.Max(step/2, minStep)
		}
		g, h = next, hn
	}
	return math.Min(1, sum*(1+1e-9)+float64(terms)*0x1p-1060)
}
