package noise

import (
	"math/big"
	"math/bits"
	"sync"
)

// This file holds the exact building blocks of every sampler: random bits drawn lazily
// from a Source, unbiased uniform integers, Bernoulli variables with rational
// probabilities, and exp(−γ) for rational γ (Canonne, Kamath and Steinke 2020, "The
// Discrete Gaussian for Differential Privacy", Algorithms 1–2). No floating point is
// involved, so the distributions are exactly the stated ones.
//
// A Bernoulli(p) trial compares a uniform U ∈ [0, 1), bit by bit from the most
// significant, with the binary expansion of p, and answers U < p at the first bit where
// they differ: it consumes two random bits on average. The expansion is produced 64 bits
// at a time (one 128-by-64-bit division for a rational p), and the comparison of a
// chunk is a XOR and a leading-zero count.

// bitReader hands out the bits of a Source, most significant first.
type bitReader struct {
	src Source
	w   uint64 // the next n random bits, left-aligned
	n   uint
}

// bit returns one random bit.
func (r *bitReader) bit() uint64 {
	if r.n == 0 {
		r.w, r.n = r.src.Uint64(), 64
	}
	b := r.w >> 63
	r.w <<= 1
	r.n--
	return b
}

// less compares the next random bits with the 64-bit chunk q of an expansion (most
// significant first) and consumes the bits up to the first difference. It reports
// whether they differ within the chunk (decided) and, if so, whether the random bits are
// the smaller (less). When all 64 bits agree it consumes 64 bits and decided is false.
func (r *bitReader) less(q uint64) (less, decided bool) { return r.lessN(q, 64) }

// uniform returns a uniform integer in [0, n), n ≥ 1, by Lemire's multiply-and-reject
// method ("Fast random integer generation in an interval", 2019): exact, and one word
// per draw except with probability < n/2^64.
func (r *bitReader) uniform(n uint64) uint64 {
	hi, lo := bits.Mul64(r.src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(r.src.Uint64(), n)
		}
	}
	return hi
}

// bernoulli returns true with probability num/den exactly (den > 0).
func (r *bitReader) bernoulli(num, den uint64) bool {
	if num >= den {
		return true
	}
	for num != 0 {
		var q uint64
		q, num = bits.Div64(num, 0, den) // the next 64 bits of the expansion of num/den
		if less, ok := r.less(q); ok {
			return less
		}
	}
	return false // the expansion ended: U ≥ num/den (equality has probability 0)
}

// bernoulliExp returns true with probability exp(−num/den) exactly (den > 0):
// CKS Algorithm 1. For γ = num/den < 1: draw A_k ~ Bernoulli(γ/k) for k = 1, 2, … until
// the first 0 and return true when that happens at an odd k. With K the first such k,
// P(K > k) = γ^k/k!, so P(K odd) = Σ_{j≥0} (−γ)^j/j! = e^(−γ). For γ ≥ 1: ⌊γ⌋
// independent Bernoulli(e^(−1)) and one Bernoulli(e^(−(γ−⌊γ⌋))), stopping at the first 0.
func (r *bitReader) bernoulliExp(num, den uint64) bool {
	for q := num / den; q > 0; q-- {
		if !r.bernoulliExp1() {
			return false
		}
	}
	return r.bernoulliExpFrac(num%den, den)
}

// bernoulliExpWide is bernoulliExp for a 128-bit numerator. When γ ≥ 2^64 it returns
// false: an event of probability exp(−2^64) (see the package overview).
func (r *bitReader) bernoulliExpWide(hi, lo, den uint64) bool {
	if hi >= den {
		return false
	}
	q, rem := bits.Div64(hi, lo, den)
	for ; q > 0; q-- {
		if !r.bernoulliExp1() {
			return false
		}
	}
	return r.bernoulliExpFrac(rem, den)
}

// bernoulliExpFrac is CKS Algorithm 1 for γ = num/den < 1.
func (r *bitReader) bernoulliExpFrac(num, den uint64) bool {
	if num == 0 {
		return true
	}
	k := uint64(1)
	for r.bernoulli(num, den) && (k == 1 || r.bernoulli(1, k)) {
		k++
	}
	return k%2 == 1
}

// bernoulliExp1 returns true with probability e^(−1) exactly, by comparing random bits
// with the binary expansion of e^(−1) (expInvBits).
func (r *bitReader) bernoulliExp1() bool {
	for i := 0; ; i++ {
		if less, ok := r.less(expInvWord(i)); ok {
			return less
		}
	}
}

// The binary expansion of e^(−1), 64 bits per word. The first words are computed once;
// a comparison needs word i with probability 2^(−64i), so more are computed on demand.
var (
	expInvHead  [4]uint64 // written once by init, read-only afterwards
	expInvMu    sync.Mutex
	expInvWords []uint64 // longer expansions, guarded by expInvMu
)

func init() { copy(expInvHead[:], expInvExpansion(4)) }

func expInvWord(i int) uint64 {
	if i < len(expInvHead) {
		return expInvHead[i]
	}
	expInvMu.Lock()
	defer expInvMu.Unlock()
	if i >= len(expInvWords) {
		expInvWords = expInvExpansion(2 * (i + 1))
	}
	return expInvWords[i]
}

// expInvExpansion returns the first n 64-bit words of the binary expansion of e^(−1),
// exactly: it brackets e^(−1) between partial sums of Σ (−1)^k/k! (alternating, so
// consecutive partial sums enclose the limit) in exact rationals, and adds terms until
// both ends agree on the first 64n bits. e^(−1) is irrational, so this terminates.
func expInvExpansion(n int) []uint64 {
	nbits := uint(64 * n)
	scale := new(big.Int).Lsh(big.NewInt(1), nbits)
	floorScaled := func(x *big.Rat) *big.Int {
		num := new(big.Int).Mul(x.Num(), scale)
		return num.Quo(num, x.Denom()) // x > 0: truncation is the floor
	}
	sum := new(big.Rat) // partial sum S_k
	term := big.NewRat(1, 1)
	var prev *big.Rat
	for k := int64(0); ; k++ {
		if k > 0 {
			term.Quo(term, big.NewRat(-k, 1))
		}
		sum.Add(sum, term)
		if prev != nil && k > 2 {
			a, b := floorScaled(prev), floorScaled(sum)
			if a.Cmp(b) == 0 {
				words := make([]uint64, n)
				for i := n - 1; i >= 0; i-- {
					words[i] = new(big.Int).And(a, new(big.Int).SetUint64(^uint64(0))).Uint64()
					a.Rsh(a, 64)
				}
				return words
			}
		}
		prev = new(big.Rat).Set(sum)
	}
}
