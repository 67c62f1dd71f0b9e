package query

import (
	"strings"
)

// bound is a query checked against a schema: its columns resolved (indices into the
// schema's columns) and its WHERE condition type-checked. It knows nothing of any data:
// every executor compiles the condition for its own storage.
type bound struct {
	q         *Query
	s         *Schema
	aggs      []boundAgg // in SELECT order
	groups    []int      // GROUP BY columns, or the HISTOGRAM column; nil if none
	selection bool       // a grouping column has no declared domain: partition selection
}

// boundAgg is one aggregate with its column resolved (−1 for COUNT(*) and HISTOGRAM,
// which counts rows per value of its column, a grouping column).
type boundAgg struct {
	Aggregate
	col int
}

// fn returns the aggregate function, HISTOGRAM read as COUNT.
func (a *boundAgg) fn() Agg {
	if a.Func == Histogram {
		return Count
	}
	return a.Func
}

// bind checks q against schema s; table is the name the query must use in FROM.
// Errors are *Error values positioned at the offending name or literal.
func bind(q *Query, s *Schema, table string) (*bound, error) {
	if !strings.EqualFold(q.Table, table) {
		return nil, errorf(q.TablePos, "unknown table %s (this dataset is %s)", quoteIdent(q.Table), table)
	}
	b := &bound{q: q, s: s}
	for _, a := range q.Aggregates {
		ba, err := b.bindAggregate(a)
		if err != nil {
			return nil, err
		}
		b.aggs = append(b.aggs, ba)
	}
	seen := map[int]bool{}
	for i, name := range q.GroupColumns {
		pos := q.GroupColumnPos[i]
		c, err := b.col(name, pos)
		if err != nil {
			return nil, err
		}
		decl := &s.Columns[c]
		switch {
		case seen[c]:
			return nil, errorf(pos, "%s appears twice in GROUP BY", decl.Name)
		case decl.Type == Float:
			return nil, errorf(pos, "GROUP BY on a float column (%s): declare it int or string to group by it", decl.Name)
		case decl.Domain == nil:
			b.selection = true // keys found in the data, released by partition selection
		}
		seen[c] = true
		b.groups = append(b.groups, c)
	}
	if q.Where != nil {
		if err := b.check(q.Where); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// col resolves a column name.
func (b *bound) col(name string, pos int) (int, error) {
	i := b.s.column(name)
	if i < 0 {
		return -1, errorf(pos, "unknown column %s (columns: %s)", quoteIdent(name), b.s.columnList())
	}
	return i, nil
}

// bindAggregate checks one aggregate against the schema. HISTOGRAM(col) must be the
// query's only aggregate, without GROUP BY, and col needs a declared domain: it is
// COUNT(*) GROUP BY col over that domain.
func (b *bound) bindAggregate(a Aggregate) (boundAgg, error) {
	ba := boundAgg{Aggregate: a, col: -1}
	if a.Func == Count {
		return ba, nil
	}
	c, err := b.col(a.Column, a.ColumnPos)
	if err != nil {
		return ba, err
	}
	decl := &b.s.Columns[c]
	switch a.Func {
	case Sum, Avg, Median, Quantile:
		if decl.Type == String {
			return ba, errorf(a.ColumnPos, "%s needs a numeric column; %s is a string column", a.Func, decl.Name)
		}
		ba.col = c
	case Histogram:
		q := b.q
		switch {
		case len(q.Aggregates) > 1:
			return ba, errorf(a.Pos, "HISTOGRAM must be the only aggregate (use COUNT(*) … GROUP BY %s with other aggregates)", decl.Name)
		case q.GroupColumns != nil:
			return ba, errorf(q.GroupByPos, "HISTOGRAM cannot be combined with GROUP BY (use COUNT(*) … GROUP BY)")
		case decl.Domain == nil:
			return ba, errorf(a.ColumnPos, "HISTOGRAM needs a column with a declared domain; %s has none", decl.Name)
		}
		b.groups = []int{c}
	}
	return ba, nil
}

func (s *Schema) columnList() string {
	names := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

// check type-checks a WHERE condition: every column exists, and is compared with a
// literal of its kind (a 'string' for String columns, a number for the others).
func (b *bound) check(e Expr) error {
	switch e := e.(type) {
	case *Logic:
		for _, term := range e.Terms {
			if err := b.check(term); err != nil {
				return err
			}
		}
		return nil
	case *Comparison:
		c, err := b.col(e.Column, e.Pos)
		if err != nil {
			return err
		}
		decl := &b.s.Columns[c]
		if (decl.Type == String) != e.Value.IsString {
			want := "a number"
			if decl.Type == String {
				want = "a 'string'"
			}
			return errorf(e.Value.Pos, "%s is a %s column: compare it with %s", decl.Name, decl.Type, want)
		}
		return nil
	}
	panic("query: unknown expression type") // unreachable: Expr is sealed
}

// aggColumns returns the distinct columns the aggregates read values from (SUM, AVG,
// MEDIAN, QUANTILE), in order of first use: with the grouping columns, the content of a
// row that contribution bounding tells apart (rows equal in these are interchangeable
// for the query).
func (b *bound) aggColumns() []int {
	var cols []int
	for _, a := range b.aggs {
		if a.col >= 0 && !containsInt(cols, a.col) {
			cols = append(cols, a.col)
		}
	}
	return cols
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
