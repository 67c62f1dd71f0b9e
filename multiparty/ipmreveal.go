package multiparty

import (
	"math"
	"math/bits"
	"slices"
	"sort"
)

// revealGame is the two-output game of ipmGame restricted to a set R of inputs and to
// the transcripts of the most probable reveal patterns, organised by which parties
// revealed their bits (KOV eq. 16: party i's symbol 0 or 3 reveals x_i, with
// probability δ_i whatever x_i).
//
// Given the set S of revealing parties (always those with δ_i = 1, never those with
// δ_i = 0), the transcript is (x_S, noisy bits of the others), and
//
//	P(τ | x) = [x_S = b] Π_{i∈S} δ_i Π_{i∉S} P(noisy z_i | x_i),
//
// so the transcripts of one pattern S and one revealed b form a block whose matrix is
// the Kronecker product of the 2 × 2 noisy factors of the other parties, restricted to
// the inputs with x_S = b: products with P cost O(m 2^m) per block (m = k − |S|), and
// 2^k · (number of patterns) in all, instead of O(k 4^k). Every input has the same
// probability Π_{i∈S} δ_i Π_{i∉S} (1 − δ_i) of each pattern, so the patterns left out
// (the least probable; their rule is fixed) move every input's accuracy by at most
// their total probability, the same for all.
type revealGame struct {
	kg       *kronGame
	inputs   []int   // R, as bit masks
	rIndex   []int32 // rIndex[mask]: position in R, −1 outside
	s        []float64
	patterns []revealPattern
	nt       int     // free transcripts: 2^k per pattern
	tail     float64 // probability of the patterns left out
	spread4  []int   // spread4[z]: the bits of z as base-4 digits (interleaved pairs)
	bufA     []float64
	bufB     []float64
	bufC     []float64
}

// revealPattern is one set S of revealing parties; its blocks b = 0 … 2^|S| − 1
// (revealed bits, row-major over S) hold 2^m transcripts each (noisy bits z,
// row-major over the other parties), from first + b·2^m.
type revealPattern struct {
	weight  float64 // Π_{i∈S} δ_i
	m       int     // noisy parties
	first   int
	spread  []int32  // spread[z]: bit mask of the noisy bits z
	tNoisy  []int32  // transcript index (kronGame order) contributed by z
	bMask   []uint32 // bMask[b]: bit mask of the revealed bits b
	tReveal []int32  // transcript index contributed by b
	// 2 × 2 factors of the noisy parties: P(z | bit) by bit (toBits), by symbol
	// (toSyms), and squared (for diag(Aᵀ D A)); pair, 4 × 2: P(z | b) P(z | b').
	toBits, toSyms, toSyms2, pair [][]float64
	two, four                     []int
}

// Parameters of the restricted interior point stage (ipmReveal).
const (
	revealMaxTranscripts = 1 << 22 // free transcripts at most (2^k per pattern)
	revealTail           = 1e-9    // patterns are added until the rest has this probability,
	revealMaxPairs       = 8       // or their Newton blocks would exceed 8·4^k pair entries
	revealMaxInputs      = 2048    // inputs in R at most
	revealMaxIter        = 40      // Mehrotra iterations per pass at most
	revealCoarseTol      = 1e-4    // restricted duality gap (accuracy) that ends the first pass
	revealGapTol         = 1e-12   // and the second
	revealPatience       = 2       // iterations without progress before a pass stops
	revealAccept         = 1e-4    // certified gap below which generation is not run after it
)

// newRevealGame builds the restricted game on the inputs R (bit masks): the most probable
// revealing patterns (revealCandidates, revealCount), one block of 2^k transcripts each.
func newRevealGame(kg *kronGame, pr *Protocol, inputs []int) *revealGame {
	k := kg.k
	g := &revealGame{kg: kg, inputs: inputs, rIndex: make([]int32, kg.nx), s: make([]float64, len(inputs))}
	for x := range g.rIndex {
		g.rIndex[x] = -1
	}
	for r, x := range inputs {
		g.rIndex[x] = int32(r)
		g.s[r] = float64(2*kg.f[x] - 1)
	}
	cands := revealCandidates(pr, k)
	n := revealCount(cands, kg)
	for _, c := range cands[n:] {
		g.tail += c.prob
	}
	// Transcript strides in kronGame order (party 0 slowest) and symbol positions.
	stride := make([]int, k)
	st := 1
	for i := k - 1; i >= 0; i-- {
		stride[i] = st
		st *= len(kg.syms[i])
	}
	for _, c := range cands[:n] {
		g.patterns = append(g.patterns, newRevealPattern(kg, pr, c.mask, stride, g.nt))
		g.nt += kg.nx
	}
	g.spread4 = make([]int, kg.nx)
	for z := range kg.nx {
		for j := range k {
			g.spread4[z] |= (z >> j & 1) << (2 * j)
		}
	}
	big := kg.nx
	for _, p := range g.patterns {
		big = max(big, 1<<(2*p.m))
	}
	g.bufA, g.bufB, g.bufC = make([]float64, big), make([]float64, big), make([]float64, kg.nx)
	return g
}

// revealCand is a set of revealing parties (a bit mask) and its probability.
type revealCand struct {
	mask uint32
	prob float64
}

// revealCandidates returns the patterns: every subset of the parties with 0 < δ_i < 1,
// with those at δ_i = 1, most probable first.
func revealCandidates(pr *Protocol, k int) []revealCand {
	var free []int
	always := uint32(0)
	for i := range k {
		switch d := pr.parties[i].Delta; {
		case d == 1:
			always |= 1 << i
		case d > 0:
			free = append(free, i)
		}
	}
	var cands []revealCand
	for sub := range 1 << len(free) {
		mask, p := always, 1.0
		for j, i := range free {
			if sub>>j&1 == 1 {
				mask |= 1 << i
				p *= pr.parties[i].Delta
			} else {
				p *= 1 - pr.parties[i].Delta
			}
		}
		cands = append(cands, revealCand{mask, p})
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].prob > cands[b].prob })
	return cands
}

// revealCount returns how many of the most probable patterns the game takes: until the
// rest has probability at most revealTail, the free transcripts would exceed
// revealMaxTranscripts, or the pair products forming the Newton matrix (2^|S| · 4^m per
// pattern) would exceed revealMaxPairs·4^k; at least one.
func revealCount(cands []revealCand, kg *kronGame) int {
	rest := 0.0
	for _, c := range cands {
		rest += c.prob
	}
	n, pairs := 0, 0
	for _, c := range cands {
		p := 1 << (2*kg.k - bits.OnesCount32(c.mask))
		if n > 0 && (rest <= revealTail || (n+1)*kg.nx > revealMaxTranscripts || pairs+p > revealMaxPairs*kg.nx*kg.nx) {
			break
		}
		n, pairs, rest = n+1, pairs+p, rest-c.prob
	}
	return n
}

// newRevealPattern returns the pattern of the revealing parties in mask, whose block
// starts at transcript first: the index maps of its noisy bits and revealed bits, and
// the 2 × 2 factors of its noisy parties.
func newRevealPattern(kg *kronGame, pr *Protocol, mask uint32, stride []int, first int) revealPattern {
	p := revealPattern{weight: 1, first: first}
	var noisy, shown []int
	for i := range kg.k {
		if mask>>i&1 == 1 {
			shown = append(shown, i)
			p.weight *= pr.parties[i].Delta
		} else {
			noisy = append(noisy, i)
		}
	}
	p.m = len(noisy)
	p.spread, p.tNoisy = make([]int32, 1<<p.m), make([]int32, 1<<p.m)
	for z := range 1 << p.m {
		for j, i := range noisy {
			bit := z >> (p.m - 1 - j) & 1
			p.spread[z] |= int32(bit << i)
			p.tNoisy[z] += int32(slices.Index(kg.syms[i], Noisy0+bit) * stride[i])
		}
	}
	p.bMask, p.tReveal = make([]uint32, 1<<len(shown)), make([]int32, 1<<len(shown))
	for b := range 1 << len(shown) {
		for j, i := range shown {
			bit := b >> (len(shown) - 1 - j) & 1
			p.bMask[b] |= uint32(bit << i)
			p.tReveal[b] += int32(slices.Index(kg.syms[i], Reveal0+3*bit) * stride[i])
		}
	}
	for _, i := range noisy {
		var pp [2][2]float64 // pp[z][bit] = P(noisy z | bit)
		for z := range 2 {
			for bit := range 2 {
				pp[z][bit] = pr.Prob(i, Noisy0+z, bit)
			}
		}
		tb, ts, ts2 := make([]float64, 4), make([]float64, 4), make([]float64, 4)
		pair := make([]float64, 8)
		for z := range 2 {
			for bit := range 2 {
				v := pp[z][bit]
				tb[bit*2+z], ts[z*2+bit], ts2[z*2+bit] = v, v, v*v
				for b2 := range 2 {
					pair[(2*bit+b2)*2+z] = v * pp[z][b2]
				}
			}
		}
		p.toBits = append(p.toBits, tb)
		p.toSyms, p.toSyms2 = append(p.toSyms, ts), append(p.toSyms2, ts2)
		p.pair = append(p.pair, pair)
		p.two, p.four = append(p.two, 2), append(p.four, 4)
	}
	return p
}

// blocks calls fn for every block: its pattern, revealed bits b and first transcript.
func (g *revealGame) blocks(fn func(p *revealPattern, b, first int)) {
	for pi := range g.patterns {
		p := &g.patterns[pi]
		for b := range p.bMask {
			fn(p, b, p.first+b<<p.m)
		}
	}
}

// mulA sets out = diag(s) P v on R (v on the free transcripts).
func (g *revealGame) mulA(v, out []float64) {
	clear(out)
	g.blocks(func(p *revealPattern, b, first int) {
		r := kronMul(p.toBits, p.two, p.two, v[first:first+1<<p.m], g.bufA, g.bufB)
		for z, sp := range p.spread {
			if ri := g.rIndex[p.bMask[b]|uint32(sp)]; ri >= 0 {
				out[ri] += g.s[ri] * p.weight * r[z]
			}
		}
	})
}

// mulT sets out = Pᵀ diag(s) u on the free transcripts (signed), or (P∘P)ᵀ u (squared,
// for diag(Aᵀ D A)).
func (g *revealGame) mulT(u, out []float64, signed, squared bool) {
	g.blocks(func(p *revealPattern, b, first int) {
		src := g.bufC[:1<<p.m]
		nonzero := false
		for z, sp := range p.spread {
			src[z] = 0
			if ri := g.rIndex[p.bMask[b]|uint32(sp)]; ri >= 0 {
				src[z] = u[ri]
				if signed {
					src[z] *= g.s[ri]
				}
				nonzero = nonzero || src[z] != 0
			}
		}
		dst := out[first : first+1<<p.m]
		if !nonzero {
			clear(dst)
			return
		}
		fac, w := p.toSyms, p.weight
		if squared {
			fac, w = p.toSyms2, w*w
		}
		r := kronMul(fac, p.two, p.two, src, g.bufA, g.bufB)
		for z := range dst {
			dst[z] = w * r[z]
		}
	})
}

// formM adds diag(s) P E Pᵀ diag(s) to the R × R matrix raw (upper triangle, row
// stride n), block by block from the pair products (as in ipmDirect).
func (g *revealGame) formM(e []float64, raw []float64, n int) {
	members := make([][2]int, 0, len(g.inputs))
	g.blocks(func(p *revealPattern, b, first int) {
		eb := e[first : first+1<<p.m]
		members = members[:0]
		for z, sp := range p.spread {
			if ri := g.rIndex[p.bMask[b]|uint32(sp)]; ri >= 0 {
				members = append(members, [2]int{z, int(ri)})
			}
		}
		if len(members) == 0 {
			return
		}
		w2 := p.weight * p.weight
		r := kronMul(p.pair, p.four, p.two, eb, g.bufA, g.bufB)
		// Each member writes its own row; members are dealt out alternately to two
		// goroutines, which balances the triangle.
		scatter := func(part int) {
			for j := part; j < len(members); j += 2 {
				za, ra := 2*g.spread4[members[j][0]], members[j][1]
				sa := w2 * g.s[ra]
				for _, mb := range members {
					if rb := mb[1]; rb >= ra {
						raw[ra*n+rb] += sa * g.s[rb] * r[za+g.spread4[mb[0]]]
					}
				}
			}
		}
		if len(members) < 256 {
			scatter(0)
			scatter(1)
			return
		}
		split(2, func(part, _ int) { scatter(part) }) // parts 0 and 1 at once
	})
}

// fullIndex calls fn with each free transcript's position and its index in kronGame
// order.
func (g *revealGame) fullIndex(fn func(j, t int)) {
	g.blocks(func(p *revealPattern, b, first int) {
		tb := int(p.tReveal[b])
		for z, tn := range p.tNoisy {
			fn(first+z, tb+int(tn))
		}
	})
}

// ipmReveal improves cert, for a two-output game with 4-symbol parties too large for
// ipmDirect, by the interior point method on restricted programs (revealPass), twice:
// a coarse pass from the best rule and prior, which chooses the inputs and fixed
// decisions of a second pass run to convergence. Both passes' rules and priors are
// offered to cert through the certified evaluations on the whole program.
func ipmReveal(kg *kronGame, cert *certificate, accBuf, scBuf []float64) {
	q, pi := cert.q, cert.pi
	var rg *revealGame
	for pass, tol := range []float64{revealCoarseTol, revealGapTol} {
		if q, pi, rg = revealPass(kg, q, pi, revealMaxInputs>>(1-pass), tol, accBuf, scBuf); rg == nil {
			return
		}
		offerCertified(kg, cert, q, pi, accBuf, scBuf)
	}
	// The last pass's decisions outside its free transcripts came from the previous
	// prior; its own prior's Bayes decisions are the better guess there.
	bayes := bayesRule(kg, pi)
	rg.fullIndex(func(_, t int) { bayes[2*t], bayes[2*t+1] = q[2*t], q[2*t+1] })
	offerCertified(kg, cert, bayes, pi, accBuf, scBuf)
}

// revealPass solves, by Mehrotra's method with exact Newton solves, the program
// restricted to the inputs R that the prior pi weighs or the rule q leaves worst (at
// most revealMaxInputs) and to the transcripts of the most probable reveal patterns
// (revealGame), the rule fixed elsewhere to the Bayes decision of pi; it stops when
// the restricted duality gap is below tol or stops narrowing. The Newton systems are
// solved through the input space (ipmDirect's Woodbury form) with the R × R matrix
// formed block by block. It returns the restricted rule completed by the fixed
// decisions and the restricted prior (a prior on all inputs, supported on R): only
// candidates for the caller's certificate.
func revealPass(kg *kronGame, q0, pi0 []float64, maxInputs int, tol float64, accBuf, scBuf []float64) (q, prior []float64, rg *revealGame) {
	// R: the inputs the prior weighs, then those the rule leaves worst.
	kg.accuracy(q0, accBuf)
	order := make([]int, kg.nx)
	for x := range order {
		order[x] = x
	}
	pmax := slices.Max(pi0)
	sort.SliceStable(order, func(a, b int) bool {
		wa, wb := pi0[order[a]] > 1e-6*pmax, pi0[order[b]] > 1e-6*pmax
		if wa != wb {
			return wa
		}
		return accBuf[order[a]] < accBuf[order[b]]
	})
	inputs := order[:min(kg.nx, maxInputs)]
	slices.Sort(inputs)
	rg = newRevealGame(kg, kg.pr, inputs)
	// The fixed rule and each input's accuracy from it outside the free transcripts.
	q = bayesRule(kg, pi0)
	fixedPart := slices.Clone(q)
	rg.fullIndex(func(_, t int) { fixedPart[2*t], fixedPart[2*t+1] = 0, 0 })
	kg.accuracy(fixedPart, accBuf)
	fixedPart = nil // a rule-sized vector (8·2·4^k bytes): free before the passes allocate
	offset := make([]float64, len(inputs))
	for r, x := range inputs {
		offset[r] = 2 * accBuf[x]
	}
	ig := &ipmGame{kg: kg, nx: len(inputs), nt: rg.nt, rg: rg, offset: offset, cgMax: ipmCGMax}
	ig.tmpX = make([]float64, ig.nx)
	ig.direct = newRevealDirect(ig)
	atpi := make([]float64, rg.nt)
	best, idle := math.Inf(1), 0
	var bestV, bestPi []float64
	ig.interiorPoint(revealMaxIter, func(st *ipmState) bool {
		// Restricted bounds, in units of ±1 (twice the accuracy): the rule's worst
		// input and the prior's dual objective Σ_τ |(Aᵀπ)_τ| + cᵀπ.
		lo := math.Inf(1)
		for x := range ig.nx {
			lo = min(lo, st.theta+st.w[x])
		}
		pi := make([]float64, ig.nx)
		sum := 0.0
		for x, p := range st.pi {
			pi[x] = max(p, 0)
			sum += pi[x]
		}
		if !(sum > 0) {
			return false
		}
		for x := range pi {
			pi[x] /= sum
		}
		ig.mulAT(pi, atpi)
		up := 0.0
		for _, a := range atpi {
			up += math.Abs(a)
		}
		for x, p := range pi {
			up += p * offset[x]
		}
		gap := (up - lo) / 2
		if gap < best-ipmStall {
			idle = 0
		} else {
			idle++
		}
		if gap < best {
			best, bestV, bestPi = gap, slices.Clone(st.v), pi
		}
		// Late iterates may lose the prior (ill-conditioned M): stop when the gap
		// stops narrowing or has doubled.
		return gap <= tol || idle >= revealPatience || gap > 2*best
	})
	if bestV == nil {
		return nil, nil, nil
	}
	rg.fullIndex(func(j, t int) {
		u := min(max((1+bestV[j])/2, 0), 1)
		q[2*t], q[2*t+1] = 1-u, u
	})
	prior = make([]float64, kg.nx)
	for r, x := range inputs {
		prior[x] = bestPi[r]
	}
	return q, prior, rg
}
