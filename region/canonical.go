package region

import (
	"math"

	"github.com/dpkit/dpkit"
)

// Canonical returns the canonical (ε, δ) pair of KOV eq. (17)/(18), ε = b.Epsilon and
// δ = b.Delta, on four outcomes:
//
//	P0 = ( δ,  (1−δ) e^ε/(1+e^ε),  (1−δ)/(1+e^ε),  0 )
//	P1 = ( 0,  (1−δ)/(1+e^ε),  (1−δ) e^ε/(1+e^ε),  δ )
//
// Its privacy region is exactly R(ε, δ) (KOV §6.1), so by KOV Thm 2.5 every (ε, δ)-DP
// pair is a post-processing of it ([Dominates](Canonical(b), pair) holds whenever
// pair.Epsilon(δ) ≤ ε), and its hockey-stick divergence is the tightest curve implied by
// (ε, δ) alone:
//
//	d_ε̃(P0‖P1) = d_ε̃(P1‖P0) = ImpliedDelta(b, ε̃) = δ + (1−δ)(e^ε − e^ε̃)₊/(1+e^ε),  ε̃ ≥ 0.
//
// The probabilities are computed as 1/(1+e^(−ε)) and e^(−ε)/(1+e^(−ε)), which neither
// overflow nor cancel for large ε. Canonical returns an error wrapping a
// *dpkit.ParamError if b is not a valid budget (ε finite and ≥ 0, δ in [0, 1]), or if
// (1−δ)/(1+e^ε) is below the smallest normal float64 (ε above about 708): that
// probability would then be rounded to a subnormal or to 0, which changes the ratio
// e^ε and with it the pair's region — a pair with probability 0 there has disjoint
// supports, and δ = 1 at every ε.
func Canonical(b dpkit.Budget) (*Pair, error) {
	if err := b.Validate(); err != nil {
		return nil, wrap(err)
	}
	keep := 1 - b.Delta
	s := math.Exp(-b.Epsilon)
	hi := keep * (1 / (1 + s)) // (1−δ) e^ε/(1+e^ε)
	lo := keep * (s / (1 + s)) // (1−δ)/(1+e^ε)
	if keep > 0 && lo < 0x1p-1022 {
		return nil, wrap(&dpkit.ParamError{Pkg: "region", Name: "epsilon", Value: b.Epsilon,
			Want: "small enough that (1−δ)/(1+e^ε) is a normal float64 (ε ≤ 708 when δ ≤ ½)"})
	}
	return &Pair{
		P0: []float64{b.Delta, hi, lo, 0},
		P1: []float64{0, lo, hi, b.Delta},
	}, nil
}
