package gce

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/dpkit/dpkit"
)

// MaxSteps is the largest number of steps k for which membership vectors are given
// explicitly (hypotheses and allowed sets); "at most m of k" (AtMost) and the uniform
// prior (UniformPrior) take any k up to compose.MaxCount.
const MaxSteps = 1 << 16

// Vector is a membership vector b ∈ {0,1}^k of the generalized composition experiment
// (HBW, Alg. 2): b[i] reports whether step i runs on the database x_i¹ that holds
// the target's record (true) or on its neighbour x_i⁰ without it (false).
type Vector []bool

// ParseVector reads a membership vector written as a string of '0' and '1', step 1
// first ("0101"). Any other character, or an empty string, is a *dpkit.ParamError.
func ParseVector(s string) (Vector, error) {
	if s == "" || len(s) > MaxSteps {
		return nil, &dpkit.ParamError{Pkg: "gce", Name: "membership vector", Value: s, Want: fmt.Sprintf("1 to %d characters 0 or 1", MaxSteps)}
	}
	b := make(Vector, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '0':
		case '1':
			b[i] = true
		default:
			return nil, &dpkit.ParamError{Pkg: "gce", Name: "membership vector", Value: s, Want: "a string of the characters 0 and 1"}
		}
	}
	return b, nil
}

// String writes b as ParseVector reads it.
func (b Vector) String() string {
	var s strings.Builder
	s.Grow(len(b))
	for _, x := range b {
		if x {
			s.WriteByte('1')
		} else {
			s.WriteByte('0')
		}
	}
	return s.String()
}

// Ones returns ‖b‖₁, the number of databases that hold the target's record.
func (b Vector) Ones() int {
	n := 0
	for _, x := range b {
		if x {
			n++
		}
	}
	return n
}

// Differ returns the steps at which b and c differ (b ⊕ c). Only these steps help an
// adversary tell V^b from V^c (HBW §V-B: outputs of the steps where the vectors
// coincide have the same distribution under both).
func Differ(b, c Vector) []int {
	var d []int
	for i := range b {
		if b[i] != c[i] {
			d = append(d, i)
		}
	}
	return d
}

// Tuple is one weighted membership vector (b, w) of RefineTuples (HBW, App. A).
type Tuple struct {
	B Vector
	W *big.Rat
}

// Hypothesis is a distribution over membership vectors, as the set of tuples
// T = {(b, p(b)) : b ∈ supp(p)} of HBW (proof of Thm 1).
type Hypothesis []Tuple

// Point returns the hypothesis that puts all its mass on b.
func Point(b Vector) Hypothesis { return Hypothesis{{B: b, W: big.NewRat(1, 1)}} }

// Validate checks that h is a distribution over {0,1}^k: every vector of length k, no
// vector twice, every weight > 0, and the weights summing to exactly 1. name prefixes
// the parameter names in the error (e.g. "p0").
func (h Hypothesis) Validate(name string, k int) error {
	if len(h) == 0 {
		return &dpkit.ParamError{Pkg: "gce", Name: name, Value: 0, Want: "at least one membership vector"}
	}
	seen := make(map[string]int, len(h))
	sum := new(big.Rat)
	for i, t := range h {
		entry := fmt.Sprintf("%s[%d]", name, i)
		if len(t.B) != k {
			return &dpkit.ParamError{Pkg: "gce", Name: entry + ".b", Value: t.B.String(), Want: fmt.Sprintf("a membership vector of length k = %d (one entry per step)", k)}
		}
		key := t.B.String()
		if j, ok := seen[key]; ok {
			return &dpkit.ParamError{Pkg: "gce", Name: entry + ".b", Value: key, Want: fmt.Sprintf("a vector not already given (as %s[%d])", name, j)}
		}
		seen[key] = i
		if t.W == nil || t.W.Sign() <= 0 {
			var v any = "nil"
			if t.W != nil {
				v = t.W.RatString()
			}
			return &dpkit.ParamError{Pkg: "gce", Name: entry + ".p", Value: v, Want: "a probability > 0"}
		}
		sum.Add(sum, t.W)
	}
	if sum.Cmp(big.NewRat(1, 1)) != 0 {
		return &dpkit.ParamError{Pkg: "gce", Name: name, Value: "probabilities summing to " + sum.RatString(), Want: "probabilities summing to exactly 1"}
	}
	return nil
}

// RefineTuples is Algorithm 3 of HBW (App. A) in exact rational arithmetic. Given
// the tuple sets T0 and T1 of two distributions, it splits tuples until they can be
// matched one to one with equal weights: it returns U0 and U1 of the same length with
// U0[i].W = U1[i].W, such that the U0 weights of each vector add up to its weight in
// T0, and likewise for U1 and T1. In other words the pairs (U0[i].B, U1[i].B) with
// weights U0[i].W are a coupling of the two distributions.
//
// Both sets are queues (first in, first out; docs/errata.md, HBW item 5): each
// step takes the first tuple of each, matches the smaller weight w, and appends the
// remainder of the larger one, if it is not zero, to the back of its queue. The inputs
// are not modified. T0 and T1 must have equal total weight (a *dpkit.ParamError
// otherwise); weights must be > 0. The output has at most len(T0)+len(T1)−1 pairs.
func RefineTuples(t0, t1 []Tuple) (u0, u1 []Tuple, err error) {
	s0, s1 := new(big.Rat), new(big.Rat)
	for i, t := range t0 {
		if t.W == nil || t.W.Sign() <= 0 {
			return nil, nil, &dpkit.ParamError{Pkg: "gce", Name: fmt.Sprintf("T0[%d].w", i), Value: ratText(t.W), Want: "a weight > 0"}
		}
		s0.Add(s0, t.W)
	}
	for i, t := range t1 {
		if t.W == nil || t.W.Sign() <= 0 {
			return nil, nil, &dpkit.ParamError{Pkg: "gce", Name: fmt.Sprintf("T1[%d].w", i), Value: ratText(t.W), Want: "a weight > 0"}
		}
		s1.Add(s1, t.W)
	}
	if s0.Cmp(s1) != 0 {
		return nil, nil, &dpkit.ParamError{Pkg: "gce", Name: "T1 total weight", Value: s1.RatString(), Want: "equal to the T0 total weight " + s0.RatString()}
	}
	q0, q1 := copyTuples(t0), copyTuples(t1)
	for len(q0) > 0 {
		a, b := q0[0], q1[0]
		q0, q1 = q0[1:], q1[1:]
		switch a.W.Cmp(b.W) {
		case 0:
			u0 = append(u0, a)
			u1 = append(u1, b)
		case -1: // w0 < w1: match w0, keep (b1, w1 − w0)
			u0 = append(u0, a)
			u1 = append(u1, Tuple{B: b.B, W: new(big.Rat).Set(a.W)})
			q1 = append(q1, Tuple{B: b.B, W: new(big.Rat).Sub(b.W, a.W)})
		default: // w0 > w1: match w1, keep (b0, w0 − w1)
			u0 = append(u0, Tuple{B: a.B, W: new(big.Rat).Set(b.W)})
			u1 = append(u1, b)
			q0 = append(q0, Tuple{B: a.B, W: new(big.Rat).Sub(a.W, b.W)})
		}
	}
	return u0, u1, nil
}

func copyTuples(ts []Tuple) []Tuple {
	out := make([]Tuple, len(ts))
	for i, t := range ts {
		out[i] = Tuple{B: t.B, W: new(big.Rat).Set(t.W)}
	}
	return out
}

func ratText(r *big.Rat) any {
	if r == nil {
		return "nil"
	}
	return r.RatString()
}
