package query

import (
	"math/big"
	"math/bits"
)

// acc128 is an exact 128-bit two's-complement accumulator of int64 values: sums of up to
// MaxRows = 2^34 values of magnitude ≤ 2^53 never overflow it.
type acc128 struct {
	hi int64
	lo uint64
}

func (a *acc128) add(v int64) {
	var c uint64
	a.lo, c = bits.Add64(a.lo, uint64(v), 0)
	a.hi += int64(c) + v>>63 // v>>63 is the sign extension of v: 0 or −1
}

// int returns the accumulated sum exactly.
func (a acc128) int() *big.Int {
	x := new(big.Int).SetInt64(a.hi)
	x.Lsh(x, 64)
	return x.Add(x, new(big.Int).SetUint64(a.lo))
}

// forRows calls f for every selected row: all n rows when sel is nil, else those whose
// bit is set.
func forRows(sel []uint64, n int, f func(int)) {
	if sel == nil {
		for i := 0; i < n; i++ {
			f(i)
		}
		return
	}
	for w, word := range sel {
		for word != 0 {
			j := bits.TrailingZeros64(word)
			f(w*64 + j)
			word &= word - 1
		}
	}
}

// units returns row i's value in grid units: the value of an Int column, value/γ (an
// exact integer of magnitude ≤ 2^40) for a Float column.
func (c *column) units(i int) int64 {
	if c.decl.Type == Int {
		return c.ints[i]
	}
	return int64(c.floats[i] / c.grid)
}

// float returns row i's (clamped) value as a float64, exactly.
func (c *column) float(i int) float64 {
	if c.decl.Type == Int {
		return float64(c.ints[i])
	}
	return c.floats[i]
}

// quantileRank returns the 1-based rank ⌈p·n⌉ (at least 1) of the p-quantile of n sorted
// values, computed exactly.
func quantileRank(p float64, n int64) int64 {
	r := new(big.Rat).SetFloat64(p)
	r.Mul(r, new(big.Rat).SetInt64(n))
	q, m := new(big.Int).DivMod(r.Num(), r.Denom(), new(big.Int))
	k := q.Int64()
	if m.Sign() != 0 {
		k++
	}
	return max(k, 1)
}

func newFloat() *big.Float { return new(big.Float).SetPrec(256) }
