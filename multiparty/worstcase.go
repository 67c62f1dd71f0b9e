package multiparty

import (
	"fmt"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
)

// MaxLPCells bounds the dense constraint matrix of the worst-case linear program
// (rows × columns): (2^k + T) × (T·|Y| + 1 + 2^k) for T transcripts. With δ = 0 and a
// binary f this admits k ≤ 6; with every 0 < δ_i < 1, k ≤ 3 (T = 4^k). Larger
// problems are slow in gonum's dense simplex method and numerically fragile (it
// reports a near-singular basis for the majority of 7 parties).
const MaxLPCells = 1 << 15

// WorstCase is the answer of the worst-case linear program.
type WorstCase struct {
	// Accuracy is min_x P(correct | x) of Rule, evaluated directly from the rule found
	// (not read off the LP), so it is attained; it is below the LP optimum by at most
	// the simplex tolerance (1e-10).
	Accuracy float64
	// Rule[t][y] is the probability of answering y on the t-th transcript, in the order
	// of [Protocol.Transcripts].
	Rule [][]float64
}

// WorstCaseAccuracy returns the largest worst-case accuracy (seed 000 eq. 11 with the
// 0/1 measure) of the central observer for f, and a randomized rule attaining it, by
// the linear program of seed 000 eq. (14):
//
//	maximize z  subject to  Σ_τ P(τ|x) Q(τ, f(x)) ≥ z for every x,
//	                        Σ_y Q(τ, y) = 1 for every τ,  Q ≥ 0,
//
// solved with gonum's simplex method, started from the rule "always answer 0". The
// problem must fit in MaxLPCells; otherwise a *dpkit.ParamError names the limit.
// For the parity, XORAccuracy gives the same value in closed form for any k.
func WorstCaseAccuracy(pr *Protocol, f Function) (*WorstCase, error) {
	k := pr.Parties()
	tab, err := f.table(k)
	if err != nil {
		return nil, err
	}
	var taus [][]int
	pr.Transcripts(func(tau []int) { taus = append(taus, append([]int(nil), tau...)) })
	nx, nt, ny := 1<<k, len(taus), f.Outputs
	rows, cols := nx+nt, nt*ny+1+nx
	if rows*cols > MaxLPCells {
		return nil, &dpkit.ParamError{Name: "parties", Value: k,
			Want: fmt.Sprintf("a worst-case linear program of at most %d cells (this one has %d × %d)", MaxLPCells, rows, cols)}
	}
	prob := make([][]float64, nx) // prob[x][t] = P(τ_t | x)
	for x := range prob {
		prob[x] = make([]float64, nt)
		for t, tau := range taus {
			prob[x][t] = pr.probTranscript(tau, uint32(x))
		}
	}
	a := mat.NewDense(rows, cols, nil)
	b := make([]float64, rows)
	c := make([]float64, cols)
	zCol := nt * ny
	c[zCol] = -1
	for x := range nx {
		for t := range nt {
			a.Set(x, t*ny+tab[x], prob[x][t])
		}
		a.Set(x, zCol, -1)
		a.Set(x, zCol+1+x, -1)
	}
	basis := make([]int, 0, rows)
	for t := range nt {
		for y := range ny {
			a.Set(nx+t, t*ny+y, 1)
		}
		b[nx+t] = 1
		basis = append(basis, t*ny) // always answer 0
	}
	for x := range nx {
		basis = append(basis, zCol+1+x)
	}
	_, sol, err := lp.Simplex(c, a, b, 1e-10, basis)
	if err != nil {
		return nil, fmt.Errorf("multiparty: worst-case linear program: %w", err)
	}
	rule := make([][]float64, nt)
	for t := range rule {
		rule[t] = make([]float64, ny)
		s := 0.0
		for y := range ny {
			rule[t][y] = max(0, sol[t*ny+y])
			s += rule[t][y]
		}
		for y := range ny {
			rule[t][y] /= s
		}
	}
	acc := 1.0
	for x := range nx {
		var s numeric.Sum
		for t := range nt {
			s.Add(prob[x][t] * rule[t][tab[x]])
		}
		acc = min(acc, s.Value())
	}
	return &WorstCase{Accuracy: acc, Rule: rule}, nil
}
