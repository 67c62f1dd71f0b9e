package query

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/dpkit/dpkit"
)

// The SQL executor's half that knows the plan: Compile writes a plan's exact steps as one
// SQL statement over the table where it lives, and Statement.Decode reads its result.
// Package query/pushdown runs it on PostgreSQL.

// SQLTable says where a plan's table lives in a SQL database.
type SQLTable struct {
	// Name is the table's name, one part per element ({"hr", "pay"} or {"pay"}); each
	// part is a quoted identifier in the statement, taken literally.
	Name []string
	// Columns are the database columns of the schema's columns, in schema order (nil:
	// the schema's names, of the natural types bigint, double precision and text).
	Columns []SQLColumn
}

// SQLColumn is the database column holding a schema column: its name (a quoted
// identifier in the statement, taken literally) and its PostgreSQL base type
// (pg_type.typname: int2, int4, int8, float4, float8, numeric, text, …; "" for the
// natural type). A Float column of type numeric is clamped in numeric before it is CAST
// to double precision, so that no value is out of its range.
type SQLColumn struct {
	Name string
	Type string
}

// Statement is a plan's exact steps as one SQL statement: SQL with the positional
// parameters $1, $2, … whose values are Args (int64, float64, string, []int64 or
// []string). Each row of its result is one group; Decode reads it.
type Statement struct {
	SQL  string
	Args []any

	p       *Plan
	columns int // columns of a result row
}

// Compile writes the exact steps of p, on table t, with contribution bounding keyed by
// seed, as one SQL statement for PostgreSQL (and engines that accept its dialect: see
// docs/service.md): a SELECT with window functions, no temporary table, no function
// defined in the database, that returns one row per non-empty group — its key, the rows,
// the distinct units with partition selection, and per SUM or AVG the count and the exact
// sum of its non-NULL values in grid units — and never a row of the table. Nothing of the
// query's text reaches the statement but through Args and quoted identifiers.
//
// What it computes is what the in-memory executor computes (the same GroupExact), for
// the same table and seed:
//
//   - values: an Int column is CAST to bigint and clamped (CASE, so that NULL stays
//     NULL); a Float column is CAST to double precision, clamped to its grid's ends
//     (±Infinity to the bounds) and divided by γ (exact), then CAST to bigint, which
//     rounds to the nearest grid index m, ties to even, in [⌈lo/γ⌉, ⌊hi/γ⌋] (values below
//     γ/2 in magnitude are 0 without dividing, so that nothing underflows) — the value is
//     m·γ, and SUM adds the integers m (bigint sums are numeric, exact); NaN is NULL; a
//     String column is CAST to text, NULL read as ”. Without a privacy unit, Int
//     grouping columns are grouped by their raw values first and clamped per partial
//     group (twoLevel);
//   - WHERE compares those values: Int columns with the exact integer ranges the
//     in-memory executor uses, Float columns as m·γ (exact) with the literal as a double,
//     String columns byte-wise (COLLATE "C"); a comparison with NULL is not true;
//   - rows: those passing WHERE, in a group (a declared domain's value, tested with
//     = ANY of the domain, or a non-NULL value for a column without one) and, with a
//     privacy unit, with a non-NULL unit;
//   - contribution bounding (bounding.go): the row key's numbering j is ROW_NUMBER()
//     over the unit's rows equal in every value the query reads; the kept rows are those
//     whose ROW_NUMBER() over the unit ordered by row key (computed only for a unit over
//     MaxRows) is at most MaxRows; the kept groups those whose DENSE_RANK() over the unit
//     ordered by group key (only for a unit over MaxGroups) is at most MaxGroups, and in
//     them the rows whose ROW_NUMBER() over the unit's group ordered by row key (only for
//     a group over MaxRowsPerGroup) is at most MaxRowsPerGroup. Keys are md5() of the
//     documented text (the seed a parameter), compared as text in the "C" collation.
//     Without a privacy unit each row is a unit, every bound holds, and no window is
//     needed: the statement is a plain aggregate over the clamped values.
//
// MEDIAN and QUANTILE are refused (an *Error at the aggregate): their mechanism needs the
// sorted values, which are rows. A Float privacy-unit column is refused (a
// *dpkit.ParamError), as its text in the database is not Go's.
func (p *Plan) Compile(t SQLTable, seed Seed) (*Statement, error) {
	for _, a := range p.b.aggs {
		if f := a.fn(); f == Median || f == Quantile {
			return nil, errorf(a.Pos, "%s cannot be computed inside the database: its mechanism needs the sorted values, which are rows (use COUNT, SUM, AVG or HISTOGRAM)", a.Func)
		}
	}
	if u := p.schema.Unit; u != nil && p.schema.Columns[p.schema.column(u.Column)].Type == Float {
		return nil, &dpkit.ParamError{Pkg: "query", Name: "privacy_unit.column", Value: u.Column, Want: "an int or string column to identify units inside the database"}
	}
	if len(t.Name) == 0 || t.Columns != nil && len(t.Columns) != len(p.schema.Columns) {
		return nil, fmt.Errorf("query: SQLTable: %d name parts and %d columns for %d declared columns", len(t.Name), len(t.Columns), len(p.schema.Columns))
	}
	c := &compiler{p: p, t: t, seed: seed}
	st := &Statement{p: p}
	st.SQL, st.columns = c.statement()
	st.Args = c.args
	return st, nil
}

// Columns returns the number of columns of a result row.
func (st *Statement) Columns() int { return st.columns }

// Decode reads one result row, every column as text (NULL as nil), into the statistics of
// its group.
func (st *Statement) Decode(row []*string) (*GroupExact, error) {
	p := st.p
	if len(row) != st.columns {
		return nil, fmt.Errorf("query: result row of %d columns, want %d", len(row), st.columns)
	}
	g := &GroupExact{Aggs: make([]AggregateExact, len(p.Aggregates))}
	k := 0
	text := func() (string, error) {
		v := row[k]
		k++
		if v == nil {
			return "", fmt.Errorf("query: NULL in column %d of a result row", k)
		}
		return *v, nil
	}
	integer := func() (int64, error) {
		s, err := text()
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(s, 10, 64)
	}
	if p.GroupColumns != nil {
		g.Keys = make([]string, len(p.GroupColumns))
		for j := range g.Keys {
			s, err := text()
			if err != nil {
				return nil, err
			}
			g.Keys[j] = s
		}
	}
	var err error
	if g.Rows, err = integer(); err != nil {
		return nil, err
	}
	if g.Units, err = integer(); err != nil {
		return nil, err
	}
	for i, a := range p.Aggregates {
		if a.Func != Sum && a.Func != Avg {
			continue
		}
		if g.Aggs[i].N, err = integer(); err != nil {
			return nil, err
		}
		s, err := text()
		if err != nil {
			return nil, err
		}
		sum, ok := new(big.Int).SetString(s, 10)
		if !ok {
			return nil, fmt.Errorf("query: sum %q is not an integer", s)
		}
		g.Aggs[i].Sum = sum
	}
	return g, nil
}

// compiler builds one statement.
type compiler struct {
	p    *Plan
	t    SQLTable
	seed Seed
	args []any
	// rawGroups: Int grouping columns whose candidate value is the raw column, clamped
	// only after a first aggregation (twoLevel); partial: the final aggregate adds up
	// that aggregation's partial counts and sums.
	rawGroups map[int]bool
	partial   bool
}

// param adds a parameter and returns its placeholder, cast to typ.
func (c *compiler) param(v any, typ string) string {
	c.args = append(c.args, v)
	return fmt.Sprintf("CAST($%d AS %s)", len(c.args), typ)
}

// quoteIdent quotes a name as an SQL identifier, taken literally: in double quotes,
// inner double quotes doubled, NUL bytes dropped (pgx.Identifier.Sanitize's rule).
func quoteSQLIdent(s string) string {
	return `"` + strings.ReplaceAll(strings.ReplaceAll(s, "\x00", ""), `"`, `""`) + `"`
}

// table returns the quoted name of the table.
func (c *compiler) table() string {
	parts := make([]string, len(c.t.Name))
	for i, n := range c.t.Name {
		parts[i] = quoteSQLIdent(n)
	}
	return strings.Join(parts, ".")
}

// raw returns the quoted database column of schema column i.
func (c *compiler) raw(i int) string {
	if c.t.Columns != nil {
		return quoteSQLIdent(c.t.Columns[i].Name)
	}
	return quoteSQLIdent(c.p.schema.Columns[i].Name)
}

// dbType returns the database type of schema column i ("" if natural).
func (c *compiler) dbType(i int) string {
	if c.t.Columns != nil {
		return c.t.Columns[i].Type
	}
	return ""
}

// alias returns the name of schema column i's value in the statement's inner queries.
func alias(i int) string { return "c" + strconv.Itoa(i) }

// nonNullAlias returns the name of the non-NULL indicator of column i (see nonNull).
func nonNullAlias(i int) string { return "n" + strconv.Itoa(i) }

// unitAlias is the name of the privacy unit in the inner queries.
const unitAlias = "u"

// value returns the expression of schema column i's value: a clamped Int, the grid
// index of a Float, or text.
func (c *compiler) value(i int) string {
	decl := &c.p.schema.Columns[i]
	switch decl.Type {
	case Int:
		return c.clampedInt(i, "CAST("+c.raw(i)+" AS bigint)")
	case Float:
		g, _, _ := floatGrid(decl.Min, decl.Max)
		x := c.clampedFloat(i)
		if g > 1 { // x/γ could underflow (an error in PostgreSQL) for |x| < γ·2^-1074
			x = fmt.Sprintf("CASE WHEN abs(%s) < %s THEN 0 ELSE %s END", x, c.param(g/2, "double precision"), x)
		}
		return fmt.Sprintf("CAST(%s / %s AS bigint)", x, c.param(g, "double precision"))
	}
	return "COALESCE(CAST(" + c.raw(i) + " AS text), '')"
}

// clampedInt returns the expression of v, a bigint of Int column i, clamped to its bounds
// (NULL stays NULL).
func (c *compiler) clampedInt(i int, v string) string {
	decl := &c.p.schema.Columns[i]
	lo, hi := c.param(int64(decl.Min), "bigint"), c.param(int64(decl.Max), "bigint")
	return fmt.Sprintf("CASE WHEN %s < %s THEN %s WHEN %s > %s THEN %s ELSE %s END", v, lo, lo, v, hi, hi, v)
}

// clampedFloat returns the expression of Float column i clamped to its grid's ends
// [⌈lo/γ⌉·γ, ⌊hi/γ⌋·γ] (±Infinity to the ends), NULL for NULL and NaN. Its quotient by γ
// is then exact and within the grid indices, and CAST to bigint rounds it to the nearest
// integer, ties to even (PostgreSQL's rint) — the in-memory rounding (Table). A numeric
// column is clamped in numeric, then CAST: beyond ±1.8e308 the CAST would fail, and the
// nearest double of a value clamped to the decimal ends is the double clamped.
func (c *compiler) clampedFloat(i int) string {
	decl := &c.p.schema.Columns[i]
	g, mlo, mhi := floatGrid(decl.Min, decl.Max)
	lo, hi := mlo*g, mhi*g
	q := c.raw(i)
	if c.dbType(i) == "numeric" {
		num := func(x float64) string { return c.param(strconv.FormatFloat(x, 'g', -1, 64), "numeric") }
		a, b := num(lo), num(hi)
		return fmt.Sprintf("CASE WHEN %s = CAST('NaN' AS numeric) THEN NULL ELSE CAST(CASE WHEN %s < %s THEN %s WHEN %s > %s THEN %s ELSE %s END AS double precision) END",
			q, q, a, a, q, b, b, q)
	}
	x := "CAST(" + q + " AS double precision)"
	a, b := c.param(lo, "double precision"), c.param(hi, "double precision")
	return fmt.Sprintf("CASE WHEN %s = CAST('NaN' AS double precision) THEN NULL WHEN %s < %s THEN %s WHEN %s > %s THEN %s ELSE %s END",
		x, x, a, a, x, b, b, x)
}

// unitValue returns the expression of the privacy unit: the raw value of an Int column
// (not clamped), the text of a String column (NULL read as ”).
func (c *compiler) unitValue(i int) string {
	if c.p.schema.Columns[i].Type == Int {
		return "CAST(" + c.raw(i) + " AS bigint)"
	}
	return c.value(i)
}

// where returns the WHERE condition. Comparisons are on the raw columns where that is
// exact — an Int column against the range of raw values whose clamped value passes, a
// Float column (not numeric) against the range of raw values whose grid value passes, a
// text column's equality — so that the database can use its indexes and estimates; the
// other comparisons are on the values (aliases).
func (c *compiler) where(e Expr) string {
	switch e := e.(type) {
	case *Logic:
		terms := make([]string, len(e.Terms))
		for i, t := range e.Terms {
			terms[i] = c.where(t)
		}
		return "(" + strings.Join(terms, " "+e.Op+" ") + ")"
	case *Comparison:
		i := c.p.schema.column(e.Column)
		switch decl := &c.p.schema.Columns[i]; {
		case decl.Type == Int:
			return c.intCond(i, e)
		case decl.Type == Float && c.dbType(i) != "numeric":
			return c.floatCond(i, e)
		case decl.Type == Float:
			op := sqlOp(e.Op)
			g, _, _ := floatGrid(decl.Min, decl.Max)
			return fmt.Sprintf("(CAST(%s AS double precision) * %s %s %s)", c.value(i), c.param(g, "double precision"), op, c.param(e.Value.Num, "double precision"))
		}
		return c.stringCond(i, e)
	}
	panic("query: unknown expression type") // unreachable: Expr is sealed
}

func sqlOp(op string) string {
	if op == "!=" {
		return "<>"
	}
	return op
}

// rangeCond returns the condition lo ≤ x ≤ hi on the raw expression x, each side
// written only if given (lower/upper), ">" or "<" where strict, NOT NULL (and, with
// notNaN, not NaN) implied; negated (a NOT NULL row outside the range) when negate.
func rangeCond(x, lower, upper string, strictLo, strictHi, negate bool, notNaN string) string {
	var conds []string
	if lower != "" {
		op := " >= "
		if strictLo {
			op = " > "
		}
		conds = append(conds, x+op+lower)
	}
	if upper != "" {
		op := " <= "
		if strictHi {
			op = " < "
		}
		conds = append(conds, x+op+upper)
	}
	present := x + " IS NOT NULL"
	if notNaN != "" {
		present = x + " <> " + notNaN // also false for NULL
	}
	if len(conds) == 0 {
		if negate {
			return "FALSE"
		}
		return "(" + present + ")"
	}
	cond := strings.Join(conds, " AND ")
	if negate {
		return "(" + present + " AND NOT (" + cond + "))"
	}
	if notNaN != "" && upper == "" {
		cond += " AND " + present // NaN is above every number in PostgreSQL
	}
	return "(" + cond + ")"
}

// intCond writes a comparison on an Int column on its raw values: the clamped value
// passes "v op x" exactly when it is in the integer range [a, b] of intBounds, and a raw
// value r clamps into that range exactly when r ≥ a (unless a ≤ min: always) and r ≤ b
// (unless b ≥ max).
func (c *compiler) intCond(i int, e *Comparison) string {
	decl := &c.p.schema.Columns[i]
	x := c.raw(i)
	a, b, negate, none := intBounds(e.Op, e.Value.Num)
	lo, hi := int64(decl.Min), int64(decl.Max)
	if none || a > hi || b < lo || a > b {
		return rangeCond(x, "", "", false, false, !negate, "")
	}
	var lower, upper string
	if a > lo {
		lower = c.param(a, "bigint")
	}
	if b < hi {
		upper = c.param(b, "bigint")
	}
	return rangeCond(x, lower, upper, false, false, negate, "")
}

// floatCond writes a comparison on a Float column on its raw values: the grid value m·γ
// passes "m·γ op v" exactly when the grid index m is in an integer range [a, b] (exact
// floor and ceiling of v/γ), and m = RoundToEven(clamp(x)/γ) ≥ a (a above the lowest
// index) exactly when x ≥ (a − ½)·γ for an even a, x > (a − ½)·γ for an odd one (the
// tie goes to the even index); likewise m ≤ b against (b + ½)·γ.
func (c *compiler) floatCond(i int, e *Comparison) string {
	decl := &c.p.schema.Columns[i]
	g, mlo, mhi := floatGrid(decl.Min, decl.Max)
	lo, hi := int64(mlo), int64(mhi)
	a, b, negate := gridRange(e.Op, e.Value.Num, g, lo, hi)
	x := "CAST(" + c.raw(i) + " AS double precision)"
	nan := "CAST('NaN' AS double precision)"
	if a > b {
		return rangeCond(x, "", "", false, false, !negate, nan)
	}
	var lower, upper string
	var strictLo, strictHi bool
	if a > lo {
		lower, strictLo = c.param((float64(a)-0.5)*g, "double precision"), a%2 != 0
	}
	if b < hi {
		upper, strictHi = c.param((float64(b)+0.5)*g, "double precision"), b%2 != 0
	}
	return rangeCond(x, lower, upper, strictLo, strictHi, negate, nan)
}

// gridRange returns the range [a, b] of grid indices m in [lo, hi] for which m·γ op v
// holds (negate: for "!=", the complement of the range of "="); a > b when none does.
func gridRange(op string, v, g float64, lo, hi int64) (a, b int64, negate bool) {
	q := newFloat().SetFloat64(v)
	q.SetMantExp(q, -math.Ilogb(g)) // v/γ, exact (γ a power of two)
	fl, ce := floorCeil(q, lo-1, hi+1)
	switch op {
	case "<":
		return lo, ce - 1, false
	case "<=":
		return lo, fl, false
	case ">":
		return fl + 1, hi, false
	case ">=":
		return ce, hi, false
	}
	a, b = ce, fl // "=" or "!=": v/γ an integer in [lo, hi]
	if a != b {
		a, b = 1, 0
	}
	return max(a, lo), min(b, hi), op == "!="
}

// floorCeil returns ⌊q⌋ and ⌈q⌉, clamped to [min, max].
func floorCeil(q *big.Float, min, max int64) (int64, int64) {
	switch {
	case q.Cmp(newFloat().SetInt64(min)) < 0:
		return min, min
	case q.Cmp(newFloat().SetInt64(max)) > 0:
		return max, max
	}
	t, acc := q.Int64() // truncated toward zero
	switch {
	case acc == big.Exact:
		return t, t
	case q.Sign() < 0:
		return t - 1, t
	}
	return t, t + 1
}

// stringCond writes a comparison on a String column, whose value is the text of the
// column, NULL read as ”: byte-wise (COLLATE "C"); equality of a text column on the
// raw column.
func (c *compiler) stringCond(i int, e *Comparison) string {
	lit := e.Value.Text
	if t := c.dbType(i); (t == "" || t == "text" || t == "varchar") && (e.Op == "=" || e.Op == "!=") {
		q := c.raw(i)
		switch {
		case e.Op == "=" && lit == "":
			return "(" + q + " IS NULL OR " + q + " = '')"
		case e.Op == "=":
			return "(" + q + " = " + c.param(lit, "text") + ")"
		case lit == "":
			return "(" + q + " <> '')"
		}
		return "(" + q + " IS NULL OR " + q + " <> " + c.param(lit, "text") + ")"
	}
	return fmt.Sprintf("(%s COLLATE \"C\" %s %s)", c.value(i), sqlOp(e.Op), c.param(lit, "text"))
}

// candidates returns the query of the candidate rows: the values the query reads
// (aliases c<i>, and u for the unit) of the rows passing WHERE, in a group, with a unit.
func (c *compiler) candidates() string {
	p := c.p
	used := map[int]bool{}
	for _, g := range p.b.groups {
		used[g] = true
	}
	for _, v := range p.b.aggColumns() {
		used[v] = true
	}
	var cols []string
	for i := range p.schema.Columns {
		switch {
		case c.rawGroups[i]:
			cols = append(cols, c.raw(i)+" AS "+alias(i))
		case used[i]:
			cols = append(cols, c.value(i)+" AS "+alias(i))
		}
	}
	for _, v := range p.b.aggColumns() {
		cols = append(cols, c.nonNull(v)+" AS "+nonNullAlias(v))
	}
	var conds []string
	if u := p.schema.Unit; u != nil {
		i := p.schema.column(u.Column)
		cols = append(cols, c.unitValue(i)+" AS "+unitAlias)
		if p.schema.Columns[i].Type == Int {
			conds = append(conds, c.raw(i)+" IS NOT NULL")
		}
	}
	if len(cols) == 0 {
		cols = []string{"1 AS one"}
	}
	if p.Query.Where != nil {
		conds = append(conds, c.where(p.Query.Where))
	}
	for j, g := range p.b.groups {
		decl := &p.schema.Columns[g]
		switch {
		case p.domains[j] == nil && decl.Type == Int:
			conds = append(conds, c.raw(g)+" IS NOT NULL")
		case p.domains[j] == nil: // a String value is never NULL
		case decl.Type == Int:
			conds = append(conds, c.intDomainCond(g, p.domains[j]))
		default:
			conds = append(conds, c.stringDomainCond(g, p.domains[j]))
		}
	}
	sql := "SELECT " + strings.Join(cols, ", ") + " FROM " + c.table()
	if len(conds) > 0 {
		sql += " WHERE " + strings.Join(conds, " AND ")
	}
	return sql
}

// intDomainCond returns the condition that the clamped value of Int column i is in the
// domain: on the raw column when the domain is one run of consecutive integers (as
// intCond does for a range), else = ANY of the domain on the clamped value.
func (c *compiler) intDomainCond(i int, domain []string) string {
	vals := make([]int64, len(domain))
	for k, s := range domain {
		vals[k], _ = strconv.ParseInt(s, 10, 64)
	}
	a, b := slices.Min(vals), slices.Max(vals)
	if b-a+1 != int64(len(vals)) { // not one run (values are distinct)
		return c.value(i) + " = ANY(" + c.param(vals, "bigint[]") + ")"
	}
	decl := &c.p.schema.Columns[i]
	var lower, upper string
	if a > int64(decl.Min) {
		lower = c.param(a, "bigint")
	}
	if b < int64(decl.Max) {
		upper = c.param(b, "bigint")
	}
	return rangeCond(c.raw(i), lower, upper, false, false, false, "")
}

// stringDomainCond returns the condition that the value of String column i (NULL read as
// ”) is in the domain: on the raw column for a text column.
func (c *compiler) stringDomainCond(i int, domain []string) string {
	if t := c.dbType(i); t != "" && t != "text" && t != "varchar" {
		return c.value(i) + " = ANY(" + c.param(domain, "text[]") + ")"
	}
	cond := c.raw(i) + " = ANY(" + c.param(domain, "text[]") + ")"
	if slices.Contains(domain, "") {
		cond = "(" + c.raw(i) + " IS NULL OR " + cond + ")"
	}
	return cond
}

// nonNull returns an expression that is NULL exactly when the value of numeric column i
// is (NULL, or NaN for a Float), cheaper than the value: COUNT of it counts the values.
func (c *compiler) nonNull(i int) string {
	decl := &c.p.schema.Columns[i]
	switch {
	case decl.Type == Int:
		return c.raw(i)
	case c.dbType(i) == "numeric":
		return "NULLIF(" + c.raw(i) + ", CAST('NaN' AS numeric))"
	}
	return "NULLIF(CAST(" + c.raw(i) + " AS double precision), CAST('NaN' AS double precision))"
}

// groupList returns the grouping columns' aliases, joined by ", ".
func (c *compiler) groupList() string {
	names := make([]string, len(c.p.b.groups))
	for j, g := range c.p.b.groups {
		names[j] = alias(g)
	}
	return strings.Join(names, ", ")
}

// content returns the aliases of the values that tell a unit's rows apart: the grouping
// columns and the columns the aggregates read.
func (c *compiler) content() []string {
	var names []string
	for _, g := range c.p.b.groups {
		names = append(names, alias(g))
	}
	for _, v := range c.p.b.aggColumns() {
		names = append(names, alias(v))
	}
	return names
}

// enc returns the text of schema column i's value in a key (bounding.go): a String
// value's length in bytes, ':' and the value; an integer in decimal, NULL as 'N'.
func (c *compiler) enc(i int, name string) string {
	if c.p.schema.Columns[i].Type == String {
		return "CAST(octet_length(" + name + ") AS text) || ':' || " + name
	}
	return "COALESCE(CAST(" + name + " AS text), 'N')"
}

// unitEnc returns the text of the unit in a key.
func (c *compiler) unitEnc() string {
	i := c.p.schema.column(c.p.schema.Unit.Column)
	if c.p.schema.Columns[i].Type == String {
		return c.enc(i, unitAlias)
	}
	return "CAST(" + unitAlias + " AS text)"
}

// key returns the expression of a row key (kind 'r') or group key ('g').
func (c *compiler) key(kind byte, seed string) string {
	parts := []string{c.unitEnc()}
	for _, g := range c.p.b.groups {
		parts = append(parts, c.enc(g, alias(g)))
	}
	if kind == 'r' {
		for _, v := range c.p.b.aggColumns() {
			parts = append(parts, c.enc(v, alias(v)))
		}
		parts = append(parts, "CAST(j AS text)")
	}
	return "md5(" + seed + " || '/" + string(kind) + "/' || " + strings.Join(parts, " || '/' || ") + ")"
}

// outputs returns the aggregates of the result row after the key: rows, units (units
// is given), and per SUM or AVG the count and the sum of its non-NULL values.
func (c *compiler) outputs(units string) ([]string, int) {
	rows, count := "COUNT(*)", "COUNT("
	if c.partial { // the partial aggregates of twoLevel
		rows, count = "SUM(m)", "SUM("
	}
	out := []string{"CAST(" + rows + " AS text)", "CAST(" + units + " AS text)"}
	for i, a := range c.p.Aggregates {
		if a.Func != Sum && a.Func != Avg {
			continue
		}
		v := alias(c.p.b.aggs[i].col)
		n := nonNullAlias(c.p.b.aggs[i].col)
		out = append(out, "CAST("+count+n+") AS text)", "CAST(COALESCE(SUM("+v+"), 0) AS text)")
	}
	return out, len(out) + len(c.p.b.groups)
}

// final returns the final aggregate over relation from (with conditions cond, if any),
// after the common table expressions ctes, and the number of columns of its rows.
func (c *compiler) final(ctes []string, from, cond, units string) (string, int) {
	outs, n := c.outputs(units)
	cols := outs
	if c.p.b.groups != nil {
		keys := make([]string, len(c.p.b.groups))
		for j, g := range c.p.b.groups {
			keys[j] = "CAST(" + alias(g) + " AS text)"
		}
		cols = append(keys, outs...)
	}
	sql := ""
	if len(ctes) > 0 {
		sql = "WITH " + strings.Join(ctes, ", ") + " "
	}
	sql += "SELECT " + strings.Join(cols, ", ") + " FROM " + from
	if cond != "" {
		sql += " WHERE " + cond
	}
	if c.p.b.groups != nil {
		sql += " GROUP BY " + c.groupList()
	}
	return sql, n
}

// twoLevel returns, for a query without a privacy unit grouped by Int columns (not
// aggregated) of an integer type in the database, the relation of partial aggregates
// whose sums the final aggregate adds up (partial): the candidate rows are first grouped
// by those columns' raw values (cheap: no expression per row, and the database may use
// its statistics of the column), then each partial group's key is clamped. As the
// clamped value is a function of the raw value, each final group adds up exactly the
// rows it would have counted directly; only the partial groups, at most as many as the
// distinct raw values that pass WHERE, are clamped.
func (c *compiler) twoLevel() (string, bool) {
	p := c.p
	raw := map[int]bool{}
	for _, g := range p.b.groups {
		switch c.dbType(g) {
		case "int2", "int4", "int8":
			if p.schema.Columns[g].Type == Int && !slices.Contains(p.b.aggColumns(), g) {
				raw[g] = true
			}
		}
	}
	if len(raw) == 0 {
		return "", false
	}
	c.rawGroups = raw
	gl := c.groupList()
	inner := []string{gl, "COUNT(*) AS m"}
	outer := []string{}
	for _, g := range p.b.groups {
		if raw[g] {
			outer = append(outer, c.clampedInt(g, "CAST("+alias(g)+" AS bigint)")+" AS "+alias(g))
		} else {
			outer = append(outer, alias(g))
		}
	}
	outer = append(outer, "m")
	for _, v := range p.b.aggColumns() {
		inner = append(inner, "COUNT("+nonNullAlias(v)+") AS "+nonNullAlias(v), "SUM("+alias(v)+") AS "+alias(v))
		outer = append(outer, nonNullAlias(v), alias(v))
	}
	cand := c.candidates()
	c.partial = true
	return "(SELECT " + strings.Join(outer, ", ") + " FROM (SELECT " + strings.Join(inner, ", ") + " FROM (" + cand + ") AS r GROUP BY " + gl + ") AS q) AS r", true
}

// statement returns the statement and the number of columns of its result rows.
func (c *compiler) statement() (string, int) {
	p := c.p
	units := "0"
	if p.Selection {
		units = "COUNT(*)"
	}
	if p.schema.Unit == nil { // each row a unit: every bound holds
		if from, ok := c.twoLevel(); ok {
			if p.Selection {
				units = "SUM(m)"
			}
			return c.final(nil, from, "", units)
		}
		return c.final(nil, "("+c.candidates()+") AS r", "", units)
	}
	seed := c.param(c.seed.String(), "text")
	u := unitAlias
	content := strings.Join(append([]string{u}, c.content()...), ", ")
	m := c.param(int64(p.MaxRows), "bigint")
	ctes := []string{
		"r AS (" + c.candidates() + ")",
		// j numbers a unit's rows equal in every value read; n counts the unit's rows
		"d AS (SELECT r.*, ROW_NUMBER() OVER (PARTITION BY " + content + ") AS j, COUNT(*) OVER (PARTITION BY " + u + ") AS n FROM r)",
		// rows: at most MaxRows per unit, by row key
		"k AS (SELECT d.*, ROW_NUMBER() OVER (PARTITION BY " + u + " ORDER BY CASE WHEN n > " + m + " THEN " + c.key('r', seed) + " END COLLATE \"C\") AS rn FROM d)",
	}
	if p.b.groups == nil {
		return c.final(ctes, "k", "rn <= "+m, units)
	}
	gl := c.groupList()
	if p.MaxGroups >= p.MaxRows && p.MaxRowsPerGroup >= p.MaxRows { // no unit can exceed them
		if !p.Selection {
			return c.final(ctes, "k", "rn <= "+m, units)
		}
		// units per group: the unit's first row in the group
		ctes = append(ctes, "h AS (SELECT k.*, ROW_NUMBER() OVER (PARTITION BY "+u+", "+gl+") AS rg FROM k WHERE rn <= "+m+")")
		return c.final(ctes, "h", "", "SUM(CASE WHEN rg = 1 THEN 1 ELSE 0 END)")
	}
	g, pg := c.param(int64(p.MaxGroups), "bigint"), c.param(int64(p.MaxRowsPerGroup), "bigint")
	ctes = append(ctes,
		// gi numbers the unit's groups, nr counts its rows in each
		"c AS (SELECT k.*, DENSE_RANK() OVER (PARTITION BY "+u+" ORDER BY "+gl+") AS gi, COUNT(*) OVER (PARTITION BY "+u+", "+gl+") AS nr FROM k WHERE rn <= "+m+")",
		"e AS (SELECT c.*, MAX(gi) OVER (PARTITION BY "+u+") AS ng FROM c)",
		// group keys for a unit over MaxGroups, row keys for a group over MaxRowsPerGroup
		"f AS (SELECT e.*, CASE WHEN ng > "+g+" THEN "+c.key('g', seed)+" END COLLATE \"C\" AS kg, CASE WHEN nr > "+pg+" THEN "+c.key('r', seed)+" END COLLATE \"C\" AS kr FROM e)",
		// gr ranks the unit's groups, rg its rows in each (one sort serves both)
		"h AS (SELECT f.*, DENSE_RANK() OVER (PARTITION BY "+u+" ORDER BY kg, "+gl+") AS gr, ROW_NUMBER() OVER (PARTITION BY "+u+", kg, "+gl+" ORDER BY kr) AS rg FROM f)",
	)
	if p.Selection {
		units = "SUM(CASE WHEN rg = 1 THEN 1 ELSE 0 END)"
	}
	return c.final(ctes, "h", "gr <= "+g+" AND rg <= "+pg, units)
}
