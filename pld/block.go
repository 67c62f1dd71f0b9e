package pld

import (
	"fmt"
	"math"
	"sort"
)

// maxBlockAtoms bounds the number of loss sums of one exactly composed block (see
// blocks); maxBlockCount bounds the count of an item that is split into blocks, and
// maxBlockReleases the releases put in blocks in all (each costs about
// maxBlockAtoms/log2(maxBlockAtoms) operations per lattice).
const (
	maxBlockAtoms    = 1 << 14
	maxBlockCount    = 1 << 12
	maxBlockReleases = 1 << 20
)

// blocks replaces releases of mechanisms whose loss is a few atoms ((ε, δ) pairs,
// randomized response, exponential) by blocks composed exactly: every sum of losses of
// a block's releases is enumerated (blockMechanism.pld). Alone, such a release has atoms
// that a common lattice can neither hold (their units differ) nor mix with neighbours,
// so its lower bound would round them down (first order in the spacing); a block has
// many atoms spread over its range, which the lattice discretisation (spread, and
// merge-and-mix) handles to second order.
//
// Releases are sorted by their largest loss and dealt to the blocks in turn, so that
// every block mixes small and large losses: a block of nearly equal losses would have
// its atoms in a few clumps (a binomial), which a lattice finer than the clumps cannot
// mix well. For the same reason one mechanism repeated many times is better
// self-composed on a lattice aligned with its atoms (exact there): blocks are formed only
// when two or more few-atom items are there to mix, and take the items of smallest
// counts first, up to maxBlockReleases releases in all.
// (Laplace and geometric releases were tried as blocks of their discretisations on
// grids of half their atom unit, alone and dealt among (ε, δ) releases, and were worse
// than their own aligned lattices: a block of them is a few heavy clumps. They are not
// blocked.)
func blocks(list []Item) []Item {
	var out []Item
	type cand struct {
		it Item
		sp *atomSpec
	}
	var cands []cand
	for _, it := range list {
		if sp, ok := blockPart(it.Mechanism.specs()); ok && it.Count <= maxBlockCount {
			cands = append(cands, cand{it, sp})
		} else {
			out = append(out, it)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].it.Count < cands[j].it.Count })
	var rel []*atomSpec
	bits := 0.0
	for _, c := range cands {
		if len(cands) == 1 || len(rel)+int(c.it.Count) > maxBlockReleases {
			out = append(out, c.it)
			continue
		}
		for range c.it.Count {
			rel = append(rel, c.sp)
			bits += math.Log2(float64(len(c.sp.loss)))
		}
	}
	if len(rel) == 0 {
		return out
	}
	sort.SliceStable(rel, func(i, j int) bool { return rel[i].lossHi < rel[j].lossHi })
	n := max(1, int(math.Ceil(bits/math.Log2(maxBlockAtoms))))
	bs := make([]blockMechanism, n)
	atoms := make([]int, n) // the number of loss sums of each block
	for i := range atoms {
		atoms[i] = 1
	}
	for i, sp := range rel {
		b := i % n
		if atoms[b]*len(sp.loss) > maxBlockAtoms {
			// Full (releases differ in their numbers of atoms): the first extra block with room.
			for b = n; b < len(bs) && atoms[b]*len(sp.loss) > maxBlockAtoms; b++ {
			}
			if b == len(bs) {
				bs, atoms = append(bs, blockMechanism{}), append(atoms, 1)
			}
		}
		bs[b].rel = append(bs[b].rel, sp)
		atoms[b] *= len(sp.loss)
	}
	for _, b := range bs {
		if len(b.rel) > 0 {
			out = append(out, Item{b, 1})
		}
	}
	return out
}

// blockPart returns the discrete pair of a release that blocks takes: one direction
// (symmetric), finitely many atoms, its δ-event seen alike from both sides.
func blockPart(sp []spec) (*atomSpec, bool) {
	if len(sp) != 1 {
		return nil, false
	}
	s, ok := sp[0].(*atomSpec)
	if !ok || s.qNegInf != s.pInf {
		return nil, false
	}
	return s, true
}

// blockMechanism is a block of releases composed exactly (see blocks).
type blockMechanism struct {
	rel []*atomSpec
}

func (b blockMechanism) Validate() error { return nil }
func (b blockMechanism) String() string  { return fmt.Sprintf("block(%d releases)", len(b.rel)) }

// specs describes the block by its releases' largest losses and variances only (what
// Compose reads to size the lattice); pld enumerates it.
func (b blockMechanism) specs() []spec { return []spec{blockSummary(b)} }

// blockSummary answers support, variance and maxLoss of a block; cell is not used.
type blockSummary blockMechanism

func (s blockSummary) cell(a, b float64) (p, q, relErr float64) {
	panic("pld: blockSummary.cell is not used: blocks are discretised by blockMechanism.pld")
}
func (s blockSummary) support(float64) (lo, hi float64) {
	for _, r := range s.rel {
		lo += r.lossLo
		hi += r.lossHi
	}
	return lo, hi
}
func (s blockSummary) infMass() float64 {
	_, inf, _ := blockMassParts(s.rel)
	return inf
}
func (s blockSummary) variance() float64 {
	v := 0.0
	for _, r := range s.rel {
		v += r.variance()
	}
	return v
}
func (s blockSummary) atomUnit() float64 { return 0 }
func (s blockSummary) maxLoss() float64 {
	_, hi := s.support(0)
	return hi
}

// blockMassParts returns the finite mass Π_r (Σ P-masses of r), the δ-event mass
// 1 − Π_r (1 − δ_r) (accumulated as inf·(δ_r + fin_r) + fin·δ_r, every term
// non-negative), and the number of roundings in each.
func blockMassParts(rel []*atomSpec) (fin, inf float64, ops int) {
	fin = 1
	for _, r := range rel {
		rf := total(r.p)
		inf = inf*(r.pInf+rf) + fin*r.pInf
		fin *= rf
		ops += len(r.p) + 3
	}
	return fin, inf, ops
}

// pld enumerates every sum of the block's losses with its P- and Q-mass (products of
// the releases' masses), sums them per cell (jh, (j+1)h] and discretises the cells
// (discretize: spread for the upper bound, merge-and-mix for the lower one).
//
// Soundness: a computed sum of losses is within lossErr of the exact one, so each atom
// is put in the cell of its loss rounded up by that bound; its exact loss is then at most
// the cell's top, which is all the upper split needs. Merging any outcomes, whichever
// cells they land in, is post-processing, so the lower bound needs nothing.
func (b blockMechanism) pld(h float64, m *meter) *PLD {
	size := 1
	for _, r := range b.rel {
		size *= len(r.loss)
	}
	m.add(3 * int64(size))
	// The sums are enumerated as pairs of the two halves' sums (meet in the middle):
	// each pair is binned as it is formed, and no list of all the sums is ever held.
	half := len(b.rel) / 2
	lossA, pA, qA := enumerate(b.rel[:half])
	lossB, pB, qB := enumerate(b.rel[half:])
	relErr, lossSpan := 0.0, 0.0
	for _, r := range b.rel {
		relErr += r.relErr + 2*u
		lossSpan += math.Max(math.Abs(r.lossLo), math.Abs(r.lossHi))
	}
	n := float64(len(b.rel))
	lossErr := (n+1)*u*lossSpan + 0x1p-1000
	lo, hi := blockSummary(b).support(0)
	jlo := int64(math.Floor((lo-lossErr)/h)) - 1
	jhi := int64(math.Ceil((hi+lossErr)/h)) + 1
	cells := &cellsSpec{h: h, jlo: jlo, p: make([]float64, jhi-jlo+1), lq: make([]float64, jhi-jlo+1)}
	// A sum la + lb of the halves' sums (each of at most n terms) is within lossErr of
	// the exact one; (l + lossErr)·fl(1/h) is within 3u of (l + lossErr)/h, and 8u·|x|
	// more puts x at or above it: cell (j·h, (j+1)·h], j = ⌈x⌉ − 1, holds the exact loss.
	invH := 1 / h
	for i, la := range lossA {
		pa, qa := pA[i], qA[i]
		for k, lb := range lossB {
			x := (la + lb + lossErr) * invH
			x += 8 * u * math.Abs(x)
			j := int64(math.Ceil(x)) - 1 - jlo
			cells.p[j] += pa * pB[k]
			cells.lq[j] += qa * qB[k] // linear until linearToLog below
		}
	}
	for j, q := range cells.lq {
		cells.lq[j] = linearToLog(q)
	}
	// A cell sums at most size products: (size − 1)·u more relative error.
	cells.relErr = relErr + float64(size)*u
	_, inf, ops := blockMassParts(b.rel)
	cells.inf = inf * (1 + float64(ops)*u)
	cells.trim()
	m.add(discretizeWork * int64(len(cells.p)))
	up, lo2 := discretize(cells, h, 0)
	// The δ-event mass was rounded up for the upper bound; the lower one takes it down.
	lo2.InfMass = inf * (1 - float64(ops)*u)
	return &PLD{h: h, sides: []side{{up, lo2}}, m: m}
}

// enumerate returns every sum of losses of rel (one atom of each) with its P-mass and
// Q-mass (products of the releases' masses; Q-masses that underflow are 0, which
// linearToLog treats as not known).
func enumerate(rel []*atomSpec) (loss, p, q []float64) {
	loss, p, q = []float64{0}, []float64{1}, []float64{1}
	for _, r := range rel {
		m := len(r.loss)
		nl, np, nq := make([]float64, 0, len(loss)*m), make([]float64, 0, len(loss)*m), make([]float64, 0, len(loss)*m)
		for i, l := range loss {
			for k := range r.loss {
				nl = append(nl, l+r.loss[k])
				np = append(np, p[i]*r.p[k])
				nq = append(nq, q[i]*r.q[k])
			}
		}
		loss, p, q = nl, np, nq
	}
	return loss, p, q
}

// cellsSpec is a pair given by its P-mass and log Q-mass in each lattice cell
// (jh, (j+1)h], j = jlo + i, plus P-mass at +∞: what blockMechanism.pld and
// composeCoarse sum from their atoms. cell is asked only for unions of whole cells (as
// discretize does).
type cellsSpec struct {
	h      float64
	jlo    int64
	p, lq  []float64
	inf    float64
	relErr float64
}

// trim drops empty cells at both ends.
func (c *cellsSpec) trim() {
	empty := func(i int) bool { return c.p[i] == 0 && math.IsInf(c.lq[i], -1) }
	a, b := 0, len(c.p)
	for a < b && empty(a) {
		a++
	}
	for b > a && empty(b-1) {
		b--
	}
	if a == b { // nothing finite: keep one empty cell
		a = min(a, len(c.p)-1)
		b = a + 1
	}
	c.p, c.lq, c.jlo = c.p[a:b], c.lq[a:b], c.jlo+int64(a)
}

// index returns the number of cells of c whose top is at or below x.
func (c *cellsSpec) index(x float64) int {
	switch {
	case math.IsInf(x, -1):
		return 0
	case math.IsInf(x, 1):
		return len(c.p)
	}
	i := math.Round(x/c.h) - float64(c.jlo)
	return int(math.Max(0, math.Min(i, float64(len(c.p)))))
}

func (c *cellsSpec) cell(a, b float64) (p, lq, relErr float64) {
	lq = math.Inf(-1)
	n := 0
	for i := c.index(a); i < c.index(b); i++ {
		p, lq = addMass(p, lq, c.p[i], c.lq[i])
		n++
	}
	return p, lq, c.relErr + float64(2*n)*u
}

func (c *cellsSpec) support(float64) (lo, hi float64) {
	return float64(c.jlo) * c.h, float64(c.jlo+int64(len(c.p))) * c.h
}
func (c *cellsSpec) infMass() float64  { return c.inf }
func (c *cellsSpec) atomUnit() float64 { return 0 }
func (c *cellsSpec) maxLoss() float64  { _, hi := c.support(0); return hi }
func (c *cellsSpec) variance() float64 {
	var m, m2, tot float64
	for i, pm := range c.p {
		l := (float64(c.jlo+int64(i)) + 0.5) * c.h
		m, m2, tot = m+pm*l, m2+pm*l*l, tot+pm
	}
	if tot == 0 {
		return 0
	}
	m /= tot
	return math.Max(m2/tot-m*m, 0)
}
