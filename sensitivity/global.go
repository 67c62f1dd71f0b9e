package sensitivity

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
)

// Neighbour is a neighbouring relation between datasets.
type Neighbour int

const (
	// AddRemove: D' is D with the rows of one privacy unit added or removed (unbounded DP).
	AddRemove Neighbour = iota
	// ReplaceOne: D' is D with the rows of one privacy unit replaced by those of another
	// (bounded DP).
	ReplaceOne
)

// String returns "add-remove" or "replace-one".
func (n Neighbour) String() string {
	switch n {
	case AddRemove:
		return "add-remove"
	case ReplaceOne:
		return "replace-one"
	}
	return fmt.Sprintf("Neighbour(%d)", int(n))
}

// MaxRows is the largest maxRows accepted (2^53, so that maxRows is exact in float64).
const MaxRows = 1 << 53

func checkNeighbour(nb Neighbour) error {
	if nb != AddRemove && nb != ReplaceOne {
		return &dpkit.ParamError{Pkg: "sensitivity", Name: "neighbour", Value: int(nb), Want: "AddRemove or ReplaceOne"}
	}
	return nil
}

func checkRows(name string, m int) error {
	if m < 1 || int64(m) > MaxRows {
		return &dpkit.ParamError{Pkg: "sensitivity", Name: name, Value: m, Want: fmt.Sprintf("an integer in [1, %d]", int64(MaxRows))}
	}
	return nil
}

func checkBounds(lo, hi float64) error {
	if math.IsNaN(lo) || math.IsInf(lo, 0) {
		return &dpkit.ParamError{Pkg: "sensitivity", Name: "lo", Value: lo, Want: "a finite number"}
	}
	if math.IsNaN(hi) || math.IsInf(hi, 0) || hi <= lo {
		return &dpkit.ParamError{Pkg: "sensitivity", Name: "hi", Value: hi, Want: fmt.Sprintf("a finite number > lo = %g", lo)}
	}
	return nil
}

// up rounds the exact value x up to a float64 (toward +∞). Results that overflow are
// +Inf, which callers reject.
func up(x *big.Float) float64 {
	f, acc := x.Float64()
	if acc == big.Below {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// prec is enough bits to hold exactly any sum, difference or product of two float64s
// (exponents span 2^−1074 … 2^1024) and of a float64 and an integer below 2^63; the
// rounding mode is toward +∞ in case a value ever needs more.
const prec = 2200

func exact(x float64) *big.Float {
	return new(big.Float).SetPrec(prec).SetMode(big.ToPositiveInf).SetFloat64(x)
}

func exactInt(m int) *big.Float {
	return new(big.Float).SetPrec(prec).SetMode(big.ToPositiveInf).SetInt64(int64(m))
}

// finite turns an overflowed sensitivity into a *dpkit.ParamError on the named input.
func finite(s float64, name string, value any) (float64, error) {
	if math.IsInf(s, 0) || math.IsNaN(s) {
		return 0, &dpkit.ParamError{Pkg: "sensitivity", Name: name, Value: value, Want: "bounds whose sensitivity is finite in float64"}
	}
	return s, nil
}

// Count returns the ℓ1 (= ℓ2) global sensitivity of the number of rows that satisfy a
// predicate, when one unit contributes at most maxRows rows (the lecture slides, "count queries
// have sensitivity 1"):
//
//	Δ = maxRows   under both AddRemove and ReplaceOne
//
// Under ReplaceOne the total row count without a predicate changes by at most
// maxRows − 1 (by 0 when maxRows = 1); Count still returns maxRows, a safe upper bound.
func Count(nb Neighbour, maxRows int) (float64, error) {
	if err := checkNeighbour(nb); err != nil {
		return 0, err
	}
	if err := checkRows("maxRows", maxRows); err != nil {
		return 0, err
	}
	return float64(maxRows), nil
}

// Sum returns the ℓ1 (= ℓ2) global sensitivity of a sum of values clamped to [lo, hi],
// when one unit contributes between 1 and maxRows = m rows (the lecture slides):
//
//	AddRemove:   Δ = m · max(|lo|, |hi|)
//	ReplaceOne:  Δ = smax − smin,  smax = m·hi if hi ≥ 0 else hi,  smin = m·lo if lo < 0 else lo
//
// (smax and smin are the largest and smallest sums of one unit's rows; with m = 1 the
// ReplaceOne sensitivity is hi − lo). The result is rounded up.
func Sum(nb Neighbour, lo, hi float64, maxRows int) (float64, error) {
	if err := checkNeighbour(nb); err != nil {
		return 0, err
	}
	if err := checkBounds(lo, hi); err != nil {
		return 0, err
	}
	if err := checkRows("maxRows", maxRows); err != nil {
		return 0, err
	}
	m := exactInt(maxRows)
	var s *big.Float
	if nb == AddRemove {
		s = exact(0).Mul(m, exact(math.Max(math.Abs(lo), math.Abs(hi))))
	} else {
		smax, smin := exact(hi), exact(lo)
		if hi >= 0 {
			smax.Mul(smax, m)
		}
		if lo < 0 {
			smin.Mul(smin, m)
		}
		s = smax.Sub(smax, smin)
	}
	return finite(up(s), "hi", hi)
}

// Mean returns the global sensitivity of the mean of values clamped to [lo, hi] over
// datasets that all have at least minRows ≥ 1 rows (a public bound), when one unit
// contributes between 1 and maxRows = m rows:
//
//	AddRemove:   Δ = (hi − lo) · m / (minRows + m)
//	ReplaceOne:  Δ = (hi − lo) · m / max(minRows, m)
//
// Proof sketch: with C the rows the neighbours share, c = |C| and mean μ, adding a
// units' rows A of mean α moves the mean by a(α − μ)/(c + a); the ratio a/(c + a) grows
// with a ≤ m and falls with c. Under AddRemove c ≥ minRows; under ReplaceOne both
// c + a ≥ minRows and c + b ≥ minRows, and the two moves, in opposite directions, add
// to at most max(a/(c+a), b/(c+b)) · (hi − lo) ≤ m/max(minRows, m) · (hi − lo).
// The result is rounded up; it is never above hi − lo.
func Mean(nb Neighbour, lo, hi float64, maxRows, minRows int) (float64, error) {
	if err := checkNeighbour(nb); err != nil {
		return 0, err
	}
	if err := checkBounds(lo, hi); err != nil {
		return 0, err
	}
	if err := checkRows("maxRows", maxRows); err != nil {
		return 0, err
	}
	if err := checkRows("minRows", minRows); err != nil {
		return 0, err
	}
	width := exact(0).Sub(exact(hi), exact(lo))
	var den *big.Float
	if nb == AddRemove {
		den = exact(0).Add(exactInt(minRows), exactInt(maxRows))
	} else {
		den = exactInt(max(minRows, maxRows))
	}
	num := width.Mul(width, exactInt(maxRows))
	// Divide at a precision well above float64 and round the quotient toward +∞ so that
	// the final rounding to float64 cannot go below the exact value.
	q := new(big.Float).SetPrec(256).SetMode(big.ToPositiveInf).Quo(num, den)
	return finite(up(q), "hi", hi)
}

// Histogram returns the ℓ1 and ℓ2 global sensitivities of a histogram (counts of rows
// per bin, bins fixed in advance) when one unit contributes at most maxRows = m rows
// (the lecture slides, corrected by docs/errata.md, slides item 7):
//
//	AddRemove:   ℓ1 = m,   ℓ2 = m        (all m rows may fall in one bin)
//	ReplaceOne:  ℓ1 = 2m,  ℓ2 = √2 · m   (m rows leave one bin and m enter another)
//
// ℓ2 under ReplaceOne is rounded up.
func Histogram(nb Neighbour, maxRows int) (l1, l2 float64, err error) {
	if err := checkNeighbour(nb); err != nil {
		return 0, 0, err
	}
	if err := checkRows("maxRows", maxRows); err != nil {
		return 0, 0, err
	}
	m := float64(maxRows)
	if nb == AddRemove {
		return m, m, nil
	}
	mm := exactInt(maxRows)
	twoM2 := exact(0).Mul(mm, mm)
	return 2 * m, sqrtUp(twoM2.Mul(twoM2, big.NewFloat(2))), nil
}

// sqrtUp returns a float64 s ≥ √x (x ≥ 0 exact), at most one ulp above the rounded root.
func sqrtUp(x *big.Float) float64 {
	r := new(big.Float).SetPrec(256).Sqrt(x)
	s := up(r)
	// r is itself rounded; make sure s² ≥ x exactly.
	for {
		e := exact(s)
		if e.Mul(e, e).Cmp(x) >= 0 {
			return s
		}
		s = math.Nextafter(s, math.Inf(1))
	}
}

// Grouped returns the ℓ1 and ℓ2 global sensitivities of a vector of per-group counts
// (scale = 1) or per-group sums of values of magnitude ≤ scale, when one unit
// contributes at most maxRows = m rows in total, to at most maxGroups = g groups and with
// at most perGroup = c rows in each (contribution bounding of grouped queries; the L0 and
// L∞ bounds of practitioners' DP SQL). With k = min(g, ⌊m/c⌋) full groups and a
// remainder r = min(c, m − k·c) in one more group when k < g (r = 0 otherwise):
//
//	AddRemove:   ℓ1 = min(m, g·c)·scale,   ℓ2 = √(k·c² + r²)·scale
//	ReplaceOne:  ℓ1 = 2·ℓ1(AddRemove),     ℓ2 = √2·ℓ2(AddRemove) for counts,
//	                                         2·ℓ2(AddRemove) for sums (scale > 1 or signed)
//
// AddRemove: the unit's per-group contributions c_j satisfy c_j ≤ c, Σ c_j ≤ m and at
// most g of them are non-zero; Σ c_j and Σ c_j² are largest when the groups are filled
// to c one after another. ReplaceOne removes one such vector u and adds another v; for
// counts u, v ≥ 0, so ‖v − u‖₂² ≤ ‖u‖₂² + ‖v‖₂²; sums may have either sign, and the
// triangle inequality gives twice. With g = c = m (nothing declared) this is Histogram.
// Results are rounded up. isCount selects the counts' ReplaceOne ℓ2.
func Grouped(nb Neighbour, maxRows, maxGroups, perGroup int, scale float64, isCount bool) (l1, l2 float64, err error) {
	if err := checkNeighbour(nb); err != nil {
		return 0, 0, err
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"maxRows", maxRows}, {"maxGroups", maxGroups}, {"perGroup", perGroup}} {
		if err := checkRows(c.name, c.v); err != nil {
			return 0, 0, err
		}
	}
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return 0, 0, &dpkit.ParamError{Pkg: "sensitivity", Name: "scale", Value: scale, Want: "a finite number > 0"}
	}
	m, g, c := int64(maxRows), int64(maxGroups), int64(min(perGroup, maxRows))
	k := min(g, m/c)
	var r int64
	if k < g {
		r = min(c, m-k*c)
	}
	s := exact(scale)
	sum := exact(0).Mul(exactInt(int(min(m, g*c))), s)
	sq := exactInt(int(k))
	sq.Mul(sq, exactInt(int(c*c)))
	sq.Add(sq, exactInt(int(r*r)))
	sq.Mul(sq, exact(0).Mul(s, s))
	switch {
	case nb == ReplaceOne && isCount:
		sum.Mul(sum, big.NewFloat(2))
		sq.Mul(sq, big.NewFloat(2))
	case nb == ReplaceOne:
		sum.Mul(sum, big.NewFloat(2))
		sq.Mul(sq, big.NewFloat(4))
	}
	if l1, err = finite(up(sum), "scale", scale); err != nil {
		return 0, 0, err
	}
	l2 = sqrtUp(sq)
	if math.IsInf(l2, 0) {
		return 0, 0, &dpkit.ParamError{Pkg: "sensitivity", Name: "scale", Value: scale, Want: "a scale whose squared sensitivity is finite"}
	}
	return l1, l2, nil
}
