package region

import (
	"cmp"
	"math"
	"slices"
)

// This file holds the numerical kernel shared by Pair, Breakpoints and Dominates:
// log-likelihood ratios, hockey-stick terms, compensated sums and outcomes grouped by
// likelihood ratio.

// sum is a compensated (Neumaier) running sum: the error of a sum of n terms is about
// 2 units in the last place of the result instead of n.
type sum struct{ s, c float64 }

func (a *sum) add(x float64) {
	t := a.s + x
	if math.Abs(a.s) >= math.Abs(x) {
		a.c += (a.s - t) + x
	} else {
		a.c += (x - t) + a.s
	}
	a.s = t
}

func (a *sum) value() float64 { return a.s + a.c }

// llr returns the log-likelihood ratio L = ln(p/q) for p, q ≥ 0, not both zero:
// +Inf when q = 0 and −Inf when p = 0. Near p = q it is computed as log1p((p−q)/q),
// where p−q is exact (Sterbenz), so L keeps full relative accuracy as L → 0.
func llr(p, q float64) float64 {
	switch {
	case q == 0:
		return math.Inf(1)
	case p == 0:
		return math.Inf(-1)
	}
	r := p / q
	switch {
	case r >= 0.5 && r <= 2:
		return math.Log1p((p - q) / q)
	case r >= 0x1p-1022 && r <= math.MaxFloat64:
		return math.Log(r)
	}
	return ln(p) - ln(q) // the ratio overflowed or underflowed
}

// exp returns e^x. It works around math.Exp on amd64, which returns +Inf for x above
// about 709.436 although e^x is finite up to x ≈ 709.7827 (seen with Go 1.26).
func exp(x float64) float64 {
	if x > 709 {
		return math.Exp(x-1) * math.E
	}
	return math.Exp(x)
}

// mulExp returns y·e^ε for y ≥ 0, given t = exp(ε): the plain product while e^ε is
// finite, e^(ε + ln y) when it overflows (then y·e^ε can still be small if y is).
func mulExp(y, eps, t float64) float64 {
	switch {
	case y == 0:
		return 0
	case math.IsInf(t, 1):
		return exp(eps + ln(y))
	}
	return t * y
}

// ln returns the natural logarithm of x > 0. It corrects math.Log for subnormal x,
// which the amd64 assembly gets wrong (golang/go#56600: math.Log(5e-324) returns
// −709.09 instead of −744.44).
func ln(x float64) float64 {
	if x > 0 && x < 0x1p-1022 {
		return math.Log(x*0x1p54) - 54*math.Ln2
	}
	return math.Log(x)
}

// excess returns one hockey-stick term (p − e^ε q)₊, where t = e^ε (possibly 0 or +Inf)
// and l = ln(p/q). A term with q = 0 is p exactly; a term with l ≤ ε is 0 exactly, so
// the term of an outcome whose ratio equals e^ε vanishes instead of leaving rounding
// noise. Otherwise the term is p − t·q rounded once (FMA), or −p·expm1(ε − l) when e^ε
// overflows.
func excess(p, q, eps, t, l float64) float64 {
	switch {
	case p == 0:
		return 0
	case q == 0:
		return p
	case !(l > eps):
		return 0
	case math.IsInf(t, 1):
		return -p * math.Expm1(eps-l)
	}
	return max(math.FMA(-t, q, p), 0)
}

// group is the total probability of the outcomes that share one likelihood ratio.
type group struct {
	l      float64 // ln(p0/p1), ±Inf when one side is 0
	p0, p1 float64
}

// tieTol is how close two log-likelihood ratios must be for groups to treat them as
// equal: 8 units of roundoff, relative to max(1, |L|). Probabilities that share an exact
// ratio but were rounded separately (0.1/0.25 and 0.3/0.75) land this close.
const tieTol = 8 * 0x1p-53

// groups merges the outcomes of (p0, p1) whose log-likelihood ratios are equal up to
// tieTol, drops outcomes with p0 = p1 = 0, and sorts the groups by decreasing ratio:
// first the outcomes with p1 = 0 (L = +Inf), last those with p0 = 0 (L = −Inf). A merged
// group's ratio is recomputed from its summed probabilities.
func groups(p0, p1 []float64) []group {
	gs := make([]group, 0, len(p0))
	for i := range p0 {
		if p0[i] == 0 && p1[i] == 0 {
			continue
		}
		gs = append(gs, group{l: llr(p0[i], p1[i]), p0: p0[i], p1: p1[i]})
	}
	byRatio := func(a, b group) int { return cmp.Compare(b.l, a.l) }
	slices.SortStableFunc(gs, byRatio)
	out := gs[:0]
	for i := 0; i < len(gs); {
		j := i
		var s0, s1 sum
		for ; j < len(gs) && sameRatio(gs[i].l, gs[j].l); j++ {
			s0.add(gs[j].p0)
			s1.add(gs[j].p1)
		}
		g := group{l: gs[i].l, p0: s0.value(), p1: s1.value()}
		if j-i > 1 {
			g.l = llr(g.p0, g.p1)
		}
		out = append(out, g)
		i = j
	}
	slices.SortStableFunc(out, byRatio) // a recomputed ratio stays inside its band; be safe
	return out
}

func sameRatio(a, b float64) bool {
	if a == b {
		return true
	}
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return false
	}
	return math.Abs(a-b) <= tieTol*max(1, math.Abs(a), math.Abs(b))
}

// reversed returns the groups of the swapped pair (P1, P0), sorted by decreasing
// ratio. Each ratio is recomputed as ln(P1/P0) rather than negated, so that an ε the
// caller computed as ln(P1(x)/P0(x)) ties exactly with that outcome.
func reversed(gs []group) []group {
	rev := make([]group, len(gs))
	for i, g := range gs {
		rev[len(gs)-1-i] = group{l: llr(g.p1, g.p0), p0: g.p1, p1: g.p0}
	}
	slices.SortStableFunc(rev, func(a, b group) int { return cmp.Compare(b.l, a.l) })
	return rev
}

// divergence returns d_ε(P0‖P1) = Σ_g (p0 − e^ε p1)₊ over groups sorted by decreasing
// ratio. Only groups with L > ε contribute, so the loop stops at the first other one.
func divergence(gs []group, eps float64) float64 {
	t := exp(eps)
	var s sum
	for _, g := range gs {
		if !(g.l > eps) {
			break
		}
		s.add(excess(g.p0, g.p1, eps, t, g.l))
	}
	return s.value()
}

// pointMass returns d_∞(P0‖P1) = P0({x : P1(x) = 0}).
func pointMass(gs []group) float64 {
	if len(gs) > 0 && math.IsInf(gs[0].l, 1) {
		return gs[0].p0
	}
	return 0
}

// activeMass returns Σ (p0 + e^ε p1) over the groups whose term p0 − e^ε p1 is
// positive or within a relative tol of it: an upper bound on |Δd_ε| / tol when every
// probability is perturbed by a relative tol. Dominates uses it to size its tolerance.
func activeMass(gs []group, eps, tol float64) float64 {
	t := exp(eps)
	var s sum
	for _, g := range gs {
		switch {
		case g.p0 == 0:
			continue
		case g.p1 == 0:
			s.add(g.p0)
		case math.IsInf(t, 1):
			// p0 − e^ε p1 = p0·(1 − e^(ε−L)) > −tol·p0·(1 + e^(ε−L)) iff ε − L ≲ 2·tol.
			if x := eps - g.l; x <= 2*tol {
				s.add(g.p0 * (1 + exp(x)))
			}
		default:
			tq := t * g.p1
			if !math.IsInf(tq, 1) && math.FMA(-t, g.p1, g.p0) > -tol*(g.p0+tq) {
				s.add(g.p0 + tq)
			}
		}
	}
	return s.value()
}
