package mechanism

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"slices"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
)

// QuantileOptions configures the quantile mechanism.
type QuantileOptions struct {
	Epsilon float64 `json:"epsilon"` // required, finite, ≥ MinExponentialEpsilon
	// Sensitivity is Δu of the rank utility −|#{x_i < y} − p·n|: m for add/remove of a
	// unit with at most m values, 2m for replace-one. Required, ≥ 2^−1000.
	Sensitivity float64 `json:"sensitivity"`
	P           float64 `json:"p"` // the quantile, in [0, 1] (0.5: the median)
	// The candidates are the multiples of Step in [Lower, Upper]; Step is a power of two
	// (1 for integers). Values are clamped to [Lower, Upper] and snapped to the grid.
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
	Step  float64 `json:"step"`
}

func (QuantileOptions) kind() string                { return "quantile" }
func (o QuantileOptions) build() (Mechanism, error) { return NewQuantile(o) }

func init() {
	register[QuantileOptions]("quantile", "epsilon", "sensitivity", "p", "lower", "upper", "step")
}

// maxQuantileGrid bounds the grid indices of a Quantile: |index| < 2^62.
const maxQuantileGrid = 1 << 62

// Quantile is the exponential mechanism for the p-quantile (McSherry and Talwar 2007)
// over the grid points y_j = j·Step in [Lower, Upper], in Smith's form ("Privacy-preserving
// statistical estimation with optimal convergence rates", 2011): with the n values at
// grid indices J_1 ≤ … ≤ J_n, J_0 = ⌈Lower/Step⌉ − 1 and J_(n+1) = ⌊Upper/Step⌋, the
// c_k = J_(k+1) − J_k points of run k = (J_k, J_(k+1)] have exactly k values below them
// and utility u_k = −|k − p·n|. Run k is chosen with probability ∝ c_k·exp(ε u_k/(2Δu))
// and a point uniformly inside it, so every grid point y has probability ∝
// exp(ε u(y)/(2Δu)): the exponential mechanism over the grid, ε-DP, whose set of
// outputs is the grid whatever the data.
//
// # Exactly what is sampled
//
// Utilities are quantized and exponentiated exactly as in Exponential (whose proof of
// ε-DP, rounding included, applies unchanged; ExactEpsilon ≤ ε): q_k = ⌊u_k/h + ½⌋ is
// computed in exact rationals (p·n included), γ̃_k = ⌊2^63·λ(q_max − q_k)⌋/2^63 exactly,
// and run k has weight w_k = c_k·e^(−γ̃_k). A run is drawn from w exactly by rejection:
//
//   - bands: with ℓ_k = ⌈log2 c_k⌉, a certified lower bound γ_k ≤ γ̃_k from float64
//     arithmetic (its error bounded in the code) and θ = ln 2 rounded up, an integer R
//     and band numbers b_k ∈ [0, 40] are chosen so that (ℓ_k + b_k)·θ ≤ γ̃_k + R·θ;
//     runs whose b_k would be 40 or more share band 40;
//   - proposal: band b with probability ∝ n_b·2^(−b) (n_b runs in it; exact integer
//     weights), then a run of the band uniformly;
//   - acceptance: (c_k/2^ℓ_k)·2^(ℓ_k + b_k)·e^(−(γ̃_k + Rθ)), a valid probability by the
//     band inequality, as an exact Bernoulli(c_k/2^ℓ_k) (a uniform integer) and an exact
//     Bernoulli(2^m·e^(−Y)) (bernoulliPow2Exp: lazy comparison with bounds on ln 2).
//
// The proposal has probability ∝ 2^(−b_k) and the acceptance ∝ w_k·2^(b_k), so the run
// drawn has probability exactly w_k/Σw; the point inside it is uniform (exact). No
// probability is computed in floating point; floats only choose the bands, which
// affect the speed, not the distribution (an acceptance probability above 1 would be
// detected exactly and reported as an internal error rather than sampled). A round is
// accepted with probability about ¼ or more outside band 40, which the proposal
// reaches with probability at most n·2^(−40): O(1) rounds per release, after an O(n)
// pass over the runs.
type Quantile struct {
	o      QuantileOptions
	ex     *Exponential
	jl, jh int64 // grid index range
}

// NewQuantile validates o.
func NewQuantile(o QuantileOptions) (*Quantile, error) {
	ex, err := NewExponential(ExponentialOptions{Epsilon: o.Epsilon, Sensitivity: o.Sensitivity})
	if err != nil {
		return nil, err
	}
	if math.IsNaN(o.P) || o.P < 0 || o.P > 1 {
		return nil, perr("p", o.P, "in [0, 1]")
	}
	if err := positive("step", o.Step); err != nil {
		return nil, err
	}
	if frac, _ := math.Frexp(o.Step); frac != 0.5 {
		return nil, perr("step", o.Step, "a power of two (1 for integers)")
	}
	if err := checkValue("lower", o.Lower); err != nil {
		return nil, err
	}
	if err := checkValue("upper", o.Upper); err != nil {
		return nil, err
	}
	lo, hi := math.Ceil(o.Lower/o.Step), math.Floor(o.Upper/o.Step) // exact: Step is a power of two
	if !(math.Abs(lo) < maxQuantileGrid && math.Abs(hi) < maxQuantileGrid) {
		return nil, perr("step", o.Step, "a grid with |lower/step|, |upper/step| < 2^62")
	}
	if lo > hi {
		return nil, perr("upper", o.Upper, fmt.Sprintf("≥ lower with a multiple of step = %g in between", o.Step))
	}
	return &Quantile{o: o, ex: ex, jl: int64(lo), jh: int64(hi)}, nil
}

// Guarantee returns (ε, 0); the exact loss of the released distribution is at most
// ExactEpsilon() ≤ ε (see Exponential).
func (m *Quantile) Guarantee() dpkit.Budget { return dpkit.Budget{Epsilon: m.o.Epsilon} }

// ExactEpsilon returns the proven privacy loss of the sampled distribution (≤ ε).
func (m *Quantile) ExactEpsilon() float64 { return m.ex.ExactEpsilon() }

// PLD returns the canonical (ε, 0) pair, as for Exponential.
func (m *Quantile) PLD() (pld.Mechanism, error) { return pld.Exponential{Epsilon: m.o.Epsilon}, nil }

// Descriptor returns {"kind":"quantile","version":1,"epsilon":…,"sensitivity":…,"p":…,
// "lower":…,"upper":…,"step":…}.
func (m *Quantile) Descriptor() Descriptor { return Describe(m.o) }

// Scale returns 2Δu/ε, the scale of the exponential mechanism in ranks.
func (m *Quantile) Scale() float64 { return 2 * m.o.Sensitivity / m.o.Epsilon }

// Points returns the number of grid points (candidates).
func (m *Quantile) Points() int64 { return m.jh - m.jl + 1 }

// Release returns the noisy p-quantile of values (finite; clamped to [Lower, Upper]
// and snapped to the nearest grid point; values is not modified): a grid point.
func (m *Quantile) Release(values []float64, src noise.Source) (float64, error) {
	idx := make([]int64, len(values))
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, checkValue(indexName("values", i), v)
		}
		idx[i] = min(max(snap(math.Max(-0x1p62, math.Min(0x1p62, v/m.o.Step))), m.jl), m.jh)
	}
	slices.Sort(idx)
	return m.sample(len(idx), func(i int) int64 { return idx[i] }, src)
}

// ReleaseSorted is Release for values already on the grid, inside [Lower, Upper] and
// sorted in increasing order (checked in O(n); no copy is made).
func (m *Quantile) ReleaseSorted(values []float64, src noise.Source) (float64, error) {
	prev := math.Inf(-1)
	for i, v := range values {
		j := v / m.o.Step
		if !(v >= prev) || j != math.Trunc(j) || j < float64(m.jl) || j > float64(m.jh) {
			return 0, perr(indexName("values", i), v, "sorted multiples of step in [lower, upper]")
		}
		prev = v
	}
	return m.sample(len(values), func(i int) int64 { return int64(values[i] / m.o.Step) }, src)
}

// quantileRuns are the runs of one release and what the rejection sampler needs.
type quantileRuns struct {
	m     *Quantile
	n     int
	at    func(int) int64 // J_1 … J_n (0-based)
	pn    *big.Rat        // p·n exactly
	qmax  *big.Int
	rInt  int64  // R, the reference exponent in units of θ
	band  []int8 // b_k per run (−1: empty run)
	lists [quantileBands + 1][]int32
	w     [quantileBands + 1]*big.Int // proposal weights n_b·2^(40−b)
	mn    *big.Int                    // M·n, p = M·2^pexp (see q)
	pexp  int
	total *big.Int
}

const quantileBands = 40

// theta is ln 2 rounded up (a float64, so an exact dyadic rational).
var theta = new(big.Rat).SetFloat64(ln2Up)

// edge returns J_k for k = 0 … n+1.
func (r *quantileRuns) edge(k int) int64 {
	switch {
	case k == 0:
		return r.m.jl - 1
	case k == r.n+1:
		return r.m.jh
	}
	return r.at(k - 1)
}

func (r *quantileRuns) count(k int) int64 { return r.edge(k+1) - r.edge(k) }

// q returns q_k = ⌊−|k − p·n|/h + ½⌋ exactly, in integer arithmetic: with p = M·2^E
// (M an integer) and h = 2^e, −|k − p·n|/h = −A·2^(E−e) for the integer
// A = |k·2^(−E) − M·n| (E ≤ 0; for E > 0 every term is an integer already).
func (r *quantileRuns) q(k int) *big.Int {
	if r.mn == nil {
		frac, e := math.Frexp(r.m.o.P)
		mant := int64(math.Ldexp(frac, 53)) // exact: p = mant·2^(e−53)
		r.pexp = e - 53
		r.mn = new(big.Int).Mul(big.NewInt(mant), big.NewInt(int64(r.n)))
		if r.pexp > 0 {
			r.mn.Lsh(r.mn, uint(r.pexp))
			r.pexp = 0
		}
	}
	a := new(big.Int).Lsh(big.NewInt(int64(k)), uint(-r.pexp))
	a.Sub(a, r.mn).Abs(a).Neg(a) // −A, in units of 2^E
	s := math.Ilogb(r.m.ex.UtilityGranularity()) - r.pexp
	if s <= 0 {
		return a.Lsh(a, uint(-s)) // an integer: no rounding
	}
	a.Add(a, new(big.Int).Lsh(big.NewInt(1), uint(s-1)))
	return a.Rsh(a, uint(s)) // arithmetic shift: the floor
}

func (m *Quantile) sample(n int, at func(int) int64, src noise.Source) (float64, error) {
	src = sourceOr(src)
	r := &quantileRuns{m: m, n: n, at: at}
	r.pn = new(big.Rat).Mul(new(big.Rat).SetFloat64(m.o.P), new(big.Rat).SetInt64(int64(n)))
	r.setQmax()
	r.setBands()
	for {
		k, err := r.propose(src)
		if err != nil {
			return 0, err
		}
		ok, err := r.accept(k, src)
		if err != nil {
			return 0, err
		}
		if ok {
			c := r.count(k)
			j := r.edge(k) + 1 + int64(noise.Uniform(src, uint64(c)))
			return math.Ldexp(float64(j), math.Ilogb(m.o.Step)), nil
		}
	}
}

// setQmax finds q_max over the non-empty runs: u_k rises up to p·n and falls after, so
// it is at the last non-empty run with k ≤ ⌊p·n⌋ or the first with k ≥ ⌈p·n⌉.
func (r *quantileRuns) setQmax() {
	fl := new(big.Int).Quo(r.pn.Num(), r.pn.Denom()).Int64() // ⌊p·n⌋ (p·n ≥ 0)
	ce := fl                                                 // ⌈p·n⌉
	if !r.pn.IsInt() {
		ce++
	}
	var cands []int
	for k := min(int(fl), r.n); k >= 0; k-- {
		if r.count(k) > 0 {
			cands = append(cands, k)
			break
		}
	}
	for k := int(ce); k <= r.n; k++ {
		if k >= 0 && r.count(k) > 0 {
			cands = append(cands, k)
			break
		}
	}
	for _, k := range cands {
		if q := r.q(k); r.qmax == nil || q.Cmp(r.qmax) > 0 {
			r.qmax = q
		}
	}
}

// setBands computes the float64 lower bounds γ_k ≤ γ̃_k, then R and the bands.
//
// Error bound. With s = λ/h, γ̃_k ≥ λ(q_max − q_k) − 2^−63 ≥ s·(|k − pn| − d*) − λ −
// 2^−63, d* = min over non-empty runs of |k − pn| (each q is within ½ of u/h). In
// float64, pn carries a relative error ≤ 2^−53, each |k − pn̂| and the difference with
// d̂* an absolute error ≤ 2^−51·(n + pn + 1), the product a relative 2^−52; so
// γ_k = ŝ·(|k − pn̂| − d̂*)·(1 − 2^−50) − s·2^−49·(n + pn + 1) − λ − 2^−62 ≤ γ̃_k.
func (r *quantileRuns) setBands() {
	n := r.n
	lambda := r.m.ex.Lambda()
	s := lambda / r.m.ex.UtilityGranularity()
	pn := r.m.o.P * float64(n)
	dStar := math.Inf(1)
	for k := 0; k <= n; k++ {
		if r.count(k) > 0 {
			dStar = math.Min(dStar, math.Abs(float64(k)-pn))
		}
	}
	slack := s*0x1p-49*(float64(n)+pn+1) + lambda + 0x1p-62
	gammaLo := func(k int) float64 { return s*(math.Abs(float64(k)-pn)-dStar)*(1-0x1p-50) - slack }
	// R: the smallest integer with ℓ_k·θ ≤ γ_k + R·θ for all k, plus one.
	rMax := math.Inf(-1)
	ell := func(c int64) int { return bits.Len64(uint64(c - 1)) }
	for k := 0; k <= n; k++ {
		if c := r.count(k); c > 0 {
			rMax = math.Max(rMax, float64(ell(c))-gammaLo(k)/ln2Up)
		}
	}
	r.rInt = int64(math.Ceil(rMax)) + 1
	r.band = make([]int8, n+1)
	for k := 0; k <= n; k++ {
		c := r.count(k)
		if c <= 0 {
			r.band[k] = -1
			continue
		}
		v := gammaLo(k) / ln2Up
		v -= math.Abs(v)*0x1p-50 + 0x1p-50 // v ≤ γ_k/θ despite the division's rounding
		b := math.Floor(v) + float64(r.rInt) - float64(ell(c))
		b = math.Max(0, math.Min(quantileBands, b))
		r.band[k] = int8(b)
		r.lists[int(b)] = append(r.lists[int(b)], int32(k))
	}
}

// propose draws band b with probability ∝ n_b·2^(40−b) and a run of it uniformly.
func (r *quantileRuns) propose(src noise.Source) (int, error) {
	if r.total == nil {
		r.total = new(big.Int)
		for b, l := range r.lists {
			r.w[b] = new(big.Int).Lsh(big.NewInt(int64(len(l))), uint(quantileBands-b))
			r.total.Add(r.total, r.w[b])
		}
	}
	x := uniformBig(src, r.total)
	for b, wb := range r.w {
		if x.Cmp(wb) < 0 {
			l := r.lists[b]
			return int(l[noise.Uniform(src, uint64(len(l)))]), nil
		}
		x.Sub(x, wb)
	}
	return 0, errLazy // unreachable: x < total
}

// accept runs the exact acceptance test of run k.
func (r *quantileRuns) accept(k int, src noise.Source) (bool, error) {
	c := r.count(k)
	l := bits.Len64(uint64(c - 1))
	if noise.Uniform(src, uint64(1)<<l) >= uint64(c) { // Bernoulli(c/2^ℓ)
		return false, nil
	}
	g := r.m.ex.gamma(new(big.Int).Sub(r.qmax, r.q(k)))
	y := new(big.Rat).SetFrac(new(big.Int).Add(new(big.Int).Lsh(g.whole, 63), new(big.Int).SetUint64(g.frac)), new(big.Int).Lsh(big.NewInt(1), 63))
	y.Add(y, new(big.Rat).Mul(new(big.Rat).SetInt64(r.rInt), theta))
	return bernoulliPow2Exp(src, y, int64(l)+int64(r.band[k]))
}

// uniformBig returns a uniform integer in [0, n), n ≥ 1, by rejection on n's bit length.
func uniformBig(src noise.Source, n *big.Int) *big.Int {
	nb := n.BitLen()
	words := (nb + 63) / 64
	for {
		x := new(big.Int)
		for i := 0; i < words; i++ {
			x.Lsh(x, 64).Or(x, new(big.Int).SetUint64(src.Uint64()))
		}
		x.Rsh(x, uint(words*64-nb))
		if x.Cmp(n) < 0 {
			return x
		}
	}
}
