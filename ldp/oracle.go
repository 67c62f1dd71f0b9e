package ldp

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
)

// MaxOracleInputs is the largest alphabet of a frequency oracle.
const MaxOracleInputs = 1 << 16

// defaultSource is the secure source used when a Randomize call is given nil.
var defaultSource = noise.Secure()

// Estimate is a server-side frequency estimate from n privatized reports.
type Estimate struct {
	N           int64     // number of reports
	Frequencies []float64 // unbiased estimates of the k frequencies; may lie outside [0, 1]
	StdErrors   []float64 // estimated standard errors (from the reports, n−1 in the denominator); +Inf when n = 1
}

// RROracle is a frequency oracle built on k-ary randomized response (thesis eq. 3.16).
// Each client answers uniformly at random over the k values with probability γ, and
// truthfully otherwise; with γ = k/(k − 1 + e^ε) this is exactly the matrix of eq. 3.16.
// The sampler uses γ' = ⌈γ·2^53⌉/2^53 ≥ γ, realized exactly from 53 uniform bits, so the
// realized mechanism is randomized response at ε' = ln(1 + k(1−γ')/γ') ≤ ε
// ([RROracle.Epsilon]); the estimators use γ' and are exactly unbiased for it.
type RROracle struct {
	k     int
	eps   float64
	g     uint64  // answer at random when draw53 < g
	gamma float64 // g/2^53
}

// NewRROracle returns the randomized-response oracle for k ∈ [2, MaxOracleInputs]
// values at ε finite ≥ 0.
func NewRROracle(k int, eps float64) (*RROracle, error) {
	if err := checkK(k, MaxOracleInputs); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("ldp", dpkit.CheckEpsilon("eps", eps)); err != nil {
		return nil, err
	}
	e := math.Exp(-eps)
	g := max(bernoulliThreshold(float64(k)*e/(1+float64(k-1)*e)), 1)
	return &RROracle{k: k, eps: eps, g: g, gamma: float64(g) / one53}, nil
}

// K returns the number of values.
func (o *RROracle) K() int { return o.k }

// Epsilon returns the realized ε' ≤ ε of the sampler (rounded up by 4·10⁻¹⁶ relative).
func (o *RROracle) Epsilon() float64 {
	return roundUp(math.Log1p(float64(o.k) * (1 - o.gamma) / o.gamma))
}

// Matrix returns the realized privatization matrix: Q(y|x) = 1 − γ' + γ'/k if y = x,
// γ'/k otherwise.
func (o *RROracle) Matrix() Matrix {
	off := o.gamma / float64(o.k)
	q := make(Matrix, o.k)
	for x := range q {
		q[x] = make([]float64, o.k)
		for y := range q[x] {
			q[x][y] = off
		}
		q[x][x] = 1 - o.gamma + off
	}
	return q
}

// Randomize returns the privatized report of the value x ∈ [0, k), drawing from src
// (noise.Secure() when src is nil).
func (o *RROracle) Randomize(x int, src noise.Source) (int, error) {
	if x < 0 || x >= o.k {
		return 0, &dpkit.ParamError{Pkg: "ldp", Name: "value", Value: x, Want: fmt.Sprintf("an integer in [0, %d]", o.k-1)}
	}
	if src == nil {
		src = defaultSource
	}
	if draw53(src) < o.g {
		return int(intn(src, uint64(o.k))), nil
	}
	return x, nil
}

// Estimate returns unbiased frequency estimates from counts[v], the number of reports
// equal to v. With λ̂_v = counts[v]/n, the estimator and its standard error are
//
//	π̂_v = (λ̂_v − γ'/k) / (1 − γ'),   se_v = √(λ̂_v(1 − λ̂_v)/(n − 1)) / (1 − γ').
//
// At ε = 0 the reports carry no information: *dpkit.InfeasibleError.
func (o *RROracle) Estimate(counts []int64) (*Estimate, error) {
	if len(counts) != o.k {
		return nil, &dpkit.ParamError{Pkg: "ldp", Name: "counts", Value: fmt.Sprintf("%d entries", len(counts)), Want: fmt.Sprintf("%d entries", o.k)}
	}
	n, err := total(counts)
	if err != nil {
		return nil, err
	}
	if o.gamma >= 1 {
		return nil, &dpkit.InfeasibleError{Msg: "at eps = 0 randomized response reports are independent of the values: no estimate"}
	}
	keep := 1 - o.gamma
	est := &Estimate{N: n, Frequencies: make([]float64, o.k), StdErrors: make([]float64, o.k)}
	for v, c := range counts {
		l := float64(c) / float64(n)
		est.Frequencies[v] = (l - o.gamma/float64(o.k)) / keep
		est.StdErrors[v] = stdErr(l*(1-l), n) / keep
	}
	return est, nil
}

// Variance returns the exact variance of each estimate π̂_v from n reports when the true
// frequencies are pi: λ_v(1 − λ_v) / (n (1 − γ')²), λ_v = γ'/k + (1 − γ')π_v.
func (o *RROracle) Variance(pi []float64, n int64) ([]float64, error) {
	if err := checkDistribution("pi", pi, o.k, false); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, &dpkit.ParamError{Pkg: "ldp", Name: "n", Value: n, Want: "an integer ≥ 1"}
	}
	keep := 1 - o.gamma
	v := make([]float64, o.k)
	for i, p := range pi {
		l := o.gamma/float64(o.k) + keep*p
		v[i] = l * (1 - l) / (float64(n) * keep * keep)
	}
	return v, nil
}

// BinaryReport is the report of a [BinaryOracle] client: a random subset T of the k
// values and one privatized bit, "my value is in T".
type BinaryReport struct {
	Subset []bool // Subset[v] reports whether v ∈ T
	InT    bool   // the privatized answer to "x ∈ T"
}

// BinaryOracle is a frequency oracle built on the binary mechanism (thesis eq. 3.15)
// with a public random split: each client draws T ⊆ {0, …, k−1} uniformly (each value
// in T independently with probability ½, independent of its data) and releases T with
// the binary mechanism's bit for "x ∈ T": the true answer with probability e^ε/(1+e^ε).
// The bit is realized as a fair coin with probability γ' ≥ γ = 2/(1+e^ε) and the truth
// otherwise (γ' = ⌈γ·2^53⌉/2^53, exact), so the realized ε' = ln((2−γ')/γ') ≤ ε.
//
// With s_v = +1 if v ∈ T and −1 otherwise, E[s_v (2b − 1)] = (1 − γ') π_v, which gives
// an unbiased estimator whose variance, (1/(1−γ')² − π_v²)/n, does not grow with k
// (randomized response's grows like k/(e^ε−1)² for large k).
type BinaryOracle struct {
	k     int
	eps   float64
	g     uint64
	gamma float64
}

// NewBinaryOracle returns the binary-mechanism oracle for k ∈ [2, MaxOracleInputs]
// values at ε finite ≥ 0.
func NewBinaryOracle(k int, eps float64) (*BinaryOracle, error) {
	if err := checkK(k, MaxOracleInputs); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("ldp", dpkit.CheckEpsilon("eps", eps)); err != nil {
		return nil, err
	}
	e := math.Exp(-eps)
	g := max(bernoulliThreshold(2*e/(1+e)), 1)
	return &BinaryOracle{k: k, eps: eps, g: g, gamma: float64(g) / one53}, nil
}

// K returns the number of values.
func (o *BinaryOracle) K() int { return o.k }

// Epsilon returns the realized ε' ≤ ε of the sampler (rounded up by 4·10⁻¹⁶ relative).
func (o *BinaryOracle) Epsilon() float64 {
	return roundUp(math.Log1p(2 * (1 - o.gamma) / o.gamma))
}

// Randomize returns the report of the value x ∈ [0, k), drawing from src
// (noise.Secure() when src is nil).
func (o *BinaryOracle) Randomize(x int, src noise.Source) (BinaryReport, error) {
	if x < 0 || x >= o.k {
		return BinaryReport{}, &dpkit.ParamError{Pkg: "ldp", Name: "value", Value: x, Want: fmt.Sprintf("an integer in [0, %d]", o.k-1)}
	}
	if src == nil {
		src = defaultSource
	}
	r := BinaryReport{Subset: make([]bool, o.k)}
	var word uint64
	for v := range r.Subset {
		if v%64 == 0 {
			word = src.Uint64()
		}
		r.Subset[v] = word>>(v%64)&1 == 1
	}
	r.InT = r.Subset[x]
	if draw53(src) < o.g {
		r.InT = src.Uint64()&1 == 1
	}
	return r, nil
}

// BinaryTally accumulates the sufficient statistics of binary reports: the number of
// reports and, for each value v, Σ s_v (2b − 1) (see [BinaryOracle]).
type BinaryTally struct {
	N    int64
	Sums []int64
}

// NewTally returns an empty tally for the oracle's k values.
func (o *BinaryOracle) NewTally() *BinaryTally { return &BinaryTally{Sums: make([]int64, o.k)} }

// Add adds one report to the tally.
func (t *BinaryTally) Add(r BinaryReport) error {
	if len(r.Subset) != len(t.Sums) {
		return &dpkit.ParamError{Pkg: "ldp", Name: "report subset", Value: fmt.Sprintf("%d entries", len(r.Subset)), Want: fmt.Sprintf("%d entries", len(t.Sums))}
	}
	for v, in := range r.Subset {
		if in == r.InT {
			t.Sums[v]++
		} else {
			t.Sums[v]--
		}
	}
	t.N++
	return nil
}

// Estimate returns unbiased frequency estimates from a tally of n reports:
//
//	π̂_v = Σ s_v(2b − 1) / (n (1 − γ')),   se_v = √((1/(1−γ')² − π̂_v²)/(n − 1)).
//
// At ε = 0 the bits carry no information: *dpkit.InfeasibleError.
func (o *BinaryOracle) Estimate(t *BinaryTally) (*Estimate, error) {
	if t == nil || len(t.Sums) != o.k {
		return nil, &dpkit.ParamError{Pkg: "ldp", Name: "tally", Value: "wrong size", Want: fmt.Sprintf("a tally of %d values", o.k)}
	}
	if t.N < 1 {
		return nil, &dpkit.ParamError{Pkg: "ldp", Name: "reports", Value: t.N, Want: "at least 1 report"}
	}
	if o.gamma >= 1 {
		return nil, &dpkit.InfeasibleError{Msg: "at eps = 0 the binary mechanism's bits are independent of the values: no estimate"}
	}
	c := 1 / (1 - o.gamma)
	est := &Estimate{N: t.N, Frequencies: make([]float64, o.k), StdErrors: make([]float64, o.k)}
	for v, s := range t.Sums {
		if s > t.N || s < -t.N {
			return nil, &dpkit.ParamError{Pkg: "ldp", Name: fmt.Sprintf("tally.Sums[%d]", v), Value: s, Want: fmt.Sprintf("in [−%d, %d]", t.N, t.N)}
		}
		m := float64(s) / float64(t.N) * c
		est.Frequencies[v] = m
		est.StdErrors[v] = stdErr(max(0, c*c-m*m), t.N)
	}
	return est, nil
}

// Variance returns the exact variance of each estimate from n reports when the true
// frequencies are pi: (1/(1−γ')² − π_v²)/n.
func (o *BinaryOracle) Variance(pi []float64, n int64) ([]float64, error) {
	if err := checkDistribution("pi", pi, o.k, false); err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, &dpkit.ParamError{Pkg: "ldp", Name: "n", Value: n, Want: "an integer ≥ 1"}
	}
	c := 1 / (1 - o.gamma)
	v := make([]float64, o.k)
	for i, p := range pi {
		v[i] = (c*c - p*p) / float64(n)
	}
	return v, nil
}

// total returns Σ counts, checking that every count is ≥ 0 and the total ≥ 1.
func total(counts []int64) (int64, error) {
	var n int64
	for v, c := range counts {
		if c < 0 {
			return 0, &dpkit.ParamError{Pkg: "ldp", Name: fmt.Sprintf("counts[%d]", v), Value: c, Want: "an integer ≥ 0"}
		}
		n += c
		if n < 0 {
			return 0, &dpkit.ParamError{Pkg: "ldp", Name: "counts", Value: "overflow", Want: "a total below 2^63"}
		}
	}
	if n < 1 {
		return 0, &dpkit.ParamError{Pkg: "ldp", Name: "counts", Value: n, Want: "at least 1 report"}
	}
	return n, nil
}

// stdErr returns √(v/(n−1)), the standard error of a mean of n reports with plug-in
// per-report variance v·n/(n−1); +Inf when n = 1.
func stdErr(v float64, n int64) float64 {
	if n < 2 {
		return math.Inf(1)
	}
	return math.Sqrt(v / float64(n-1))
}
