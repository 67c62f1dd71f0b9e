package mechanism

import (
	"math"
	"math/big"
	"math/bits"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
	"github.com/dpkit/dpkit/region"
)

// RandomizedResponseOptions configures k-ary randomized response.
type RandomizedResponseOptions struct {
	Epsilon    float64 `json:"epsilon"`    // required, finite and ≥ 0
	Categories int     `json:"categories"` // k ≥ 2 (2 is binary randomized response)
}

func (RandomizedResponseOptions) kind() string { return "randomized_response" }
func (o RandomizedResponseOptions) build() (Mechanism, error) {
	return NewRandomizedResponse(o)
}

// RandomizedResponse is k-ary randomized response (Warner 1965; thesis §3.4, the
// randomized response mechanism): report the true category with probability
// e^ε/(e^ε + k − 1) and each other category with probability 1/(e^ε + k − 1). It is
// ε-DP (local).
//
// Sampling is exact and takes O(1) draws at every ε and k: write ε̂ = s·ln 2 + y with
// s = min(⌊ε/L⌋, ⌈log2(k−1)⌉), L = ln 2 rounded up (0.6931471805599454), and y ≥ 0
// the dyadic ε − s·L rounded down (exact rationals); then ε̂ ≤ ε, and ε − ε̂ ≤
// 31·2^−53 + 2^−52·ε. Each round draws z uniform in [0, k − 1 + 2^s): z < 2^s reports
// the true category; otherwise the (z − 2^s)-th other category is reported with
// probability e^(−y) (exact Bernoulli), else the round repeats. The true category comes
// out with weight 2^s and each other with e^(−y), a ratio of exactly e^ε̂: this is k-ary
// randomized response at ε̂ ≤ ε, which only adds privacy. A round ends with probability
// ≥ 2^s/(k−1+2^s) + e^(−y)(k−1)/(k−1+2^s) ≥ ½ (either 2^s ≥ k − 1, or y < ln 2 + 2^−50),
// so at most two rounds are needed on average (k = 2^30 at ε = 30 included).
type RandomizedResponse struct {
	eps      float64
	k        int
	s        uint   // the proposal weight of the true category is 2^s
	num, den uint64 // y = num/den
}

// NewRandomizedResponse validates o.
func NewRandomizedResponse(o RandomizedResponseOptions) (*RandomizedResponse, error) {
	if err := dpkit.InPackage("mechanism", dpkit.CheckEpsilon("epsilon", o.Epsilon)); err != nil {
		return nil, err
	}
	if o.Categories < 2 || o.Categories > 1<<30 {
		return nil, perr("categories", o.Categories, "an integer in [2, 2^30]")
	}
	if o.Epsilon >= 0x1p62 {
		return nil, perr("epsilon", o.Epsilon, "< 2^62")
	}
	s, y := rrSplit(o.Epsilon, o.Categories-1)
	num, den, err := noise.Dyadic(y)
	if err != nil {
		return nil, perr("epsilon", o.Epsilon, "< 2^62")
	}
	return &RandomizedResponse{eps: o.Epsilon, k: o.Categories, s: s, num: num, den: den}, nil
}

// ln2Up is the float64 just above ln 2 (math.Ln2 is just below it).
const ln2Up = 0.6931471805599454

// rrSplit returns s = min(⌊ε/L⌋, ⌈log2 m⌉) and y = ε − s·L rounded down to a float64
// (computed in exact rationals), L = ln2Up ≥ ln 2.
func rrSplit(eps float64, m int) (uint, float64) {
	s := uint(bits.Len(uint(m - 1))) // ⌈log2 m⌉ for m ≥ 1
	if f := math.Floor(eps / ln2Up); f < float64(s) {
		s = uint(f)
	}
	for {
		y := new(big.Rat).SetFloat64(eps)
		y.Sub(y, new(big.Rat).Mul(new(big.Rat).SetInt64(int64(s)), new(big.Rat).SetFloat64(ln2Up)))
		if y.Sign() >= 0 {
			return s, ratDown(y)
		}
		s-- // ⌊ε/L⌋ was rounded up
	}
}

// ratDown returns the largest float64 ≤ r.
func ratDown(r *big.Rat) float64 {
	f, _ := r.Float64()
	if new(big.Rat).SetFloat64(f).Cmp(r) > 0 {
		f = math.Nextafter(f, math.Inf(-1))
	}
	return f
}

// Guarantee returns (ε, 0).
func (m *RandomizedResponse) Guarantee() dpkit.Budget { return dpkit.Budget{Epsilon: m.eps} }

// Descriptor returns {"kind":"randomized_response","version":1,"epsilon":…,"categories":…}.
func (m *RandomizedResponse) Descriptor() Descriptor {
	return Describe(RandomizedResponseOptions{Epsilon: m.eps, Categories: m.k})
}

// Epsilon returns ε; Categories k.
func (m *RandomizedResponse) Epsilon() float64 { return m.eps }
func (m *RandomizedResponse) Categories() int  { return m.k }

// KeepProbability returns p = e^ε/(e^ε + k − 1) = 1/(1 + (k−1)e^(−ε)).
func (m *RandomizedResponse) KeepProbability() float64 {
	return 1 / (1 + float64(m.k-1)*math.Exp(-m.eps))
}

// Pair returns the output distributions for inputs 0 and 1 (every pair of inputs is
// equivalent up to relabelling).
func (m *RandomizedResponse) Pair() (*region.Pair, error) {
	p := m.KeepProbability()
	q := math.Exp(-m.eps) * p // 1/(e^ε + k − 1)
	p0 := make([]float64, m.k)
	p1 := make([]float64, m.k)
	for i := range p0 {
		p0[i], p1[i] = q, q
	}
	p0[0], p1[0] = p, q
	p0[1], p1[1] = q, p
	return region.NewPair(p0, p1)
}

// Variance returns the largest variance, over the true category, of the unbiased
// estimate (1{y = j} − q)/(p − q) of the indicator 1{x = j} from one report:
// max(p(1−p), q(1−q))/(p − q)².
func (m *RandomizedResponse) Variance() float64 {
	p := m.KeepProbability()
	q := math.Exp(-m.eps) * p
	return math.Max(p*(1-p), q*(1-q)) / ((p - q) * (p - q))
}

// Interval returns the half-width of a (1−β) interval for the frequency of a category
// estimated from n reports (Hoeffding): √(ln(2/β)/(2n)) / (p − q).
func (m *RandomizedResponse) Interval(beta float64, n int) (float64, error) {
	if err := checkBeta(beta); err != nil {
		return 0, err
	}
	if n < 1 {
		return 0, perr("n", n, "an integer ≥ 1")
	}
	p := m.KeepProbability()
	q := math.Exp(-m.eps) * p
	return math.Sqrt(math.Log(2/beta)/(2*float64(n))) / (p - q), nil
}

// Release returns the randomized report of category value ∈ [0, k) (see
// RandomizedResponse for the sampler).
func (m *RandomizedResponse) Release(value int, src noise.Source) (int, error) {
	if value < 0 || value >= m.k {
		return 0, perr("value", value, "a category in [0, categories)")
	}
	src = sourceOr(src)
	top := uint64(1) << m.s
	n := uint64(m.k-1) + top
	for {
		z := noise.Uniform(src, n)
		if z < top {
			return value, nil
		}
		other := int(z - top) // the other-th category other than value
		if other >= value {
			other++
		}
		if ok, _ := noise.BernoulliExp(src, m.num, m.den); ok {
			return other, nil
		}
	}
}

// RandomizedResponse4Options configures the (ε, δ) randomized response of KOV eq. (16).
type RandomizedResponse4Options struct {
	Epsilon float64 `json:"epsilon"` // required, finite and ≥ 0
	Delta   float64 `json:"delta"`   // required, in [0, 1]
}

func (RandomizedResponse4Options) kind() string { return "randomized_response4" }
func (o RandomizedResponse4Options) build() (Mechanism, error) {
	return NewRandomizedResponse4(o)
}

// RandomizedResponse4 is the (ε, δ) randomized response of a bit (KOV eq. 16):
//
//	x = 0:  0 w.p. δ,  1 w.p. (1−δ)e^ε/(1+e^ε),  2 w.p. (1−δ)/(1+e^ε),  3 w.p. 0
//	x = 1:  0 w.p. 0,  1 w.p. (1−δ)/(1+e^ε),  2 w.p. (1−δ)e^ε/(1+e^ε),  3 w.p. δ
//
// Its privacy region is exactly R(ε, δ) (it is the canonical pair of eq. 17/18), and it
// is universally optimal for multi-party bit computations (KOV Thm 5.1).
type RandomizedResponse4 struct {
	eps, delta float64
	num, den   uint64
}

// NewRandomizedResponse4 validates o.
func NewRandomizedResponse4(o RandomizedResponse4Options) (*RandomizedResponse4, error) {
	if err := dpkit.InPackage("mechanism", dpkit.CheckEpsilon("epsilon", o.Epsilon)); err != nil {
		return nil, err
	}
	if err := dpkit.InPackage("mechanism", dpkit.CheckDelta("delta", o.Delta)); err != nil {
		return nil, err
	}
	num, den, err := noise.Dyadic(o.Epsilon)
	if err != nil {
		return nil, perr("epsilon", o.Epsilon, "< 2^62")
	}
	return &RandomizedResponse4{eps: o.Epsilon, delta: o.Delta, num: num, den: den}, nil
}

// Guarantee returns (ε, δ).
func (m *RandomizedResponse4) Guarantee() dpkit.Budget {
	return dpkit.Budget{Epsilon: m.eps, Delta: m.delta}
}

// Descriptor returns {"kind":"randomized_response4","version":1,"epsilon":…,"delta":…}.
func (m *RandomizedResponse4) Descriptor() Descriptor {
	return Describe(RandomizedResponse4Options{Epsilon: m.eps, Delta: m.delta})
}

// PLD returns the canonical (ε, δ) pair of KOV eq. (17)/(18), which is exactly this
// mechanism's pair of output distributions (eq. 16 is that pair). The sampler keeps with
// ε rounded down to a multiple of 2^−63, which only adds privacy.
func (m *RandomizedResponse4) PLD() (pld.Mechanism, error) {
	return pld.EpsilonDelta{Epsilon: m.eps, Delta: m.delta}, nil
}

// Pair returns the two output distributions of eq. (16).
func (m *RandomizedResponse4) Pair() (*region.Pair, error) {
	hi := (1 - m.delta) / (1 + math.Exp(-m.eps))
	lo := (1 - m.delta) / (1 + math.Exp(m.eps))
	return region.NewPair([]float64{m.delta, hi, lo, 0}, []float64{0, lo, hi, m.delta})
}

// Release returns the report (0–3) of bit ∈ {0, 1}. Exact: Bernoulli(δ) for the
// revealing outputs, then binary randomized response between 1 and 2 (keep with
// probability 1/(1 + e^(−ε̃)), ε̃ = ε rounded down to a multiple of 2^−63).
func (m *RandomizedResponse4) Release(bit int, src noise.Source) (int, error) {
	if bit != 0 && bit != 1 {
		return 0, perr("bit", bit, "0 or 1")
	}
	src = sourceOr(src)
	if reveal, _ := noise.Bernoulli(src, m.delta); reveal {
		return 3 * bit, nil
	}
	keep := 1 + bit // output 1 for bit 0, 2 for bit 1
	for {
		if noise.Uniform(src, 2) == 0 {
			return keep, nil
		}
		if ok, _ := noise.BernoulliExp(src, m.num, m.den); ok {
			return 3 - keep, nil
		}
	}
}
