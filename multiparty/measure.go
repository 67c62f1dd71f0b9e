package multiparty

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/numeric"
)

// Accuracy generalizes the 0/1 accuracy and uniform inputs of AverageAccuracy to the
// thesis's setting (eq. 4.2): a prior on the inputs and an accuracy measure w(y, d), the
// reward of answering d when the function's value is y (Thm 4.4.1 holds for any such
// measure and any prior).
type Accuracy struct {
	// Prior holds P(x) for every input x ∈ [0, 2^k) (bit i of x is party i's bit), ≥ 0
	// and summing to 1 (1e-9); nil means uniform.
	Prior []float64
	// Measure holds w(y, d) = Measure[y][d] for y, d ∈ [0, Outputs), finite; nil means
	// the 0/1 measure (1 when d = y).
	Measure [][]float64
}

// HammingMeasure returns the accuracy measure m − |y − d| on the outputs 0…m of a
// distance-valued function (m = outputs − 1): the measure of the thesis's Hamming-distance
// example (§4.6, "2 − |d_H(x, y) − d̂|" for two parties of two bits). With no information
// the best answer is a median of f's values; for the two-bit Hamming distance under
// uniform inputs that gives 1.5 (docs/errata.md, thesis item 6).
func HammingMeasure(outputs int) [][]float64 {
	w := make([][]float64, outputs)
	for y := range w {
		w[y] = make([]float64, outputs)
		for d := range w[y] {
			w[y][d] = float64(outputs-1) - math.Abs(float64(y-d))
		}
	}
	return w
}

// check validates a for k parties and a function with the given number of outputs and
// fills in the defaults.
func (a Accuracy) check(k, outputs int) (Accuracy, error) {
	n := 1 << k
	if a.Prior == nil {
		a.Prior = make([]float64, n)
		for x := range a.Prior {
			a.Prior[x] = 1 / float64(n)
		}
	} else {
		if len(a.Prior) != n {
			return a, &dpkit.ParamError{Pkg: "multiparty", Name: "prior", Value: len(a.Prior), Want: fmt.Sprintf("%d probabilities, one per input", n)}
		}
		var s numeric.Sum
		for x, p := range a.Prior {
			if math.IsNaN(p) || p < 0 || math.IsInf(p, 0) {
				return a, &dpkit.ParamError{Pkg: "multiparty", Name: fmt.Sprintf("prior[%d]", x), Value: p, Want: "a probability ≥ 0"}
			}
			s.Add(p)
		}
		if math.Abs(s.Value()-1) > 1e-9 {
			return a, &dpkit.ParamError{Pkg: "multiparty", Name: "prior", Value: s.Value(), Want: "probabilities summing to 1"}
		}
	}
	if a.Measure == nil {
		a.Measure = make([][]float64, outputs)
		for y := range a.Measure {
			a.Measure[y] = make([]float64, outputs)
			a.Measure[y][y] = 1
		}
	} else {
		if len(a.Measure) != outputs {
			return a, &dpkit.ParamError{Pkg: "multiparty", Name: "measure", Value: len(a.Measure), Want: fmt.Sprintf("%d rows, one per output", outputs)}
		}
		for y, row := range a.Measure {
			if len(row) != outputs {
				return a, &dpkit.ParamError{Pkg: "multiparty", Name: fmt.Sprintf("measure[%d]", y), Value: len(row), Want: fmt.Sprintf("%d entries", outputs)}
			}
			for _, v := range row {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return a, &dpkit.ParamError{Pkg: "multiparty", Name: fmt.Sprintf("measure[%d]", y), Value: v, Want: "finite numbers"}
				}
			}
		}
	}
	return a, nil
}

// AverageAccuracyWith returns the largest average accuracy of the central observer
// (thesis eq. 4.2) for f under the protocol, the prior and the measure of a, attained by
// the Bayes rule (RuleWith):
//
//	ACC = Σ_τ max_d Σ_x P(x) P(τ | x) w(f(x), d).
//
// The sum is organised as in AverageAccuracy (revealed parties, then a butterfly over
// the others, per output y, with the prior as the starting vector). With a = Accuracy{}
// it equals AverageAccuracy. Accurate to about 1e-15 relative.
func AverageAccuracyWith(pr *Protocol, f Function, a Accuracy) (float64, error) {
	k := pr.Parties()
	tab, err := f.table(k)
	if err != nil {
		return 0, err
	}
	zeroOne := a.Measure == nil
	if a, err = a.check(k, f.Outputs); err != nil {
		return 0, err
	}
	var acc numeric.Sum
	full := uint32(1)<<k - 1
	for revealed := uint32(0); revealed <= full; revealed++ {
		w := 1.0
		var free []int
		for i := range k {
			if revealed>>i&1 == 1 {
				w *= pr.parties[i].Delta
			} else {
				w *= 1 - pr.parties[i].Delta
				free = append(free, i)
			}
		}
		if w == 0 {
			continue
		}
		m := len(free)
		vec := make([][]float64, f.Outputs)
		for y := range vec {
			vec[y] = make([]float64, 1<<m)
		}
		for r := revealed; ; r = (r - 1) & revealed {
			for y := range vec {
				clear(vec[y])
			}
			for z := range 1 << m {
				x := r
				for j, i := range free {
					x |= uint32(z>>j&1) << i
				}
				vec[tab[x]][z] = a.Prior[x]
			}
			for y := range vec {
				pr.butterfly(vec[y], free)
			}
			var part numeric.Sum
			for t := range 1 << m {
				if zeroOne {
					best := 0.0
					for y := range vec {
						best = max(best, vec[y][t])
					}
					part.Add(best)
				} else {
					part.Add(bestScore(vec, t, a.Measure))
				}
			}
			acc.Add(w * part.Value())
			if r == 0 {
				break
			}
		}
	}
	return acc.Value(), nil
}

// bestScore returns max_d Σ_y w(y, d)·vec[y][t].
func bestScore(vec [][]float64, t int, w [][]float64) float64 {
	best := math.Inf(-1)
	for d := range w[0] {
		s := 0.0
		for y := range vec {
			s += w[y][d] * vec[y][t]
		}
		best = max(best, s)
	}
	return best
}

// RuleWith returns the Bayes rule for f under the protocol, the prior and the measure
// of a: Decide(τ) = argmax_d Σ_x P(x) P(τ | x) w(f(x), d).
func RuleWith(pr *Protocol, f Function, a Accuracy) (*Rule, error) {
	tab, err := f.table(pr.Parties())
	if err != nil {
		return nil, err
	}
	if a, err = a.check(pr.Parties(), f.Outputs); err != nil {
		return nil, err
	}
	return &Rule{pr: pr, tab: tab, out: f.Outputs, acc: &a}, nil
}

// TableFunction returns the function given by its truth table: table[x] is f(x) for
// every input x ∈ [0, 2^k) (bit i of x is party i's bit, or bit i of the parties' bits
// in order for NewBitsProtocol), an integer in [0, 255]; Outputs is the largest value
// plus one.
func TableFunction(name string, table []int) (Function, error) {
	n := len(table)
	if n < 2 || n&(n-1) != 0 || n > 1<<MaxParties {
		return Function{}, &dpkit.ParamError{Pkg: "multiparty", Name: "table", Value: n, Want: fmt.Sprintf("2^k entries for 1 ≤ k ≤ %d", MaxParties)}
	}
	out := 0
	for x, y := range table {
		if y < 0 || y > 255 {
			return Function{}, &dpkit.ParamError{Pkg: "multiparty", Name: fmt.Sprintf("table[%d]", x), Value: y, Want: "an integer in [0, 255]"}
		}
		out = max(out, y+1)
	}
	t := append([]int(nil), table...)
	return Function{Name: name, Outputs: out, Eval: func(x uint32) int { return t[x] }}, nil
}

// Hamming is the Hamming distance between two parties' b-bit strings, as a function of
// their 2b bits (NewBitsProtocol with bits b, b: party 1's bits first): Σ_j |x_j − y_j|,
// with outputs 0…b (the thesis's §4.6 example for b = 2).
func Hamming(b int) Function {
	mask := uint32(1)<<b - 1
	return Function{Name: "hamming", Outputs: b + 1, Eval: func(x uint32) int {
		d := (x & mask) ^ (x >> b & mask)
		n := 0
		for ; d != 0; d &= d - 1 {
			n++
		}
		return n
	}}
}

// NewBitsProtocol returns the protocol in which party i holds bits[i] bits and releases
// each of them by its own randomized response at (ε_i, δ_i) (KOV eq. 16): the baseline
// of the thesis's §4.6, where each bit is protected as if it were a party. Thm 4.4.1
// (randomized response optimal for every function and measure) is proved for one bit per
// party; with several bits an interactive protocol can do better (thesis Fig. 4.2), so
// the accuracies of this protocol are what randomized response achieves, not an optimum.
// The protocol's parties are the bits, party 0's first; at most MaxParties in all.
func NewBitsProtocol(parties []dpkit.Budget, bits []int) (*Protocol, error) {
	if len(bits) != len(parties) {
		return nil, &dpkit.ParamError{Pkg: "multiparty", Name: "bits", Value: len(bits), Want: fmt.Sprintf("%d counts, one per party", len(parties))}
	}
	var each []dpkit.Budget
	for i, b := range bits {
		if b < 1 || len(each)+b > MaxParties {
			return nil, &dpkit.ParamError{Pkg: "multiparty", Name: fmt.Sprintf("bits[%d]", i), Value: b, Want: fmt.Sprintf("≥ 1, and at most %d bits in all", MaxParties)}
		}
		for range b {
			each = append(each, parties[i])
		}
	}
	return NewProtocol(each)
}
