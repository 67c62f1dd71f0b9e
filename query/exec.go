package query

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
)

// The in-memory executor (*Table implements Executor): it selects the rows (WHERE,
// compiled into bitset predicates over the column store), assigns them to groups (the
// declared domains' product, or the keys found in the data when a grouping column has no
// domain), bounds each privacy unit's contribution (bounding.go), and computes per group
// what the aggregates need: the row count, exact sums (128-bit integers in grid units)
// with the number of non-NULL values, sorted values (quantiles) and the number of
// distinct units (partition selection).

var _ Executor = (*Table)(nil)

// Execute implements Executor on the table's rows: p must have been prepared on this
// table's schema (Prepare, or PrepareSchema with an equal schema). Groups are emitted in
// order: every declared group (those without rows included), or the found keys sorted.
func (t *Table) Execute(ctx context.Context, p *Plan, seed Seed, emit func(*GroupExact) error) error {
	if !t.schema.equal(&p.schema) {
		return fmt.Errorf("query: the plan was prepared for another schema than this table's")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	x := t.newExec(p, seed)
	e := x.run()
	if p.Selection { // found keys, in the order of their values (not of the rows)
		var gs []*GroupExact
		for s := range e.count {
			if e.count[s] > 0 { // not a key whose rows bounding left out
				gs = append(gs, x.group(e, s))
			}
		}
		p.sortKeys(gs)
		for _, g := range gs {
			if err := emit(g); err != nil {
				return err
			}
		}
		return nil
	}
	for s := range e.count {
		if s%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := emit(x.group(e, s)); err != nil {
			return err
		}
	}
	return nil
}

// memExec is one execution of a plan on a table.
type memExec struct {
	p      *Plan
	t      *Table
	seed   Seed
	aggs   []*column // per aggregate: the column it reads (nil for COUNT, HISTOGRAM)
	groups []*column // grouping columns; nil if ungrouped
	values []*column // the columns the aggregates read, each once (bound.aggColumns)
	where  pred      // nil when every row is selected
}

func (t *Table) newExec(p *Plan, seed Seed) *memExec {
	x := &memExec{p: p, t: t, seed: seed}
	for _, a := range p.b.aggs {
		var c *column
		if a.col >= 0 {
			c = &t.cols[a.col]
		}
		x.aggs = append(x.aggs, c)
	}
	for _, c := range p.b.groups {
		x.groups = append(x.groups, &t.cols[c])
	}
	for _, c := range p.b.aggColumns() {
		x.values = append(x.values, &t.cols[c])
	}
	if p.Query.Where != nil {
		x.where = t.compile(p.Query.Where)
	}
	return x
}

// exact is the result of the aggregate step.
type exact struct {
	keys   [][]string    // per group, one value per grouping column; nil when ungrouped
	count  []int64       // per group: rows
	n      [][]int64     // per aggregate with a column: per group, non-NULL values
	sums   [][]acc128    // per aggregate (SUM, AVG; nil for others): per group, Σ in grid units
	values [][][]float64 // per aggregate (MEDIAN, QUANTILE): per group, sorted values
	units  []int64       // per group: distinct privacy units (grouped queries)
}

// group returns the statistics of group s.
func (x *memExec) group(e *exact, s int) *GroupExact {
	g := &GroupExact{Rows: e.count[s], Aggs: make([]AggregateExact, len(x.aggs))}
	if e.keys != nil {
		g.Keys = e.keys[s]
		if x.p.Selection {
			g.Units = e.units[s]
		}
	}
	for i := range x.aggs {
		a := &g.Aggs[i]
		if e.n[i] != nil {
			a.N = e.n[i][s]
		}
		if e.sums[i] != nil {
			a.Sum = e.sums[i][s].int()
		}
		if e.values[i] != nil {
			a.Sorted = e.values[i][s]
			if a.Sorted == nil {
				a.Sorted = []float64{}
			}
		}
	}
	return g
}

// run runs the exact steps.
func (x *memExec) run() *exact {
	t := x.t
	var sel []uint64
	if x.where != nil {
		sel = make([]uint64, (t.n+63)/64)
		x.where.fill(sel, t.n)
	}
	if x.groups == nil {
		if !x.rowBound() && !x.needValues() {
			return x.aggregateUngrouped(sel) // fast path: bit counts and column sums
		}
		slots := make([]int32, t.n)
		for i := range slots {
			slots[i] = -1
		}
		forRows(sel, t.n, func(r int) { slots[r] = 0 })
		if x.rowBound() {
			x.bound(slots, 1, nil)
		}
		return x.aggregate(slots, 1)
	}
	g := x.newGrouping()
	slots := g.assign(sel, t.n)
	var units []int64
	if x.rowBound() || x.groupBound() || x.p.Selection {
		units = x.bound(slots, g.size(), g) // drops rows beyond the bounds: slot −1
	}
	e := x.aggregate(slots, g.size())
	e.keys, e.units = g.keyTexts(), units
	return e
}

// groupBound reports whether a unit's rows may exceed MaxGroups or MaxRowsPerGroup
// (after MaxRows): with a privacy unit, if one of them is below MaxRows.
func (x *memExec) groupBound() bool {
	p := x.p
	return x.t.unitOf != nil && x.groups != nil && (p.MaxGroups < p.MaxRows || p.MaxRowsPerGroup < p.MaxRows)
}

// rowBound reports whether the rows of a unit may exceed MaxRows: with a privacy unit,
// on a table not bounded at load.
func (x *memExec) rowBound() bool { return x.t.unitOf != nil && !x.t.bounded }

func (x *memExec) needValues() bool {
	for _, a := range x.p.b.aggs {
		if f := a.fn(); f == Median || f == Quantile {
			return true
		}
	}
	return false
}

// newExact allocates the statistics of ngroups groups.
func (x *memExec) newExact(ngroups int) *exact {
	e := &exact{count: make([]int64, ngroups), n: make([][]int64, len(x.aggs)), sums: make([][]acc128, len(x.aggs)), values: make([][][]float64, len(x.aggs))}
	for i, a := range x.p.b.aggs {
		if x.aggs[i] != nil {
			e.n[i] = make([]int64, ngroups)
		}
		switch a.fn() {
		case Sum, Avg:
			e.sums[i] = make([]acc128, ngroups)
		case Median, Quantile:
			e.values[i] = make([][]float64, ngroups)
		}
	}
	return e
}

// aggregate computes the per-group statistics of the rows whose slot is ≥ 0.
func (x *memExec) aggregate(slots []int32, ngroups int) *exact {
	e := x.newExact(ngroups)
	for r, k := range slots {
		if k < 0 {
			continue
		}
		e.count[k]++
		for i, c := range x.aggs {
			if c == nil || c.isNull(r) {
				continue
			}
			e.n[i][k]++
			if e.sums[i] != nil {
				e.sums[i][k].add(c.units(r))
			} else if e.values[i] != nil {
				e.values[i][k] = append(e.values[i][k], c.float(r))
			}
		}
	}
	for i := range x.aggs {
		for _, v := range e.values[i] {
			slices.Sort(v)
		}
	}
	return e
}

// aggregateUngrouped is aggregate's fast path for ungrouped counts and sums without
// per-query row bounding: popcounts of the selection and one pass per summed column.
func (x *memExec) aggregateUngrouped(sel []uint64) *exact {
	e := x.newExact(1)
	e.count[0] = popcount(sel, x.t.n)
	done := map[*column]int{} // one pass per summed column
	for i, c := range x.aggs {
		if c == nil {
			continue
		}
		vsel := c.withoutNulls(sel, x.t.n)
		e.n[i][0] = popcount(vsel, x.t.n)
		if e.sums[i] == nil {
			continue
		}
		if j, ok := done[c]; ok {
			e.sums[i][0] = e.sums[j][0]
			continue
		}
		x.sumRows(c, vsel, &e.sums[i][0])
		done[c] = i
	}
	return e
}

// popcount returns the number of selected rows (sel nil: all n).
func popcount(sel []uint64, n int) int64 {
	if sel == nil {
		return int64(n)
	}
	k := 0
	for _, w := range sel {
		k += bits.OnesCount64(w)
	}
	return int64(k)
}

// grouping maps rows to groups.
type grouping struct {
	x        *memExec
	declared bool // every grouping column has a domain: the groups are their product
	sizes    []int
	// found keys (selection): the key components of each group, in order of discovery
	found [][maxGroupColumns]uint64
	byKey map[[maxGroupColumns]uint64]int32
}

// newGrouping returns a fresh grouping (found keys are per execution).
func (x *memExec) newGrouping() *grouping {
	g := &grouping{x: x, declared: !x.p.Selection}
	if g.declared {
		for _, c := range x.groups {
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
// dictionary code (String) or value (Int); a NULL belongs to no group.
func component(c *column, r int) (uint64, bool) {
	if c.isNull(r) {
		return 0, false
	}
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
	cols := g.x.groups
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

// key returns the components of group s.
func (g *grouping) key(s int) [maxGroupColumns]uint64 {
	if !g.declared {
		return g.found[s]
	}
	var key [maxGroupColumns]uint64
	rest := s
	for j := len(g.sizes) - 1; j >= 0; j-- {
		key[j] = uint64(rest % g.sizes[j])
		rest /= g.sizes[j]
	}
	return key
}

// text returns the canonical text of component k of grouping column j.
func (g *grouping) text(j int, k uint64) string {
	c := g.x.groups[j]
	switch {
	case c.domain.keys != nil:
		return c.domain.keys[k]
	case c.decl.Type == String:
		return c.dict[k]
	}
	return strconv.FormatInt(int64(k), 10)
}

// keyText returns the canonical text of group s's key.
func (g *grouping) keyText(s int) []string {
	key := g.key(s)
	out := make([]string, len(g.x.groups))
	for j := range out {
		out[j] = g.text(j, key[j])
	}
	return out
}

// keyTexts returns the canonical text of every group's key.
func (g *grouping) keyTexts() [][]string {
	out := make([][]string, g.size())
	for s := range out {
		out[s] = g.keyText(s)
	}
	return out
}

// sumRows adds the selected values of column c to a, in grid units.
func (x *memExec) sumRows(c *column, sel []uint64, a *acc128) {
	n := x.t.n
	switch c.decl.Type {
	case Int:
		vs := c.ints[:n]
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
		vs, inv := c.floats[:n], 1/c.grid
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

// intValue returns the value of component k of the Int grouping column j.
func (g *grouping) intValue(j int, k uint64) int64 {
	if c := g.x.groups[j]; c.domain.keys != nil {
		v, _ := strconv.ParseInt(c.domain.keys[k], 10, 64) // canonical
		return v
	}
	return int64(k)
}
