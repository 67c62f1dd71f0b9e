package gce

import (
	"math"
	"math/big"

	"github.com/dpkit/dpkit/compose"
)

// The brute-force reference of this package's tests: every step is the canonical
// (ε, δ) pair of KOV eq. (17)/(18), the worst case of an (ε, δ)-DP mechanism,
//
//	x⁰: (δ, (1−δ)e^ε/(1+e^ε), (1−δ)/(1+e^ε), 0)     x¹: (0, (1−δ)/(1+e^ε), (1−δ)e^ε/(1+e^ε), δ)
//
// (randomized response when δ = 0). The view of membership vector b is the product of
// the steps' distributions under b_i; a hypothesis is the mixture of views. Every view is
// enumerated (4^k outcomes), so the hockey-stick divergences below are exact up to
// float64 rounding (relative ~1e-15 per term, sums of at most 4^8 positive terms).

func canonicalPair(eps, delta float64) (x0, x1 [4]float64) {
	p := math.Exp(eps) / (1 + math.Exp(eps))
	q := 1 / (1 + math.Exp(eps))
	return [4]float64{delta, (1 - delta) * p, (1 - delta) * q, 0}, [4]float64{0, (1 - delta) * q, (1 - delta) * p, delta}
}

// viewDist returns the distribution over all 4^k views of the mixture hypothesis h.
func viewDist(steps []compose.Mech, h Hypothesis) []float64 {
	k := len(steps)
	pairs := make([][2][4]float64, k)
	for i, s := range steps {
		a, b := canonicalPair(s.Epsilon, s.Delta)
		pairs[i] = [2][4]float64{a, b}
	}
	n := 1 << (2 * k)
	out := make([]float64, n)
	for _, t := range h {
		w, _ := t.W.Float64()
		for y := 0; y < n; y++ {
			p := w
			for i := 0; i < k; i++ {
				bit := 0
				if t.B[i] {
					bit = 1
				}
				p *= pairs[i][bit][(y>>(2*i))&3]
			}
			out[y] += p
		}
	}
	return out
}

// hockey returns max(HS_ε(a‖b), HS_ε(b‖a)), HS_ε(a‖b) = Σ_y (a(y) − e^ε b(y))₊.
func hockey(a, b []float64, eps float64) float64 {
	e := math.Exp(eps)
	var s1, s2 float64
	for y := range a {
		s1 += math.Max(0, a[y]-e*b[y])
		s2 += math.Max(0, b[y]-e*a[y])
	}
	return math.Max(s1, s2)
}

// trueEpsilon returns the smallest ε with hockey(a, b, ε) ≤ delta, by bisection to a
// relative 1e-12 (the largest finite log-ratio bounds it).
func trueEpsilon(a, b []float64, delta float64) float64 {
	hi := 0.0
	for y := range a {
		if a[y] > 0 && b[y] > 0 {
			hi = math.Max(hi, math.Abs(math.Log(a[y]/b[y])))
		}
	}
	hi += 1
	if hockey(a, b, 0) <= delta {
		return 0
	}
	lo := 0.0
	for hi-lo > 1e-12*hi {
		mid := (lo + hi) / 2
		if hockey(a, b, mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// homogeneousDelta is the exact δ(ε) of the k-fold composition of (eps0, 0)-DP
// mechanisms, written literally from docs/errata.md, KOV item 1 in float64,
// independently of package compose (accurate to ~1e-13 relative for k ≤ 2000, ε0 ≤ 0.1:
// no term overflows).
func homogeneousDelta(eps0 float64, k int, eps float64) float64 {
	p := math.Exp(eps0) / (1 + math.Exp(eps0))
	lk, _ := math.Lgamma(float64(k + 1))
	sum := 0.0
	for m := 0; m <= k; m++ {
		loss := float64(2*m-k) * eps0
		if loss <= eps {
			continue
		}
		lm, _ := math.Lgamma(float64(m + 1))
		lr, _ := math.Lgamma(float64(k - m + 1))
		prob := math.Exp(lk - lm - lr + float64(m)*math.Log(p) + float64(k-m)*math.Log1p(-p))
		sum += prob * -math.Expm1(eps-loss)
	}
	return sum
}

// homogeneousEpsilon inverts homogeneousDelta by bisection (relative 1e-13).
func homogeneousEpsilon(eps0 float64, k int, delta float64) float64 {
	lo, hi := 0.0, float64(k)*eps0
	for hi-lo > 1e-13*hi {
		mid := (lo + hi) / 2
		if homogeneousDelta(eps0, k, mid) <= delta {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic("bad rational " + s)
	}
	return r
}

func vec(s string) Vector {
	v, err := ParseVector(s)
	if err != nil {
		panic(err)
	}
	return v
}

func steps1(ms ...compose.Mech) []compose.Mech {
	for i := range ms {
		if ms[i].Count == 0 {
			ms[i].Count = 1
		}
	}
	return ms
}
