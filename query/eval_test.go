package query

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dpkit/dpkit/sensitivity"
	"pgregory.net/rapid"
)

// The reference below evaluates queries row by row on Go values, with its own clamping,
// its own condition tree and exact rational arithmetic (math/big), independently of the
// column store, the bitset predicates and the 128-bit accumulators under test.

// refRow is one generated row, before clamping.
type refRow struct {
	u string  // privacy unit
	g string  // string column with domain {a, b, c}; "d" occurs but is not declared
	k int64   // int column [0, 4] with domain {0..4}; data in [−2, 6]
	x int64   // int column [−50, 100]; data in [−80, 130]
	f float64 // float column [−2, 3]; data multiples of 1/4 in [−4, 5] (on the grid)
}

var refDomainG = []string{"a", "b", "c"}

// xValues are the generated values of x: around its bounds [−50, 100] and a few inside,
// so that conditions often hit them exactly.
var xValues = []int64{-80, -51, -50, -49, 0, 1, 2, 3, 50, 99, 100, 101, 130}
var refDomainK = []string{"0", "1", "2", "3", "4"}

func refSchema(maxRows int) Schema {
	return Schema{
		Columns: []Column{
			{Name: "u", Type: String},
			{Name: "g", Type: String, Domain: refDomainG},
			{Name: "k", Type: Int, Min: 0, Max: 4, Domain: refDomainK},
			{Name: "x", Type: Int, Min: -50, Max: 100},
			{Name: "f", Type: Float, Min: -2, Max: 3},
		},
		Unit: &PrivacyUnit{Column: "u", MaxRows: maxRows},
	}
}

func refCSV(rows []refRow) string {
	var b strings.Builder
	b.WriteString("u,g,k,x,f\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "%s,%s,%d,%d,%s\n", r.u, r.g, r.k, r.x, strconv.FormatFloat(r.f, 'g', -1, 64))
	}
	return b.String()
}

func genRow(units int) *rapid.Generator[refRow] {
	return rapid.Custom(func(t *rapid.T) refRow {
		return refRow{
			u: "u" + strconv.Itoa(rapid.IntRange(0, units-1).Draw(t, "u")),
			g: rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, "g"),
			k: rapid.Int64Range(-2, 6).Draw(t, "k"),
			x: rapid.SampledFrom(xValues).Draw(t, "x"),
			f: float64(rapid.IntRange(-16, 20).Draw(t, "f4")) / 4,
		}
	})
}

// refCond is a generated WHERE condition.
type refCond struct {
	col, op string
	num     float64
	str     string
	and, or []*refCond
}

func (c *refCond) sql() string {
	switch {
	case c.and != nil:
		return "(" + c.and[0].sql() + " AND " + c.and[1].sql() + ")"
	case c.or != nil:
		return "(" + c.or[0].sql() + " OR " + c.or[1].sql() + ")"
	case c.col == "g" || c.col == "u":
		return fmt.Sprintf("%s %s '%s'", c.col, c.op, c.str)
	}
	return fmt.Sprintf("%s %s %s", c.col, c.op, strconv.FormatFloat(c.num, 'g', -1, 64))
}

func compareWith[T int | float64 | string](a T, op string, b T) bool {
	switch op {
	case "=":
		return a == b
	case "!=", "<>":
		return a != b
	case "<":
		return a < b
	case "<=":
		return a <= b
	case ">":
		return a > b
	}
	return a >= b
}

func (c *refCond) eval(r refRow) bool {
	switch {
	case c.and != nil:
		return c.and[0].eval(r) && c.and[1].eval(r)
	case c.or != nil:
		return c.or[0].eval(r) || c.or[1].eval(r)
	}
	switch c.col {
	case "g":
		return compareWith(r.g, c.op, c.str)
	case "u":
		return compareWith(r.u, c.op, c.str)
	case "k":
		return compareWith(float64(r.k), c.op, c.num)
	case "x":
		return compareWith(float64(r.x), c.op, c.num)
	}
	return compareWith(r.f, c.op, c.num)
}

func genCond(depth int) *rapid.Generator[*refCond] {
	return rapid.Custom(func(t *rapid.T) *refCond {
		if depth > 0 && rapid.IntRange(0, 2).Draw(t, "nest") == 0 {
			a, b := genCond(depth-1).Draw(t, "a"), genCond(depth-1).Draw(t, "b")
			if rapid.Bool().Draw(t, "and") {
				return &refCond{and: []*refCond{a, b}}
			}
			return &refCond{or: []*refCond{a, b}}
		}
		c := &refCond{
			col: rapid.SampledFrom([]string{"u", "g", "k", "x", "f"}).Draw(t, "col"),
			op:  rapid.SampledFrom([]string{"=", "!=", "<>", "<", "<=", ">", ">="}).Draw(t, "op"),
		}
		switch c.col {
		case "g":
			c.str = rapid.SampledFrom([]string{"a", "b", "c", "d", "", "bb"}).Draw(t, "s")
		case "u":
			c.str = "u" + strconv.Itoa(rapid.IntRange(0, 5).Draw(t, "su"))
		case "x": // the values of x, and quarters next to them
			c.num = float64(rapid.SampledFrom(xValues).Draw(t, "xv")) + float64(rapid.IntRange(-2, 2).Draw(t, "dx"))/4
		default: // integers, halves and quarters, inside and outside the bounds of k and f
			c.num = float64(rapid.IntRange(-20, 28).Draw(t, "n")) / 4
		}
		return c
	})
}

// refQuery is a generated query and its reference evaluation.
type refQuery struct {
	agg, col string
	p        float64
	where    *refCond
	groupBy  string
}

func (q refQuery) sql() string {
	s := "SELECT " + q.agg + "("
	switch q.agg {
	case "COUNT":
		s += "*"
	case "QUANTILE":
		s += q.col + ", " + strconv.FormatFloat(q.p, 'g', -1, 64)
	default:
		s += q.col
	}
	s += ") FROM t"
	if q.where != nil {
		s += " WHERE " + q.where.sql()
	}
	if q.groupBy != "" {
		s += " GROUP BY " + q.groupBy
	}
	return s
}

var genQuery = rapid.Custom(func(t *rapid.T) refQuery {
	q := refQuery{agg: rapid.SampledFrom([]string{"COUNT", "SUM", "AVG", "MEDIAN", "QUANTILE", "HISTOGRAM"}).Draw(t, "agg")}
	switch q.agg {
	case "HISTOGRAM":
		q.col = rapid.SampledFrom([]string{"g", "k"}).Draw(t, "hcol")
	case "COUNT":
	default:
		q.col = rapid.SampledFrom([]string{"x", "f"}).Draw(t, "col")
	}
	if q.agg == "QUANTILE" {
		q.p = rapid.SampledFrom([]float64{0.001, 0.1, 0.25, 0.3, 0.5, 0.75, 0.9, 0.999}).Draw(t, "p") // p in (0, 1) (#19)
	}
	if q.agg == "MEDIAN" {
		q.p = 0.5
	}
	if rapid.Bool().Draw(t, "hasWhere") {
		q.where = genCond(2).Draw(t, "where")
	}
	if q.agg != "HISTOGRAM" && rapid.Bool().Draw(t, "grouped") {
		q.groupBy = rapid.SampledFrom([]string{"g", "k"}).Draw(t, "groupBy")
	}
	return q
})

func clampF(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

// refBound applies the reference contribution bounding (first maxRows rows per unit)
// and clamping.
func refBound(rows []refRow, maxRows int) []refRow {
	seen := map[string]int{}
	var out []refRow
	for _, r := range rows {
		seen[r.u]++
		if seen[r.u] > maxRows {
			continue
		}
		r.k = int64(clampF(float64(r.k), 0, 4))
		r.x = int64(clampF(float64(r.x), -50, 100))
		r.f = clampF(r.f, -2, 3)
		out = append(out, r)
	}
	return out
}

// refEval returns the exact aggregate per group (one group when ungrouped).
func refEval(rows []refRow, q refQuery) (keys []string, vals []float64) {
	groupCol := q.groupBy
	if q.agg == "HISTOGRAM" {
		groupCol = q.col
	}
	keys = []string{""}
	key := func(refRow) string { return "" }
	switch groupCol {
	case "g":
		keys, key = refDomainG, func(r refRow) string { return r.g }
	case "k":
		keys, key = refDomainK, func(r refRow) string { return strconv.FormatInt(r.k, 10) }
	}
	for _, k := range keys {
		var sel []float64
		for _, r := range rows {
			if key(r) != k || q.where != nil && !q.where.eval(r) {
				continue
			}
			v := math.NaN()
			if q.col == "x" {
				v = float64(r.x)
			} else if q.col == "f" {
				v = r.f
			}
			sel = append(sel, v)
		}
		sum := new(big.Rat)
		for _, v := range sel {
			sum.Add(sum, new(big.Rat).SetFloat64(orZero(v)))
		}
		var out float64
		switch q.agg {
		case "COUNT", "HISTOGRAM":
			out = float64(len(sel))
		case "SUM":
			out, _ = sum.Float64()
		case "AVG":
			out = math.NaN()
			if len(sel) > 0 {
				out, _ = sum.Quo(sum, big.NewRat(int64(len(sel)), 1)).Float64()
			}
		default:
			out = math.NaN()
			if len(sel) > 0 {
				slices.Sort(sel)
				// rank ⌈p·n⌉ by exact rationals, at least 1
				r := new(big.Rat).Mul(new(big.Rat).SetFloat64(q.p), big.NewRat(int64(len(sel)), 1))
				rank := new(big.Int).Quo(r.Num(), r.Denom()).Int64()
				if !r.IsInt() {
					rank++
				}
				out = sel[max(rank, 1)-1]
			}
		}
		vals = append(vals, out)
	}
	return keys, vals
}

func orZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func sameFloat(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// TestEvaluateMatchesReference compares Evaluate with the row-by-row reference on random
// tables and queries; the two must agree exactly (both round the exact value once).
func TestEvaluateMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxRows := rapid.IntRange(1, 3).Draw(t, "maxRows")
		rows := rapid.SliceOfN(genRow(8), 0, 60).Draw(t, "rows")
		q := genQuery.Draw(t, "query")
		tab, err := LoadCSV(strings.NewReader(refCSV(rows)), refSchema(maxRows), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := Prepare(tab, "t", q.sql(), sensitivity.AddRemove)
		if err != nil {
			t.Fatalf("Prepare(%q): %v", q.sql(), err)
		}
		got := p.Evaluate()
		keys, want := refEval(refBound(rows, maxRows), q)
		if p.Groups == nil {
			if !sameFloat(got.Value, want[0]) {
				t.Fatalf("%s = %v, reference %v", q.sql(), got.Value, want[0])
			}
			return
		}
		if len(got.Groups) != len(keys) {
			t.Fatalf("%s: %d groups, want %d", q.sql(), len(got.Groups), len(keys))
		}
		for i, g := range got.Groups {
			if g.Key != keys[i] || !sameFloat(g.Value, want[i]) {
				t.Fatalf("%s: group %d = %s:%v, reference %s:%v", q.sql(), i, g.Key, g.Value, keys[i], want[i])
			}
		}
	})
}
