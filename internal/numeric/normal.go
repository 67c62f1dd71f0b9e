package numeric

import "math"

// LogNormCDF returns ln Φ(x), the logarithm of the standard normal CDF, for any x, with
// absolute error below 8u + 4u(x² + 1) (math.Erfc's and the argument's rounding; u =
// 2^−53). Above x = −37 it is ln of ½·erfc(−x/√2), a normal float64 there (Φ(−37) ≈
// 5.7e-300); beyond, where Φ enters the subnormal range and then underflows, it sums
// the asymptotic series (Abramowitz & Stegun 26.2.12)
//
//	Φ(x) = φ(x)/|x| · (1 − 1/x² + 3/x⁴ − 15/x⁶ + … + (−1)^k (2k−1)!!/x^(2k) + …),
//
// alternating with decreasing terms past k ≈ x²/2, through k = 8: the truncation error is
// below 17!!/37^18 ≈ 1.1e-20 relative.
func LogNormCDF(x float64) float64 {
	if x > -37 {
		return math.Log(0.5 * math.Erfc(-x/math.Sqrt2))
	}
	x2 := 1 / (x * x)
	s, t := 1.0, 1.0
	for k := 1; k <= 8; k++ {
		t *= -float64(2*k-1) * x2
		s += t
	}
	return -x*x/2 - math.Log(-x) - 0.5*math.Log(2*math.Pi) + math.Log(s)
}
