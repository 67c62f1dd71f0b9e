package mechanism

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
)

// defaultSource is the shared secure source used when a release is given a nil source.
var defaultSource = noise.Secure()

func sourceOr(src noise.Source) noise.Source {
	if src == nil {
		return defaultSource
	}
	return src
}

func checkBeta(beta float64) error {
	if math.IsNaN(beta) || beta <= 0 || beta >= 1 {
		return perr("beta", beta, "in (0, 1)")
	}
	return nil
}

func checkEpsilonPositive(eps float64) error {
	if err := dpkit.InPackage("mechanism", dpkit.CheckPositive("epsilon", eps)); err != nil {
		return err
	}
	return nil
}

func checkValue(name string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return perr(name, x, "a finite number")
	}
	return nil
}

func indexName(name string, i int) string { return fmt.Sprintf("%s[%d]", name, i) }

// gridNoise is the integer noise of a grid mechanism whose output grid is g = 2^k
// (Laplace: exact discrete Laplace of grid scale t; Gaussian: exact N_ℤ(0, S²)).
type gridNoise interface {
	gridExp() int
	sample(src noise.Source) int64
}

// snap returns ⌊a + ½⌋ for a float64 a with |a| < 2^63, exactly (a + ½ itself is not
// exact for |a| ≥ 2^52, where it rounds to even and can add one).
func snap(a float64) int64 {
	f := math.Floor(a)
	n := int64(f)
	if a-f >= 0.5 { // a − ⌊a⌋ is exact
		n++
	}
	return n
}

// gridRelease returns the release (⌊x/g + ½⌋ + z)·g of the grid mechanism, g = 2^k,
// for a finite x: the integer ⌊x/g + ½⌋ + z is computed exactly (in math/big when it
// does not fit 53 bits) and converted to float64 once, rounding to nearest, then
// clamped to ±MaxFloat64. The integer is the private output (its set, ℤ, does not
// depend on x); the conversion is post-processing. Unlike noise.SecureLaplace.Add,
// which clamps x/g to ±2^60 before adding noise, no input is moved: a sum far larger
// than 2^60 grid steps is released around its true value.
func gridRelease(x float64, k int, z int64) float64 {
	if a := math.Ldexp(x, -k); math.Abs(a) < 0x1p53 { // exact unless it underflows to |a| < ½
		n := snap(a) + z // |snap(a)| ≤ 2^53, |z| ≤ 2^62: no overflow
		return clampFloat(math.Ldexp(float64(n), k))
	}
	// |x/g| ≥ 2^53 (or beyond the float64 range): x/g is an integer, held exactly.
	xb := new(big.Float).SetPrec(0).SetFloat64(x)
	xb.SetMantExp(xb, -k) // exact: only the exponent changes
	n, _ := xb.Int(nil)   // exact: an integer already
	n.Add(n, big.NewInt(z))
	out := new(big.Float).SetInt(n)
	out.SetMantExp(out, k)
	f, _ := out.Float64() // nearest float64 (±Inf beyond the range)
	return clampFloat(f)
}

// gridReleaseInt returns ⌊(⌊x/g + ½⌋ + z)·g + ½⌋ for an integer x and g = 2^k: the
// grid release of x rounded to the nearest integer (post-processing), in exact integer
// arithmetic, saturated at the int64 range.
func gridReleaseInt(x int64, k int, z int64) int64 {
	n := big.NewInt(x)
	if k >= 0 {
		// ⌊x/g + ½⌋ = ⌊(x + g/2)/g⌋ (g/2 = 0 for g = 1), then n·g is an integer.
		if k > 0 {
			n.Add(n, new(big.Int).Lsh(big.NewInt(1), uint(k-1)))
		}
		n.Rsh(n, uint(k)) // floor
		n.Add(n, big.NewInt(z))
		n.Lsh(n, uint(k))
	} else {
		// x/g is an integer: n = x·2^(−k) + z, then ⌊n·g + ½⌋ = ⌊(n + 2^(−k−1))/2^(−k)⌋.
		n.Lsh(n, uint(-k))
		n.Add(n, big.NewInt(z))
		n.Add(n, new(big.Int).Lsh(big.NewInt(1), uint(-k-1)))
		n.Rsh(n, uint(-k)) // floor
	}
	switch {
	case !n.IsInt64() && n.Sign() > 0:
		return math.MaxInt64
	case !n.IsInt64():
		return math.MinInt64
	}
	return n.Int64()
}

func clampFloat(f float64) float64 { return math.Max(-math.MaxFloat64, math.Min(math.MaxFloat64, f)) }

// release adds m's noise to one finite value, for a mechanism of dimension dim = 1.
func release(m gridNoise, dim int, value float64, src noise.Source) (float64, error) {
	if dim != 1 {
		return 0, perr("value", value, "a vector of dimension coordinates (use ReleaseVector)")
	}
	if err := checkValue("value", value); err != nil {
		return 0, err
	}
	return gridRelease(value, m.gridExp(), m.sample(sourceOr(src))), nil
}

// releaseVector adds independent noise from m to each of dim finite values.
func releaseVector(m gridNoise, dim int, values []float64, src noise.Source) ([]float64, error) {
	if len(values) != dim {
		return nil, perr("values", len(values), "dimension coordinates")
	}
	for i, v := range values {
		if math.IsNaN(v) || math.IsInf(v, 0) { // name built only on error (no allocation)
			return nil, checkValue(indexName("values", i), v)
		}
	}
	src = sourceOr(src)
	k := m.gridExp()
	out := make([]float64, len(values))
	for i, v := range values {
		out[i] = gridRelease(v, k, m.sample(src))
	}
	return out, nil
}
