package ldp

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
)

// rowSumTolerance is how far from 1 a row of a Matrix may sum (absolute): enough for
// matrices computed in float64, far below any probability that matters for privacy.
const rowSumTolerance = 1e-9

// Matrix is a privatization mechanism (thesis §3.1.1): Matrix[x][y] = Q(y|x) is the
// probability of output y given input x. Every row is a probability distribution over
// the same outputs.
type Matrix [][]float64

// Inputs returns the number k of inputs (rows).
func (q Matrix) Inputs() int { return len(q) }

// Outputs returns the number of outputs (columns).
func (q Matrix) Outputs() int {
	if len(q) == 0 {
		return 0
	}
	return len(q[0])
}

// Validate reports whether q is a conditional distribution: at least one row, all rows
// of the same positive length, entries in [0, 1], each row summing to 1 within 1e-9.
func (q Matrix) Validate() error {
	if len(q) == 0 {
		return &dpkit.ParamError{Pkg: "ldp", Name: "matrix", Value: "no rows", Want: "at least one row"}
	}
	m := len(q[0])
	for x, row := range q {
		if len(row) != m || m == 0 {
			return &dpkit.ParamError{Pkg: "ldp", Name: fmt.Sprintf("matrix[%d]", x), Value: len(row),
				Want: fmt.Sprintf("%d entries, as row 0 (at least 1)", max(m, 1))}
		}
		var s numeric.Sum
		for y, v := range row {
			if math.IsNaN(v) || v < 0 || v > 1 {
				return &dpkit.ParamError{Pkg: "ldp", Name: fmt.Sprintf("matrix[%d][%d]", x, y), Value: v, Want: "in [0, 1]"}
			}
			s.Add(v)
		}
		if math.Abs(s.Value()-1) > rowSumTolerance {
			return &dpkit.ParamError{Pkg: "ldp", Name: fmt.Sprintf("matrix[%d]", x), Value: s.Value(),
				Want: "a row summing to 1 (within 1e-9)"}
		}
	}
	return nil
}

// Epsilon returns the smallest ε for which q is ε-LDP (thesis eq. 3.1):
//
//	ε(Q) = max_y max_{x,x'} ln( Q(y|x) / Q(y|x') )
//
// +Inf when some output has probability zero under one input and not under another.
// The result is rounded up: it may exceed the exact value of the float64 entries by
// 4·10⁻¹⁶ relative (plus 10⁻³⁰⁰), never fall below it.
func (q Matrix) Epsilon() (float64, error) {
	if err := q.Validate(); err != nil {
		return 0, err
	}
	eps := 0.0
	for y := range q[0] {
		lo, hi := math.Inf(1), 0.0
		for x := range q {
			lo, hi = min(lo, q[x][y]), max(hi, q[x][y])
		}
		if hi == 0 {
			continue
		}
		if lo == 0 {
			return math.Inf(1), nil
		}
		eps = max(eps, roundUp(math.Log(hi/lo)))
	}
	return eps, nil
}

// Delta returns the smallest δ for which q is (ε, δ)-LDP (thesis eq. 3.25): the largest
// hockey-stick divergence between two rows,
//
//	δ(ε) = max_{x,x'} Σ_y (Q(y|x) − e^ε Q(y|x'))₊ ,
//
// attained by the set S = {y : Q(y|x) > e^ε Q(y|x')}. The sum is compensated and
// rounded up by (m+4)·2⁻⁵² relative for m outputs: never below the exact value of the
// float64 entries.
func (q Matrix) Delta(eps float64) (float64, error) {
	if err := dpkit.InPackage("ldp", dpkit.CheckEpsilon("eps", eps)); err != nil {
		return 0, err
	}
	if err := q.Validate(); err != nil {
		return 0, err
	}
	e := math.Exp(eps)
	worst := 0.0
	for x := range q {
		for x2 := range q {
			if x == x2 {
				continue
			}
			var s numeric.Sum
			for y := range q[x] {
				a, b := q[x][y], q[x2][y]
				if b == 0 {
					s.Add(a)
				} else if d := a - e*b; d > 0 {
					s.Add(d)
				}
			}
			worst = max(worst, s.Value())
		}
	}
	if worst == 0 {
		return 0, nil
	}
	return min(1, worst*(1+float64(len(q[0])+4)*0x1p-52)), nil
}

// IsLDP reports whether q is ε-LDP, allowing the ratios of its float64 entries to exceed
// e^ε by 10⁻¹² relative (rounding in matrices computed from ε). It returns false for an
// invalid matrix or ε.
func (q Matrix) IsLDP(eps float64) bool {
	if dpkit.InPackage("ldp", dpkit.CheckEpsilon("eps", eps)) != nil {
		return false
	}
	got, err := q.Epsilon()
	return err == nil && got <= eps+1e-12*max(eps, 1)
}

// Marginal returns the output distribution M(y) = Σ_x P(x) Q(y|x) induced by the input
// distribution p (thesis eq. 3.2).
func (q Matrix) Marginal(p []float64) ([]float64, error) {
	if err := q.Validate(); err != nil {
		return nil, err
	}
	if err := checkDistribution("p", p, len(q), false); err != nil {
		return nil, err
	}
	return marginal(q, p), nil
}

func marginal(q Matrix, p []float64) []float64 {
	m := make([]float64, q.Outputs())
	for y := range m {
		var s numeric.Sum
		for x := range q {
			s.Add(p[x] * q[x][y])
		}
		m[y] = s.Value()
	}
	return m
}

// column returns column y of q: column(q, y)[x] = Q(y|x).
func column(q Matrix, y int) []float64 {
	c := make([]float64, len(q))
	for x := range q {
		c[x] = q[x][y]
	}
	return c
}

// roundUp returns x increased by 4·10⁻¹⁶ relative and 10⁻³⁰⁰ absolute: an upper bound
// on a quantity computed with a few correctly rounded operations.
func roundUp(x float64) float64 {
	if x == 0 || math.IsInf(x, 0) {
		return x
	}
	return x + math.Abs(x)*4e-16 + 1e-300
}

// distributionTolerance is how far from 1 a user-supplied distribution may sum.
const distributionTolerance = 1e-9

// checkDistribution returns a *dpkit.ParamError unless p has k entries, each finite and
// ≥ 0 (> 0 when positive is set), summing to 1 within 1e-9.
func checkDistribution(name string, p []float64, k int, positive bool) error {
	if len(p) != k {
		return &dpkit.ParamError{Pkg: "ldp", Name: name, Value: fmt.Sprintf("%d entries", len(p)), Want: fmt.Sprintf("%d entries", k)}
	}
	var s numeric.Sum
	for i, v := range p {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || (positive && v == 0) {
			want := "a finite number ≥ 0"
			if positive {
				want = "a finite number > 0"
			}
			return &dpkit.ParamError{Pkg: "ldp", Name: fmt.Sprintf("%s[%d]", name, i), Value: v, Want: want}
		}
		s.Add(v)
	}
	if math.Abs(s.Value()-1) > distributionTolerance {
		return &dpkit.ParamError{Pkg: "ldp", Name: name, Value: s.Value(), Want: "entries summing to 1 (within 1e-9)"}
	}
	return nil
}

// checkK returns a *dpkit.ParamError unless 2 ≤ k ≤ maxK.
func checkK(k, maxK int) error {
	if k < 2 || k > maxK {
		return &dpkit.ParamError{Pkg: "ldp", Name: "k", Value: k, Want: fmt.Sprintf("an integer in [2, %d]", maxK)}
	}
	return nil
}
