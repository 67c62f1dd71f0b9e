package query

import (
	"cmp"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// The groups of a plan, independent of any storage: the declared keys (the domains'
// product), a key's slot among them, and the order of found keys.

// maxDeclaredGroups bounds the product of the declared domains of a grouped query.
const maxDeclaredGroups = 1 << 24

// resolveDomains resolves the declared domain of every grouping column: its canonical
// keys in declared order and their indices.
func (p *Plan) resolveDomains() {
	for _, c := range p.b.groups {
		decl := &p.schema.Columns[c]
		if decl.Domain == nil {
			p.domains = append(p.domains, nil)
			p.domainIndex = append(p.domainIndex, nil)
			continue
		}
		keys := make([]string, len(decl.Domain))
		index := make(map[string]int, len(keys))
		for i, v := range decl.Domain {
			keys[i], _ = canonical(decl, v) // validated by Schema.Validate
			index[keys[i]] = i
		}
		p.domains = append(p.domains, keys)
		p.domainIndex = append(p.domainIndex, index)
	}
}

// declaredKeys sets Keys, the product of the declared domains (first column slowest), or
// reports a product of more than maxDeclaredGroups keys.
func (p *Plan) declaredKeys() error {
	total := 1
	for _, d := range p.domains {
		total *= len(d)
		if total > maxDeclaredGroups {
			return errorf(p.Query.GroupByPos, "the declared domains of the GROUP BY columns have more than %d combinations", maxDeclaredGroups)
		}
	}
	p.Keys = make([][]string, total)
	for s := range p.Keys {
		key := make([]string, len(p.domains))
		rest := s
		for j := len(p.domains) - 1; j >= 0; j-- {
			key[j] = p.domains[j][rest%len(p.domains[j])]
			rest /= len(p.domains[j])
		}
		p.Keys[s] = key
	}
	return nil
}

// slot returns the index in Keys of a declared key given as canonical texts.
func (p *Plan) slot(keys []string) (int, bool) {
	s := 0
	for j, k := range keys {
		i, ok := p.domainIndex[j][k]
		if !ok {
			return 0, false
		}
		s = s*len(p.domains[j]) + i
	}
	return s, true
}

// sortKeys puts found groups in an order fixed by their keys alone (never the order of
// the rows): per column, domain order for a column with a domain, numeric order for an
// Int column, byte order for a String column.
func (p *Plan) sortKeys(gs []*GroupExact) {
	sortByKey(p, gs, func(g *GroupExact) []string { return g.Keys })
}

// sortByKey sorts items by the keys of p's grouping columns (see sortKeys).
func sortByKey[T any](p *Plan, items []T, key func(T) []string) {
	type sortKey struct {
		idx  []int
		num  []int64
		text []string
	}
	keys := make([]sortKey, len(items))
	for i, it := range items {
		text := key(it)
		k := sortKey{idx: make([]int, len(text)), num: make([]int64, len(text)), text: text}
		for j, v := range text {
			switch c := &p.schema.Columns[p.b.groups[j]]; {
			case p.domains[j] != nil:
				k.idx[j] = p.domainIndex[j][v]
			case c.Type == Int:
				k.num[j], _ = strconv.ParseInt(v, 10, 64)
			}
		}
		keys[i] = k
	}
	order := make([]int, len(items))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		kx, ky := &keys[x], &keys[y]
		for j := range kx.text {
			var d int
			switch c := &p.schema.Columns[p.b.groups[j]]; {
			case p.domains[j] != nil:
				d = cmp.Compare(int64(kx.idx[j]), int64(ky.idx[j]))
			case c.Type == Int:
				d = cmp.Compare(kx.num[j], ky.num[j])
			default:
				d = strings.Compare(kx.text[j], ky.text[j])
			}
			if d != 0 {
				return d
			}
		}
		return 0
	})
	sorted := make([]T, len(items))
	for i, o := range order {
		sorted[i] = items[o]
	}
	copy(items, sorted)
}

// aggColumn returns the declared column of aggregate i (nil for COUNT and HISTOGRAM).
func (p *Plan) aggColumn(i int) *Column {
	if c := p.b.aggs[i].col; c >= 0 {
		return &p.schema.Columns[c]
	}
	return nil
}

// Grid returns the grid γ of the aggregated column of aggregate i (AggregateExact.Sum is
// in its units): 1 for an Int column, 2^(e−40) for a Float column whose largest bound in
// magnitude is at most 2^e (see LoadCSV); 0 for COUNT and HISTOGRAM.
func (p *Plan) Grid(i int) float64 {
	c := p.aggColumn(i)
	if c == nil {
		return 0
	}
	return columnGrid(c)
}

// columnGrid returns the grid of a numeric column: 1 for Int, γ for Float.
func columnGrid(c *Column) float64 {
	if c.Type == Int {
		return 1
	}
	g, _, _ := floatGrid(c.Min, c.Max)
	return g
}

// gridRange returns the range [lo, hi] of grid indices (values in units of the grid) of
// the aggregated column of aggregate i.
func (p *Plan) gridRange(i int) (int64, int64) {
	return gridIndices(p.aggColumn(i))
}

// gridIndices returns the range of grid indices of a numeric column's clamped values:
// [Min, Max] for Int, [⌈Min/γ⌉, ⌊Max/γ⌋] for Float.
func gridIndices(c *Column) (int64, int64) {
	if c.Type == Int {
		return int64(c.Min), int64(c.Max)
	}
	_, lo, hi := floatGrid(c.Min, c.Max)
	return int64(lo), int64(hi)
}

// bounds returns the declared bounds of the aggregated column of aggregate i.
func (p *Plan) bounds(i int) (float64, float64) {
	c := p.aggColumn(i)
	return c.Min, c.Max
}

// exactSum returns the exact sum of aggregate i in a group, Σ·γ, as a big.Float (exact:
// an integer times a power of two).
func (p *Plan) exactSum(i int, a *AggregateExact) *big.Float {
	x := newFloat()
	if a.Sum != nil {
		x.SetInt(a.Sum)
	}
	return x.SetMantExp(x, math.Ilogb(p.Grid(i))) // the grid is a power of two
}
