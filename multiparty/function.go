package multiparty

import (
	"fmt"
	"math/bits"

	"github.com/dpkit/dpkit"
)

// Function is a function f: {0,1}^k → {0, …, Outputs−1} of the parties' bits. Eval
// receives the bits as a mask: bit i of x is party i's bit.
type Function struct {
	Name    string
	Outputs int
	Eval    func(x uint32) int
}

// XOR is the parity x_1 ⊕ … ⊕ x_k.
func XOR() Function {
	return Function{Name: "xor", Outputs: 2, Eval: func(x uint32) int { return bits.OnesCount32(x) & 1 }}
}

// AND is 1 when every bit is 1.
func AND(k int) Function {
	all := uint32(1)<<k - 1
	return Function{Name: "and", Outputs: 2, Eval: func(x uint32) int {
		if x&all == all {
			return 1
		}
		return 0
	}}
}

// OR is 1 when some bit is 1.
func OR() Function {
	return Function{Name: "or", Outputs: 2, Eval: func(x uint32) int {
		if x != 0 {
			return 1
		}
		return 0
	}}
}

// Majority is 1 when more than half of the k bits are 1 (a tie, for even k, gives 0).
func Majority(k int) Function {
	return Function{Name: "majority", Outputs: 2, Eval: func(x uint32) int {
		if 2*bits.OnesCount32(x) > k {
			return 1
		}
		return 0
	}}
}

// table evaluates f on every input of k bits and checks its outputs.
func (f Function) table(k int) ([]int, error) {
	if f.Eval == nil || f.Outputs < 1 {
		return nil, &dpkit.ParamError{Pkg: "multiparty", Name: "function", Value: f.Name, Want: "an Eval function and Outputs ≥ 1"}
	}
	t := make([]int, 1<<k)
	for x := range t {
		y := f.Eval(uint32(x))
		if y < 0 || y >= f.Outputs {
			return nil, &dpkit.ParamError{Pkg: "multiparty", Name: fmt.Sprintf("function(%0*b)", k, x), Value: y, Want: fmt.Sprintf("an output in [0, %d]", f.Outputs-1)}
		}
		t[x] = y
	}
	return t, nil
}
