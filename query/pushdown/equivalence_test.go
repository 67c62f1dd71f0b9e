package pushdown

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"pgregory.net/rapid"

	"github.com/dpkit/dpkit/internal/pgtest"
	"github.com/dpkit/dpkit/query"
	"github.com/dpkit/dpkit/sensitivity"
)

// The property that ties the two executors together: on the same rows, for the same
// plan and seed, the SQL statement run inside PostgreSQL (Table.Execute) and the
// in-memory executor (query.Table, loaded with per-query bounding and NULLs) give the
// same exact statistics for every group — counts, exact sums in grid units, value counts,
// units for partition selection. Tables, queries, bounds and seeds are random; the values
// are chosen to hit clamping at both bounds, rounding to the float grid (exact ties,
// values below half a grid step, subnormals), NULL and NaN, ±Infinity, numeric beyond
// the float64 range, keys outside the declared domains, empty selections and empty
// groups, units over MaxRows, MaxGroups and MaxRowsPerGroup with equal rows among them.

// row is one generated row. A nil pointer is NULL.
type row struct {
	u string  // privacy unit (text, or the decimal of a bigint)
	g string  // text, domain {a, b, c}; "d" occurs
	k *int64  // int [0, 4], domain 0..4; data in [−2, 6]
	h *int64  // int [0, 9], no domain (partition selection)
	s *string // text, no domain; NULL reads as ''
	x *int64  // int [−50, 100]; data beyond
	f fval    // float8 [−2, 3]
	n nval    // numeric, declared float [−1000, 1000]
	r fval    // real (float4), declared float [−2, 3]
}

// fval is a float8 value: NULL, NaN, or a number (±Inf included).
type fval struct {
	null, nan bool
	v         float64
}

// nval is a numeric value as text (NULL when null).
type nval struct {
	null bool
	text string
}

// γ of f is 2^-38 (bounds [−2, 3], 3 ≤ 2^2); ties of the grid are odd multiples of 2^-39.
var fValues = []float64{
	0, -0.5, 0.25, 1, 3, -2, 3.5, -7, 2.75, 0.1, 1.0 / 3, -2.0 / 3, 2.9999999999999996,
	0x1p-39, -0x1p-39, 3 * 0x1p-39, -3 * 0x1p-39, 0x1p-39 - 0x1p-92, 1 + 0x1p-39, 1 + 3*0x1p-40,
	5e-324, -5e-324, 1e-300, math.Inf(1), math.Inf(-1), math.MaxFloat64,
}

// fLiterals are the numbers WHERE compares f and r with; values near them are drawn too,
// so that the raw thresholds of floatCond (half a grid step either side) are hit.
var fLiterals = []float64{0.5, -1.25, 2.9999999999999996, 0x1p-38, 2.5, 1, 3, -2, 0, 0.1, 1.0 / 3, 2.75}

var nTexts = []string{"0", "1.5", "-999.999", "1000", "1000.0000000000001", "-1001", "1e400", "-1e400", "0.1", "123.456789012345678901234567890", "NaN"}

func genRow(units int, intUnit bool) *rapid.Generator[row] {
	ptr := func(t *rapid.T, name string, lo, hi int64) *int64 {
		if rapid.IntRange(0, 5).Draw(t, name+"Null") == 0 {
			return nil
		}
		v := rapid.Int64Range(lo, hi).Draw(t, name)
		return &v
	}
	return rapid.Custom(func(t *rapid.T) row {
		r := row{}
		u := rapid.IntRange(0, units-1).Draw(t, "u")
		if intUnit {
			r.u = strconv.Itoa(u*1000 - 2)
		} else {
			r.u = []string{"u0", "u1", "é", "", "u'4", "u 5", "u6", "u7"}[u]
		}
		r.g = rapid.SampledFrom([]string{"a", "b", "c", "d"}).Draw(t, "g")
		r.k = ptr(t, "k", -2, 6)
		r.h = ptr(t, "h", 0, 3)
		if rapid.IntRange(0, 5).Draw(t, "sNull") > 0 {
			s := rapid.SampledFrom([]string{"x", "y", "é", "", "a'b", "X"}).Draw(t, "s")
			r.s = &s
		}
		if rapid.IntRange(0, 5).Draw(t, "xNull") > 0 {
			x := rapid.SampledFrom([]int64{-80, -51, -50, -49, 0, 1, 2, 3, 50, 99, 100, 101, 130}).Draw(t, "x")
			r.x = &x
		}
		r.f = genFloat(t, "f")
		r.r = genFloat(t, "r")
		r.r.v = float64(float32(r.r.v))
		if rapid.IntRange(0, 6).Draw(t, "nNull") == 0 {
			r.n.null = true
		} else {
			r.n.text = rapid.SampledFrom(nTexts).Draw(t, "n")
		}
		return r
	})
}

// genFloat draws a float value: NULL, NaN, one of fValues, or a literal of fLiterals
// moved by a multiple of a quarter grid step (2^-40).
func genFloat(t *rapid.T, name string) fval {
	switch rapid.IntRange(0, 9).Draw(t, name+"Kind") {
	case 0:
		return fval{null: true}
	case 1:
		return fval{nan: true}
	case 2, 3, 4:
		return fval{v: rapid.SampledFrom(fLiterals).Draw(t, name+"Lit") + float64(rapid.IntRange(-4, 4).Draw(t, name+"Quarters"))*0x1p-40}
	}
	return fval{v: rapid.SampledFrom(fValues).Draw(t, name)}
}

func schemaOf(intUnit bool, unit *query.PrivacyUnit) query.Schema {
	ut := query.String
	if intUnit {
		ut = query.Int
	}
	s := query.Schema{Columns: []query.Column{
		{Name: "u", Type: ut, Min: -1e9, Max: 1e9},
		{Name: "g", Type: query.String, Domain: []string{"a", "b", "c"}},
		{Name: "k", Type: query.Int, Min: 0, Max: 4, Domain: []string{"0", "1", "2", "3", "4"}},
		{Name: "h", Type: query.Int, Min: 0, Max: 9},
		{Name: "s", Type: query.String},
		{Name: "x", Type: query.Int, Min: -50, Max: 100},
		{Name: "f", Type: query.Float, Min: -2, Max: 3},
		{Name: "n", Type: query.Float, Min: -1000, Max: 1000},
		{Name: "r", Type: query.Float, Min: -2, Max: 3},
	}, Unit: unit}
	if !intUnit {
		s.Columns[0].Min, s.Columns[0].Max = 0, 0
	}
	return s
}

// csvOf writes the rows as the in-memory executor reads them: NULL numbers as empty
// fields, NULL strings as ”, NaN as NULL, ±Inf and numeric beyond float64 as numbers
// that parse to ±Inf (clamped).
func csvOf(rows []row) string {
	var b strings.Builder
	b.WriteString("u,g,k,h,s,x,f,n,r\n")
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	num := func(v *int64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatInt(*v, 10)
	}
	for _, r := range rows {
		s := ""
		if r.s != nil {
			s = *r.s
		}
		f, rr := floatCSV(r.f), floatCSV(r.r)
		n := r.n.text
		if r.n.null || n == "NaN" {
			n = ""
		}
		u := q(r.u)
		fmt.Fprintf(&b, "%s,%s,%s,%s,%s,%s,%s,%s,%s\n", u, q(r.g), num(r.k), num(r.h), q(s), num(r.x), f, n, rr)
	}
	return b.String()
}

// floatCSV is a float value as a CSV field.
func floatCSV(f fval) string {
	switch {
	case f.null, f.nan:
		return ""
	case math.IsInf(f.v, 1):
		return "1e999"
	case math.IsInf(f.v, -1):
		return "-1e999"
	}
	return strconv.FormatFloat(f.v, 'g', -1, 64)
}

// sqlFloat is a float value as a query argument of a real column (float32) or not.
func sqlFloat(f fval, real bool) any {
	switch {
	case f.null:
		return nil
	case f.nan && real:
		return float32(math.NaN())
	case f.nan:
		return math.NaN()
	case real:
		return float32(f.v)
	}
	return f.v
}

// load creates table name with the rows in the database at url.
func load(ctx context.Context, t interface{ Fatal(...any) }, url, name string, rows []row, intUnit bool) {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ut := "text"
	if intUnit {
		ut = "bigint"
	}
	if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+name+"; CREATE TABLE "+name+" (u "+ut+", g text, k integer, h bigint, s text, x smallint, f double precision, n numeric, r real)"); err != nil {
		t.Fatal(err)
	}
	for start := 0; start < len(rows); start += 50 {
		batch := rows[start:min(start+50, len(rows))]
		var vals []string
		var args []any
		for _, r := range batch {
			var n any
			if !r.n.null {
				n = r.n.text
			}
			var x *int16
			if r.x != nil {
				v := int16(*r.x)
				x = &v
			}
			var u any = r.u
			if intUnit {
				u, _ = strconv.ParseInt(r.u, 10, 64)
			}
			b := len(args)
			vals = append(vals, fmt.Sprintf("($%d, $%d, $%d, $%d, $%d, $%d, $%d, CAST($%d AS numeric), $%d)", b+1, b+2, b+3, b+4, b+5, b+6, b+7, b+8, b+9))
			args = append(args, u, r.g, r.k, r.h, r.s, x, sqlFloat(r.f, false), n, sqlFloat(r.r, true))
		}
		if _, err := conn.Exec(ctx, "INSERT INTO "+name+" VALUES "+strings.Join(vals, ", "), args...); err != nil {
			t.Fatal(err)
		}
	}
}

// genQuery returns a random query of COUNT, SUM and AVG aggregates with a random WHERE
// clause and GROUP BY.
var genQuery = rapid.Custom(func(t *rapid.T) string {
	aggs := rapid.SliceOfN(rapid.SampledFrom([]string{"COUNT(*)", "SUM(x)", "SUM(f)", "SUM(n)", "SUM(r)", "AVG(x)", "AVG(f)", "AVG(n)", "AVG(r)"}), 1, 3).Draw(t, "aggs")
	sql := "SELECT " + strings.Join(aggs, ", ") + " FROM t"
	if rapid.Bool().Draw(t, "hasWhere") {
		sql += " WHERE " + genCond(2).Draw(t, "where")
	}
	if g := rapid.SampledFrom([]string{"", "", "g", "k", "g, k", "h", "s", "k, s", "h, g"}).Draw(t, "groupBy"); g != "" {
		sql += " GROUP BY " + g
	}
	return sql
})

func genCond(depth int) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		if depth > 0 && rapid.IntRange(0, 2).Draw(t, "nest") == 0 {
			op := rapid.SampledFrom([]string{"AND", "OR"}).Draw(t, "logic")
			return "(" + genCond(depth-1).Draw(t, "a") + " " + op + " " + genCond(depth-1).Draw(t, "b") + ")"
		}
		col := rapid.SampledFrom([]string{"g", "s", "k", "h", "x", "f", "n", "r"}).Draw(t, "col")
		op := rapid.SampledFrom([]string{"=", "!=", "<>", "<", "<=", ">", ">="}).Draw(t, "op")
		var lit string
		switch col {
		case "g", "s":
			lit = "'" + strings.ReplaceAll(rapid.SampledFrom([]string{"a", "b", "d", "", "x", "é", "a'b", "X"}).Draw(t, "str"), "'", "''") + "'"
		case "f", "r":
			lits := slices.Clone(fLiterals)
			for _, v := range fValues {
				if !math.IsInf(v, 0) {
					lits = append(lits, v)
				}
			}
			lit = strconv.FormatFloat(rapid.SampledFrom(lits).Draw(t, "fl"), 'g', -1, 64)
		default:
			lit = strconv.FormatFloat(float64(rapid.IntRange(-24, 420).Draw(t, "n"))/4, 'g', -1, 64)
		}
		return col + " " + op + " " + lit
	})
}

// TestExecutorsAgree: the SQL executor and the in-memory executor give the same exact
// statistics (see the top of this file).
func TestExecutorsAgree(t *testing.T) {
	url := pgtest.Schema(t, "pushdown_")
	ctx := context.Background()
	cases := 0
	rapid.Check(t, func(rt *rapid.T) {
		cases++
		intUnit := rapid.Bool().Draw(rt, "intUnit")
		var unit *query.PrivacyUnit
		if rapid.IntRange(0, 3).Draw(rt, "rowwise") > 0 {
			m := rapid.IntRange(1, 3).Draw(rt, "maxRows")
			unit = &query.PrivacyUnit{Column: "u", MaxRows: m,
				MaxGroups: rapid.IntRange(0, 3).Draw(rt, "maxGroups"), MaxRowsPerGroup: rapid.IntRange(0, m).Draw(rt, "perGroup")}
		}
		rows := rapid.SliceOfN(genRow(8, intUnit), 0, 60).Draw(rt, "rows")
		sql := genQuery.Draw(rt, "query")
		var seed query.Seed
		copy(seed[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(rt, "seed"))

		schema := schemaOf(intUnit, unit)
		name := "t" + strconv.Itoa(cases%4) // a few tables: DROP + CREATE per case
		load(ctx, rt, url, name, rows, intUnit)
		p, err := query.PrepareSchema(schema, "t", sql, sensitivity.AddRemove)
		if err != nil {
			rt.Fatalf("PrepareSchema(%q): %v", sql, err)
		}
		mem, live := openBoth(ctx, rt, url, name, rows, schema)
		defer live.Close()
		if err := agree(ctx, p, mem, live, seed); err != nil {
			rt.Fatalf("%s: %v", sql, err)
		}
	})
}

// openBoth returns the rows of table name (whose rows are rows) in memory, for the
// in-memory executor, and as a live table.
func openBoth(ctx context.Context, t interface{ Fatalf(string, ...any) }, url, name string, rows []row, schema query.Schema) (*query.Table, *Table) {
	mem, err := query.LoadCSV(strings.NewReader(csvOf(rows)), schema, query.LoadOptions{BoundPerQuery: true, Nulls: true})
	if err != nil {
		t.Fatalf("LoadCSV: %v", err)
	}
	live, err := Open(ctx, Source{URL: url, Name: name}, schema, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return mem, live
}

// agree runs plan p with seed on both executors and returns what differs, if anything.
func agree(ctx context.Context, p *query.Plan, mem *query.Table, live *Table, seed query.Seed) error {
	want, err := p.Collect(ctx, mem, seed)
	if err != nil {
		return fmt.Errorf("in memory: %v", err)
	}
	got, err := p.Collect(ctx, live, seed)
	if err != nil {
		return fmt.Errorf("in PostgreSQL: %v", err)
	}
	dump := func(gs []*query.GroupExact) string {
		var b strings.Builder
		for _, g := range gs {
			b.WriteString(g.String() + "\n")
		}
		return b.String()
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d groups in PostgreSQL, %d in memory:\n%s\n%s", len(got), len(want), dump(got), dump(want))
	}
	for i := range want {
		if got[i].String() != want[i].String() {
			return fmt.Errorf("group %d differs\nPostgreSQL: %s\nin memory:  %s", i, got[i], want[i])
		}
	}
	return nil
}

// TestComparisonsExhaustive: every comparison operator with every literal of a list,
// against columns holding values at and around each literal (a quarter of the float grid
// step apart, integers beyond the bounds), gives the same rows in PostgreSQL as in
// memory — the raw thresholds of the SQL executor (half a grid step from the literal,
// strict or not by the parity of the grid index) checked one by one, which the random
// test above reaches only now and then.
func TestComparisonsExhaustive(t *testing.T) {
	url := pgtest.Schema(t, "pushdown_cmp_")
	ctx := context.Background()
	var rows []row
	x := func(v int64) *int64 { return &v }
	for _, l := range fLiterals {
		for k := -4; k <= 4; k++ {
			v := l + float64(k)*0x1p-40
			rows = append(rows, row{u: "u", g: "a", x: x(int64(k * 30)), k: x(int64(k)), f: fval{v: v}, r: fval{v: float64(float32(v))}, n: nval{text: strconv.FormatFloat(v*300, 'g', -1, 64)}})
		}
	}
	rows = append(rows, row{u: "u", g: "a", f: fval{nan: true}, r: fval{null: true}, n: nval{text: "NaN"}},
		row{u: "u", g: "a", f: fval{v: math.Inf(1)}, r: fval{v: math.Inf(-1)}, n: nval{text: "1e400"}})
	load(ctx, t, url, "t", rows, false)
	schema := schemaOf(false, nil)
	mem, live := openBoth(ctx, t, url, "t", rows, schema)
	defer live.Close()
	lits := map[string][]float64{"f": fLiterals, "r": fLiterals, "n": {0, 150, -375, 300, 1000, 999.9999999999999, -1000}, "x": {-120.25, -50, -49.5, 0, 30, 100, 100.5, 120}, "k": {-1, 0, 0.5, 2, 4, 4.25, 5}}
	for col, ls := range lits {
		for _, l := range ls {
			for _, op := range []string{"=", "!=", "<", "<=", ">", ">="} {
				sql := fmt.Sprintf("SELECT COUNT(*), SUM(f) FROM t WHERE %s %s %s", col, op, strconv.FormatFloat(l, 'g', -1, 64))
				p, err := query.PrepareSchema(schema, "t", sql, sensitivity.AddRemove)
				if err != nil {
					t.Fatal(err)
				}
				if err := agree(ctx, p, mem, live, query.Seed{}); err != nil {
					t.Errorf("%s: %v", sql, err)
				}
			}
		}
	}
}
