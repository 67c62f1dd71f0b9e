package ldp

import (
	"math"

	"github.com/dpkit/dpkit"
)

// MaxInputs is the largest input alphabet accepted by the utilities and by
// [RandomizedResponse].
const MaxInputs = 1 << 12

// MaxBinaryMIInputs is the largest alphabet for the mutual-information binary mechanism,
// whose split set (thesis eq. 3.21) is found by enumerating the 2^(k−1) splits.
const MaxBinaryMIInputs = 20

// Mechanism names used in a [Result].
const (
	MechanismRR        = "rr"
	MechanismBinary    = "binary"
	MechanismStaircase = "staircase"
)

// Result is a mechanism chosen for a utility: its name, its matrix, the utility it
// achieves, and its ε as computed from the matrix by [Matrix.Epsilon] (rounded up; it
// may exceed the requested ε by float64 rounding, about 10⁻¹⁵ relative).
type Result struct {
	Mechanism string  // MechanismBinary, MechanismRR or MechanismStaircase
	Matrix    Matrix  // Matrix[x][y] = Q(y|x)
	Utility   float64 // U(Q)
	Epsilon   float64 // ε of Matrix
}

func newResult(name string, u Utility, q Matrix) (*Result, error) {
	eps, err := q.Epsilon()
	if err != nil {
		return nil, err
	}
	return &Result{Mechanism: name, Matrix: q, Utility: value(u, q), Epsilon: eps}, nil
}

// RandomizedResponse returns the k-ary randomized response matrix (thesis eq. 3.16):
//
//	Q(y|x) = e^ε / (k − 1 + e^ε)  if y = x,     1 / (k − 1 + e^ε)  otherwise,
//
// computed as 1/(1 + (k−1)e^(−ε)) and e^(−ε)/(1 + (k−1)e^(−ε)) so that large ε does not
// overflow. It is ε-LDP, and optimal for KL divergence and mutual information when ε is
// large (Thm 3.4.4, 3.5.3). k must be in [2, MaxInputs] and ε finite ≥ 0.
func RandomizedResponse(k int, eps float64) (Matrix, error) {
	if err := checkK(k, MaxInputs); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("ldp", dpkit.CheckEpsilon("eps", eps)); err != nil {
		return nil, err
	}
	e := math.Exp(-eps)
	den := 1 + float64(k-1)*e
	on, off := 1/den, e/den
	q := make(Matrix, k)
	for x := range q {
		q[x] = make([]float64, k)
		for y := range q[x] {
			q[x][y] = off
		}
		q[x][x] = on
	}
	return q, nil
}

// BinarySplit returns the binary staircase mechanism with split set T = {x : inT[x]}
// (thesis eq. 3.15 and 3.22): output 0 has probability e^ε/(1+e^ε) for x ∈ T and
// 1/(1+e^ε) for x ∉ T; output 1 the complement.
func BinarySplit(inT []bool, eps float64) (Matrix, error) {
	if err := checkK(len(inT), MaxInputs); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("ldp", dpkit.CheckEpsilon("eps", eps)); err != nil {
		return nil, err
	}
	hi := 1 / (1 + math.Exp(-eps)) // e^ε/(1+e^ε)
	lo := 1 / (1 + math.Exp(eps))  // 1/(1+e^ε)
	q := make(Matrix, len(inT))
	for x, in := range inT {
		if in {
			q[x] = []float64{hi, lo}
		} else {
			q[x] = []float64{lo, hi}
		}
	}
	return q, nil
}

// Binary returns the binary mechanism of thesis §3.4.1 (eq. 3.15) for the divergence
// utilities *KL and *TV, and of §3.5.1 (eq. 3.22) for *MI, with its utility:
//
//   - KL, TV and the other f-divergences (FDivergence): T = {x : P0(x) > P1(x)}, plus the
//     inputs with P0(x) = P1(x) if that gives a larger utility. The printed rule "P0(x) ≥ P1(x)" can be strictly suboptimal when
//     there are ties (docs/errata.md, thesis item 3); the divergence of the binary
//     marginals is convex in the tied mass moved into T, so one of the two sides is best.
//   - MI: T minimizes |P(T) − ½| (eq. 3.21), by enumerating the splits; k must be at most
//     MaxBinaryMIInputs.
//
// The binary mechanism is optimal in the high-privacy regime (Thm 3.4.1, 3.5.1), for
// total variation at every ε (Thm 3.4.2), and within a factor 2(e^ε+1)² of the optimal
// KL divergence at every ε (Thm 3.4.3).
func Binary(u Utility, eps float64) (*Result, error) {
	if err := dpkit.InPackage("ldp", dpkit.CheckEpsilon("eps", eps)); err != nil {
		return nil, err
	}
	var p0, p1 []float64
	switch u := u.(type) {
	case *KL:
		p0, p1 = u.p0, u.p1
	case *TV:
		p0, p1 = u.p0, u.p1
	case *FDivergence:
		p0, p1 = u.p0, u.p1
	case *MI:
		return binaryMI(u, eps)
	default:
		return nil, &dpkit.ParamError{Pkg: "ldp", Name: "utility", Value: u.Name(), Want: "kl, tv, mi, hellinger or chi2"}
	}
	strict := make([]bool, len(p0))
	withTies := make([]bool, len(p0))
	for x := range p0 {
		strict[x] = p0[x] > p1[x]
		withTies[x] = p0[x] >= p1[x]
	}
	best, err := BinarySplit(withTies, eps)
	if err != nil {
		return nil, err
	}
	if alt, _ := BinarySplit(strict, eps); value(u, alt) > value(u, best) {
		best = alt
	}
	return newResult(MechanismBinary, u, best)
}

// binaryMI is the binary mechanism for mutual information (thesis eq. 3.21–3.22).
func binaryMI(u *MI, eps float64) (*Result, error) {
	k := len(u.p)
	if k > MaxBinaryMIInputs {
		return nil, &dpkit.ParamError{Pkg: "ldp", Name: "k", Value: k, Want: "at most 20 for the mutual-information binary mechanism"}
	}
	// Subsets containing input 0 suffice: |P(A) − ½| = |P(Aᶜ) − ½|.
	bestMask, bestGap := uint32(1), math.Inf(1)
	for mask := uint32(1); mask < 1<<k; mask += 2 {
		s := 0.0
		for x := range k {
			if mask>>x&1 == 1 {
				s += u.p[x]
			}
		}
		if gap := math.Abs(s - 0.5); gap < bestGap {
			bestMask, bestGap = mask, gap
		}
	}
	inT := make([]bool, k)
	for x := range inT {
		inT[x] = bestMask>>x&1 == 1
	}
	q, err := BinarySplit(inT, eps)
	if err != nil {
		return nil, err
	}
	return newResult(MechanismBinary, u, q)
}

// BestOfBinaryRR returns the better of the binary mechanism and randomized response for
// u at ε: the mixed strategy of thesis §3.4.2 and §3.5.2, which the thesis finds within
// 60% (KL) and 75% (MI) of the optimum in its experiments. On a tie the binary
// mechanism is returned.
func BestOfBinaryRR(u Utility, eps float64) (*Result, error) {
	bin, err := Binary(u, eps)
	if err != nil {
		return nil, err
	}
	rr, err := RandomizedResponse(u.Inputs(), eps)
	if err != nil {
		return nil, err
	}
	if v := value(u, rr); v > bin.Utility {
		return newResult(MechanismRR, u, rr)
	}
	return bin, nil
}

// Quaternary returns the (ε, δ) quaternary mechanism for binary data (thesis eq. 3.26),
// rows x ∈ {0, 1}, outputs y ∈ {0, 1, 2, 3}:
//
//	Q(0|0) = δ,                 Q(0|1) = 0,
//	Q(1|0) = 0,                 Q(1|1) = δ,
//	Q(2|0) = (1−δ)/(1+e^ε),     Q(2|1) = (1−δ)e^ε/(1+e^ε),
//	Q(3|0) = (1−δ)e^ε/(1+e^ε),  Q(3|1) = (1−δ)/(1+e^ε).
//
// It reveals x with probability δ and otherwise applies the binary mechanism; its
// privacy region equals R(ε, δ), so it dominates every (ε, δ)-LDP mechanism on binary
// data and maximizes every utility that obeys the data-processing inequality (Thm
// 3.6.1).
func Quaternary(eps, delta float64) (Matrix, error) {
	if err := dpkit.InPackage("ldp", dpkit.CheckEpsilon("eps", eps)); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("ldp", dpkit.CheckDelta("delta", delta)); err != nil {
		return nil, err
	}
	hi := (1 - delta) / (1 + math.Exp(-eps))
	lo := (1 - delta) / (1 + math.Exp(eps))
	return Matrix{
		{delta, 0, lo, hi},
		{0, delta, hi, lo},
	}, nil
}
