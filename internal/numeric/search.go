package numeric

import (
	"errors"
	"fmt"
	"math"
)

// Searches for the boundary of a monotone predicate, and for a minimum.
//
// dpkit's inversions (the largest ε0 that composes within a budget, the smallest σ
// whose δ(ε) meets a target, the largest k that fits) are all searches for the point
// where a monotone yes/no test changes its answer. Soundness needs the answer to come
// from the side where the test was actually seen to pass, never from an interpolated
// point; so these searches return the final bracket, both ends of which were evaluated
// (or given by the caller), and the caller returns the end on its safe side.

// Monotone is a test that is true on an interval [lo, t) or [lo, t] and false above it:
// "ε0 still composes within the budget", "σ is still too small". An error stops the
// search and is returned as is.
type Monotone func(x float64) (bool, error)

// Stop says when a search may end. A search ends when the bracket [lo, hi] satisfies
// hi − lo ≤ max(AbsTol, RelTol·max(|lo|, |hi|)), when lo and hi are adjacent float64s,
// or after MaxIter evaluations, whichever comes first.
type Stop struct {
	RelTol  float64 // relative width; 0 means none (run until adjacent floats)
	AbsTol  float64 // absolute width; 0 means none
	MaxIter int     // evaluations at most; 0 means 2100, enough to reach adjacent floats
	// Geometric splits at the geometric mean √(lo·hi) instead of the midpoint, for
	// brackets of positive numbers spanning orders of magnitude (a scale or a σ). It
	// needs 0 < lo < hi.
	Geometric bool
}

func (s Stop) done(lo, hi float64, iter int) bool {
	maxIter := s.MaxIter
	if maxIter <= 0 {
		maxIter = 2100
	}
	w := hi - lo
	return iter >= maxIter || w <= s.AbsTol || w <= s.RelTol*math.Max(math.Abs(lo), math.Abs(hi)) ||
		math.Nextafter(lo, hi) >= hi
}

func (s Stop) split(lo, hi float64) float64 {
	if s.Geometric {
		m := math.Sqrt(lo) * math.Sqrt(hi) // no overflow of lo·hi
		if m > lo && m < hi {
			return m
		}
	}
	m := lo + (hi-lo)/2
	if math.IsInf(hi-lo, 0) { // a bracket wider than MaxFloat64
		m = lo/2 + hi/2
	}
	return m
}

// ErrBracket reports a bracket that does not hold: the endpoints are not ordered or
// not finite, or a test that should be true at lo (false at hi) is not.
var ErrBracket = errors.New("numeric: invalid bracket")

// Bisect finds where ok turns from true to false on [lo, hi], by bisection. The
// caller guarantees ok(lo) = true and ok(hi) = false (neither is evaluated) and that
// ok is monotone in between. The result is a bracket lo' ≤ hi' with ok(lo') true and
// ok(hi') false (each either evaluated or the caller's endpoint) and hi' − lo' within
// stop. Callers return lo' for "the largest x that passes" and hi' for "the smallest x
// that fails".
//
// Stopping rule: see Stop. A midpoint is always strictly inside the bracket, so every
// evaluation shrinks it; from any finite bracket adjacent floats are reached within
// 2100 evaluations (64 bisections of the bit pattern's 2^64 values, at worst ≈ 2·1075
// halvings of the magnitude range for an arithmetic midpoint across 0).
func Bisect(lo, hi float64, ok Monotone, stop Stop) (float64, float64, error) {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < hi) {
		return 0, 0, fmt.Errorf("%w: [%g, %g]", ErrBracket, lo, hi)
	}
	if stop.Geometric && !(lo > 0) {
		return 0, 0, fmt.Errorf("%w: geometric split needs 0 < lo, got [%g, %g]", ErrBracket, lo, hi)
	}
	for iter := 0; !stop.done(lo, hi, iter); iter++ {
		mid := stop.split(lo, hi)
		pass, err := ok(mid)
		if err != nil {
			return lo, hi, err
		}
		if pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, hi, nil
}

// ExpandUp finds a bracket for Bisect by growth: starting from x0 > 0, which ok must
// pass (not evaluated), it evaluates x0·factor, x0·factor², … until ok fails or the
// point would exceed limit. It returns (lo, hi, true) with ok(lo) true and ok(hi)
// false, or (last passing point, limit, false) if ok still passed at the last point
// ≤ limit (then ok(limit) is not known to fail). factor must be > 1.
func ExpandUp(x0, factor, limit float64, ok Monotone) (lo, hi float64, found bool, err error) {
	if !(x0 > 0) || math.IsInf(x0, 0) || !(factor > 1) || !(limit >= x0) {
		return 0, 0, false, fmt.Errorf("%w: ExpandUp(x0 = %g, factor = %g, limit = %g)", ErrBracket, x0, factor, limit)
	}
	lo = x0
	for {
		next := lo * factor
		if next > limit || math.IsInf(next, 0) {
			return lo, limit, false, nil
		}
		pass, err := ok(next)
		if err != nil {
			return lo, next, false, err
		}
		if !pass {
			return lo, next, true, nil
		}
		lo = next
	}
}

// MonotoneInt is the integer counterpart of Monotone: true on [lo, t], false above.
type MonotoneInt func(k int64) (bool, error)

// BisectInt returns the largest k in [lo, hi) with ok(k) true, for ok monotone with
// ok(lo) true and ok(hi) false (neither evaluated), by bisection: at most
// ⌈log₂(hi − lo)⌉ evaluations.
func BisectInt(lo, hi int64, ok MonotoneInt) (int64, error) {
	if !(lo < hi) {
		return 0, fmt.Errorf("%w: [%d, %d]", ErrBracket, lo, hi)
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		pass, err := ok(mid)
		if err != nil {
			return lo, err
		}
		if pass {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// LargestInt returns the largest k in [1, max] with ok(k) true, for ok monotone (true,
// then false); 0 when ok(1) is false. It doubles from 1 to bracket the answer, then
// bisects: about 2·log₂(answer) evaluations. A result equal to max means ok(max) holds
// (callers with a cap report "at least max").
func LargestInt(max int64, ok MonotoneInt) (int64, error) {
	if max < 1 {
		return 0, fmt.Errorf("%w: max = %d", ErrBracket, max)
	}
	pass, err := ok(1)
	if err != nil || !pass {
		return 0, err
	}
	lo, hi := int64(1), int64(2)
	for {
		if hi >= max {
			hi = max
		}
		pass, err := ok(hi)
		if err != nil {
			return 0, err
		}
		if !pass {
			break
		}
		if hi == max {
			return max, nil
		}
		lo, hi = hi, 2*hi
		if hi < 0 { // overflow of 2·hi: max is near MaxInt64
			hi = max
		}
	}
	return BisectInt(lo, hi, ok)
}

// invPhi is 1/φ = (√5 − 1)/2, the golden-section ratio.
const invPhi = 0.6180339887498949

// GoldenSection returns a point x in [a, b] and f(x), the smallest value of f among
// the points it evaluated, for f unimodal (decreasing, then increasing) on [a, b]:
// golden-section search (Kiefer 1953; Press et al., Numerical Recipes §10.2) until the
// bracket is narrower than tol (absolute) or after maxIter iterations (0 means 200).
// The endpoints a and b are evaluated too, so a minimum at an end is found exactly. For
// f not unimodal the result is still a value f takes (useful where any x gives a valid
// bound and a smaller value is only tighter), not necessarily the minimum.
func GoldenSection(f func(x float64) float64, a, b, tol float64, maxIter int) (x, fx float64) {
	if maxIter <= 0 {
		maxIter = 200
	}
	a0, b0 := a, b
	c, d := b-invPhi*(b-a), a+invPhi*(b-a)
	fc, fd := f(c), f(d)
	for i := 0; i < maxIter && b-a > tol; i++ {
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - invPhi*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + invPhi*(b-a)
			fd = f(d)
		}
	}
	x, fx = c, fc
	if fd < fx {
		x, fx = d, fd
	}
	for _, e := range []float64{a0, b0} {
		if fe := f(e); fe < fx {
			x, fx = e, fe
		}
	}
	return x, fx
}

// Crossing is a continuous function whose sign tells the side of a boundary: ≤ 0 on the
// passing side (below the root), > 0 beyond it ("the composed ε minus the budget"). An
// error stops the search and is returned as is.
type Crossing func(x float64) (float64, error)

// Brent finds where f changes sign on [lo, hi], for f(lo) ≤ 0 < f(hi) (neither is
// evaluated: the caller passes the values it knows, flo and fhi), by Brent's method
// (Brent 1973, "Algorithms for minimization without derivatives", ch. 4; Press et al.,
// Numerical Recipes §9.3): inverse quadratic interpolation or the secant step when it
// stays well inside the bracket and shrinks it fast enough, bisection otherwise, so it
// converges superlinearly on a smooth f and never much slower than bisection.
//
// Like Bisect it returns the final bracket, both ends evaluated (or given): f(lo') ≤ 0
// and f(hi') > 0 (the latest points of each sign), and hi' − lo' within stop (RelTol,
// AbsTol, MaxIter as for Bisect; Geometric does not apply), unless f(lo') = 0 ended it.
// Callers answer from lo' for "the largest x that passes". f need not be monotone for
// the bracket to hold; the root it brackets is then one of several.
func Brent(lo, hi, flo, fhi float64, f Crossing, stop Stop) (float64, float64, error) {
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < hi) || !(flo <= 0) || !(fhi > 0) {
		return 0, 0, fmt.Errorf("%w: Brent on [%g, %g] with f = %g, %g", ErrBracket, lo, hi, flo, fhi)
	}
	// b is the latest iterate, c the latest of the other sign, a the previous iterate.
	a, b, c := lo, hi, lo
	fa, fb, fc := flo, fhi, flo
	d := b - a
	e := d
	for iter := 0; !stop.done(lo, hi, iter) && flo != 0; iter++ {
		if (fb > 0) == (fc > 0) {
			c, fc = a, fa
			d = b - a
			e = d
		}
		if math.Abs(fc) < math.Abs(fb) {
			a, b, c = b, c, b
			fa, fb, fc = fb, fc, fb
		}
		// The smallest step: a quarter of the stopping width (so that the last steps close
		// the bracket instead of creeping toward b), and a few ulps.
		tol := math.Max(stop.AbsTol, stop.RelTol*math.Abs(b)) / 4
		tol = math.Max(tol, 4*math.Abs(math.Nextafter(b, c)-b))
		xm := (c - b) / 2
		if math.Abs(e) >= tol && math.Abs(fa) > math.Abs(fb) {
			s := fb / fa
			var p, q float64
			if a == c { // secant
				p, q = 2*xm*s, 1-s
			} else { // inverse quadratic interpolation
				qa, r := fa/fc, fb/fc
				p = s * (2*xm*qa*(qa-r) - (b-a)*(r-1))
				q = (qa - 1) * (r - 1) * (s - 1)
			}
			if p > 0 {
				q = -q
			}
			p = math.Abs(p)
			if 2*p < math.Min(3*xm*q-math.Abs(tol*q), math.Abs(e*q)) {
				e, d = d, p/q
			} else {
				d, e = xm, xm
			}
		} else {
			d, e = xm, xm
		}
		a, fa = b, fb
		switch {
		case math.Abs(d) > tol:
			b += d
		case xm > 0:
			b += tol
		default:
			b -= tol
		}
		if !(lo < b && b < hi) { // never step outside the bracket
			b = lo + (hi-lo)/2
		}
		var err error
		if fb, err = f(b); err != nil {
			return lo, hi, err
		}
		if fb > 0 {
			hi, fhi = b, fb
		} else {
			lo, flo = b, fb
		}
	}
	return lo, hi, nil
}
