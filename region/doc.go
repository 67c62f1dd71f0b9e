// Package region implements differential privacy as hypothesis testing: privacy
// regions, the hockey-stick divergence, trade-off curves and dominance between
// mechanisms, following §2 and Remarks 6.1 and A.1 of Kairouz, Oh and Viswanath,
// "The Composition Theorem for Differential Privacy" (KOV).
//
// # Coordinates
//
// An observer of a mechanism's output tests H0: "the input was D0" against H1: "the
// input was D1". A test (possibly randomised) has a probability of false alarm
// P_FA = P(reject H0 | D0) and of missed detection P_MD = P(accept H0 | D1). Every point
// in this package is a Point{MD, FA}: the horizontal axis is P_MD and the vertical axis
// is P_FA, both in [0, 1], as in KOV Figure 1.
//
// # Privacy regions
//
// The privacy region of an (ε, δ) guarantee (KOV eq. 2, with the two constraints of the
// complementary tests that KOV's Figure 1 leaves implicit) is
//
//	R(ε, δ) = { (md, fa) ∈ [0,1]² :   md + e^ε fa ≥ 1−δ,      e^ε md + fa ≥ 1−δ,
//	                                 (1−md) + e^ε (1−fa) ≥ 1−δ,  e^ε (1−md) + (1−fa) ≥ 1−δ }
//
// and a mechanism is (ε, δ)-differentially private if and only if the region of every
// pair of neighbouring inputs lies inside it (KOV Thm 2.1, Cor 2.3). [Contains] tests
// membership and [Boundary] returns the lower-left boundary polygon.
//
// # Pairs of output distributions
//
// A [Pair] holds the output distributions P0 = M(D0) and P1 = M(D1) of a mechanism with
// finitely many outputs. Its region R(P0, P1) (KOV eq. 3) is the set of (P_MD, P_FA)
// reached by all randomised tests; [Pair.Region] and [Pair.Polygon] return it. Its
// guarantee is read off the hockey-stick divergence
//
//	d_ε(P0‖P1) = Σ_x (P0(x) − e^ε P1(x))₊
//
// ([Pair.HockeyStick]) in both directions: the pair is (ε, δ)-DP exactly when
// d_ε(P0‖P1) ≤ δ and d_ε(P1‖P0) ≤ δ. [Pair.Epsilon] inverts this, and
// [Pair.Breakpoints] describes, by finitely many (ε_j, δ_j), the region of the pair
// with its inputs in either order, conv(R(P0, P1) ∪ R(P1, P0)) (KOV Remark 6.1,
// generalised to pairs that are not symmetric; docs/errata.md item 9).
//
// # Dominance and the canonical pair
//
// [Dominates] decides R(M') ⊆ R(M) (KOV Thm 2.4 and 2.5: M' is then a post-processing of
// M). [Canonical] returns the four-point pair of KOV eq. (17)/(18) whose region is exactly
// R(ε, δ): every (ε, δ)-DP pair is dominated by it. [Implies], [ImpliedDelta] and
// [TotalVariation] are KOV Remark A.1.
//
// # Errors and numerics
//
// Invalid inputs (NaN, ±Inf, negative or out-of-range values, mismatched lengths) are
// reported as errors that wrap a *dpkit.ParamError naming the input and its valid range;
// use errors.As. The package never panics on user input and never logs.
//
// All computations are in float64 and avoid cancellation where the mathematics allows:
// each hockey-stick term is evaluated with a fused multiply-add (or as
// −P0(x)·expm1(ε − L(x)) when e^ε overflows), terms with P1(x) = 0 contribute P0(x)
// exactly, and sums are compensated (Neumaier). Log-likelihood ratios
// L(x) = ln(P0(x)/P1(x)) are computed with log1p when the ratio is near 1. Two defects
// of package math on amd64 are worked around: math.Log of a subnormal number
// (golang/go#56600) and math.Exp returning +Inf from x ≈ 709.44 instead of 709.78.
package region
