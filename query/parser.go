package query

import (
	"math"
	"strconv"
	"strings"
)

// maxQueryLen is the longest query text Parse accepts, and maxDepth the deepest nesting
// of parentheses: both keep parsing cheap on hostile input.
const (
	maxQueryLen = 64 << 10
	maxDepth    = 64
)

// Parse parses a query of the SQL subset
//
//	SELECT agg [, agg …]
//	FROM table
//	[WHERE cond]
//	[GROUP BY col [, col …]]
//	[;]
//
// with agg one of COUNT(*), SUM(col), AVG(col), MEDIAN(col), QUANTILE(col, p),
// HISTOGRAM(col) (at most 32 aggregates and 8 grouping columns),
//
// where cond is comparisons "col op literal" (op one of = != <> < <= > >=, literal a
// number or a 'string', a quote inside doubled; "literal op col" is also accepted) joined by
// AND and OR, AND binding tighter than OR, with parentheses for grouping. Keywords and
// aggregate names are case-insensitive; identifiers may be "double-quoted"; "--" starts
// a comment to the end of the line.
//
// Parse checks syntax only; Bind checks the query against a table's schema. Errors are
// *Error values carrying the byte offset of the problem and what was expected there.
func Parse(sql string) (*Query, error) {
	if len(sql) > maxQueryLen {
		return nil, errorf(maxQueryLen, "query longer than %d bytes", maxQueryLen)
	}
	toks, err := lex(sql)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	return p.query()
}

type parser struct {
	toks  []token
	i     int
	depth int
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// isKeyword reports whether t is the (unquoted) keyword kw.
func isKeyword(t token, kw string) bool {
	return t.kind == tokIdent && !t.quoted && strings.EqualFold(t.text, kw)
}

func (p *parser) expectKeyword(kw string) (token, error) {
	t := p.next()
	if !isKeyword(t, kw) {
		return t, errorf(t.pos, "expected %s, found %s", kw, t.describe())
	}
	return t, nil
}

func (p *parser) expect(kind tokKind, what string) (token, error) {
	t := p.next()
	if t.kind != kind {
		return t, errorf(t.pos, "expected %s, found %s", what, t.describe())
	}
	return t, nil
}

// ident reads a column or table name: an identifier that is not a reserved keyword.
func (p *parser) ident(what string) (token, error) {
	t := p.next()
	if t.kind != tokIdent || !t.quoted && keywords[strings.ToUpper(t.text)] {
		return t, errorf(t.pos, "expected %s, found %s", what, t.describe())
	}
	return t, nil
}

// Limits on the size of a query's SELECT and GROUP BY lists.
const (
	maxAggregates   = 32
	maxGroupColumns = 8
)

func (p *parser) query() (*Query, error) {
	if _, err := p.expectKeyword("SELECT"); err != nil {
		return nil, err
	}
	q := &Query{}
	for {
		a, err := p.aggregate()
		if err != nil {
			return nil, err
		}
		if len(q.Aggregates) == maxAggregates {
			return nil, errorf(a.Pos, "more than %d aggregates", maxAggregates)
		}
		q.Aggregates = append(q.Aggregates, a)
		if p.peek().kind != tokComma {
			break
		}
		p.next()
	}
	first := q.Aggregates[0]
	q.Agg, q.Column, q.P, q.AggPos, q.ColumnPos = first.Func, first.Column, first.P, first.Pos, first.ColumnPos
	if _, err := p.expectKeyword("FROM"); err != nil {
		return nil, err
	}
	t, err := p.ident("a table name")
	if err != nil {
		return nil, err
	}
	q.Table, q.TablePos = t.text, t.pos
	if isKeyword(p.peek(), "WHERE") {
		p.next()
		if q.Where, err = p.or(); err != nil {
			return nil, err
		}
	}
	if isKeyword(p.peek(), "GROUP") {
		if err := p.groupBy(q); err != nil {
			return nil, err
		}
	}
	semicolon := p.peek().kind == tokSemicolon
	if semicolon {
		p.next()
	}
	if t := p.peek(); t.kind != tokEOF {
		want := "end of query"
		switch {
		case semicolon:
		case q.GroupColumns != nil:
			want = `"," or end of query`
		case q.Where != nil:
			want = "AND, OR, GROUP BY or end of query"
		default:
			want = "WHERE, GROUP BY or end of query"
		}
		return nil, errorf(t.pos, "expected %s, found %s", want, t.describe())
	}
	return q, nil
}

// groupBy parses GROUP BY col {, col}.
func (p *parser) groupBy(q *Query) error {
	p.next()
	if _, err := p.expectKeyword("BY"); err != nil {
		return err
	}
	for {
		t, err := p.ident("a column name")
		if err != nil {
			return err
		}
		if len(q.GroupColumns) == maxGroupColumns {
			return errorf(t.pos, "more than %d grouping columns", maxGroupColumns)
		}
		q.GroupColumns = append(q.GroupColumns, t.text)
		q.GroupColumnPos = append(q.GroupColumnPos, t.pos)
		if p.peek().kind != tokComma {
			break
		}
		p.next()
	}
	q.GroupBy, q.GroupByPos = q.GroupColumns[0], q.GroupColumnPos[0]
	return nil
}

func (p *parser) aggregate() (Aggregate, error) {
	var a Aggregate
	t := p.next()
	a.Pos = t.pos
	if t.kind == tokIdent && !t.quoted {
		for f, name := range aggNames {
			if strings.EqualFold(t.text, name) {
				a.Func = f
			}
		}
	}
	if a.Func == 0 {
		return a, errorf(t.pos, "expected an aggregate (COUNT, SUM, AVG, MEDIAN, QUANTILE or HISTOGRAM), found %s", t.describe())
	}
	if _, err := p.expect(tokLParen, `"("`); err != nil {
		return a, err
	}
	if a.Func == Count {
		if _, err := p.expect(tokStar, `"*" (only COUNT(*) is supported)`); err != nil {
			return a, err
		}
	} else {
		c, err := p.ident("a column name")
		if err != nil {
			return a, err
		}
		a.Column, a.ColumnPos = c.text, c.pos
	}
	switch a.Func {
	case Median:
		a.P = 0.5
	case Quantile:
		if _, err := p.expect(tokComma, `"," and a quantile p in (0, 1)`); err != nil {
			return a, err
		}
		n, err := p.expect(tokNumber, "a quantile p in (0, 1)")
		if err != nil {
			return a, err
		}
		v, err := strconv.ParseFloat(n.text, 64)
		if err != nil || !(v > 0 && v < 1) {
			return a, errorf(n.pos, "expected a quantile p in (0, 1), found %s", n.text)
		}
		a.P = v
	}
	_, err := p.expect(tokRParen, `")"`)
	return a, err
}

// or parses cond := and {OR and}.
func (p *parser) or() (Expr, error) {
	first, err := p.and()
	if err != nil {
		return nil, err
	}
	terms := []Expr{first}
	for isKeyword(p.peek(), "OR") {
		p.next()
		e, err := p.and()
		if err != nil {
			return nil, err
		}
		terms = append(terms, e)
	}
	return join("OR", terms), nil
}

// and parses and := primary {AND primary}.
func (p *parser) and() (Expr, error) {
	first, err := p.primary()
	if err != nil {
		return nil, err
	}
	terms := []Expr{first}
	for isKeyword(p.peek(), "AND") {
		p.next()
		e, err := p.primary()
		if err != nil {
			return nil, err
		}
		terms = append(terms, e)
	}
	return join("AND", terms), nil
}

// join builds op(terms), flattening nested terms of the same operator.
func join(op string, terms []Expr) Expr {
	if len(terms) == 1 {
		return terms[0]
	}
	var flat []Expr
	for _, t := range terms {
		if l, ok := t.(*Logic); ok && l.Op == op {
			flat = append(flat, l.Terms...)
		} else {
			flat = append(flat, t)
		}
	}
	return &Logic{Op: op, Terms: flat}
}

// primary parses primary := "(" cond ")" | col op literal | literal op col.
func (p *parser) primary() (Expr, error) {
	t := p.peek()
	if t.kind == tokLParen {
		if p.depth >= maxDepth {
			return nil, errorf(t.pos, "parentheses nested deeper than %d", maxDepth)
		}
		p.next()
		p.depth++
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		p.depth--
		if _, err := p.expect(tokRParen, `")", AND or OR`); err != nil {
			return nil, err
		}
		return e, nil
	}
	if t.kind == tokNumber || t.kind == tokString { // literal op col
		p.next()
		lit, err := literal(t)
		if err != nil {
			return nil, err
		}
		op, err := p.expect(tokOp, "a comparison operator (= != <> < <= > >=)")
		if err != nil {
			return nil, err
		}
		c, err := p.ident("a column name")
		if err != nil {
			return nil, err
		}
		return &Comparison{Column: c.text, Op: flip(normalOp(op.text)), Value: lit, Pos: c.pos}, nil
	}
	c, err := p.ident("a condition (a column name or \"(\")")
	if err != nil {
		return nil, err
	}
	op, err := p.expect(tokOp, "a comparison operator (= != <> < <= > >=)")
	if err != nil {
		return nil, err
	}
	v := p.next()
	if v.kind != tokNumber && v.kind != tokString {
		return nil, errorf(v.pos, "expected a number or a 'string', found %s", v.describe())
	}
	lit, err := literal(v)
	if err != nil {
		return nil, err
	}
	return &Comparison{Column: c.text, Op: normalOp(op.text), Value: lit, Pos: c.pos}, nil
}

func literal(t token) (Literal, error) {
	if t.kind == tokString {
		return Literal{IsString: true, Text: t.text, Pos: t.pos}, nil
	}
	v, err := strconv.ParseFloat(t.text, 64)
	if err != nil || math.IsInf(v, 0) {
		return Literal{}, errorf(t.pos, "number %s out of range", t.text)
	}
	text := strings.TrimPrefix(t.text, "+")
	return Literal{Text: text, Num: v, Pos: t.pos}, nil
}

func normalOp(op string) string {
	if op == "<>" {
		return "!="
	}
	return op
}

// flip returns the operator op' with (a op b) ⇔ (b op' a).
func flip(op string) string {
	switch op {
	case "<":
		return ">"
	case "<=":
		return ">="
	case ">":
		return "<"
	case ">=":
		return "<="
	}
	return op
}
