package query

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
