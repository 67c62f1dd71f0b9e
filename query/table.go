package query

import (
	"math"
	"slices"
)

// Table is a loaded table: one slice per column (column-oriented storage), values already
// clamped to the declared bounds and rows already bounded per privacy unit. A Table is
// immutable after loading and safe for concurrent queries.
type Table struct {
	schema  Schema
	n       int
	cols    []column
	stats   Stats
	unitCol int      // index of the privacy-unit column, −1 without one
	unitOf  []uint32 // with a privacy unit: each row's unit, a dense id by its raw value
	unitIDs []uint64 // per dense id: the raw value (String: dictionary code; Float: bits)
	units   int      // number of distinct units
	bounded bool     // at most MaxRows rows per unit were kept at load
	nulls   bool     // LoadOptions.Nulls: numeric columns may hold NULLs
}

// column holds one column's values; exactly one of ints, floats, codes is used.
type column struct {
	decl   *Column
	nulls  bitmap    // rows holding NULL (numeric columns loaded with LoadOptions.Nulls); nil if none
	ints   []int64   // Int: the clamped values
	floats []float64 // Float: the clamped values, snapped to the grid (multiples of grid)
	grid   float64   // Float: the grid spacing γ, a power of two
	lo, hi float64   // Float: the grid's ends within the bounds, ⌈Min/γ⌉·γ and ⌊Max/γ⌋·γ
	codes  []uint32  // String: indices into dict
	dict   []string  // String: distinct values, in order of first appearance

	domain domain // the declared domain, resolved for this column
}

// domain is a column's declared public domain, resolved for fast lookups.
type domain struct {
	keys    []string         // declared values in canonical text, in declared order
	ints    map[int64]int32  // Int: value → domain index
	strings map[string]int32 // String: value → domain index

	codeGroup []int32 // String: dictionary code → domain index or −1
	dense     []int32 // Int, compact domains: value−denseLo → domain index or −1
	denseLo   int64
}

// Stats describes what loading did to the data. They are computed from the private data
// and are NOT differentially private: for the curator, never for analysts.
type Stats struct {
	Lines   int            // data lines read (excluding the header)
	Rows    int            // rows kept
	Dropped int            // rows dropped by contribution bounding (PrivacyUnit.MaxRows)
	Clamped map[string]int // per column: values moved to the declared bounds
}

// Rows returns the number of rows of the table after contribution bounding. It is not
// differentially private.
func (t *Table) Rows() int { return t.n }

// Schema returns a copy of the table's schema.
func (t *Table) Schema() Schema { return t.schema.clone() }

// Nullable reports, per column of the schema, whether it may hold NULLs: the numeric
// columns of a table loaded with LoadOptions.Nulls (a public setting, not the data).
func (t *Table) Nullable() []bool { return t.nullable() }

func (t *Table) nullable() []bool {
	out := make([]bool, len(t.cols))
	for i := range out {
		out[i] = t.nulls && t.schema.Columns[i].Type != String
	}
	return out
}

// clone returns a deep copy of s.
func (s *Schema) clone() Schema {
	c := *s
	c.Columns = slices.Clone(s.Columns)
	for i := range c.Columns {
		c.Columns[i].Domain = slices.Clone(c.Columns[i].Domain)
	}
	if s.Unit != nil {
		u := *s.Unit
		c.Unit = &u
	}
	return c
}

// equal reports whether s and o declare the same table.
func (s *Schema) equal(o *Schema) bool {
	if len(s.Columns) != len(o.Columns) || (s.Unit == nil) != (o.Unit == nil) || s.Unit != nil && *s.Unit != *o.Unit {
		return false
	}
	for i := range s.Columns {
		a, b := &s.Columns[i], &o.Columns[i]
		if a.Name != b.Name || a.Type != b.Type || a.Min != b.Min || a.Max != b.Max || !slices.Equal(a.Domain, b.Domain) {
			return false
		}
	}
	return true
}

// Stats returns what loading did (rows dropped, values clamped). Not differentially
// private: for the curator only.
func (t *Table) Stats() Stats {
	s := t.stats
	s.Clamped = make(map[string]int, len(t.stats.Clamped))
	for k, v := range t.stats.Clamped {
		s.Clamped[k] = v
	}
	return s
}

// floatGridBits is the resolution of Float columns: values are snapped to multiples of
// γ = 2^(e−floatGridBits), where 2^e is the smallest power of two ≥ max(|min|, |max|).
// Every value is then an integer multiple of γ of magnitude ≤ 2^40, so that sums of up
// to MaxRows values are exact in 128-bit integers.
const floatGridBits = 40

// floatGrid returns the grid spacing γ of a Float column with bounds [lo, hi], and the
// range [mlo, mhi] of grid indices inside the bounds (mlo > mhi if there is none).
func floatGrid(lo, hi float64) (g float64, mlo, mhi float64) {
	b := math.Max(math.Abs(lo), math.Abs(hi))
	if b == 0 {
		return 1, 0, 0
	}
	_, e := math.Frexp(b) // b = f·2^e, f in [0.5, 1): b ≤ 2^e
	g = math.Ldexp(1, e-floatGridBits)
	return g, math.Ceil(lo / g), math.Floor(hi / g)
}

// snapFloat returns v on the column's grid: clamped to [⌈Min/γ⌉·γ, ⌊Max/γ⌋·γ] (the grid
// points within the bounds) and rounded to the nearest multiple of γ, ties to even —
// m = RoundToEven(clamped/γ), exact since γ is a power of two; the value is m·γ. It
// reports whether v was outside the bounds. (Clamping to the grid's ends first is the
// same as clamping to the bounds, rounding, and clamping the index; it keeps the index
// within the grid by itself, which the SQL executor needs.)
func (c *column) snapFloat(v float64) (float64, bool) {
	clamped := v < c.decl.Min || v > c.decl.Max
	v = math.Max(c.lo, math.Min(c.hi, v))
	return math.RoundToEven(v/c.grid) * c.grid, clamped
}

// resolveDomain parses the declared domain of c.
func (c *column) resolveDomain() {
	d := c.decl.Domain
	if d == nil {
		return
	}
	c.domain.keys = make([]string, len(d))
	switch c.decl.Type {
	case Int:
		c.domain.ints = make(map[int64]int32, len(d))
	case String:
		c.domain.strings = make(map[string]int32, len(d))
	}
	for i, v := range d {
		key, _ := canonical(c.decl, v) // validated by Schema.Validate
		c.domain.keys[i] = key
		switch c.decl.Type {
		case Int:
			x, _ := parseIntField(key)
			c.domain.ints[x] = int32(i)
		case String:
			c.domain.strings[key] = int32(i)
		}
	}
}

// finishDomain builds the lookup from stored values to domain indices once the column is
// loaded: a table over the dictionary for String columns, a dense table (or a map, for
// sparse domains) for Int columns.
func (c *column) finishDomain() {
	if c.domain.keys == nil {
		return
	}
	switch c.decl.Type {
	case String:
		c.domain.codeGroup = make([]int32, len(c.dict))
		for code, v := range c.dict {
			g, ok := c.domain.strings[v]
			if !ok {
				g = -1
			}
			c.domain.codeGroup[code] = g
		}
	case Int:
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for v := range c.domain.ints {
			lo, hi = min(lo, v), max(hi, v)
		}
		if span := hi - lo; span >= 0 && span < 4*int64(len(c.domain.keys))+1024 {
			c.domain.denseLo = lo
			c.domain.dense = make([]int32, span+1)
			for i := range c.domain.dense {
				c.domain.dense[i] = -1
			}
			for v, g := range c.domain.ints {
				c.domain.dense[v-lo] = g
			}
		}
	}
}

// group returns the domain index of row i's value, or -1 if it is not in the domain.
func (c *column) group(i int) int32 {
	switch c.decl.Type {
	case String:
		return c.domain.codeGroup[c.codes[i]]
	case Int:
		v := c.ints[i]
		if d := c.domain.dense; d != nil {
			if k := uint64(v - c.domain.denseLo); k < uint64(len(d)) {
				return d[k]
			}
			return -1
		}
		if g, ok := c.domain.ints[v]; ok {
			return g
		}
	}
	return -1
}

// isNull reports whether row i of c is NULL.
func (c *column) isNull(i int) bool { return c.nulls != nil && c.nulls.get(i) }

// withoutNulls returns the selection sel (nil: all n rows) without c's NULL rows.
func (c *column) withoutNulls(sel []uint64, n int) []uint64 {
	if c.nulls == nil {
		return sel
	}
	out := make([]uint64, (n+63)/64)
	for w := range out {
		word := ^uint64(0)
		if sel != nil {
			word = sel[w]
		}
		if w < len(c.nulls) {
			word &^= c.nulls[w]
		}
		out[w] = word
	}
	trim(out, n)
	return out
}

// bitmap is a set of row indices, bit i%64 of word i/64.
type bitmap []uint64

func (b bitmap) get(i int) bool { return i/64 < len(b) && b[i/64]&(1<<uint(i%64)) != 0 }

// set sets bit i to v, growing b as needed.
func (b *bitmap) set(i int, v bool) {
	for i/64 >= len(*b) {
		*b = append(*b, 0)
	}
	if v {
		(*b)[i/64] |= 1 << uint(i%64)
	} else {
		(*b)[i/64] &^= 1 << uint(i%64)
	}
}
