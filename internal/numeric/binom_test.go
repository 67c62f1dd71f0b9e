package numeric

import (
	"math"
	"math/big"
	"testing"
)

// exactBinomPMF is the independent reference: C(n,x) p^x q^(n−x) in exact rational
// arithmetic, for rational p = num/den, rounded once to float64.
func exactBinomPMF(x, n int64, num, den int64) float64 {
	c := new(big.Int).Binomial(n, x)
	p := big.NewRat(num, den)
	q := new(big.Rat).Sub(big.NewRat(1, 1), p)
	r := new(big.Rat).SetInt(c)
	r.Mul(r, ratPow(p, x))
	r.Mul(r, ratPow(q, n-x))
	f, _ := r.Float64()
	return f
}

func ratPow(r *big.Rat, e int64) *big.Rat {
	num := new(big.Int).Exp(r.Num(), big.NewInt(e), nil)
	den := new(big.Int).Exp(r.Denom(), big.NewInt(e), nil)
	return new(big.Rat).SetFrac(num, den)
}

// Loader's form must match exact rational values to 1e-12 relative (its documented
// accuracy is ~1e-13; reference: math/big exact computation above).
func TestLogBinomPMFExact(t *testing.T) {
	cases := []struct{ n, num, den int64 }{{1, 1, 2}, {7, 3, 10}, {50, 1, 3}, {1000, 7, 10}, {3000, 1, 1000}}
	for _, c := range cases {
		p := float64(c.num) / float64(c.den)
		q := float64(c.den-c.num) / float64(c.den)
		step := c.n/40 + 1
		for x := int64(0); x <= c.n; x += step {
			want := exactBinomPMF(x, c.n, c.num, c.den)
			if want < 1e-290 {
				continue
			}
			got := math.Exp(LogBinomPMF(float64(x), float64(c.n), p, q))
			// p and q are themselves rounded: allow their propagated error n·u too.
			tol := 1e-12 + float64(c.n)*4e-16
			if rel := math.Abs(got-want) / want; rel > tol {
				t.Errorf("n=%d x=%d p=%d/%d: got %.17g want %.17g (rel %.2g > %.2g)", c.n, x, c.num, c.den, got, want, rel, tol)
			}
		}
	}
}

// At n = 10^7 the pmf must still sum to 1 (property; tolerance 1e-11 covers 2·10^4
// terms of relative error ~1e-13).
func TestLogBinomPMFMassLargeN(t *testing.T) {
	n, p := 1e7, 0.3
	q := 0.7
	mean, sd := n*p, math.Sqrt(n*p*q)
	var s Sum
	for x := math.Floor(mean - 40*sd); x <= mean+40*sd; x++ {
		s.Add(math.Exp(LogBinomPMF(x, n, p, q)))
	}
	if math.Abs(s.Value()-1) > 1e-11 {
		t.Fatalf("mass = %.17g, want 1", s.Value())
	}
}

func TestLogBinomPMFEdges(t *testing.T) {
	if v := LogBinomPMF(-1, 10, 0.5, 0.5); !math.IsInf(v, -1) {
		t.Error("x < 0 must be impossible")
	}
	if v := LogBinomPMF(11, 10, 0.5, 0.5); !math.IsInf(v, -1) {
		t.Error("x > n must be impossible")
	}
	if v := LogBinomPMF(0, 10, 0, 1); v != 0 {
		t.Error("p = 0 puts all mass at 0")
	}
	if v := LogBinomPMF(10, 10, 1, 0); v != 0 {
		t.Error("q = 0 puts all mass at n")
	}
	// x = 0, n = 10, p = 0.5: 2^-10 exactly.
	if v := LogBinomPMF(0, 10, 0.5, 0.5); math.Abs(v-(-10*math.Ln2)) > 1e-14 {
		t.Errorf("got %v", v)
	}
}

// Stirlerr against its definition evaluated with exact factorials (n ≤ 20) and against
// the value at n = 16 from R (stirlerr(16) = 0.005207443037736...): continuity across
// the n = 15 switch is what matters.
func TestStirlerrContinuity(t *testing.T) {
	for n := 1.0; n <= 40; n++ {
		lf, _ := math.Lgamma(n + 1)
		def := lf - (n+0.5)*math.Log(n) + n - lnSqrt2Pi
		if d := math.Abs(Stirlerr(n) - def); d > 1e-13 {
			t.Errorf("n=%v: stirlerr %.17g, definition %.17g", n, Stirlerr(n), def)
		}
	}
}

func TestSumCompensates(t *testing.T) {
	var s Sum
	s.Add(1)
	for i := 0; i < 1000; i++ {
		s.Add(1e-17)
	}
	if want := 1 + 1e-14; math.Abs(s.Value()-want) > 1e-16 {
		t.Fatalf("got %.17g want %.17g", s.Value(), want)
	}
}
