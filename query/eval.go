package query

import (
	"math"
	"math/big"
	"math/bits"
	"slices"
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

// groupStats are the exact statistics of the selected rows of one group.
type groupStats struct {
	count  int64
	sum    acc128    // Σ values in units of the column's grid (1 for Int columns)
	values []float64 // selected values, sorted (quantiles only)
}

// stats computes the exact statistics of every group (one group when not grouped; for a
// grouped query, one per declared domain value in declared order, rows outside the domain
// being ignored). It allocates O(groups) plus, with a WHERE clause, one bit per row, plus
// the selected values for quantiles; nothing per row.
func (b *bound) stats() []groupStats {
	t := b.t
	n := t.n
	ngroups := 1
	if b.group != nil {
		ngroups = len(b.group.domain.keys)
	}
	gs := make([]groupStats, ngroups)

	var sel []uint64
	if b.where != nil {
		sel = make([]uint64, (n+63)/64)
		b.where.fill(sel, n)
	}
	needValues := b.q.Agg == Median || b.q.Agg == Quantile
	needSum := b.q.Agg == Sum || b.q.Agg == Avg

	// Fast paths for ungrouped counts and sums.
	if b.group == nil && !needValues {
		g := &gs[0]
		if sel == nil {
			g.count = int64(n)
		} else {
			for _, w := range sel {
				g.count += int64(bits.OnesCount64(w))
			}
		}
		if needSum {
			b.sumRows(sel, &g.sum)
		}
		return gs
	}

	groupOf := func(int) int32 { return 0 }
	if b.group != nil {
		groupOf = b.group.group
	}
	visit := func(i int) {
		k := groupOf(i)
		if k < 0 {
			return
		}
		g := &gs[k]
		g.count++
		if needSum {
			g.sum.add(b.agg.units(i))
		}
	}
	if needValues {
		// Size the value slices exactly first, so that appending never reallocates.
		forRows(sel, n, visit)
		for k := range gs {
			gs[k].values = make([]float64, 0, gs[k].count)
		}
		forRows(sel, n, func(i int) {
			if k := groupOf(i); k >= 0 {
				gs[k].values = append(gs[k].values, b.agg.float(i))
			}
		})
		for k := range gs {
			slices.Sort(gs[k].values)
		}
		return gs
	}
	forRows(sel, n, visit)
	return gs
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

// sumRows adds the selected values of the aggregated column to a, in grid units.
func (b *bound) sumRows(sel []uint64, a *acc128) {
	c := b.agg
	switch c.decl.Type {
	case Int:
		vs := c.ints[:b.t.n]
		if sel == nil {
			for _, v := range vs {
				a.add(v)
			}
			return
		}
		for w, word := range sel {
			for word != 0 {
				a.add(vs[w*64+bits.TrailingZeros64(word)])
				word &= word - 1
			}
		}
	case Float:
		vs, inv := c.floats[:b.t.n], 1/c.grid
		if sel == nil {
			for _, v := range vs {
				a.add(int64(v * inv))
			}
			return
		}
		for w, word := range sel {
			for word != 0 {
				a.add(int64(vs[w*64+bits.TrailingZeros64(word)] * inv))
				word &= word - 1
			}
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

// unitGrid returns the value of one grid unit of the aggregated column.
func (c *column) unitGrid() float64 {
	if c.decl.Type == Int {
		return 1
	}
	return c.grid
}

// exactSum returns Σ·γ, the exact sum of a group, as a big.Float (exact: 128-bit integer
// times a power of two).
func exactSum(g *groupStats, grid float64) *big.Float {
	x := new(big.Float).SetPrec(256).SetInt(g.sum.int())
	return x.SetMantExp(x, math.Ilogb(grid)) // grid is a power of two
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

// exactValue returns the exact aggregate of one group, rounded to the nearest float64:
// the count, the sum, the mean (NaN for no rows), or the p-quantile, the value of rank
// ⌈p·n⌉ among the sorted values (NaN for no rows).
func (b *bound) exactValue(g *groupStats) float64 {
	switch b.q.Agg {
	case Count, Histogram:
		return float64(g.count)
	case Sum:
		f, _ := exactSum(g, b.agg.unitGrid()).Float64()
		return f
	case Avg:
		if g.count == 0 {
			return math.NaN()
		}
		s := exactSum(g, b.agg.unitGrid())
		r, _ := s.Rat(nil)
		r.Quo(r, new(big.Rat).SetInt64(g.count))
		f, _ := r.Float64()
		return f
	default: // Median, Quantile
		if g.count == 0 {
			return math.NaN()
		}
		return g.values[quantileRank(b.q.P, g.count)-1]
	}
}

func newFloat() *big.Float { return new(big.Float).SetPrec(256) }
