package query

import (
	"strconv"
	"strings"
)

// Agg is the aggregate a query computes.
type Agg int

// Aggregates of the SQL subset.
const (
	Count     Agg = iota + 1 // COUNT(*)
	Sum                      // SUM(col)
	Avg                      // AVG(col)
	Median                   // MEDIAN(col), the same as QUANTILE(col, 0.5)
	Quantile                 // QUANTILE(col, p)
	Histogram                // HISTOGRAM(col): COUNT(*) per value of col's declared domain
)

var aggNames = map[Agg]string{Count: "COUNT", Sum: "SUM", Avg: "AVG", Median: "MEDIAN", Quantile: "QUANTILE", Histogram: "HISTOGRAM"}

func (a Agg) String() string {
	if s, ok := aggNames[a]; ok {
		return s
	}
	return "Agg(" + strconv.Itoa(int(a)) + ")"
}

// Aggregate is one aggregate of a query's SELECT list.
type Aggregate struct {
	Func   Agg
	Column string  // aggregated column; "" for COUNT(*)
	P      float64 // quantile in (0, 1) for QUANTILE (0.5 for MEDIAN)

	Pos, ColumnPos int
}

// String returns the aggregate's canonical text, e.g. "COUNT(*)", "QUANTILE(x, 0.9)":
// the name the answer gives it.
func (a Aggregate) String() string {
	var b strings.Builder
	b.WriteString(a.Func.String() + "(")
	switch a.Func {
	case Count:
		b.WriteString("*")
	case Quantile:
		b.WriteString(quoteIdent(a.Column) + ", " + strconv.FormatFloat(a.P, 'g', -1, 64))
	default:
		b.WriteString(quoteIdent(a.Column))
	}
	b.WriteString(")")
	return b.String()
}

// Query is a parsed query of the SQL subset
//
//	SELECT agg [, agg …] FROM table [WHERE cond] [GROUP BY col [, col …]]
//
// Positions (…Pos) are byte offsets in the query text, for error messages. Agg, Column,
// P, AggPos and ColumnPos repeat the first aggregate, GroupBy and GroupByPos the first
// grouping column ("" when none), for queries of one aggregate and one grouping column.
type Query struct {
	Aggregates   []Aggregate // in SELECT order; at least one
	Table        string
	Where        Expr     // nil when there is no WHERE clause
	GroupColumns []string // in GROUP BY order; nil when there is no GROUP BY clause

	Agg     Agg
	Column  string
	P       float64
	GroupBy string

	AggPos, ColumnPos, TablePos, GroupByPos int
	GroupColumnPos                          []int
}

// Expr is a WHERE condition: a *Comparison or a *Logic.
type Expr interface {
	expr()
	write(b *strings.Builder, parentOr bool)
}

// Comparison compares a column with a literal: Column Op Value.
type Comparison struct {
	Column string
	Op     string // one of = != < <= > >= (<> is read as !=)
	Value  Literal
	Pos    int // offset of the column name
}

// Literal is a constant in a condition: a number or a string.
type Literal struct {
	IsString bool
	Text     string  // the string, or the number as written
	Num      float64 // the number's value (numbers only)
	Pos      int
}

// Logic is the conjunction (AND) or disjunction (OR) of two or more conditions.
type Logic struct {
	Op    string // "AND" or "OR"
	Terms []Expr
}

func (*Comparison) expr() {}
func (*Logic) expr()      {}

func (c *Comparison) write(b *strings.Builder, _ bool) {
	b.WriteString(quoteIdent(c.Column))
	b.WriteString(" " + c.Op + " ")
	if c.Value.IsString {
		b.WriteString("'" + strings.ReplaceAll(c.Value.Text, "'", "''") + "'")
	} else {
		b.WriteString(c.Value.Text)
	}
}

func (l *Logic) write(b *strings.Builder, parentAnd bool) {
	paren := parentAnd && l.Op == "OR"
	if paren {
		b.WriteByte('(')
	}
	for i, t := range l.Terms {
		if i > 0 {
			b.WriteString(" " + l.Op + " ")
		}
		t.write(b, l.Op == "AND")
	}
	if paren {
		b.WriteByte(')')
	}
}

// String returns the query in canonical form: keywords in upper case, one space between
// tokens, parentheses only where OR is nested in AND. Parsing it gives the same query.
func (q *Query) String() string {
	var b strings.Builder
	b.WriteString("SELECT ")
	for i, a := range q.Aggregates {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	b.WriteString(" FROM " + quoteIdent(q.Table))
	if q.Where != nil {
		b.WriteString(" WHERE ")
		q.Where.write(&b, false)
	}
	for i, g := range q.GroupColumns {
		if i == 0 {
			b.WriteString(" GROUP BY ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(quoteIdent(g))
	}
	return b.String()
}

// quoteIdent writes an identifier so that it lexes back to itself.
func quoteIdent(s string) string {
	if validIdent(s) {
		return s
	}
	return `"` + s + `"`
}
