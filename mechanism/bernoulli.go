package mechanism

import (
	"errors"
	"math"
	"math/big"
	"sync"

	"github.com/dpkit/dpkit/noise"
)

// Exact Bernoulli trials whose probability involves ln 2, for the quantile mechanism:
// Bernoulli(2^m·e^(−Y)) with Y rational, m ≥ 0 an integer and Y ≥ m·ln 2. The
// probability is irrational, so it is compared with a uniform U whose bits are drawn
// lazily, against bounds on ln 2 of growing precision (exact integer arithmetic); the
// comparison is decided after about one 64-bit word on average and is never wrong.

// ln2Bound returns integers lo ≤ 2^p·ln 2 ≤ lo + p + 1, from ln 2 = Σ_{k≥1} 1/(k·2^k):
// lo = Σ_{k≤p} ⌊2^(p−k)/k⌋ (each term floored; the terms k > p sum to < 1/(p+1)).
func ln2Bound(p uint) *big.Int {
	ln2Mu.Lock()
	defer ln2Mu.Unlock()
	if v, ok := ln2Cache[p]; ok {
		return v
	}
	lo := new(big.Int)
	t := new(big.Int)
	for k := uint(1); k <= p; k++ {
		t.Lsh(big.NewInt(1), p-k)
		t.Quo(t, big.NewInt(int64(k)))
		lo.Add(lo, t)
	}
	ln2Cache[p] = lo
	return lo
}

var (
	ln2Mu    sync.Mutex
	ln2Cache = map[uint]*big.Int{}
)

// ln2Interval returns rationals lo ≤ ln 2 ≤ hi with hi − lo = (p+1)/2^p.
func ln2Interval(p uint) (lo, hi *big.Rat) {
	l := ln2Bound(p)
	den := new(big.Int).Lsh(big.NewInt(1), p)
	lo = new(big.Rat).SetFrac(l, den)
	hi = new(big.Rat).SetFrac(new(big.Int).Add(l, big.NewInt(int64(p)+1)), den)
	return lo, hi
}

// errLazy reports a comparison that did not resolve within maxLazyBits: a threshold
// equal to a dyadic rational, which the callers' thresholds (involving ln 2) never are.
var errLazy = errors.New("mechanism: an exact Bernoulli trial did not resolve (internal error)")

const maxLazyBits = 1 << 14

// lessThan reports U < t for U uniform on [0, 1) (bits from src, 64 at a time) and a
// threshold t known through bounds(p) = (lo, hi), lo ≤ t ≤ hi, that shrink as p grows,
// and through a float64 estimate tf with |t − tf| ≤ et, which decides from U's first
// word alone unless that word falls within et of tf (then the exact bounds are used,
// continuing with the same bits).
func lessThan(src noise.Source, tf, et float64, bounds func(p uint) (lo, hi *big.Rat)) (bool, error) {
	w := src.Uint64()
	if lo := tf - et; lo >= 1 {
		return true, nil
	} else if lo > 0 && w < uint64(math.Floor(math.Ldexp(lo, 64))) {
		return true, nil // U < (w+1)/2^64 ≤ lo ≤ t
	}
	if hi := tf + et; hi <= 0 {
		return false, nil
	} else if c := math.Ceil(math.Ldexp(hi, 64)); c < 0x1p64 && w >= uint64(c) {
		return false, nil // U ≥ w/2^64 ≥ hi ≥ t
	}
	u := new(big.Int).SetUint64(w)
	for n := uint(64); n <= maxLazyBits; n += 64 {
		if n > 64 {
			u.Lsh(u, 64).Or(u, new(big.Int).SetUint64(src.Uint64()))
		}
		den := new(big.Int).Lsh(big.NewInt(1), n)
		lo, hi := bounds(n + 64)
		if new(big.Rat).SetFrac(new(big.Int).Add(u, big.NewInt(1)), den).Cmp(lo) <= 0 {
			return true, nil // U < (u+1)/2^n ≤ lo ≤ t
		}
		if new(big.Rat).SetFrac(u, den).Cmp(hi) >= 0 {
			return false, nil // U ≥ u/2^n ≥ hi ≥ t
		}
	}
	return false, errLazy
}

// bernoulliPow2Exp returns true with probability 2^m·e^(−y0), exactly, for y0 ≥ 0
// rational and m ≥ 0 an integer with y := y0 − m·ln 2 ≥ 0. It returns an error if y < 0
// (the probability would exceed 1: a caller's bound was wrong; nothing is sampled).
//
// With N an integer in [y − 2, y] (from a float64 estimate of y and its error bound, or
// from exact bounds when that does not decide), e^(−y) = e^(−N)·e^(−r/2)·e^(−r/2),
// r = y − N ∈ [0, 2]: e^(−N) by noise.BernoulliExpSum (N trials of e^(−1), stopping at
// the first failure) and each e^(−r/2), r/2 ≤ 1, by Algorithm 1 of Canonne, Kamath and
// Steinke ("The discrete Gaussian for differential privacy", 2020): with K = 1, 2, …
// draw Bernoulli((r/2)/K) until one fails; true iff the last K is odd.
//
// Float64 estimates carry error bounds of 2^−48 relative to the sizes of their terms
// (each is a handful of roundings of 2^−53); they only decide comparisons that the
// bounds leave no doubt about.
func bernoulliPow2Exp(src noise.Source, y0 *big.Rat, m int64) (bool, error) {
	mr := new(big.Rat).SetInt64(m)
	// y ∈ [y0 − m·hi, y0 − m·lo] at precision p.
	yBounds := func(p uint) (lo, hi *big.Rat) {
		l, h := ln2Interval(p)
		lo = new(big.Rat).Sub(y0, new(big.Rat).Mul(mr, h))
		hi = new(big.Rat).Sub(y0, new(big.Rat).Mul(mr, l))
		return lo, hi
	}
	n, err := floorBelow(y0, m, yBounds)
	if err != nil {
		return false, err
	}
	if ok, err := bernoulliExpInt(src, n); !ok || err != nil {
		return false, err
	}
	a := new(big.Rat).Sub(y0, new(big.Rat).SetInt(n)) // r = a − m·ln 2
	af, _ := a.Float64()
	rf := af - float64(m)*math.Ln2
	er := 0x1p-48 * (math.Abs(af) + float64(m) + 1)
	for range 2 {
		ok, err := bernoulliExpHalf(src, rf, er, func(p uint) (lo, hi *big.Rat) {
			l, h := ln2Interval(p)
			return new(big.Rat).Sub(a, new(big.Rat).Mul(mr, h)), new(big.Rat).Sub(a, new(big.Rat).Mul(mr, l))
		})
		if !ok || err != nil {
			return false, err
		}
	}
	return true, nil
}

// floorBelow returns an integer N ≥ 0 with y − 2 ≤ N ≤ y for y = y0 − m·ln 2, or an
// error if y < 0.
func floorBelow(y0 *big.Rat, m int64, yBounds func(p uint) (lo, hi *big.Rat)) (*big.Int, error) {
	y0f, _ := y0.Float64()
	yf := y0f - float64(m)*math.Ln2
	ey := 0x1p-48 * (math.Abs(y0f) + float64(m) + 1)
	if !math.IsInf(y0f, 0) && yf-ey >= 0 {
		n, _ := new(big.Float).SetFloat64(math.Floor(yf - ey)).Int(nil) // y − 2 ≤ ⌊yf − ey⌋ ≤ y
		return n, nil
	}
	for p := uint(128); p <= maxLazyBits; p *= 2 {
		lo, hi := yBounds(p)
		if hi.Sign() < 0 {
			return nil, errors.New("mechanism: a Bernoulli probability above 1 (internal error)")
		}
		if lo.Sign() >= 0 {
			return new(big.Int).Quo(lo.Num(), lo.Denom()), nil // ⌊lo⌋, lo ≥ y − 2^−120
		}
		if m == 0 {
			break // y = y0 exactly: decided above
		}
	}
	return nil, errLazy // y0 = m·ln 2 exactly is impossible for m ≥ 1
}

// bernoulliExpInt returns true with probability e^(−n), n ≥ 0 an integer of any size.
func bernoulliExpInt(src noise.Source, n *big.Int) (bool, error) {
	const chunk = 1 << 62
	rest := new(big.Int).Set(n)
	for !rest.IsUint64() || rest.Uint64() > chunk {
		if ok, err := noise.BernoulliExpSum(src, chunk, 0, 1); !ok || err != nil {
			return false, err
		}
		rest.Sub(rest, big.NewInt(chunk))
	}
	return noise.BernoulliExpSum(src, rest.Uint64(), 0, 1)
}

// bernoulliExpHalf returns true with probability e^(−r/2) for r ∈ [0, 2] known through
// bounds and a float64 estimate rf, |r − rf| ≤ er (CKS 2020, Algorithm 1 with γ = r/2).
func bernoulliExpHalf(src noise.Source, rf, er float64, r func(p uint) (lo, hi *big.Rat)) (bool, error) {
	for k := int64(1); ; k++ {
		div := big.NewRat(1, 2*k)
		d := float64(2 * k)
		coin, err := lessThan(src, rf/d, er/d*(1+0x1p-50), func(p uint) (lo, hi *big.Rat) {
			lo, hi = r(p)
			return lo.Mul(lo, div), hi.Mul(hi, div)
		})
		if err != nil {
			return false, err
		}
		if !coin {
			return k%2 == 1, nil
		}
	}
}
