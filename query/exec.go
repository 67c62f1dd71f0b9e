package query

import (
	"math"
	"math/big"
	"math/bits"
	"slices"
	"strconv"
)

// The aggregate step of a plan: exact, not private. It selects the rows (WHERE), assigns
// them to groups (the declared domains' product, or the keys found in the data when a
// grouping column has no domain), bounds each privacy unit's contribution to grouped
// queries (at most MaxGroups groups and MaxRowsPerGroup rows in each), and computes per
// group what the aggregates need: the row count, exact sums (128-bit integers in grid
// units), sorted values (quantiles) and the number of distinct units (partition
// selection). Noise is added afterwards, by the release step (release.go), from these
// statistics only.

// maxDeclaredGroups bounds the product of the declared domains of a grouped query.
const maxDeclaredGroups = 1 << 24

// exact is the result of the aggregate step.
type exact struct {
	keys   [][]string    // per group, one value per grouping column; nil when ungrouped
	count  []int64       // per group: rows
	sums   [][]acc128    // per aggregate (SUM, AVG; nil for others): per group, Σ in grid units
	values [][][]float64 // per aggregate (MEDIAN, QUANTILE): per group, sorted values
	units  []int64       // per group: distinct privacy units (grouped queries)
}

// groups returns the number of groups.
func (e *exact) groups() int { return len(e.count) }

// execute runs the aggregate step. (Prepare has checked the declared groups' number.)
func (p *Plan) execute() *exact {
	b := p.b
	t := b.t
	var sel []uint64
	if b.where != nil {
		sel = make([]uint64, (t.n+63)/64)
		b.where.fill(sel, t.n)
	}
	if b.groups == nil {
		return b.aggregate(sel, nil, 1)
	}
	g := b.newGrouping()
	slots := g.assign(sel, t.n)
	units := b.bound(sel, slots, g.size()) // drops rows beyond the bounds: slot −1
	e := b.aggregate(sel, slots, g.size())
	e.keys, e.units = g.keyTexts(), units
	if b.selection {
		g.sortGroups(e)
	}
	return e
}

// aggregate computes the per-group statistics of the selected rows (sel nil: all)
// whose slot is ≥ 0 (slots nil: one group).
func (b *bound) aggregate(sel []uint64, slots []int32, ngroups int) *exact {
	e := &exact{count: make([]int64, ngroups), sums: make([][]acc128, len(b.aggs)), values: make([][][]float64, len(b.aggs))}
	for i, a := range b.aggs {
		switch a.fn() {
		case Sum, Avg:
			e.sums[i] = make([]acc128, ngroups)
		case Median, Quantile:
			e.values[i] = make([][]float64, ngroups)
		}
	}
	if slots == nil && !b.needValues() {
		b.aggregateUngrouped(sel, e) // fast path: bit counts and column sums
		return e
	}
	slotOf := func(int) int32 { return 0 }
	if slots != nil {
		slotOf = func(r int) int32 { return slots[r] }
	}
	forRows(sel, b.t.n, func(r int) {
		k := slotOf(r)
		if k < 0 {
			return
		}
		e.count[k]++
		for i, a := range b.aggs {
			if e.sums[i] != nil {
				e.sums[i][k].add(a.col.units(r))
			} else if e.values[i] != nil {
				e.values[i][k] = append(e.values[i][k], a.col.float(r))
			}
		}
	})
	for i := range b.aggs {
		for _, v := range e.values[i] {
			slices.Sort(v)
		}
	}
	return e
}

func (b *bound) needValues() bool {
	for _, a := range b.aggs {
		if f := a.fn(); f == Median || f == Quantile {
			return true
		}
	}
	return false
}

// aggregateUngrouped is aggregate's fast path for ungrouped counts and sums.
func (b *bound) aggregateUngrouped(sel []uint64, e *exact) {
	if sel == nil {
		e.count[0] = int64(b.t.n)
	} else {
		for _, w := range sel {
			e.count[0] += int64(bits.OnesCount64(w))
		}
	}
	done := map[*column]int{} // one pass per summed column
	for i, a := range b.aggs {
		if e.sums[i] == nil {
			continue
		}
		if j, ok := done[a.col]; ok {
			e.sums[i][0] = e.sums[j][0]
			continue
		}
		b.sumRows(a.col, sel, &e.sums[i][0])
		done[a.col] = i
	}
}

// grouping maps rows to groups.
type grouping struct {
	b        *bound
	declared bool // every grouping column has a domain: the groups are their product
	sizes    []int
	// found keys (selection): the key components of each group, in order of discovery
	found [][maxGroupColumns]uint64
	byKey map[[maxGroupColumns]uint64]int32
}

// checkGroups reports a grouping whose declared domains have too many combinations.
func (b *bound) checkGroups() error {
	if b.selection {
		return nil
	}
	total := 1
	for _, c := range b.groups {
		total *= len(c.domain.keys)
		if total > maxDeclaredGroups {
			return errorf(b.q.GroupByPos, "the declared domains of the GROUP BY columns have more than %d combinations", maxDeclaredGroups)
		}
	}
	return nil
}

// newGrouping returns a fresh grouping (found keys are per execution).
func (b *bound) newGrouping() *grouping {
	g := &grouping{b: b, declared: !b.selection}
	if g.declared {
		for _, c := range b.groups {
			g.sizes = append(g.sizes, len(c.domain.keys))
		}
		return g
	}
	g.byKey = map[[maxGroupColumns]uint64]int32{}
	return g
}

func (g *grouping) size() int {
	if g.declared {
		n := 1
		for _, s := range g.sizes {
			n *= s
		}
		return n
	}
	return len(g.found)
}

// component returns the key component of row r for grouping column c: its domain index
// when c has a domain (−1: outside it, the row belongs to no group), else its
// dictionary code (String) or value (Int).
func component(c *column, r int) (uint64, bool) {
	if c.domain.keys != nil {
		k := c.group(r)
		return uint64(k), k >= 0
	}
	if c.decl.Type == String {
		return uint64(c.codes[r]), true
	}
	return uint64(c.ints[r]), true
}

// assign returns each row's group (−1: none, or not selected).
func (g *grouping) assign(sel []uint64, n int) []int32 {
	slots := make([]int32, n)
	for i := range slots {
		slots[i] = -1
	}
	cols := g.b.groups
	forRows(sel, n, func(r int) {
		var key [maxGroupColumns]uint64
		for j, c := range cols {
			k, ok := component(c, r)
			if !ok {
				return
			}
			key[j] = k
		}
		if g.declared {
			slot := 0
			for j := range cols {
				slot = slot*g.sizes[j] + int(key[j])
			}
			slots[r] = int32(slot)
			return
		}
		s, ok := g.byKey[key]
		if !ok {
			s = int32(len(g.found))
			g.byKey[key] = s
			g.found = append(g.found, key)
		}
		slots[r] = s
	})
	return slots
}

// keyTexts returns the canonical text of every group's key.
func (g *grouping) keyTexts() [][]string {
	cols := g.b.groups
	text := func(j int, k uint64) string {
		c := cols[j]
		switch {
		case c.domain.keys != nil:
			return c.domain.keys[k]
		case c.decl.Type == String:
			return c.dict[k]
		}
		return strconv.FormatInt(int64(k), 10)
	}
	out := make([][]string, g.size())
	for s := range out {
		var key [maxGroupColumns]uint64
		if g.declared {
			rest := s
			for j := len(cols) - 1; j >= 0; j-- {
				key[j] = uint64(rest % g.sizes[j])
				rest /= g.sizes[j]
			}
		} else {
			key = g.found[s]
		}
		out[s] = make([]string, len(cols))
		for j := range cols {
			out[s][j] = text(j, key[j])
		}
	}
	return out
}

// sortGroups puts found groups in an order fixed by their keys alone (never the order
// of the rows): domain order or numeric order per column, strings by byte order.
func (g *grouping) sortGroups(e *exact) {
	cols := g.b.groups
	order := make([]int, len(g.found))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		for j, c := range cols {
			a, b := g.found[x][j], g.found[y][j]
			if a == b {
				continue
			}
			switch {
			case c.domain.keys != nil:
				return cmpOrder(a, b)
			case c.decl.Type == String:
				return cmpOrder(c.dict[a], c.dict[b])
			}
			return cmpOrder(int64(a), int64(b))
		}
		return 0
	})
	e.permute(order)
}

// permute reorders the groups of e: group i becomes order[i].
func (e *exact) permute(order []int) {
	keys := make([][]string, len(order))
	count := make([]int64, len(order))
	units := make([]int64, len(order))
	for i, o := range order {
		keys[i], count[i] = e.keys[o], e.count[o]
		if e.units != nil {
			units[i] = e.units[o]
		}
	}
	e.keys, e.count = keys, count
	if e.units != nil {
		e.units = units
	}
	for a := range e.sums {
		if e.sums[a] != nil {
			s := make([]acc128, len(order))
			for i, o := range order {
				s[i] = e.sums[a][o]
			}
			e.sums[a] = s
		}
		if e.values[a] != nil {
			v := make([][]float64, len(order))
			for i, o := range order {
				v[i] = e.values[a][o]
			}
			e.values[a] = v
		}
	}
}

// bound applies contribution bounding to the grouped rows and returns the number of
// distinct privacy units per group: each unit keeps its rows in its first MaxGroups
// groups and at most MaxRowsPerGroup rows in each, in file order (which rows a unit keeps
// depends on its own rows only, so add/remove neighbours stay neighbours); the other rows
// get slot −1. Without a privacy unit each row is its own unit.
func (b *bound) bound(sel []uint64, slots []int32, ngroups int) []int64 {
	t := b.t
	units := make([]int64, ngroups)
	if t.unitOf == nil {
		forRows(sel, t.n, func(r int) {
			if s := slots[r]; s >= 0 {
				units[s]++
			}
		})
		return units
	}
	g, c := t.schema.groupBounds()
	// Counting sort of the grouped rows by unit, stable (file order within a unit).
	start := make([]int32, t.units+1)
	forRows(sel, t.n, func(r int) {
		if slots[r] >= 0 {
			start[t.unitOf[r]+1]++
		}
	})
	for u := 1; u <= t.units; u++ {
		start[u] += start[u-1]
	}
	order := make([]int32, start[t.units])
	next := slices.Clone(start[:t.units])
	forRows(sel, t.n, func(r int) {
		if slots[r] >= 0 {
			u := t.unitOf[r]
			order[next[u]] = int32(r)
			next[u]++
		}
	})
	type held struct {
		slot int32
		rows int
	}
	var hs []held
	for u := 0; u < t.units; u++ {
		hs = hs[:0]
		for _, r := range order[start[u]:start[u+1]] {
			s := slots[r]
			i := slices.IndexFunc(hs, func(h held) bool { return h.slot == s })
			switch {
			case i < 0 && len(hs) < g:
				hs = append(hs, held{s, 1})
			case i >= 0 && hs[i].rows < c:
				hs[i].rows++
			default:
				slots[r] = -1 // beyond the unit's bounds: not in this query
			}
		}
		for _, h := range hs {
			units[h.slot]++
		}
	}
	return units
}

// value returns the exact value of aggregate i for group s, rounded to the nearest
// float64: the count, the sum, the mean (NaN for no rows), or the p-quantile, the value
// of rank ⌈p·n⌉ among the sorted values (NaN for no rows).
func (b *bound) value(e *exact, i, s int) float64 {
	a := &b.aggs[i]
	n := e.count[s]
	switch a.fn() {
	case Count:
		return float64(n)
	case Sum:
		f, _ := exactSum(e.sums[i][s], a.col.unitGrid()).Float64()
		return f
	case Avg:
		if n == 0 {
			return math.NaN()
		}
		r, _ := exactSum(e.sums[i][s], a.col.unitGrid()).Rat(nil)
		f, _ := r.Quo(r, new(big.Rat).SetInt64(n)).Float64()
		return f
	}
	if n == 0 {
		return math.NaN()
	}
	v := e.values[i][s]
	return v[quantileRank(a.P, int64(len(v)))-1]
}

// sumRows adds the selected values of column c to a, in grid units.
func (b *bound) sumRows(c *column, sel []uint64, a *acc128) {
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

// cmpOrder compares two ordered values (−1, 0, +1).
func cmpOrder[T int64 | uint64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
