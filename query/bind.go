package query

import (
	"math"
	"strings"
)

// bound is a query checked against a table: its columns resolved and its WHERE
// condition compiled into a predicate over the stored columns.
type bound struct {
	q         *Query
	t         *Table
	aggs      []boundAgg // in SELECT order
	groups    []*column  // GROUP BY columns, or the HISTOGRAM column; nil if none
	where     pred       // nil when every row is selected
	selection bool       // a grouping column has no declared domain: partition selection
}

// boundAgg is one aggregate with its column resolved (nil for COUNT(*) and HISTOGRAM,
// which counts rows per value of its column, a grouping column).
type boundAgg struct {
	Aggregate
	col *column
}

// fn returns the aggregate function, HISTOGRAM read as COUNT.
func (a *boundAgg) fn() Agg {
	if a.Func == Histogram {
		return Count
	}
	return a.Func
}

// bind checks q against t's schema; table is the name the query must use in FROM.
// Errors are *Error values positioned at the offending name or literal.
func bind(q *Query, t *Table, table string) (*bound, error) {
	if !strings.EqualFold(q.Table, table) {
		return nil, errorf(q.TablePos, "unknown table %s (this dataset is %s)", quoteIdent(q.Table), table)
	}
	b := &bound{q: q, t: t}
	for _, a := range q.Aggregates {
		ba, err := b.bindAggregate(a)
		if err != nil {
			return nil, err
		}
		b.aggs = append(b.aggs, ba)
	}
	seen := map[*column]bool{}
	for i, name := range q.GroupColumns {
		c, err := b.col(name, q.GroupColumnPos[i])
		if err != nil {
			return nil, err
		}
		pos := q.GroupColumnPos[i]
		switch {
		case seen[c]:
			return nil, errorf(pos, "%s appears twice in GROUP BY", c.decl.Name)
		case c.decl.Type == Float:
			return nil, errorf(pos, "GROUP BY on a float column (%s): declare it int or string to group by it", c.decl.Name)
		case c.domain.keys == nil:
			b.selection = true // keys found in the data, released by partition selection
		}
		seen[c] = true
		b.groups = append(b.groups, c)
	}
	if q.Where != nil {
		p, err := b.compile(q.Where)
		if err != nil {
			return nil, err
		}
		b.where = p
	}
	return b, nil
}

// col resolves a column name.
func (b *bound) col(name string, pos int) (*column, error) {
	i := b.t.schema.column(name)
	if i < 0 {
		return nil, errorf(pos, "unknown column %s (columns: %s)", quoteIdent(name), b.t.columnList())
	}
	return &b.t.cols[i], nil
}

// bindAggregate checks one aggregate against the schema. HISTOGRAM(col) must be the
// query's only aggregate, without GROUP BY, and col needs a declared domain: it is
// COUNT(*) GROUP BY col over that domain.
func (b *bound) bindAggregate(a Aggregate) (boundAgg, error) {
	ba := boundAgg{Aggregate: a}
	if a.Func == Count {
		return ba, nil
	}
	c, err := b.col(a.Column, a.ColumnPos)
	if err != nil {
		return ba, err
	}
	switch a.Func {
	case Sum, Avg, Median, Quantile:
		if c.decl.Type == String {
			return ba, errorf(a.ColumnPos, "%s needs a numeric column; %s is a string column", a.Func, c.decl.Name)
		}
		ba.col = c
	case Histogram:
		q := b.q
		switch {
		case len(q.Aggregates) > 1:
			return ba, errorf(a.Pos, "HISTOGRAM must be the only aggregate (use COUNT(*) … GROUP BY %s with other aggregates)", c.decl.Name)
		case q.GroupColumns != nil:
			return ba, errorf(q.GroupByPos, "HISTOGRAM cannot be combined with GROUP BY (use COUNT(*) … GROUP BY)")
		case c.domain.keys == nil:
			return ba, errorf(a.ColumnPos, "HISTOGRAM needs a column with a declared domain; %s has none", c.decl.Name)
		}
		b.groups = []*column{c}
	}
	return ba, nil
}

func (t *Table) columnList() string {
	names := make([]string, len(t.schema.Columns))
	for i, c := range t.schema.Columns {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

func (b *bound) compile(e Expr) (pred, error) {
	switch e := e.(type) {
	case *Logic:
		l := &logicPred{and: e.Op == "AND"}
		for _, term := range e.Terms {
			p, err := b.compile(term)
			if err != nil {
				return nil, err
			}
			l.terms = append(l.terms, p)
		}
		return l, nil
	case *Comparison:
		i := b.t.schema.column(e.Column)
		if i < 0 {
			return nil, errorf(e.Pos, "unknown column %s (columns: %s)", quoteIdent(e.Column), b.t.columnList())
		}
		c := &b.t.cols[i]
		if (c.decl.Type == String) != e.Value.IsString {
			want := "a number"
			if c.decl.Type == String {
				want = "a 'string'"
			}
			return nil, errorf(e.Value.Pos, "%s is a %s column: compare it with %s", c.decl.Name, c.decl.Type, want)
		}
		switch c.decl.Type {
		case Int:
			return intPred(c, e.Op, e.Value.Num), nil
		case Float:
			return &floatPred{c: c, op: e.Op, v: e.Value.Num}, nil
		default:
			match := make([]bool, len(c.dict))
			for code, s := range c.dict {
				match[code] = compareStrings(s, e.Op, e.Value.Text)
			}
			return &stringPred{c: c, match: match}, nil
		}
	}
	panic("query: unknown expression type") // unreachable: Expr is sealed
}

func compareStrings(a, op, b string) bool {
	c := strings.Compare(a, b)
	switch op {
	case "=":
		return c == 0
	case "!=":
		return c != 0
	case "<":
		return c < 0
	case "<=":
		return c <= 0
	case ">":
		return c > 0
	}
	return c >= 0
}

// intPred turns "v op x" on an Int column into an integer range test (or a test against
// one excluded value), exactly: v < x ⇔ v ≤ ⌈x⌉−1, v ≤ x ⇔ v ≤ ⌊x⌋, and so on.
func intPred(c *column, op string, x float64) pred {
	// Stored values are within ±2^53: thresholds beyond ±2^62 are equivalent to ±2^62.
	const lim = 1 << 62
	clampInt := func(f float64) int64 { return int64(math.Max(-lim, math.Min(lim, f))) }
	integral := x == math.Trunc(x)
	switch op {
	case "=":
		if !integral || math.Abs(x) > maxIntBound {
			return constPred(false)
		}
		return &intRange{c: c, lo: int64(x), hi: int64(x)}
	case "!=":
		if !integral || math.Abs(x) > maxIntBound {
			return constPred(true)
		}
		return &intRange{c: c, lo: int64(x), hi: int64(x), negate: true}
	case "<":
		return &intRange{c: c, lo: math.MinInt64, hi: clampInt(math.Ceil(x)) - 1}
	case "<=":
		return &intRange{c: c, lo: math.MinInt64, hi: clampInt(math.Floor(x))}
	case ">":
		return &intRange{c: c, lo: clampInt(math.Floor(x)) + 1, hi: math.MaxInt64}
	}
	return &intRange{c: c, lo: clampInt(math.Ceil(x)), hi: math.MaxInt64} // >=
}
