package multiparty

import (
	"math"
	"sync"

	"github.com/dpkit/dpkit/internal/numeric"
)

// game is the matrix game behind the worst-case program (KOV eq. 14): rows are
// inputs x (or classes of inputs) with the answer f(x), columns are transcripts t (or
// classes of transcripts), and a(x, t) = P(t | x), each row a distribution. A rule is
// a flat slice q[t·ny + y] = P(answer y | t); a prior is a slice π[x].
//
// The game's value is
//
//	max_q min_x acc_q(x) = min_π Σ_t max_y Σ_{x: f(x) = y} π(x) a(x, t),
//
// (LP duality for eq. 14; the right side is the Bayes accuracy under the prior π), so
// every rule gives a lower bound and every prior an upper bound.
type game interface {
	size() (nx, nt, ny int)
	answer(x int) int
	// accuracy sets out[x] = Σ_t a(x, t) q[t·ny + f(x)].
	accuracy(q, out []float64)
	// scores sets out[t·ny + y] = Σ_{x: f(x) = y} π(x) a(x, t).
	scores(pi, out []float64)
	// entry returns a(x, t).
	entry(x, t int) float64
}

// lowerBound returns min_x acc_q(x), the worst-case accuracy of the rule q.
func lowerBound(g game, q, buf []float64) float64 {
	if e, ok := g.(interface{ exactAccuracy(q, out []float64) }); ok {
		e.exactAccuracy(q, buf)
	} else {
		g.accuracy(q, buf)
	}
	lo := math.Inf(1)
	for _, a := range buf {
		lo = min(lo, a)
	}
	return lo
}

// upperBound returns the Bayes accuracy Σ_t max_y scores(π)[t·ny + y] of the prior π
// (π ≥ 0, summing to 1): an upper bound on the game's value (weak duality).
func upperBound(g game, pi, buf []float64) float64 {
	_, nt, ny := g.size()
	g.scores(pi, buf)
	var s numeric.Sum
	for t := range nt {
		best := 0.0
		for _, v := range buf[t*ny : (t+1)*ny] {
			best = max(best, v)
		}
		s.Add(best)
	}
	return s.Value()
}

// denseGame stores a(x, t) as a dense nx × nt matrix: used for the game reduced by the
// parties' symmetries (orbits of inputs and transcripts).
type denseGame struct {
	nx, nt, ny int
	f          []int
	a          []float64
}

func (g *denseGame) size() (int, int, int) { return g.nx, g.nt, g.ny }
func (g *denseGame) answer(x int) int      { return g.f[x] }
func (g *denseGame) entry(x, t int) float64 {
	return g.a[x*g.nt+t]
}

func (g *denseGame) accuracy(q, out []float64) {
	for x := range g.nx {
		row := g.a[x*g.nt : (x+1)*g.nt]
		y := g.f[x]
		s := 0.0
		for t, a := range row {
			s += a * q[t*g.ny+y]
		}
		out[x] = s
	}
}

// exactAccuracy is accuracy with compensated sums: relative error ≤ (error of a) + 2u,
// whatever the number of transcripts.
func (g *denseGame) exactAccuracy(q, out []float64) {
	for x := range g.nx {
		row := g.a[x*g.nt : (x+1)*g.nt]
		y := g.f[x]
		var s numeric.Sum
		for t, a := range row {
			if a != 0 {
				s.Add(a * q[t*g.ny+y])
			}
		}
		out[x] = s.Value()
	}
}

func (g *denseGame) scores(pi, out []float64) {
	clear(out[:g.nt*g.ny])
	for x := range g.nx {
		if pi[x] == 0 {
			continue
		}
		row := g.a[x*g.nt : (x+1)*g.nt]
		y, w := g.f[x], pi[x]
		for t, a := range row {
			out[t*g.ny+y] += w * a
		}
	}
}

// kronGame is the full game without symmetry reduction: inputs are the 2^k bit masks,
// transcripts the protocol's transcripts in the order of [Protocol.Transcripts] (party 0
// varying slowest), and a(x, t) = Π_i P(t_i | x_i) is a Kronecker product of k small
// matrices (2 × 2 when δ_i = 0, 4 × 2 when 0 < δ_i < 1). Products with it cost
// O(|Y| T Σ_i s_i / 2) instead of O(2^k T): one party's axis at a time.
type kronGame struct {
	k, nx, nt, ny int
	f             []int
	syms          [][]int        // symbols of party i with positive probability
	prob          [][][2]float64 // prob[i][s] = (P(syms[i][s] | 0), P(syms[i][s] | 1))
	rev           []int          // rev[mask]: row-major index (party 0 slowest) of the bits
	// Per party, for kronMul: toBits is 2 × ns (P(symbol | bit) by bit), toSyms its
	// transpose; ns the symbol counts and two all 2s.
	toBits, toSyms [][]float64
	ns, two        []int
	buf1, buf2     []float64
	binary         bool // every party has two symbols (δ_i ∈ {0, 1})
	pr             *Protocol
}

func newKronGame(pr *Protocol, tab []int, ny int) *kronGame {
	k := pr.Parties()
	g := &kronGame{k: k, nx: 1 << k, nt: pr.NumTranscripts(), ny: ny, f: tab, pr: pr}
	for i := range k {
		s := pr.symbols(i)
		g.syms = append(g.syms, s)
		p := make([][2]float64, len(s))
		for j, sym := range s {
			p[j] = [2]float64{pr.Prob(i, sym, 0), pr.Prob(i, sym, 1)}
		}
		g.prob = append(g.prob, p)
		ns := len(s)
		toBits, toSyms := make([]float64, 2*ns), make([]float64, ns*2)
		for j := range ns {
			for bit := range 2 {
				toBits[bit*ns+j], toSyms[j*2+bit] = p[j][bit], p[j][bit]
			}
		}
		g.toBits, g.toSyms = append(g.toBits, toBits), append(g.toSyms, toSyms)
		g.ns, g.two = append(g.ns, ns), append(g.two, 2)
	}
	g.rev = make([]int, g.nx)
	for x := range g.nx {
		r := 0
		for i := range k {
			r |= (x >> i & 1) << (k - 1 - i)
		}
		g.rev[x] = r
	}
	g.binary = g.nt == g.nx
	n := max(g.nt, g.nx)
	g.buf1, g.buf2 = make([]float64, n), make([]float64, n)
	return g
}

func (g *kronGame) size() (int, int, int) { return g.nx, g.nt, g.ny }
func (g *kronGame) answer(x int) int      { return g.f[x] }

func (g *kronGame) entry(x, t int) float64 {
	p := 1.0
	for i := g.k - 1; i >= 0; i-- {
		n := len(g.syms[i])
		p *= g.prob[i][t%n][x>>i&1]
		t /= n
	}
	return p
}

// accuracy contracts each transcript axis with P(· | bit): every stage forms convex-like
// combinations of non-negative numbers, so the result carries relative error ≤ 3k u.
func (g *kronGame) accuracy(q, out []float64) {
	if g.binary {
		for y := range g.ny {
			v := g.buf1[:g.nt]
			for t := range g.nt {
				v[t] = q[t*g.ny+y]
			}
			g.butterfly(v, false)
			for x := range g.nx {
				if g.f[x] == y {
					out[x] = v[g.rev[x]]
				}
			}
		}
		return
	}
	for y := range g.ny {
		src := g.buf1[:g.nt]
		for t := range g.nt {
			src[t] = q[t*g.ny+y]
		}
		r := kronMul(g.toBits, g.two, g.ns, src, g.buf1, g.buf2)
		for x := range g.nx {
			if g.f[x] == y {
				out[x] = r[g.rev[x]]
			}
		}
	}
}

// butterfly applies in place, to a vector indexed row-major by party (party 0 slowest),
// the 2 × 2 matrices of two-symbol parties: symbols → bits (Σ_s P(s|bit) v[s], for
// accuracy) or, when toSymbols, bits → symbols (Σ_bit P(s|bit) v[bit], for scores).
// O(k 2^k); each stage forms sums of two non-negative products.
func (g *kronGame) butterfly(v []float64, toSymbols bool) {
	for i := range g.k {
		step := 1 << (g.k - 1 - i)
		p := g.prob[i]
		// accuracy: new[bit] = Σ_s P(s|bit) old[s]; scores: new[s] = Σ_bit P(s|bit) old[bit].
		a00, a01, a10, a11 := p[0][0], p[1][0], p[0][1], p[1][1]
		if toSymbols {
			a01, a10 = a10, a01
		}
		for base := 0; base < len(v); base += 2 * step {
			lo, hi := v[base:base+step], v[base+step:base+2*step]
			for z := range lo {
				a, b := lo[z], hi[z]
				lo[z], hi[z] = a00*a+a01*b, a10*a+a11*b
			}
		}
	}
}

func (g *kronGame) scores(pi, out []float64) {
	if g.binary {
		for y := range g.ny {
			v := g.buf1[:g.nx]
			clear(v)
			for x := range g.nx {
				if g.f[x] == y {
					v[g.rev[x]] = pi[x]
				}
			}
			g.butterfly(v, true)
			for t := range g.nt {
				out[t*g.ny+y] = v[t]
			}
		}
		return
	}
	for y := range g.ny {
		src := g.buf1[:g.nx]
		clear(src)
		for x := range g.nx {
			if g.f[x] == y {
				src[g.rev[x]] = pi[x]
			}
		}
		r := kronMul(g.toSyms, g.ns, g.two, src, g.buf1, g.buf2)
		for t := range g.nt {
			out[t*g.ny+y] = r[t]
		}
	}
}

// kronMul sets dst = (⊗_i m[i]) src for a vector indexed row-major by party (party 0
// slowest): m[i] is a rows[i] × cols[i] matrix stored row-major, src has Π cols[i]
// entries and dst Π rows[i]. One party's axis at a time, O(Σ_i rows[i]·cols[i] ·
// (size / cols[i])); a and b are scratch vectors at least as long as every
// intermediate product. dst may alias a or b only if it is the final buffer; it is
// returned. The factors commute, so the order of the stages is free: a product that
// grows the vector applies the last party first, so that the stages on the long
// vectors run along long contiguous runs (party 0's axis has the largest stride).
func kronMul(m [][]float64, rows, cols []int, src, a, b []float64) []float64 {
	k := len(m)
	dims := make([]int, k)
	copy(dims, cols)
	size := len(src)
	copy(a[:size], src)
	in, out := 1, 1
	for i := range k {
		in, out = in*cols[i], out*rows[i]
	}
	for step := range k {
		i := step
		if out > in {
			i = k - 1 - step
		}
		inner := 1
		for j := i + 1; j < k; j++ {
			inner *= dims[j]
		}
		st := kronStage{m: m[i], r: rows[i], c: cols[i], inner: inner, src: a, dst: b}
		outer := size / (st.c * inner)
		// Every output entry is one dot product, computed the same way however the
		// entries are shared out: the split changes no floating-point operation.
		switch {
		case outer*st.r*inner*st.c < kronSplitWork:
			st.run(0, outer, 0, inner)
		case outer > 1:
			split(outer, func(lo, hi int) { st.run(lo, hi, 0, inner) })
		default:
			split(inner, func(lo, hi int) { st.run(0, 1, lo, hi) })
		}
		dims[i] = st.r
		size = outer * st.r * inner
		a, b = b, a
	}
	return a[:size]
}

// kronSplitWork is the number of multiply-adds from which a stage of kronMul is split
// over two goroutines (a variable so that a test can compare split and serial stages).
var kronSplitWork = 1 << 16

// kronStage applies one party's factor m (r × c, row-major) along its axis: src holds
// outer × c × inner entries, dst outer × r × inner.
type kronStage struct {
	m        []float64
	r, c     int
	inner    int
	src, dst []float64
}

// run computes the outputs of blocks o0 … o1 − 1 at inner positions l0 … l1 − 1.
func (st kronStage) run(o0, o1, l0, l1 int) {
	r, c, inner, mi := st.r, st.c, st.inner, st.m
	if r == 2 && c == 2 && mi[0] != 0 && mi[1] != 0 && mi[2] != 0 && mi[3] != 0 {
		st.run22(o0, o1, l0, l1)
		return
	}
	if c == 2 {
		st.runPair(o0, o1, l0, l1)
		return
	}
	if inner < 16 {
		for o := o0; o < o1; o++ {
			src, dst := st.src[o*c*inner:(o+1)*c*inner], st.dst[o*r*inner:(o+1)*r*inner]
			for l := l0; l < l1; l++ {
				for ro := range r {
					s := 0.0
					for co, w := range mi[ro*c : (ro+1)*c] {
						s += w * src[co*inner+l]
					}
					dst[ro*inner+l] = s
				}
			}
		}
		return
	}
	for o := o0; o < o1; o++ {
		for ro := range r {
			dst := st.dst[(o*r+ro)*inner+l0 : (o*r+ro)*inner+l1]
			first := true
			for co := range c {
				w := mi[ro*c+co]
				if w == 0 {
					continue
				}
				s := st.src[(o*c+co)*inner+l0 : (o*c+co)*inner+l1]
				if first {
					for l, v := range s {
						dst[l] = w * v
					}
					first = false
					continue
				}
				for l, v := range s {
					dst[l] += w * v
				}
			}
			if first {
				clear(dst)
			}
		}
	}
}

// runPair is run for a factor with two columns (every party's factor in products
// that keep or grow the vector): one pass per output run over the pair of input runs,
// with the same products and sums as run's (zero weights skipped).
func (st kronStage) runPair(o0, o1, l0, l1 int) {
	r, inner, mi := st.r, st.inner, st.m
	n := l1 - l0
	for o := o0; o < o1; o++ {
		in := 2 * o * inner
		s0, s1 := st.src[in+l0:in+l0+n], st.src[in+inner+l0:in+inner+l0+n]
		for ro := range r {
			w0, w1 := mi[2*ro], mi[2*ro+1]
			out := (o*r + ro) * inner
			d := st.dst[out+l0 : out+l0+n]
			switch {
			case w0 != 0 && w1 != 0:
				for l, a := range s0 {
					d[l] = w0*a + w1*s1[l]
				}
			case w0 != 0:
				for l, a := range s0 {
					d[l] = w0 * a
				}
			case w1 != 0:
				for l, b := range s1 {
					d[l] = w1 * b
				}
			default:
				clear(d)
			}
		}
	}
}

// run22 is runPair for a 2 × 2 factor without zeros (a party with δ = 0 in the
// products that keep the vector's length): one pass over each pair of input runs
// writes both output runs.
func (st kronStage) run22(o0, o1, l0, l1 int) {
	inner, n := st.inner, l1-l0
	m00, m01, m10, m11 := st.m[0], st.m[1], st.m[2], st.m[3]
	for o := o0; o < o1; o++ {
		base := 2*o*inner + l0
		s0, s1 := st.src[base:base+n], st.src[base+inner:base+inner+n]
		d0, d1 := st.dst[base:base+n], st.dst[base+inner:base+inner+n]
		for l, a := range s0 {
			b := s1[l]
			d0[l] = m00*a + m01*b
			d1[l] = m10*a + m11*b
		}
	}
}

// split runs fn on the halves [0, n/2) and [n/2, n), the first on a new goroutine.
func split(n int, fn func(lo, hi int)) {
	var wg sync.WaitGroup
	half := n / 2
	wg.Go(func() { fn(0, half) })
	fn(half, n)
	wg.Wait()
}
