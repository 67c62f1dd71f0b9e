package ldp

import (
	"math"

	"github.com/dpkit/dpkit"
)

// MechanismGeometric names the truncated geometric baseline (Geometric).
const MechanismGeometric = "geometric"

// Geometric returns the truncated geometric mechanism, the baseline of the thesis's
// numerical comparisons (§3.4.2): the inputs relabelled 1…k receive two-sided geometric
// noise with ratio b = e^(−ε/(k−1)) (docs/errata.md, thesis item 2: the printed
// ε^(1/(k−1)) should be e^(−ε/(k−1))), and the output is truncated to [1, k], the mass
// beyond either end moved onto it:
//
//	Q(y|x) = (1−b)/(1+b) · b^|y−x|   for 1 < y < k,
//	Q(1|x) = b^(x−1)/(1+b),   Q(k|x) = b^(k−x)/(1+b).
//
// Every ratio Q(y|x)/Q(y|x') is at most b^(−|x−x'|) ≤ e^ε, so it is ε-LDP. ε must be finite
// ≥ 0 and k in [2, MaxInputs].
func Geometric(k int, eps float64) (Matrix, error) {
	if err := checkK(k, MaxInputs); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("ldp", dpkit.CheckEpsilon("eps", eps)); err != nil {
		return nil, err
	}
	b := math.Exp(-eps / float64(k-1))
	c := -math.Expm1(-eps/float64(k-1)) / (1 + b) // (1−b)/(1+b) without cancellation
	q := make(Matrix, k)
	for x := range k {
		q[x] = make([]float64, k)
		for y := range k {
			d := float64(x - y)
			switch y {
			case 0:
				q[x][y] = math.Pow(b, float64(x)) / (1 + b)
			case k - 1:
				q[x][y] = math.Pow(b, float64(k-1-x)) / (1 + b)
			default:
				q[x][y] = c * math.Pow(b, math.Abs(d))
			}
		}
	}
	return q, nil
}

// FDivergence is the hypothesis-testing utility U(Q) = D_f(M0‖M1) = Σ_y M1(y)·f(M0(y)/M1(y))
// of the privatized marginals M_ν = P_ν^T Q for a convex f with f(1) = 0 (thesis eq. 3.13;
// every such utility is sublinear in a column, so a staircase mechanism is optimal,
// Thm 3.3.2). KL and TV are the f-divergences with f(t) = t ln t and ½|t − 1|; this type
// offers two more:
//
//	hellinger: f(t) = (√t − 1)²,  D = Σ_y (√M0(y) − √M1(y))²  (twice the squared Hellinger distance)
//	chi2:      f(t) = (t − 1)²,   D = Σ_y (M0(y) − M1(y))²/M1(y)  (Pearson's χ²)
type FDivergence struct {
	name   string
	p0, p1 []float64
}

// FDivergenceNames lists the f-divergences NewFDivergence accepts.
var FDivergenceNames = []string{"hellinger", "chi2"}

// NewFDivergence returns the f-divergence utility name ("hellinger" or "chi2") for the
// hypotheses p0 and p1, distributions on k ≥ 2 inputs (all entries of p1 > 0 for chi2).
func NewFDivergence(name string, p0, p1 []float64) (*FDivergence, error) {
	if name != "hellinger" && name != "chi2" {
		return nil, &dpkit.ParamError{Pkg: "ldp", Name: "utility", Value: name, Want: "hellinger or chi2"}
	}
	if err := checkK(len(p0), MaxInputs); err != nil {
		return nil, err
	}
	if err := checkDistribution("p0", p0, len(p0), false); err != nil {
		return nil, err
	}
	if err := checkDistribution("p1", p1, len(p0), name == "chi2"); err != nil {
		return nil, err
	}
	return &FDivergence{name: name, p0: clone(p0), p1: clone(p1)}, nil
}

func (u *FDivergence) Inputs() int  { return len(u.p0) }
func (u *FDivergence) Name() string { return u.name }

// Column returns μ(q) = m1·f(m0/m1) with m_ν = P_ν·q, written without the division where
// it would lose accuracy: (√m0 − √m1)² for hellinger, (m0 − m1)²/m1 for chi2 (0 when
// m0 = m1 = 0).
func (u *FDivergence) Column(q []float64) float64 {
	m0, m1 := dot(u.p0, q), dot(u.p1, q)
	var d float64
	for x := range q {
		d += (u.p0[x] - u.p1[x]) * q[x] // m0 − m1 without cancellation of the sums
	}
	switch u.name {
	case "hellinger":
		s := math.Sqrt(m0) + math.Sqrt(m1)
		if s == 0 {
			return 0
		}
		return d * d / (s * s) // (√m0 − √m1)² = (m0 − m1)²/(√m0 + √m1)²
	default:
		if m1 == 0 {
			return 0
		}
		return d * d / m1
	}
}
