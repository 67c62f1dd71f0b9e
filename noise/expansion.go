package noise

import (
	"math/big"
	"sync"
)

// This file gives the samplers exact Bernoulli trials for probabilities that are not
// rational, such as the staircase's choice between its central step and its tail,
// p = 1/(1 + Σ_k c_k·u^(−k)) with u = e^ε − 1. The binary expansion of p is computed
// from certified bounds (every big.Float operation rounded toward the side that keeps the
// bound valid) and compared with random bits as for a rational p (bits.go): a trial
// reads word i of the expansion with probability 2^(−64i), so two words are computed
// when the distribution is built and more only on demand.

// expm1Bounds returns lo ≤ e^x − 1 ≤ hi for x = num/den ≥ 0 (den a power of two, so x is
// exact), with a relative width below 2^−(prec+16). It sums the Taylor series of e^y − 1
// at y = x/2^m ≤ 2^−8 (tail bounded by twice its first omitted term) and squares back
// with v(2y) = v(y)·(v(y) + 2), which involves no cancellation: every operation is
// rounded down for lo and up for hi.
func expm1Bounds(num, den uint64, prec uint) (lo, hi *big.Float) {
	x := new(big.Float).SetPrec(128).SetUint64(num)
	x.Quo(x, new(big.Float).SetUint64(den)) // exact: den = 2^j
	m := 0
	if e := x.MantExp(nil); e > -8 {
		m = e + 8
	}
	y := new(big.Float).SetMantExp(x, -m) // y ≤ 2^−8, exact
	w := prec + uint(m) + 40
	lo = series(y, w, big.ToNegativeInf, false)
	hi = series(y, w, big.ToPositiveInf, true)
	two := big.NewFloat(2)
	for i := 0; i < m; i++ {
		lo = mulMode(lo, addMode(lo, two, w, big.ToNegativeInf), w, big.ToNegativeInf)
		hi = mulMode(hi, addMode(hi, two, w, big.ToPositiveInf), w, big.ToPositiveInf)
	}
	return lo, hi
}

// series returns Σ_{i≥1} y^i/i! for 0 ≤ y ≤ 2^−8, truncated once a term is below
// 2^−(w+8) times the sum, every operation rounded by mode; with upper set it adds twice
// the first omitted term, which bounds the tail (the terms fall by a factor ≥ 256).
func series(y *big.Float, w uint, mode big.RoundingMode, upper bool) *big.Float {
	sum := new(big.Float).SetPrec(w).SetMode(mode)
	if y.Sign() == 0 {
		return sum
	}
	term := new(big.Float).SetPrec(w).SetMode(mode).Set(y)
	for i := int64(1); ; i++ {
		sum.Add(sum, term)
		term.Mul(term, y)
		term.Quo(term, new(big.Float).SetInt64(i+1))
		if term.MantExp(nil) < sum.MantExp(nil)-int(w)-8 {
			break
		}
	}
	if upper {
		term.Mul(term, big.NewFloat(2))
		sum.Add(sum, term)
	}
	return sum
}

func mulMode(a, b *big.Float, w uint, mode big.RoundingMode) *big.Float {
	return new(big.Float).SetPrec(w).SetMode(mode).Mul(a, b)
}

func addMode(a, b *big.Float, w uint, mode big.RoundingMode) *big.Float {
	return new(big.Float).SetPrec(w).SetMode(mode).Add(a, b)
}

// tailOdds is p = a/(a + Σ_k c[k]·u^(−(k+1))) for u = e^(num/den) − 1 and integers
// a > 0, c[k] ≥ 0: the probability of a distribution's first part, of weight a, when the
// rest weighs Σ_k c[k]·u^(−(k+1)). p increases with u, so the lower bound of u gives the
// lower bound of p.
type tailOdds struct {
	num, den uint64
	a        *big.Int
	c        []*big.Int
}

// bounds returns lo ≤ p ≤ hi, certified, with a relative width below 2^−prec.
func (t tailOdds) bounds(prec uint) (lo, hi *big.Float) {
	w := prec + 64
	ulo, uhi := expm1Bounds(t.num, t.den, w)
	return t.at(ulo, w, big.ToNegativeInf), t.at(uhi, w, big.ToPositiveInf)
}

// at evaluates p at u with the rounding mode of p's bound: the odds term is rounded
// the opposite way (up when p is rounded down).
func (t tailOdds) at(u *big.Float, w uint, mode big.RoundingMode) *big.Float {
	tm := big.ToPositiveInf
	if mode == big.ToPositiveInf {
		tm = big.ToNegativeInf
	}
	odds := new(big.Float).SetPrec(w).SetMode(tm)
	pow := new(big.Float).SetPrec(w).SetMode(tm).SetInt64(1)
	for _, c := range t.c {
		pow.Quo(pow, u) // u^(−(k+1)), rounded as the odds
		term := new(big.Float).SetPrec(w).SetMode(tm).SetInt(c)
		term.Mul(term, pow)
		odds.Add(odds, term)
	}
	odds.Quo(odds, new(big.Float).SetInt(t.a)) // a is exact at this precision
	den := new(big.Float).SetPrec(w).SetMode(tm).SetInt64(1)
	den.Add(den, odds)
	return new(big.Float).SetPrec(w).SetMode(mode).Quo(big.NewFloat(1), den)
}

// expansion is the binary expansion of a real p ∈ (0, 1) given by certified bounds,
// 64 bits a word. The first words are computed when it is built; longer prefixes are
// computed on demand (a trial needs word i with probability 2^(−64i)) and kept.
type expansion struct {
	head   [2]uint64 // read-only after newExpansion
	bounds func(prec uint) (lo, hi *big.Float)
	mu     sync.Mutex
	more   []uint64 // words from index 0, longer than head; guarded by mu
}

func newExpansion(bounds func(prec uint) (lo, hi *big.Float)) *expansion {
	e := &expansion{bounds: bounds}
	copy(e.head[:], expansionWords(bounds, len(e.head)))
	return e
}

func (e *expansion) word(i int) uint64 {
	if i < len(e.head) {
		return e.head[i]
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if i >= len(e.more) {
		e.more = expansionWords(e.bounds, 2*(i+1))
	}
	return e.more[i]
}

// expansionWords returns the first n words of the expansion: the precision grows until
// the bounds agree on n words (they always do eventually, unless p is a dyadic rational
// with at most 64n bits, which the probabilities here are not).
func expansionWords(bounds func(prec uint) (lo, hi *big.Float), n int) []uint64 {
	for prec := uint(64*n + 64); ; prec *= 2 {
		lo, hi := bounds(prec)
		a, b := scaledFloor(lo, 64*n), scaledFloor(hi, 64*n)
		if a.Cmp(b) == 0 {
			words := make([]uint64, n)
			for i := n - 1; i >= 0; i-- {
				words[i] = a.Uint64() // low 64 bits
				a.Rsh(a, 64)
			}
			return words
		}
	}
}

// scaledFloor returns ⌊v·2^bits⌋ for v ∈ [0, 1], clamped to 2^bits − 1.
func scaledFloor(v *big.Float, bits int) *big.Int {
	s := new(big.Float).SetMantExp(v, bits)
	z, _ := s.Int(nil)
	limit := new(big.Int).Lsh(big.NewInt(1), uint(bits))
	if z.Cmp(limit) >= 0 {
		z.Sub(limit, big.NewInt(1))
	}
	if z.Sign() < 0 {
		z.SetInt64(0)
	}
	return z
}

// bernoulliExpansion returns true with probability p, the number e expands, exactly.
func (r *bitReader) bernoulliExpansion(e *expansion) bool {
	for i := 0; ; i++ {
		if less, ok := r.less(e.word(i)); ok {
			return less
		}
	}
}
