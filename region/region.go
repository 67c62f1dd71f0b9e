package region

import (
	"errors"
	"fmt"
	"math"

	"github.com/dpkit/dpkit"
)

// Point is a pair of error probabilities of a test of H0: D0 against H1: D1 (KOV §2):
// MD = P_MD, the probability of missed detection (accepting H0 when D1 is true), and
// FA = P_FA, the probability of false alarm (rejecting H0 when D0 is true). MD is the
// horizontal and FA the vertical coordinate, as in KOV Figure 1.
type Point struct {
	MD, FA float64
}

// Contains reports whether (md, fa) lies in the privacy region R(ε, δ) of KOV eq. (2),
// ε = b.Epsilon and δ = b.Delta, including the constraints of the complementary tests
// (the reflection of eq. (2) through (½, ½)):
//
//	md + e^ε fa ≥ 1−δ,              e^ε md + fa ≥ 1−δ,
//	(1−md) + e^ε (1−fa) ≥ 1−δ,      e^ε (1−md) + (1−fa) ≥ 1−δ,      md, fa ∈ [0, 1].
//
// By KOV Thm 2.1 a mechanism is (ε, δ)-DP if and only if every test of every pair of
// neighbouring inputs achieves a point of R(ε, δ).
//
// There is no tolerance: each inequality is evaluated as one fused multiply-add
// followed by one addition, so only points within a few units in the last place of the
// boundary (such as the vertices returned by [Boundary]) can be classified either way.
//
// Contains returns an error wrapping a *dpkit.ParamError if b is not a valid budget
// (ε finite and ≥ 0, δ in [0, 1]) or md or fa is NaN or outside [0, 1].
func Contains(b dpkit.Budget, md, fa float64) (bool, error) {
	if err := b.Validate(); err != nil {
		return false, wrap(err)
	}
	if err := dpkit.InPackage("region", dpkit.CheckDelta("md", md)); err != nil {
		return false, wrap(err)
	}
	if err := dpkit.InPackage("region", dpkit.CheckDelta("fa", fa)); err != nil {
		return false, wrap(err)
	}
	t := exp(b.Epsilon)
	// atLeast reports x + e^ε y ≥ 1 − δ for x, y ∈ [0, 1].
	atLeast := func(x, y float64) bool {
		if math.IsInf(t, 1) { // e^ε overflows, but e^ε·y need not
			return x+mulExp(y, b.Epsilon, t)+b.Delta >= 1
		}
		return math.FMA(t, y, x)+b.Delta >= 1
	}
	return atLeast(md, fa) && atLeast(fa, md) &&
		atLeast(1-md, 1-fa) && atLeast(1-fa, 1-md), nil
}

// Boundary returns the lower-left boundary of R(ε, δ) (KOV eq. 2 and Figure 1), ε =
// b.Epsilon and δ = b.Delta, from the MD = 0 axis to the FA = 0 axis:
//
//	(0, 1−δ),  (v, v),  (1−δ, 0),      v = (1−δ)/(1+e^ε) = (1−δ)·e^(−ε)/(1+e^(−ε))
//
// The rest of the region's boundary follows by symmetry: R(ε, δ) is symmetric about the
// line md + fa = 1 (and about md = fa), so its upper-right boundary is the reflection
// (md, fa) ↦ (1−fa, 1−md) of this polygon, and the segments from (0, 1) to (0, 1−δ) and
// from (1−δ, 0) to (1, 0) close it along the axes.
//
// Special cases are: for ε = 0 (or ε so small that e^(−ε) rounds to 1) the vertex (v, v)
// lies on the segment and is omitted, so Boundary returns [(0, 1−δ), (1−δ, 0)]; for δ = 1
// the region is the whole unit square and Boundary returns the single point (0, 0).
// Boundary(b) equals [Canonical](b).Region() wherever Canonical is defined (ε up to
// about 708).
//
// Boundary returns an error wrapping a *dpkit.ParamError if b is not a valid budget.
func Boundary(b dpkit.Budget) ([]Point, error) {
	if err := b.Validate(); err != nil {
		return nil, wrap(err)
	}
	keep := 1 - b.Delta
	s := math.Exp(-b.Epsilon)
	switch {
	case keep == 0:
		return []Point{{0, 0}}, nil
	case s == 1: // ε = 0, or so small that e^(−ε) rounds to 1
		return []Point{{0, keep}, {keep, 0}}, nil
	}
	v := keep * (s / (1 + s))
	return []Point{{0, keep}, {v, v}, {keep, 0}}, nil
}

// wrap prefixes an error with the package name, keeping it matchable with errors.As: a
// *dpkit.ParamError is attributed to package region (its message then starts "region:"),
// any other error is wrapped.
func wrap(err error) error {
	if err == nil {
		return nil
	}
	var pe *dpkit.ParamError
	if errors.As(err, &pe) {
		return dpkit.InPackage("region", err)
	}
	return fmt.Errorf("region: %w", err)
}
