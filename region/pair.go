package region

import (
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
)

// sumTol is how far from 1 the total of a probability vector may be: room for the
// rounding of the caller's arithmetic, not for unnormalised input.
const sumTol = 1e-9

// Pair is a pair of output distributions of a mechanism on finitely many outcomes:
// P0[x] = P(M(D0) = x) and P1[x] = P(M(D1) = x) for neighbouring inputs D0, D1
// (KOV §2 and Remark 6.1, where P0 and P1 are the densities of M(D0) and M(D1)).
//
// Build a Pair with [NewPair] or [Canonical]. The fields are exported for reading;
// a Pair built or modified otherwise must still satisfy NewPair's conditions, or its
// methods return NaN, nil, an error or false instead of a result.
//
// The results are those of the vectors as stored: NewPair does not rescale them, so a
// total within 1e-9 of 1 shows up in the results as such (for example Polygon's first
// vertex is (0, ΣP0)).
type Pair struct {
	P0, P1 []float64
}

// NewPair returns the pair (p0, p1) after checking that p0 and p1 are probability
// vectors over the same outcomes:
//
//	len(p0) = len(p1) ≥ 1,   p0[x], p1[x] finite and ≥ 0,   |Σ_x p0[x] − 1| ≤ 1e-9,   |Σ_x p1[x] − 1| ≤ 1e-9
//
// It copies p0 and p1. The error wraps a *dpkit.ParamError that names the first
// offending input, e.g. "p1[3]" or "sum(p0)", with its value and valid range.
func NewPair(p0, p1 []float64) (*Pair, error) {
	if err := validate(p0, p1); err != nil {
		return nil, wrap(err)
	}
	return &Pair{P0: append([]float64(nil), p0...), P1: append([]float64(nil), p1...)}, nil
}

func validate(p0, p1 []float64) error {
	if len(p0) == 0 {
		return &dpkit.ParamError{Pkg: "region", Name: "len(p0)", Value: 0, Want: "at least 1"}
	}
	if len(p1) != len(p0) {
		return &dpkit.ParamError{Pkg: "region", Name: "len(p1)", Value: len(p1), Want: fmt.Sprintf("len(p0) = %d", len(p0))}
	}
	for _, v := range []struct {
		name string
		p    []float64
	}{{"p0", p0}, {"p1", p1}} {
		var s sum
		for i, x := range v.p {
			if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return &dpkit.ParamError{Pkg: "region", Name: fmt.Sprintf("%s[%d]", v.name, i), Value: x, Want: "a finite number ≥ 0"}
			}
			s.add(x)
		}
		if total := s.value(); !(math.Abs(total-1) <= sumTol) {
			return &dpkit.ParamError{Pkg: "region", Name: "sum(" + v.name + ")", Value: total, Want: "1 (within 1e-9)"}
		}
	}
	return nil
}

// check re-validates p, so that a Pair built without NewPair cannot make a method panic.
func (p *Pair) check() error {
	if p == nil {
		return &dpkit.ParamError{Pkg: "region", Name: "pair", Value: nil, Want: "a non-nil *Pair"}
	}
	return validate(p.P0, p.P1)
}

// HockeyStick returns the hockey-stick divergence of P0 from P1 (KOV §6.1, the
// definition after eq. 19: the smallest δ_j that keeps the region above the tangent
// line of slope −e^ε):
//
//	d_ε(P0‖P1) = Σ_x (P0(x) − e^ε P1(x))₊ = max_S P0(S) − e^ε P1(S)
//
// It is defined for every real ε and non-increasing in ε. The pair is (ε, δ)-DP in the
// direction "P0 versus P1" exactly when d_ε(P0‖P1) ≤ δ; differential privacy needs
// both directions (see [Pair.HockeyStickReverse] and [Pair.Epsilon]).
//
// Each term is computed without cancellation where possible: an outcome with P1(x) = 0
// contributes P0(x) exactly, an outcome with P0(x)/P1(x) ≤ e^ε contributes exactly 0,
// and the others are rounded once (fused multiply-add; −P0(x)·expm1(ε − ln(P0(x)/P1(x)))
// when e^ε overflows). The sum is compensated, so the result is within a few units in
// the last place of the exact divergence of the stored vectors at the float64 e^ε.
//
// Special cases are:
//
//	HockeyStick(+Inf) = P0({x : P1(x) = 0})
//	HockeyStick(−Inf) = Σ_x P0(x) = 1
//	HockeyStick(NaN) = NaN, and NaN for a Pair that NewPair would reject
func (p *Pair) HockeyStick(eps float64) float64 {
	if math.IsNaN(eps) || p.check() != nil {
		return math.NaN()
	}
	return hockeyStick(p.P0, p.P1, eps)
}

// HockeyStickReverse returns d_ε(P1‖P0), the hockey-stick divergence with the roles of
// D0 and D1 exchanged (KOV Remark 6.1 with errata item 9: for pairs that are not
// symmetric both directions are needed):
//
//	d_ε(P1‖P0) = Σ_x (P1(x) − e^ε P0(x))₊
//
// Accuracy and special cases are those of [Pair.HockeyStick] with P0 and P1 exchanged.
func (p *Pair) HockeyStickReverse(eps float64) float64 {
	if math.IsNaN(eps) || p.check() != nil {
		return math.NaN()
	}
	return hockeyStick(p.P1, p.P0, eps)
}

// hockeyStick returns d_ε(p0‖p1) term by term.
func hockeyStick(p0, p1 []float64, eps float64) float64 {
	t := exp(eps)
	var s sum
	for i := range p0 {
		s.add(excess(p0[i], p1[i], eps, t, llr(p0[i], p1[i])))
	}
	return s.value()
}

// Epsilon returns the smallest ε ≥ 0 at which the pair is (ε, δ)-DP in both directions
// (KOV Thm 2.1 and Cor 2.3, applied to the pair's region):
//
//	ε(δ) = min { ε ≥ 0 : d_ε(P0‖P1) ≤ δ and d_ε(P1‖P0) ≤ δ }
//
// or +Inf when no finite ε suffices, which happens exactly when δ is below the mass of
// an outcome that only one input can produce: δ < P0({P1 = 0}) or δ < P1({P0 = 0}).
//
// As a function of e^ε each divergence is convex and piecewise linear, with breaks at
// the likelihood ratios P0(x)/P1(x), so Epsilon finds the segment that contains the
// answer and solves the linear equation on it:
//
//	Σ_{x∈S} P0(x) − e^ε Σ_{x∈S} P1(x) = δ,      S = { x : P0(x)/P1(x) > e^ε }.
//
// Rounding errs upwards, so the result is not below the exact answer for the stored
// vectors: near a break the segment above it is chosen, and the solution is rounded up
// by a margin that covers its floating-point error — a few units in the last place of
// e^ε, more when δ is close to Σ_{x∈S} P0(x), where the curve is flat and ε ill
// conditioned. Epsilon(δ) = 0 for δ ≥ 1.
//
// Epsilon returns an error wrapping a *dpkit.ParamError if δ is NaN or outside [0, 1],
// or if the Pair is not one NewPair would accept.
func (p *Pair) Epsilon(delta float64) (float64, error) {
	if err := p.check(); err != nil {
		return math.NaN(), wrap(err)
	}
	if err := dpkit.InPackage("region", dpkit.CheckDelta("delta", delta)); err != nil {
		return math.NaN(), wrap(err)
	}
	if delta >= 1 {
		return 0, nil
	}
	gs := groups(p.P0, p.P1)
	return max(epsilonFor(gs, delta), epsilonFor(reversed(gs), delta)), nil
}

// epsilonFor returns the smallest ε ≥ 0 with d_ε(P0‖P1) ≤ δ for groups sorted by
// decreasing ratio. Walking the groups downwards from the largest ratio, a (P0 mass) and
// b (P1 mass) accumulate the groups with L > ε, so d_ε = a − e^ε b on the current segment.
func epsilonFor(gs []group, delta float64) float64 {
	var a, b, tv sum // tv accumulates d_0 = Σ_{L>0} (P0(x) − P1(x)), term by term
	i := 0
	if i < len(gs) && math.IsInf(gs[i].l, 1) {
		a.add(gs[i].p0)
		tv.add(gs[i].p0)
		i++
	}
	if a.value() > delta {
		return math.Inf(1)
	}
	hi := math.Inf(1) // the upper end of the current segment
	for ; i < len(gs) && gs[i].l > 0; i++ {
		g := gs[i]
		// d at the break ε = g.l, where g itself contributes 0, is a − e^ε b up to about
		// 3u·a. Within that of δ the answer is taken from the segment above the break:
		// if it lies below the break after all, solveSegment returns the break itself,
		// which errs upwards.
		d := a.value()
		if t := exp(g.l); !math.IsInf(t, 1) {
			d = math.FMA(-t, b.value(), d)
		} else {
			d -= mulExp(b.value(), g.l, t)
		}
		if d > delta-4*u*a.value() {
			return solveSegment(a.value(), b.value(), delta, g.l, hi)
		}
		a.add(g.p0)
		b.add(g.p1)
		tv.add(g.p0 - g.p1)
		hi = g.l
	}
	if tv := tv.value(); tv+4*u*tv <= delta { // again erring upwards within rounding
		return 0
	}
	return solveSegment(a.value(), b.value(), delta, 0, hi)
}

// u is the unit roundoff of float64.
const u = 0x1p-53

// solveSegment solves a − e^ε b = δ for ε in [lo, hi], where b > 0, and rounds the result
// up by a bound on its floating-point error. A solution outside [lo, hi] is clamped.
func solveSegment(a, b, delta, lo, hi float64) float64 {
	num := a - delta
	if num <= 0 || b == 0 {
		return lo // d_ε = a − e^ε b ≤ a ≤ δ on the whole segment
	}
	var eps float64
	if r := num / b; r >= 0x1p-1022 && r <= math.MaxFloat64 {
		eps = math.Log(r)
	} else {
		eps = ln(num) - ln(b)
	}
	// a and b carry about 2u relative error each (compensated sums), δ is exact, and
	// a − δ magnifies the error of a by a/(a − δ); the logarithms add about 2u|ε|.
	eps += 4*u*(1+(a+delta)/num) + 2*u*math.Abs(eps)
	return min(max(eps, lo), hi)
}
