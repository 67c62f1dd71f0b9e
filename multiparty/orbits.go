package multiparty

import (
	"math"
)

// symClass is a set of parties with equal (ε, δ) such that f is invariant under every
// permutation of them. Swapping two parties with equal budgets maps the protocol's
// transcript distribution for x onto that for the swapped x, so when f is invariant
// too, the worst-case program has an optimal rule invariant under the swap (average
// any optimal rule over the group: the program is convex and its constraints are
// permuted). "f is invariant under the transposition (i j)" is an equivalence relation
// on parties, since (i l) = (i j)(j l)(i j); its classes, intersected with equal
// budgets, generate the symmetry group used.
type symClass struct {
	parties []int
	syms    []int    // symbols with positive probability
	counts  [][4]int // transcript classes: how many members sent each symbol
	index   map[[4]int]int
	prob    [][]float64 // prob[w][c]: P(counts c | w members hold 1)
	size    []float64   // size[c]: number of transcripts with counts c (multinomial)
}

// orbitGame is the game of eq. (14) reduced to orbits: an input orbit is the number of
// 1s in each class, a transcript orbit the number of each symbol in each class.
type orbitGame struct {
	denseGame
	classes []symClass
	xSize   []float64 // number of inputs in each orbit
	xRep    []uint32  // a representative input of each orbit
}

// swapInvariant reports whether tab is invariant under exchanging bits i and j.
func swapInvariant(tab []int, i, j int) bool {
	bi, bj := 1<<i, 1<<j
	for x := range tab {
		if x&bi != 0 && x&bj == 0 && tab[x] != tab[x^bi^bj] {
			return false
		}
	}
	return true
}

// symmetryClasses partitions the parties into classes of equal budget within which f
// is symmetric.
func symmetryClasses(pr *Protocol, tab []int) [][]int {
	var classes [][]int
	for i := range pr.Parties() {
		placed := false
		for c, cl := range classes {
			r := cl[0]
			if pr.parties[r] == pr.parties[i] && swapInvariant(tab, r, i) {
				classes[c] = append(classes[c], i)
				placed = true
				break
			}
		}
		if !placed {
			classes = append(classes, []int{i})
		}
	}
	return classes
}

// orbitCounts returns the number of input and transcript orbits.
func orbitCounts(pr *Protocol, classes [][]int) (nx, nt int) {
	nx, nt = 1, 1
	for _, cl := range classes {
		n := len(cl)
		nx *= n + 1
		switch len(pr.symbols(cl[0])) {
		case 2:
			nt *= n + 1
		default:
			nt *= (n + 1) * (n + 2) * (n + 3) / 6
		}
	}
	return nx, nt
}

// binom returns C(n, k) for n ≤ 12 (exact in float64).
func binom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	r := 1.0
	for i := range k {
		r = r * float64(n-i) / float64(i+1)
	}
	return math.Round(r)
}

func multinom(n int, parts ...int) float64 {
	r := 1.0
	for _, p := range parts {
		r *= binom(n, p)
		n -= p
	}
	return r
}

func newSymClass(pr *Protocol, parties []int) symClass {
	i0 := parties[0]
	n := len(parties)
	c := symClass{parties: parties, syms: pr.symbols(i0), index: map[[4]int]int{}}
	// Enumerate count vectors over the positive symbols.
	var rec func(j, left int, cur [4]int)
	rec = func(j, left int, cur [4]int) {
		if j == len(c.syms)-1 {
			cur[c.syms[j]] = left
			c.index[cur] = len(c.counts)
			c.counts = append(c.counts, cur)
			return
		}
		for v := left; v >= 0; v-- {
			cur[c.syms[j]] = v
			rec(j+1, left-v, cur)
		}
	}
	rec(0, n, [4]int{})
	pr0 := func(s int) float64 { return pr.Prob(i0, s, 0) }
	pr1 := func(s int) float64 { return pr.Prob(i0, s, 1) }
	pow := func(b float64, e int) float64 {
		if e == 0 {
			return 1
		}
		return math.Pow(b, float64(e))
	}
	c.prob = make([][]float64, n+1)
	for w := 0; w <= n; w++ {
		c.prob[w] = make([]float64, len(c.counts))
		for ci, cnt := range c.counts {
			a, b, cc, d := cnt[Reveal0], cnt[Noisy0], cnt[Noisy1], cnt[Reveal1]
			sum := 0.0
			// The w ones send d reveals, b1 noisy 0s and c1 noisy 1s; the n−w zeros
			// send a reveals, b−b1 noisy 0s and cc−c1 noisy 1s.
			for c1 := 0; c1 <= cc; c1++ {
				b1 := w - d - c1
				b0, c0 := b-b1, cc-c1
				if b1 < 0 || b0 < 0 || c0 < 0 || a+b0+c0 != n-w {
					continue
				}
				sum += multinom(w, d, b1, c1) * pow(pr1(Reveal1), d) * pow(pr1(Noisy0), b1) * pow(pr1(Noisy1), c1) *
					multinom(n-w, a, b0, c0) * pow(pr0(Reveal0), a) * pow(pr0(Noisy0), b0) * pow(pr0(Noisy1), c0)
			}
			c.prob[w][ci] = sum
		}
	}
	c.size = make([]float64, len(c.counts))
	for ci, cnt := range c.counts {
		c.size[ci] = multinom(n, cnt[0], cnt[1], cnt[2], cnt[3])
	}
	return c
}

// newOrbitGame builds the orbit-reduced game.
func newOrbitGame(pr *Protocol, tab []int, ny int, classes [][]int) *orbitGame {
	g := &orbitGame{}
	g.ny = ny
	g.nx, g.nt = 1, 1
	for _, cl := range classes {
		sc := newSymClass(pr, cl)
		g.classes = append(g.classes, sc)
		g.nx *= len(cl) + 1
		g.nt *= len(sc.counts)
	}
	g.f = make([]int, g.nx)
	g.xSize = make([]float64, g.nx)
	g.xRep = make([]uint32, g.nx)
	ws := make([]int, len(classes))
	for xo := range g.nx {
		r := xo
		rep, size := uint32(0), 1.0
		for c := len(g.classes) - 1; c >= 0; c-- {
			cl := g.classes[c]
			n := len(cl.parties)
			ws[c] = r % (n + 1)
			r /= n + 1
			for j := range ws[c] {
				rep |= 1 << cl.parties[j]
			}
			size *= binom(n, ws[c])
		}
		g.xRep[xo], g.xSize[xo], g.f[xo] = rep, size, tab[rep]
	}
	// a(xo, to) = Π_c prob_c[w_c][count index_c], built class by class.
	g.a = make([]float64, g.nx*g.nt)
	for xo := range g.nx {
		r := xo
		for c := len(g.classes) - 1; c >= 0; c-- {
			n := len(g.classes[c].parties)
			ws[c] = r % (n + 1)
			r /= n + 1
		}
		row := g.a[xo*g.nt : (xo+1)*g.nt]
		row[0] = 1
		width := 1
		for c, cl := range g.classes {
			pc := cl.prob[ws[c]]
			m := len(pc)
			// Expand row[:width] to row[:width·m], the new class varying fastest.
			for i := width - 1; i >= 0; i-- {
				v := row[i]
				for j := m - 1; j >= 0; j-- {
					row[i*m+j] = v * pc[j]
				}
			}
			width *= m
		}
	}
	return g
}

// transcriptOrbit returns the orbit index of the transcript tau.
func (g *orbitGame) transcriptOrbit(tau []int) int {
	idx := 0
	for _, cl := range g.classes {
		var cnt [4]int
		for _, i := range cl.parties {
			cnt[tau[i]]++
		}
		idx = idx*len(cl.counts) + cl.index[cnt]
	}
	return idx
}

// inputOrbit returns the orbit index of the input mask x.
func (g *orbitGame) inputOrbit(x uint32) int {
	idx := 0
	for _, cl := range g.classes {
		w := 0
		for _, i := range cl.parties {
			w += int(x >> i & 1)
		}
		idx = idx*(len(cl.parties)+1) + w
	}
	return idx
}
