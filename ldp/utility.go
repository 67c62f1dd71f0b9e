package ldp

import (
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
)

// Utility is a utility of a privatization mechanism that decomposes over its outputs,
//
//	U(Q) = Σ_y μ(Q_y),   Q_y = Q(y|·) the column of output y,
//
// with μ sublinear: μ(γz) = γμ(z) for γ ≥ 0 and μ(z1+z2) ≤ μ(z1) + μ(z2) (thesis
// Def. 3.3.1, problem 3.9). For such utilities a staircase mechanism is optimal (Thm
// 3.3.2) and [Optimal] finds it.
type Utility interface {
	// Inputs returns the size k of the input alphabet.
	Inputs() int
	// Column returns μ(q) for a column q of length Inputs() with entries ≥ 0.
	Column(q []float64) float64
	// Name is a short name for messages: "kl", "tv", "mi".
	Name() string
}

// Value returns U(Q) = Σ_y μ(Q_y) (thesis eq. 3.9).
func Value(u Utility, q Matrix) (float64, error) {
	if err := q.Validate(); err != nil {
		return 0, err
	}
	if q.Inputs() != u.Inputs() {
		return 0, &dpkit.ParamError{Pkg: "ldp", Name: "matrix", Value: q.Inputs(), Want: "one row per input of the utility"}
	}
	return value(u, q), nil
}

func value(u Utility, q Matrix) float64 {
	var s numeric.Sum
	for y := range q.Outputs() {
		s.Add(u.Column(column(q, y)))
	}
	switch u.(type) {
	case *KL, *TV, *MI, *FDivergence:
		// Non-negative quantities: a rounding error below zero is reported as 0.
		return max(0, s.Value())
	}
	return s.Value()
}

// KL is the hypothesis-testing utility of thesis §3.4: the Kullback–Leibler divergence
// of the privatized marginals, U(Q) = D(M0‖M1), M_ν = P_ν^T Q (eq. 3.13 with
// f(t) = t ln t). By the Chernoff–Stein lemma it is the exponent of the best type II
// error at a fixed type I error when testing P0 against P1 from privatized samples.
type KL struct{ p0, p1 []float64 }

// NewKL returns the KL utility for the hypotheses p0 and p1, distributions on k ≥ 2
// inputs with every entry > 0 (the thesis assumes positive priors, §3.3.1).
func NewKL(p0, p1 []float64) (*KL, error) {
	if err := checkK(len(p0), MaxInputs); err != nil {
		return nil, err
	}
	if err := checkDistribution("p0", p0, len(p0), true); err != nil {
		return nil, err
	}
	if err := checkDistribution("p1", p1, len(p0), true); err != nil {
		return nil, err
	}
	return &KL{p0: clone(p0), p1: clone(p1)}, nil
}

func (u *KL) Inputs() int  { return len(u.p0) }
func (u *KL) Name() string { return "kl" }

// Column returns μ(q) = (P0·q) ln((P0·q)/(P1·q)).
func (u *KL) Column(q []float64) float64 {
	a, b := dot(u.p0, q), dot(u.p1, q)
	return klTerm(a, b)
}

// TV is the total-variation utility U(Q) = ‖M0 − M1‖_TV = ½ Σ_y |M0(y) − M1(y)|
// (thesis eq. 3.13 with f(t) = ½|t − 1|).
type TV struct{ p0, p1 []float64 }

// NewTV returns the total-variation utility for p0 and p1, distributions on k ≥ 2
// inputs (entries ≥ 0).
func NewTV(p0, p1 []float64) (*TV, error) {
	if err := checkK(len(p0), MaxInputs); err != nil {
		return nil, err
	}
	if err := checkDistribution("p0", p0, len(p0), false); err != nil {
		return nil, err
	}
	if err := checkDistribution("p1", p1, len(p0), false); err != nil {
		return nil, err
	}
	return &TV{p0: clone(p0), p1: clone(p1)}, nil
}

func (u *TV) Inputs() int  { return len(u.p0) }
func (u *TV) Name() string { return "tv" }

// Column returns μ(q) = ½ |(P0 − P1)·q|.
func (u *TV) Column(q []float64) float64 {
	var s numeric.Sum
	for x := range q {
		s.Add((u.p0[x] - u.p1[x]) * q[x])
	}
	return 0.5 * math.Abs(s.Value())
}

// MI is the information-preservation utility of thesis §3.5: the mutual information
// I(X; Y) between the input X ~ P and the output Y of the mechanism (eq. 3.19).
type MI struct{ p []float64 }

// NewMI returns the mutual-information utility for the input distribution p on k ≥ 2
// inputs (entries ≥ 0).
func NewMI(p []float64) (*MI, error) {
	if err := checkK(len(p), MaxInputs); err != nil {
		return nil, err
	}
	if err := checkDistribution("p", p, len(p), false); err != nil {
		return nil, err
	}
	return &MI{p: clone(p)}, nil
}

func (u *MI) Inputs() int  { return len(u.p) }
func (u *MI) Name() string { return "mi" }

// Column returns μ(q) = Σ_x P(x) q_x ln(q_x / P·q).
func (u *MI) Column(q []float64) float64 {
	m := dot(u.p, q)
	var s numeric.Sum
	for x := range q {
		if w := u.p[x] * q[x]; w > 0 {
			s.Add(w * math.Log(q[x]/m))
		}
	}
	return s.Value()
}

// KLDivergence returns D(m0‖m1) = Σ_y m0(y) ln(m0(y)/m1(y)) in nats, +Inf when some
// m0(y) > 0 = m1(y). The inputs must be distributions on the same outputs.
func KLDivergence(m0, m1 []float64) (float64, error) {
	if err := checkPair(m0, m1); err != nil {
		return 0, err
	}
	var s numeric.Sum
	for y := range m0 {
		t := klTerm(m0[y], m1[y])
		if math.IsInf(t, 1) {
			return t, nil
		}
		s.Add(t)
	}
	return max(0, s.Value()), nil
}

// TotalVariation returns ‖m0 − m1‖_TV = ½ Σ_y |m0(y) − m1(y)|.
func TotalVariation(m0, m1 []float64) (float64, error) {
	if err := checkPair(m0, m1); err != nil {
		return 0, err
	}
	var s numeric.Sum
	for y := range m0 {
		s.Add(math.Abs(m0[y] - m1[y]))
	}
	return 0.5 * s.Value(), nil
}

// ChernoffInformation returns the Chernoff information of m0 and m1,
//
//	C(m0, m1) = − min_{λ∈[0,1]} ln Σ_y m0(y)^λ m1(y)^(1−λ),
//
// the best exponent of the Bayesian error probability when testing m0 against m1 from
// n i.i.d. samples (Cover–Thomas Thm 11.9.1), the symmetric counterpart of the
// Chernoff–Stein exponent D(m0‖m1) used in thesis §3.4. The function of λ is convex;
// the minimum is found by golden-section search (numeric.GoldenSection, which also
// evaluates λ = 0 and 1) to an absolute error below 1e-12 in λ.
func ChernoffInformation(m0, m1 []float64) (float64, error) {
	if err := checkPair(m0, m1); err != nil {
		return 0, err
	}
	g := func(l float64) float64 {
		var s numeric.Sum
		for y := range m0 {
			if m0[y] > 0 && m1[y] > 0 {
				s.Add(math.Exp(l*math.Log(m0[y]) + (1-l)*math.Log(m1[y])))
			}
		}
		if s.Value() == 0 {
			return math.Inf(-1)
		}
		return math.Log(s.Value())
	}
	_, best := numeric.GoldenSection(g, 0, 1, 1e-12, 0)
	return max(0, -best), nil
}

// MutualInformation returns I(X; Y) in nats for X ~ p and Y the output of q (thesis
// eq. 3.19).
func MutualInformation(p []float64, q Matrix) (float64, error) {
	u, err := NewMI(p)
	if err != nil {
		return 0, err
	}
	return Value(u, q)
}

func checkPair(m0, m1 []float64) error {
	if len(m0) == 0 {
		return &dpkit.ParamError{Pkg: "ldp", Name: "m0", Value: "no entries", Want: "a distribution"}
	}
	if err := checkDistribution("m0", m0, len(m0), false); err != nil {
		return err
	}
	return checkDistribution("m1", m1, len(m0), false)
}

// klTerm returns a ln(a/b) with 0 ln(0/b) = 0 and a ln(a/0) = +Inf for a > 0.
func klTerm(a, b float64) float64 {
	switch {
	case a <= 0:
		return 0
	case b <= 0:
		return math.Inf(1)
	}
	return a * math.Log(a/b)
}

func dot(p, q []float64) float64 {
	var s numeric.Sum
	for i := range p {
		s.Add(p[i] * q[i])
	}
	return s.Value()
}

func clone(p []float64) []float64 { return append([]float64(nil), p...) }
