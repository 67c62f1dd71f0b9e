package ldp

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// randDist returns a random distribution on k points with every entry ≥ 0.01/k-ish.
func randDist(r *rand.Rand, k int) []float64 {
	p := make([]float64, k)
	s := 0.0
	for i := range p {
		p[i] = r.Float64() + 0.01
		s += p[i]
	}
	for i := range p {
		p[i] /= s
	}
	return p
}

// subsetRatio returns, by brute force over every set S of outputs, the largest
// Q(S|x) − e^ε Q(S|x') over all x ≠ x' (the δ of eq. 3.25) and the largest ratio
// Q(S|x)/Q(S|x') over sets with Q(S|x') > 0 (+Inf if some Q(S|x) > 0 = Q(S|x')).
func subsetRatio(q Matrix, eps float64) (delta, ratio float64) {
	m := q.Outputs()
	e := math.Exp(eps)
	for x := range q {
		for x2 := range q {
			if x == x2 {
				continue
			}
			for s := 1; s < 1<<m; s++ {
				a, b := 0.0, 0.0
				for y := range m {
					if s>>y&1 == 1 {
						a += q[x][y]
						b += q[x2][y]
					}
				}
				delta = max(delta, a-e*b)
				switch {
				case b > 0:
					ratio = max(ratio, a/b)
				case a > 0:
					ratio = math.Inf(1)
				}
			}
		}
	}
	return delta, ratio
}

// bigExp returns e^x to 200 bits by the Taylor series of e^(x/2^s) squared s times:
// an independent high-precision reference (relative error far below 1e-40 for |x| ≤ 50).
func bigExp(x float64) *big.Float {
	const prec = 200
	s := 0
	for math.Abs(x)/math.Ldexp(1, s) > 0.5 {
		s++
	}
	y := new(big.Float).SetPrec(prec).SetFloat64(math.Ldexp(x, -s))
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	for n := 1; n < 80; n++ {
		term.Mul(term, y)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(n)))
		sum.Add(sum, term)
	}
	for range s {
		sum.Mul(sum, sum)
	}
	return sum
}

func relErr(got, want float64) float64 {
	if want == 0 {
		return math.Abs(got)
	}
	return math.Abs(got-want) / math.Abs(want)
}

func checkRel(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if relErr(got, want) > tol || math.IsNaN(got) {
		t.Errorf("%s = %.17g, want %.17g (relative tolerance %g)", what, got, want, tol)
	}
}
