package pld

import (
	"math"
	"math/bits"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
)

// PLD is a privacy-loss distribution kept on a lattice of spacing H as a certified
// bracket: an upper discretisation whose privacy curve is a valid guarantee and a lower
// one whose curve the true curve is at least (see discretize). A mechanism whose add and
// remove neighbours give different pairs keeps both directions; reported curves are the
// worse of the two.
type PLD struct {
	h     float64
	sides []side // one when symmetric; else remove, add
	// trim is the mass a composition may shed at each end of each side (0: trimMass).
	trim float64
	// errTol is the absolute error (Lattice.Err) a convolution with this PLD may add
	// rather than summing bulks exactly (0: exact bulks where cheap; see convolve).
	errTol float64
	// m follows the work of the Compose call that builds the PLD (nil: none).
	m *meter
	// cached read-out distributions, built on first use
	dUp, dLo [][]*Discrete
}

// anyMeter returns the meter of the first PLD that has one.
func anyMeter(ps ...*PLD) *meter {
	for _, p := range ps {
		if p.m != nil {
			return p.m
		}
	}
	return nil
}

// Work units (see meter) of the steps whose cost is not a plain count of products: a
// cell of a discretisation (a few exponentials and logarithms), and a convolution of n
// and m bins (three FFTs of N = 2^⌈log₂(n+m)⌉ points, or at most n·m direct products).
const discretizeWork = 40

func convolveWork(n, m int) int64 {
	size := n + m - 1
	nfft := int64(1) << bits.Len(uint(size-1))
	return min(int64(n)*int64(m), 5*nfft*int64(bits.Len64(uint64(nfft))))
}

type side struct{ upper, lower *Lattice }

// lattice returns the upper or lower lattice of direction i; a symmetric PLD's one
// direction serves both.
func (p *PLD) lattice(i int, upper bool) *Lattice {
	s := p.sides[min(i, len(p.sides)-1)]
	if upper {
		return s.upper
	}
	return s.lower
}

// H returns the lattice spacing.
func (p *PLD) H() float64 { return p.h }

// Symmetric reports whether one direction describes both neighbour orders.
func (p *PLD) Symmetric() bool { return len(p.sides) == 1 }

// Bins returns the number of lattice bins of the widest stored distribution.
func (p *PLD) Bins() int {
	n := 0
	for _, s := range p.sides {
		n = max(n, len(s.upper.Mass), len(s.lower.Mass))
	}
	return n
}

// maxErr returns the largest tracked floating-point error (Err) of the stored lattices.
func (p *PLD) maxErr() float64 {
	e := 0.0
	for _, s := range p.sides {
		e = math.Max(e, math.Max(s.upper.Err, s.lower.Err))
	}
	return e
}

// trimMass is the mass shed at each end of a lattice after a composition: moved to the
// ends (upper) or dropped (lower).
const trimMass = 1e-45

// newPLD discretises the pair's directions on the lattice of spacing h; eta is the mass
// the support may leave out at each end, and what compositions of the result may trim.
func newPLD(h, eta float64, specs ...spec) *PLD {
	p := &PLD{h: h, trim: eta}
	for _, s := range specs {
		// A spec whose atoms lie on a grid not through 0 is discretised on that grid.
		o := 0.0
		if os, ok := s.(interface{ atomOffset() float64 }); ok {
			o = os.atomOffset()
		}
		if o != 0 {
			s = shiftedSpec{s, o}
		}
		up, lo := discretize(s, h, eta)
		up.Shift, lo.Shift = o, o
		p.sides = append(p.sides, side{up, lo})
	}
	return p
}

// Compose returns the privacy-loss distribution of running both mechanisms (the
// convolution of their PLDs; Kairouz–Oh–Viswanath §2: losses of independent releases
// add). Both must share the lattice spacing.
func (p *PLD) Compose(q *PLD) (*PLD, error) {
	if p.h != q.h {
		return nil, paramErr("spacing", q.h, "the spacing of the other PLD")
	}
	n := max(len(p.sides), len(q.sides))
	out := &PLD{h: p.h, sides: make([]side, n), trim: max(p.trim, q.trim), errTol: minTol(p.errTol, q.errTol), m: anyMeter(p, q)}
	eta := out.trimMass()
	each(2*n, func(t int) {
		i, upper := t/2, t%2 == 0
		a, b := p.lattice(i, upper), q.lattice(i, upper)
		out.m.add(convolveWork(len(a.Mass), len(b.Mass)))
		l := convolveTrim(a, b, upper, eta, out.errTol)
		out.sides[i].set(upper, l)
	})
	return out, nil
}

// set stores l as the upper or lower lattice.
func (s *side) set(upper bool, l *Lattice) {
	if upper {
		s.upper = l
	} else {
		s.lower = l
	}
}

// each calls f(0), …, f(n−1) concurrently: the lattices of a PLD (two bounds of one or
// two directions) are computed independently. A panic in f is raised again in the
// caller's goroutine once all have returned: an abort (a cancellation or a refusal, see
// meter) as it is, anything else as a workerPanic carrying the worker's stack, which
// ComposeContext returns as an *InternalError.
func each(n int, f func(i int)) { parallel(n, n, f) }

// pairwise folds xs (at least one) with join, level by level: sorted by size, smallest
// first, and joined in pairs, a level's pairs on every core (parallel), an odd one out
// carried to the next level. Compositions stay small until the last levels, where a
// chain would join every part with the whole.
func pairwise[T any](xs []T, size func(T) int, join func(a, b T) T) T {
	for len(xs) > 1 {
		sort.Slice(xs, func(i, j int) bool { return size(xs[i]) < size(xs[j]) })
		next := make([]T, (len(xs)+1)/2)
		parallel(len(xs)/2, 0, func(i int) { next[i] = join(xs[2*i], xs[2*i+1]) })
		if len(xs)%2 == 1 {
			next[len(next)-1] = xs[len(xs)-1]
		}
		xs = next
	}
	return xs[0]
}

// parallel calls f(0), …, f(n−1) on at most workers goroutines (GOMAXPROCS when
// workers ≤ 0), as each does.
func parallel(n, workers int, f func(i int)) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, n)
	if workers <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var wg sync.WaitGroup
	var once sync.Once
	var raised any
	var next atomic.Int64
	for range workers {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(abort); !ok {
						r = workerPanic{r, debug.Stack()}
					}
					once.Do(func() { raised = r })
				}
			}()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
	if raised != nil {
		panic(raised)
	}
}

// workerPanic is a panic raised in a worker goroutine of parallel, with that
// goroutine's stack, carried to the caller's goroutine.
type workerPanic struct {
	value any
	stack []byte
}

// trimMass returns the mass a composition may shed at each end of each side: for the
// upper bound it moves to the ends (+∞ above: δ(ε) can only rise), for the lower one it
// is dropped.
func (p *PLD) trimMass() float64 {
	if p.trim > 0 {
		return p.trim
	}
	return trimMass
}

// minTol returns the smaller allowance, 0 counting as none.
func minTol(a, b float64) float64 {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

func convolveTrim(a, b *Lattice, upper bool, eta, errTol float64) *Lattice {
	c := convolve(a, b, errTol)
	c.Trim(eta, upper)
	return c
}

// rediscretize puts the PLD on the lattice of spacing h (see discretize: the lattice's
// atoms, with Q-masses P-mass·e^(−loss), are treated as a discrete pair): through 0, or,
// with keepShift, through each side's own Shift. The floating-point error already
// tracked (Rel, Err) carries over.
func (p *PLD) rediscretize(h float64, keepShift bool) *PLD {
	out := &PLD{h: h, sides: make([]side, len(p.sides)), trim: p.trim, errTol: p.errTol, m: p.m}
	for i, s := range p.sides {
		p.m.add(discretizeWork * int64(len(s.upper.Mass)+len(s.lower.Mass)))
		out.sides[i] = side{s.upper.onto(h, keepShift, true), s.lower.onto(h, keepShift, false)}
	}
	return out
}

// onto returns one bound of rediscretize. Losses are measured from a grid point of the
// new lattice near the middle of l's (a pair whose losses all move by the same amount
// discretises the same way, see latticeSpec), which keeps their rounding small.
func (l *Lattice) onto(h float64, keepShift, upper bool) *Lattice {
	su := 0.0
	if keepShift {
		su = l.Shift
	}
	mid := l.Shift + l.H*float64(l.Offset+int64(len(l.Mass)/2))
	n := int64(math.Round((mid - su) / h))
	out := discretizeBound(latticeSpec(l, upper, su+float64(n)*h), h, 0, upper)
	out.Offset += n
	out.Shift, out.Err, out.Rel = su, l.Err, l.Rel
	return out
}

// logQMass returns ln(p·e^(−loss)), the log Q-mass of an outcome with P-mass p > 0, and
// its absolute error beyond the rounding of its own magnitude: from the product when it
// is a normal float64 (relative error 2u), else ln p − loss (the rounding of ln p).
func logQMass(p, loss float64) (lq, err float64) {
	if q := p * math.Exp(-loss); q >= 0x1p-1000 && q <= math.MaxFloat64 {
		return math.Log(q), 3 * u
	}
	lp := math.Log(p)
	return lp - loss, u*(math.Abs(lp)+math.Abs(loss)) + u
}

// latticeSpec describes a lattice bound as a discrete pair, its losses measured from
// shift (a grid the result will be discretised on passes through shift; a pair whose
// losses are all moved by the same amount discretises the same way, Q-masses scaled by
// e^shift — see discretize). The rounding of shift itself (≤ u·|shift|) is covered by
// rounding each loss outward by 2u·|shift| more. The upper side's losses are rounded up
// and the lower's down by their rounding error; each atom's Q-mass is that of its
// rounded loss, in log space (logQMass), so that no loss is out of range.
func latticeSpec(l *Lattice, upper bool, shift float64) spec {
	n := len(l.Mass)
	loss, p, lq := make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n)
	relErr := 4 * u
	for i, m := range l.Mass {
		if m <= 0 {
			continue
		}
		x, e := l.loss(i)
		x -= shift
		e += 2*u*math.Abs(x) + 2*u*math.Abs(shift)
		if upper {
			x += e
		} else {
			x -= e
		}
		if k := len(loss); k > 0 && loss[k-1] >= x {
			// Rounding met two atoms: the upper side keeps the larger loss, the lower side
			// the smaller.
			if !upper {
				loss[k-1] = x
			}
			p[k-1] += m
			var ek float64
			lq[k-1], ek = logQMass(p[k-1], loss[k-1])
			relErr = math.Max(relErr, ek+u)
			continue
		}
		lqi, ei := logQMass(m, x)
		relErr = math.Max(relErr, ei+u)
		loss, p, lq = append(loss, x), append(p, m), append(lq, lqi)
	}
	if len(loss) == 0 {
		loss, p, lq = []float64{0}, []float64{0}, []float64{math.Inf(-1)}
	}
	return newAtomSpec(loss, p, lq, math.Max(l.InfMass, 0), 0, relErr)
}

// SelfCompose returns the k-fold composition, by repeated squaring: O(log k)
// convolutions of lattices whose width grows as √k after trimming.
func (p *PLD) SelfCompose(k int64) (*PLD, error) {
	if k < 1 {
		return nil, paramErr("k", k, "an integer ≥ 1")
	}
	out := &PLD{h: p.h, sides: make([]side, len(p.sides)), trim: p.trim, m: p.m}
	for i, s := range p.sides {
		out.sides[i] = side{power(s.upper, k, true, p.trimMass()), power(s.lower, k, false, p.trimMass())}
	}
	return out, nil
}

func power(l *Lattice, k int64, upper bool, eta float64) *Lattice {
	var acc *Lattice
	base := l
	for i := bits.Len64(uint64(k)) - 1; i >= 0; i-- {
		if acc != nil {
			acc = convolveTrim(acc, acc, upper, eta, 0)
		}
		if k>>uint(i)&1 == 1 {
			if acc == nil {
				acc = base
			} else {
				acc = convolveTrim(acc, base, upper, eta, 0)
			}
		}
	}
	return acc
}

func (p *PLD) discretes() (up, lo []*Discrete) {
	if p.dUp == nil {
		for _, s := range p.sides {
			p.dUp = append(p.dUp, []*Discrete{s.upper.Discrete(true)})
			p.dLo = append(p.dLo, []*Discrete{s.lower.Discrete(false)})
		}
	}
	for i := range p.dUp {
		up = append(up, p.dUp[i][0])
		lo = append(lo, p.dLo[i][0])
	}
	return up, lo
}

// Delta returns a certified bracket lower ≤ δ(ε) ≤ upper of the hockey-stick divergence
// at ε, the larger over the two neighbour orders.
func (p *PLD) Delta(eps float64) (upper, lower float64) {
	up, lo := p.discretes()
	for i := range up {
		upper = math.Max(upper, math.Min(1, up[i].Delta(eps)))
		lower = math.Max(lower, math.Max(0, lo[i].Delta(eps)))
	}
	return upper, lower
}

// Epsilon returns a certified bracket lower ≤ ε(δ) ≤ upper of the smallest ε ≥ 0 with
// δ(ε) ≤ delta (+Inf when no ε reaches delta).
func (p *PLD) Epsilon(delta float64) (upper, lower float64) {
	up, lo := p.discretes()
	for i := range up {
		upper = math.Max(upper, up[i].Epsilon(delta))
		lower = math.Max(lower, lo[i].EpsilonBelow(delta))
	}
	return upper, lower
}

// TradeOff returns a certified bracket lower ≤ β(α) ≤ upper of the trade-off function of
// the pair (f-DP; KOV §2 Thm 2.1 read as a hypothesis test): the smallest missed-detection
// probability of a test whose false-alarm probability is at most α, the smaller over the
// two neighbour orders. It uses the convex-conjugate relation (Dong, Roth & Su 2022,
// Prop. 2.12)
//
//	β(α) = max(0, sup_ε 1 − δ(ε) − e^ε·α),
//
// the supremum being attained at a loss atom since δ is piecewise linear in e^ε.
// A larger privacy curve gives a smaller β, so the upper PLD gives the lower β.
func (p *PLD) TradeOff(alpha float64) (upper, lower float64) {
	up, lo := p.discretes()
	upper, lower = 1, 1
	for i := range up {
		lower = math.Min(lower, tradeOff(up[i], alpha))
		upper = math.Min(upper, tradeOff(lo[i], alpha))
	}
	return upper, lower
}

// tradeOff evaluates the supremum at every atom l_i (atomDeltas).
// (At ε → −∞ the value is 1 − total mass ≤ 0 for a probability measure.)
func tradeOff(d *Discrete, alpha float64) float64 {
	best := 0.0
	d.atomDeltas(func(i int, delta float64) {
		best = math.Max(best, 1-delta-math.Exp(d.Loss[i])*alpha)
	})
	return math.Min(1, best)
}

// atomDeltas calls f with δ(l_i) at every atom l_i, in one downward pass:
// δ(l_i) = InfMass + A_i − G_i, A_i = Σ_{j>i} m_j, G_i = Σ_{j>i} m_j e^(l_i − l_j).
func (d *Discrete) atomDeltas(f func(i int, delta float64)) {
	A, G := 0.0, 0.0
	for i := len(d.Loss) - 1; i >= 0; i-- {
		if i < len(d.Loss)-1 {
			G = (G + d.Mass[i+1]) * math.Exp(d.Loss[i]-d.Loss[i+1])
			A += d.Mass[i+1]
		}
		f(i, d.InfMass+math.Max(A-G, 0))
	}
}
