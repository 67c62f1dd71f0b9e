package numeric

import "math"

// lnSqrt2Pi is ln √(2π).
const lnSqrt2Pi = 0.918938533204672741780329736406

// Stirlerr returns the error of Stirling's approximation to ln n!:
//
//	stirlerr(n) = ln n! − (n + ½) ln n + n − ln √(2π)
//
// for integer n ≥ 1 (Loader, "Fast and accurate computation of binomial
// probabilities", 2000; R's stirlerr). For n ≤ 15 it is evaluated from ln n! (n! is exact
// in float64), with absolute error below 1e-14; above, from the asymptotic series with
// absolute error below 1e-17.
func Stirlerr(n float64) float64 {
	if n <= 15 {
		f := 1.0
		for i := 2.0; i <= n; i++ {
			f *= i
		}
		return math.Log(f) - (n+0.5)*math.Log(n) + n - lnSqrt2Pi
	}
	const (
		s0 = 1.0 / 12
		s1 = 1.0 / 360
		s2 = 1.0 / 1260
		s3 = 1.0 / 1680
		s4 = 1.0 / 1188
	)
	nn := n * n
	switch {
	case n > 500:
		return (s0 - s1/nn) / n
	case n > 80:
		return (s0 - (s1-s2/nn)/nn) / n
	case n > 35:
		return (s0 - (s1-(s2-s3/nn)/nn)/nn) / n
	}
	return (s0 - (s1-(s2-(s3-s4/nn)/nn)/nn)/nn) / n
}

// Bd0 returns the deviance term x ln(x/np) + np − x without cancellation
// (Loader 2000; R's bd0): for x close to np it sums the series in v = (x−np)/(x+np).
func Bd0(x, np float64) float64 {
	if math.Abs(x-np) < 0.1*(x+np) {
		v := (x - np) / (x + np)
		s := (x - np) * v
		if math.Abs(s) < math.SmallestNonzeroFloat64 {
			return s
		}
		ej := 2 * x * v
		v *= v
		for j := 1; j < 1000; j++ {
			ej *= v
			s1 := s + ej/float64(2*j+1)
			if s1 == s {
				return s1
			}
			s = s1
		}
	}
	return x*math.Log(x/np) + np - x
}

// LogBinomPMF returns ln Pr[Bin(n, p) = x] for integers 0 ≤ x ≤ n, where q = 1 − p is
// passed separately so that callers can supply it without cancellation.
//
// It uses Loader's saddle-point decomposition (R's dbinom_raw):
//
//	ln C(n,x) p^x q^(n−x) = stirlerr(n) − stirlerr(x) − stirlerr(n−x)
//	                        − bd0(x, np) − bd0(n−x, nq) − ½ ln(2π x (1 − x/n))
//
// whose relative error in the probability stays near 1e-13 for n up to 10^12, where
// differences of math.Lgamma lose about 1e-9 at n = 10^6 (docs/errata.md item 4).
// It returns −Inf for x outside [0, n].
func LogBinomPMF(x, n, p, q float64) float64 {
	switch {
	case x < 0 || x > n:
		return math.Inf(-1)
	case p == 0:
		if x == 0 {
			return 0
		}
		return math.Inf(-1)
	case q == 0:
		if x == n {
			return 0
		}
		return math.Inf(-1)
	case x == 0:
		if n == 0 {
			return 0
		}
		if p < 0.1 {
			return -Bd0(n, n*q) - n*p
		}
		return n * math.Log(q)
	case x == n:
		if q < 0.1 {
			return -Bd0(n, n*p) - n*q
		}
		return n * math.Log(p)
	}
	lc := Stirlerr(n) - Stirlerr(x) - Stirlerr(n-x) - Bd0(x, n*p) - Bd0(n-x, n*q)
	lf := 2*lnSqrt2Pi + math.Log(x) + math.Log1p(-x/n)
	return lc - 0.5*lf
}
