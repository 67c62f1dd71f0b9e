package mechanism

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"github.com/dpkit/dpkit/pld"
)

// PartitionSelectionOptions configures differentially private partition selection.
type PartitionSelectionOptions struct {
	// Epsilon is the total ε of the selection over all the keys one privacy unit may
	// hold; required, finite and > 0.
	Epsilon float64 `json:"epsilon"`
	// Delta is the total δ; required, in (0, 1). A key held by a single unit is kept
	// with probability Delta/MaxPartitions, so δ = 0 is impossible.
	Delta float64 `json:"delta"`
	// MaxPartitions (max_partitions) bounds the number of distinct keys one privacy
	// unit holds; required, in [1, 2^40]. The caller enforces it (contribution
	// bounding) before counting units per key.
	MaxPartitions int64 `json:"max_partitions"`
}

func (PartitionSelectionOptions) kind() string { return "partition_selection" }
func (o PartitionSelectionOptions) build() (Mechanism, error) {
	return NewPartitionSelection(o)
}

func init() {
	register[PartitionSelectionOptions]("partition_selection", "epsilon", "delta", "max_partitions")
}

var _ Mechanism = (*PartitionSelection)(nil)

// MaxPartitionSelectionSteps bounds the number of unit counts n for which the keep
// probability is below 1: parameters whose recursion would need more steps (a
// per-partition ε of roughly 2·ln(1/(2δ'))/2^24 or smaller, e.g. ε' < 2.4e-6 at δ' = 1e-9)
// are refused. Such a selection keeps no key with fewer than tens of millions of units.
const MaxPartitionSelectionSteps = 1 << 24

// maxPartitionKnots bounds the stored table: past it, every stride-th value is stored
// and the ones between are recomputed from the nearest stored value below.
const maxPartitionKnots = 1 << 20

// PartitionSelection is differentially private partition selection (GROUP BY over keys
// that are not known in advance): a key held by n distinct privacy units is released
// with probability π(n), independently of the other keys, and a key held by no unit is
// never released (it is not in the data).
//
// π is the optimal rule of Desfontaines, Voss, Gipson and Mandayam, "Differentially
// private partition selection" (PoPETs 2022), Theorem 1: for units that hold one key
// each, the (ε', δ')-DP partition selection that keeps every key with the largest
// possible probability keeps a key of n units with probability
//
//	π(0) = 0,
//	π(n) = min( e^ε'·π(n−1) + δ',  1 − e^(−ε')·(1 − π(n−1) − δ'),  1 ).
//
// The first term is the constraint π(n) ≤ e^ε'·π(n−1) + δ' of (ε', δ')-DP between
// neighbouring counts n−1 and n; the second is 1 − π(n−1) ≤ e^ε'·(1 − π(n)) + δ' (the
// probability of dropping the key). So π(1) = δ', π grows geometrically by e^ε' while
// small, then 1 − π decays by e^(−ε') until it reaches 0 at CertainKeep().
//
// # Several keys per unit: the budget split
//
// A unit holding up to k = MaxPartitions keys changes the unit count of at most k keys,
// each by one, and the keys' decisions are independent: the selection is the
// composition of k (ε', δ')-DP mechanisms. dpkit uses the per-partition parameters
//
//	ε' = ε/k,  δ' = δ/k   (each rounded down to a float64, so that k·ε' ≤ ε, k·δ' ≤ δ)
//
// and basic composition (Dwork and Roth, "The Algorithmic Foundations of Differential
// Privacy", Thm 3.16) gives (k·ε', k·δ') ≤ (ε, δ). The split is the one the paper
// discusses for units with several keys; it is not optimal for k > 1 (Gaussian
// thresholding keeps more keys when k is large), but it is exact and simple.
// PLDItems describes it for composition with other releases.
//
// # Rounding
//
// π(n) is irrational in general. The table of keep probabilities is computed once by
// the recursion in float64 with every operation rounded toward the safe side (products
// and sums from below for the keep probability, and from above for the drop probability
// 1 − π, which is carried instead of π once π ≥ ½ so that it keeps full relative
// precision), using e^ε' from below and e^(−ε') from above, and each value is made at
// least the previous one. Each computed value p(n) is therefore at most the right-hand
// side of the recursion evaluated exactly at the computed p(n−1): the sequence actually
// sampled satisfies both (ε', δ') constraints exactly, for the true e^ε' and δ'. It is
// below the exact π by a relative 10^−15 or so per step (the test compares with a
// 50-digit reference). Keep then samples Bernoulli(p(n)) exactly (noise.Bernoulli
// compares the binary expansion of the float64 p(n) with random bits; in the upper
// part it drops the key with the exact probability 1 − p(n)).
type PartitionSelection struct {
	eps, delta   float64 // total budget as requested
	k            int64
	epsP, deltaP float64 // per-partition ε', δ'
	eLo, eNegHi  float64 // e^ε' from below, e^(−ε') from above

	certain int64     // smallest n with p(n) = 1
	hiFrom  int64     // smallest n whose state carries the drop probability 1 − p(n)
	stride  int64     // knots[i] is the state at n = i·stride
	knots   []float64 // p(n) below hiFrom, 1 − p(n) from hiFrom on
}

// NewPartitionSelection validates o and computes the keep-probability table. It refuses
// δ = 0 (no partition selection is (ε, 0)-DP: the key of a single unit would have to be
// dropped always, hence every key by induction) and parameters that would need more
// than MaxPartitionSelectionSteps steps.
func NewPartitionSelection(o PartitionSelectionOptions) (*PartitionSelection, error) {
	if err := dpkit.CheckPositive("epsilon", o.Epsilon); err != nil {
		return nil, dpkit.InPackage("mechanism", err)
	}
	if math.IsNaN(o.Delta) || o.Delta <= 0 || o.Delta >= 1 {
		return nil, &dpkit.ParamError{Pkg: "mechanism", Name: "delta", Value: o.Delta,
			Want: "in (0, 1): partition selection needs δ > 0 (a key held by a single unit is released with probability δ/max_partitions)"}
	}
	if o.MaxPartitions < 1 || o.MaxPartitions > 1<<40 {
		return nil, &dpkit.ParamError{Pkg: "mechanism", Name: "max_partitions", Value: o.MaxPartitions, Want: "an integer in [1, 2^40]"}
	}
	m := &PartitionSelection{eps: o.Epsilon, delta: o.Delta, k: o.MaxPartitions}
	m.epsP = rdDiv(o.Epsilon, o.MaxPartitions)
	m.deltaP = rdDiv(o.Delta, o.MaxPartitions)
	if m.epsP == 0 || m.deltaP == 0 {
		return nil, &dpkit.ParamError{Pkg: "mechanism", Name: "max_partitions", Value: o.MaxPartitions,
			Want: "small enough that epsilon/max_partitions and delta/max_partitions are positive float64 values"}
	}
	// math.Exp is accurate to within one ulp: two steps outward bound the true value.
	m.eLo = nextDown(nextDown(math.Exp(m.epsP)))
	m.eNegHi = nextUp(nextUp(math.Exp(-m.epsP)))

	// A quick refusal for parameters far past the cap; the loop below enforces it exactly.
	// π ≥ δ'·e^((n−1)ε') while below ½, and 1 − π shrinks by e^(−ε') per step after, so
	// about 2·ln(1/(2δ'))/ε' steps are needed.
	if est := 2 * logInvTwo(m.deltaP) / m.epsP; est > 2*MaxPartitionSelectionSteps {
		return nil, m.tooManySteps()
	}
	// Pass 1: find where the regime changes and where p reaches 1.
	st := psState{}
	var n int64
	m.hiFrom = -1
	for !st.one() {
		if n >= MaxPartitionSelectionSteps {
			return nil, m.tooManySteps()
		}
		st = m.step(st)
		n++
		if st.hi && m.hiFrom < 0 {
			m.hiFrom = n
		}
	}
	m.certain = n
	// Pass 2: store every stride-th state (the same deterministic steps, so the same values).
	m.stride = max(1, (m.certain+maxPartitionKnots-1)/maxPartitionKnots)
	m.knots = make([]float64, 0, m.certain/m.stride+1)
	st = psState{}
	for i := int64(0); i < m.certain; i++ {
		if i%m.stride == 0 {
			m.knots = append(m.knots, st.v)
		}
		st = m.step(st)
	}
	return m, nil
}

func (m *PartitionSelection) tooManySteps() error {
	need := 2 * logInvTwo(m.deltaP) / MaxPartitionSelectionSteps
	return &dpkit.ParamError{Pkg: "mechanism", Name: "epsilon", Value: m.eps,
		Want: fmt.Sprintf("at least about %.3g·max_partitions = %.3g at delta = %g (epsilon/max_partitions = %.3g would keep a key only past about %.3g privacy units; dpkit's table stops at 2^24 steps)",
			need, need*float64(m.k), m.delta, m.epsP, 2*logInvTwo(m.deltaP)/m.epsP)}
}

// logInvTwo returns ln(1/(2d)) without overflow for subnormal d.
func logInvTwo(d float64) float64 { return -math.Log(d) - math.Ln2 }

// psState is one value of the recursion: the keep probability p (hi false, p < ½) or
// the drop probability r = 1 − p (hi true, r ≤ ½). The represented real number is p or
// 1 − r exactly.
type psState struct {
	v  float64
	hi bool
}

func (s psState) one() bool { return s.hi && s.v == 0 }

// step returns the state for n+1 from the state for n: a value never above the exact
// right-hand side min(e^ε'p + δ', 1 − e^(−ε')(1 − p − δ'), 1) at the represented p,
// and never below p.
func (m *PartitionSelection) step(s psState) psState {
	if !s.hi {
		q := s.v
		a := rdAdd(rdMul(m.eLo, q), m.deltaP) // ≤ e^ε'q + δ'
		w := ruSub(ruSub(1, q), m.deltaP)     // ≥ 1 − q − δ'
		rb := 0.0                             // ≥ e^(−ε')(1 − q − δ') = 1 − (second term)
		if w > 0 {
			rb = ruMul(m.eNegHi, w)
		}
		b := rdSub(1, rb) // ≤ second term
		next := math.Max(math.Min(math.Min(a, b), 1), q)
		if next < 0.5 {
			return psState{v: next}
		}
		// Switch to the drop probability: 1 − min(a_exact, b_exact, 1) ≤ max(1 − a, rb, 0).
		ra := 0.0
		if a < 1 {
			ra = ruSub(1, a)
		}
		return psState{v: math.Max(ra, rb), hi: true} // ≤ ½ < 1 − q: still monotone
	}
	r := s.v
	// 1 − (first term) = 1 − δ' − e^ε'(1 − r): from above.
	t := rdMul(m.eLo, rdSub(1, r))
	ra := ruSub(ruSub(1, t), m.deltaP)
	// 1 − (second term) = e^(−ε')(r − δ'): from above.
	rb := 0.0
	if w := ruSub(r, m.deltaP); w > 0 {
		rb = ruMul(m.eNegHi, w)
	}
	return psState{v: math.Min(math.Max(math.Max(ra, rb), 0), r), hi: true}
}

// state returns the recursion's state at n ≥ 0 units.
func (m *PartitionSelection) state(n int64) psState {
	if n >= m.certain {
		return psState{hi: true}
	}
	i := n / m.stride
	at := i * m.stride
	st := psState{v: m.knots[i], hi: m.hiFrom >= 0 && at >= m.hiFrom}
	for ; at < n; at++ {
		st = m.step(st)
	}
	return st
}

// Keep reports whether a key held by units distinct privacy units is released, drawing
// its randomness from src (nil: the shared secure source). It returns false for
// units ≤ 0 and true for units ≥ CertainKeep(). Each call is an independent draw: call
// it once per key.
func (m *PartitionSelection) Keep(units int64, src noise.Source) bool {
	if units <= 0 {
		return false
	}
	st := m.state(units)
	src = sourceOr(src)
	if !st.hi {
		keep, _ := noise.Bernoulli(src, st.v) // v ∈ [0, ½): no error
		return keep
	}
	drop, _ := noise.Bernoulli(src, st.v) // v ∈ [0, ½]
	return !drop
}

// ProbabilityKeep returns the probability that Keep releases a key held by units
// distinct privacy units: 0 for units ≤ 0, δ' = Delta/MaxPartitions (rounded down) for
// one unit, nondecreasing, and 1 from CertainKeep() on. Below ½ it is exactly the
// probability Keep uses; from ½ on the table carries the drop probability r and the
// value returned is 1 − r rounded to the nearest float64 (DropProbability is exact there).
func (m *PartitionSelection) ProbabilityKeep(units int64) float64 {
	if units <= 0 {
		return 0
	}
	st := m.state(units)
	if st.hi {
		return 1 - st.v
	}
	return st.v
}

// DropProbability returns the probability that Keep drops a key held by units units
// (1 for units ≤ 0): exact where ProbabilityKeep is ≥ ½, with full relative precision
// near 0; below that it is 1 − ProbabilityKeep rounded to the nearest float64.
func (m *PartitionSelection) DropProbability(units int64) float64 {
	if units <= 0 {
		return 1
	}
	st := m.state(units)
	if st.hi {
		return st.v
	}
	return 1 - st.v
}

// CertainKeep returns the smallest number of units from which a key is always kept.
func (m *PartitionSelection) CertainKeep() int64 { return m.certain }

// Guarantee returns the (ε, δ) of the whole selection, as requested (the exact
// composition bound k·(ε', δ') is at most that).
func (m *PartitionSelection) Guarantee() dpkit.Budget {
	return dpkit.Budget{Epsilon: m.eps, Delta: m.delta}
}

// Descriptor returns {"kind":"partition_selection","version":1,"epsilon":…,"delta":…,
// "max_partitions":…}.
func (m *PartitionSelection) Descriptor() Descriptor {
	return Describe(PartitionSelectionOptions{Epsilon: m.eps, Delta: m.delta, MaxPartitions: m.k})
}

// PerPartition returns the per-key parameters (ε', δ') = (ε/k, δ/k), rounded down.
func (m *PartitionSelection) PerPartition() dpkit.Budget {
	return dpkit.Budget{Epsilon: m.epsP, Delta: m.deltaP}
}

// MaxPartitions returns k, the most keys one unit may hold.
func (m *PartitionSelection) MaxPartitions() int64 { return m.k }

// PLD returns a pair that dominates the whole selection: the canonical (ε, δ) pair of
// KOV eq. (17)/(18), which dominates every (ε, δ)-DP mechanism. PLDItems is tighter for
// composition with other releases.
func (m *PartitionSelection) PLD() (pld.Mechanism, error) {
	return pld.EpsilonDelta{Epsilon: m.eps, Delta: m.delta}, nil
}

// PLDItems describes the selection as what it is for accounting: MaxPartitions
// (ε', δ')-DP mechanisms (one per key the unit holds), each dominated by the canonical
// (ε', δ') pair. Composed by pld.Compose with the other releases of a job, it gives a
// curve never above the (ε, δ) of Guarantee and often below it at other ε.
func (m *PartitionSelection) PLDItems() []pld.Item {
	return []pld.Item{{Mechanism: pld.EpsilonDelta{Epsilon: m.epsP, Delta: m.deltaP}, Count: m.k}}
}

// rdDiv returns x/k rounded down to a float64 (x ≥ 0, k ≥ 1): the largest float64 y
// with k·y ≤ x.
func rdDiv(x float64, k int64) float64 {
	y := x / float64(k)
	// float64(k) is exact for k ≤ 2^53; the FMA computes k·y − x with one rounding,
	// which keeps its sign.
	for y > 0 && math.FMA(float64(k), y, -x) > 0 {
		y = nextDown(y)
	}
	return y
}

func nextDown(x float64) float64 { return math.Nextafter(x, math.Inf(-1)) }
func nextUp(x float64) float64   { return math.Nextafter(x, math.Inf(1)) }

// tiny is a bound below which products may be rounded in the subnormal range, where
// the FMA residue can underflow to zero; there the results are stepped outward always.
const tiny = 0x1p-960

// rdMul returns a·b rounded down (a, b ≥ 0, finite): the rounded product, stepped
// down when the FMA residue shows it was rounded up.
func rdMul(a, b float64) float64 {
	p := a * b
	switch {
	case math.IsInf(p, 1):
		return math.MaxFloat64
	case p < tiny:
		if p == 0 && (a == 0 || b == 0) {
			return 0
		}
		return math.Max(nextDown(p), 0)
	case math.FMA(a, b, -p) < 0:
		return nextDown(p)
	}
	return p
}

// ruMul returns a·b rounded up (a, b ≥ 0, finite).
func ruMul(a, b float64) float64 {
	p := a * b
	switch {
	case math.IsInf(p, 1):
		return p
	case p < tiny:
		if p == 0 && (a == 0 || b == 0) {
			return 0
		}
		return nextUp(p)
	case math.FMA(a, b, -p) > 0:
		return nextUp(p)
	}
	return p
}

// exactSum returns s = a+b rounded and the exact error e = (a+b) − s (Knuth's TwoSum;
// exact for finite a, b whose sum does not overflow, subnormals included).
func exactSum(a, b float64) (s, e float64) {
	s = a + b
	bb := s - a
	e = (a - (s - bb)) + (b - bb)
	return s, e
}

func rdAdd(a, b float64) float64 {
	s, e := exactSum(a, b)
	if e < 0 {
		return nextDown(s)
	}
	return s
}

func rdSub(a, b float64) float64 { return rdAdd(a, -b) }

func ruSub(a, b float64) float64 {
	s, e := exactSum(a, -b)
	if e > 0 {
		return nextUp(s)
	}
	return s
}
