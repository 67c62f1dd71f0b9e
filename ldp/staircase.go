package ldp

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"

	"github.com/dpkit/dpkit"
)

// MaxOptimalInputs is the largest input alphabet for [Optimal]. Its linear program has
// 2^k − 1 variables and k constraints (16383 × 14 at the limit); see docs/local-dp.md
// for timings.
const MaxOptimalInputs = 14

// simplexTolerance is the reduced-cost tolerance passed to gonum's simplex method.
const simplexTolerance = 1e-10

// StaircasePattern returns column j of the staircase pattern matrix S^(k) for
// j ∈ [0, 2^k) (thesis Def. 3.3.3): S_j[x] = e^ε if bit x of the k-bit binary
// representation of j is set, counting the first input as the most significant bit
// (so that the columns of S^(3) are in the order printed in the thesis), and 1
// otherwise.
func StaircasePattern(k int, eps float64, j int) ([]float64, error) {
	if err := checkK(k, MaxOptimalInputs); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("ldp", dpkit.CheckEpsilon("eps", eps)); err != nil {
		return nil, err
	}
	if j < 0 || j >= 1<<k {
		return nil, &dpkit.ParamError{Pkg: "ldp", Name: "j", Value: j, Want: fmt.Sprintf("an integer in [0, %d]", 1<<k-1)}
	}
	s := make([]float64, k)
	e := math.Exp(eps)
	for x := range s {
		s[x] = 1
		if patternBit(k, j, x) {
			s[x] = e
		}
	}
	return s, nil
}

// patternBit reports whether input x is raised to e^ε in pattern j.
func patternBit(k, j, x int) bool { return j>>(k-1-x)&1 == 1 }

// scaledPattern returns pattern j divided by its largest entry: entries 1 where the
// pattern has e^ε and e^(−ε) elsewhere (all ones for j = 0). μ is homogeneous, so
// μ(scaledPattern) = μ(S_j)/max S_j, and the LP on scaled columns has the same optimum
// without entries of size e^ε.
func scaledPattern(k int, eps float64, j int) []float64 {
	s := make([]float64, k)
	low := math.Exp(-eps)
	if j == 0 {
		low = 1
	}
	for x := range s {
		s[x] = low
		if patternBit(k, j, x) {
			s[x] = 1
		}
	}
	return s
}

// Optimal returns an ε-LDP mechanism maximizing the sublinear utility u (thesis problem
// 3.9), by the staircase-pattern linear program of Thm 3.3.4 (eq. 3.12):
//
//	maximize  Σ_j μ(S_j) θ_j   subject to  S^(k) θ = 1,  θ ≥ 0,
//
// and Q = S^(k) diag(θ) restricted to the columns with θ_j > 0 (at most k, Thm 3.3.2).
// The all-e^ε pattern repeats the all-ones pattern and is left out; columns are scaled to
// a largest entry of 1. The LP is solved by gonum's simplex method, started from the
// basis of randomized response.
//
// When the binary mechanism (for *KL, *TV, *MI) or randomized response attains the
// optimum within 10⁻⁹ relative, that mechanism is returned under its name, in that
// order of preference; otherwise the LP's staircase mechanism. At ε = 0 (or ε so small
// that e^(−ε) rounds to 1) every LDP mechanism has a constant output distribution and
// randomized response is returned.
//
// k = u.Inputs() must be at most MaxOptimalInputs.
func Optimal(u Utility, eps float64) (*Result, error) {
	if err := dpkit.InPackage("ldp", dpkit.CheckEpsilon("eps", eps)); err != nil {
		return nil, err
	}
	k := u.Inputs()
	if err := checkK(k, MaxOptimalInputs); err != nil {
		return nil, err
	}
	rr, err := RandomizedResponse(k, eps)
	if err != nil {
		return nil, err
	}
	if math.Exp(-eps) == 1 {
		return newResult(MechanismRR, u, rr)
	}
	q, opt, err := solveStaircaseLP(u, eps)
	if err != nil {
		return nil, err
	}
	near := func(v float64) bool { return v >= opt-1e-9*math.Abs(opt)-1e-15 }
	if bin, err := Binary(u, eps); err == nil && near(bin.Utility) {
		return bin, nil
	}
	if near(value(u, rr)) {
		return newResult(MechanismRR, u, rr)
	}
	return newResult(MechanismStaircase, u, q)
}

// solveStaircaseLP solves LP (3.12) and returns the staircase matrix and its utility.
func solveStaircaseLP(u Utility, eps float64) (Matrix, float64, error) {
	k := u.Inputs()
	n := 1<<k - 1 // pattern 2^k − 1 (all e^ε) duplicates pattern 0
	a := mat.NewDense(k, n, nil)
	c := make([]float64, n)
	cols := make([][]float64, n)
	for j := range n {
		s := scaledPattern(k, eps, j)
		cols[j] = s
		for x := range k {
			a.Set(x, j, s[x])
		}
		c[j] = -u.Column(s) // gonum minimizes
	}
	b := make([]float64, k)
	basis := make([]int, k)
	for x := range k {
		b[x] = 1
		basis[x] = 1 << (k - 1 - x) // randomized response: one e^ε per column
	}
	_, theta, err := lp.Simplex(c, a, b, simplexTolerance, basis)
	if err != nil {
		return nil, 0, fmt.Errorf("ldp: staircase linear program (k = %d, ε = %g): %w", k, eps, err)
	}
	q := make(Matrix, k)
	for j, t := range theta {
		if t <= 0 {
			continue
		}
		for x := range k {
			q[x] = append(q[x], t*cols[j][x])
		}
	}
	if err := q.Validate(); err != nil {
		return nil, 0, fmt.Errorf("ldp: staircase linear program (k = %d, ε = %g) returned an invalid matrix: %w", k, eps, err)
	}
	return q, value(u, q), nil
}
