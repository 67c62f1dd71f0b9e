package query

import (
	"math"
	"strings"
)

// pred is a compiled WHERE condition. fill sets bit i of out (word i/64, bit i%64) to
// whether row i is selected, for the table's n rows; out has ⌈n/64⌉ words.
type pred interface {
	fill(out []uint64, n int)
}

type constPred bool

func (p constPred) fill(out []uint64, n int) {
	var w uint64
	if p {
		w = ^uint64(0)
	}
	for i := range out {
		out[i] = w
	}
	trim(out, n)
}

// trim clears the bits of out beyond row n.
func trim(out []uint64, n int) {
	if r := n % 64; r != 0 {
		out[len(out)-1] &= 1<<r - 1
	}
}

// intRange selects lo ≤ v ≤ hi (or its complement when negate).
type intRange struct {
	c      *column
	lo, hi int64
	negate bool
}

func (p *intRange) fill(out []uint64, n int) {
	vs := p.c.ints[:n]
	// v in [lo, hi] ⇔ uint64(v−lo) ≤ uint64(hi−lo), one comparison per value.
	lo, span := p.lo, uint64(p.hi)-uint64(p.lo)
	if p.hi < p.lo {
		constPred(p.negate).fill(out, n)
		return
	}
	for w := range out {
		base := w * 64
		chunk := vs[base:min(base+64, n)]
		var word uint64
		for j, v := range chunk {
			if uint64(v)-uint64(lo) <= span {
				word |= 1 << uint(j)
			}
		}
		if p.negate {
			word = ^word
		}
		out[w] = word
	}
	trim(out, n)
}

// floatPred compares a Float column with a number.
type floatPred struct {
	c  *column
	op string
	v  float64
}

func (p *floatPred) fill(out []uint64, n int) {
	vs, x := p.c.floats[:n], p.v
	for w := range out {
		base := w * 64
		chunk := vs[base:min(base+64, n)]
		var word uint64
		switch p.op {
		case "=":
			for j, v := range chunk {
				if v == x {
					word |= 1 << uint(j)
				}
			}
		case "!=":
			for j, v := range chunk {
				if v != x {
					word |= 1 << uint(j)
				}
			}
		case "<":
			for j, v := range chunk {
				if v < x {
					word |= 1 << uint(j)
				}
			}
		case "<=":
			for j, v := range chunk {
				if v <= x {
					word |= 1 << uint(j)
				}
			}
		case ">":
			for j, v := range chunk {
				if v > x {
					word |= 1 << uint(j)
				}
			}
		default: // >=
			for j, v := range chunk {
				if v >= x {
					word |= 1 << uint(j)
				}
			}
		}
		out[w] = word
	}
}

// stringPred selects the rows whose dictionary code has match[code] set.
type stringPred struct {
	c     *column
	match []bool
}

func (p *stringPred) fill(out []uint64, n int) {
	codes, match := p.c.codes[:n], p.match
	for w := range out {
		base := w * 64
		chunk := codes[base:min(base+64, n)]
		var word uint64
		for j, code := range chunk {
			if match[code] {
				word |= 1 << uint(j)
			}
		}
		out[w] = word
	}
}

// logicPred is the conjunction (and) or disjunction of its terms.
type logicPred struct {
	and   bool
	terms []pred
}

func (p *logicPred) fill(out []uint64, n int) {
	p.terms[0].fill(out, n)
	tmp := make([]uint64, len(out))
	for _, t := range p.terms[1:] {
		t.fill(tmp, n)
		if p.and {
			for i := range out {
				out[i] &= tmp[i]
			}
		} else {
			for i := range out {
				out[i] |= tmp[i]
			}
		}
	}
}

// compile turns a (checked) WHERE condition into a predicate over t's columns. A
// comparison on a row whose value is NULL is not true (SQL: unknown); since conditions
// have no NOT, a row is selected exactly when SQL's three-valued logic makes the whole
// condition true.
func (t *Table) compile(e Expr) pred {
	switch e := e.(type) {
	case *Logic:
		l := &logicPred{and: e.Op == "AND"}
		for _, term := range e.Terms {
			l.terms = append(l.terms, t.compile(term))
		}
		return l
	case *Comparison:
		c := &t.cols[t.schema.column(e.Column)]
		var p pred
		switch c.decl.Type {
		case Int:
			p = intPred(c, e.Op, e.Value.Num)
		case Float:
			p = &floatPred{c: c, op: e.Op, v: e.Value.Num}
		default:
			match := make([]bool, len(c.dict))
			for code, s := range c.dict {
				match[code] = compareStrings(s, e.Op, e.Value.Text)
			}
			p = &stringPred{c: c, match: match}
		}
		if c.nulls != nil {
			p = &notNull{p: p, c: c}
		}
		return p
	}
	panic("query: unknown expression type") // unreachable: Expr is sealed
}

// notNull is a comparison on a column with NULLs: false on them.
type notNull struct {
	p pred
	c *column
}

func (p *notNull) fill(out []uint64, n int) {
	p.p.fill(out, n)
	for w := range out {
		if w < len(p.c.nulls) {
			out[w] &^= p.c.nulls[w]
		}
	}
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

// intBounds turns "v op x" on an Int column into an integer range test lo ≤ v ≤ hi (or
// its complement when negate), exactly: v < x ⇔ v ≤ ⌈x⌉−1, v ≤ x ⇔ v ≤ ⌊x⌋, and so on.
// none reports a test no value passes (negate false) or every value passes (negate true):
// "=" or "!=" with a non-integer or out-of-range x.
func intBounds(op string, x float64) (lo, hi int64, negate, none bool) {
	// Stored values are within ±2^53: thresholds beyond ±2^62 are equivalent to ±2^62.
	const lim = 1 << 62
	clampInt := func(f float64) int64 { return int64(math.Max(-lim, math.Min(lim, f))) }
	integral := x == math.Trunc(x)
	switch op {
	case "=", "!=":
		if !integral || math.Abs(x) > maxIntBound {
			return 0, 0, op == "!=", true
		}
		return int64(x), int64(x), op == "!=", false
	case "<":
		return math.MinInt64, clampInt(math.Ceil(x)) - 1, false, false
	case "<=":
		return math.MinInt64, clampInt(math.Floor(x)), false, false
	case ">":
		return clampInt(math.Floor(x)) + 1, math.MaxInt64, false, false
	}
	return clampInt(math.Ceil(x)), math.MaxInt64, false, false // >=
}

// intPred is the predicate of intBounds.
func intPred(c *column, op string, x float64) pred {
	lo, hi, negate, none := intBounds(op, x)
	if none {
		return constPred(negate)
	}
	return &intRange{c: c, lo: lo, hi: hi, negate: negate}
}
