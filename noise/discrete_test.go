package noise

import (
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/dpkit/dpkit"
)

// TestBernoulliExact: Bernoulli(num/den) and Bernoulli(exp(−num/den)) against their
// probabilities. Each case fails only if the count is more than 5.73 standard
// deviations from its mean: two-sided normal tail 1e-8 per case, < frp over the cases
// (n ≥ 10^4 draws, so the normal approximation of the binomial is accurate).
func TestBernoulliExact(t *testing.T) {
	src := Seeded(1)
	n := draws(200000, 20000)
	check := func(name string, p float64, f func() bool) {
		c := 0
		for range n {
			if f() {
				c++
			}
		}
		sd := math.Sqrt(float64(n) * p * (1 - p))
		if math.Abs(float64(c)-float64(n)*p) > 5.73*sd+1e-9 {
			t.Errorf("%s: %d of %d, want %.1f ± %.1f", name, c, n, float64(n)*p, 5.73*sd)
		}
	}
	r := bitReader{src: src}
	for _, q := range [][2]uint64{{1, 3}, {2, 3}, {5, 7}, {1, 1000}, {999, 1000}, {0, 5}, {5, 5}} {
		check("bernoulli", float64(q[0])/float64(q[1]), func() bool { return r.bernoulli(q[0], q[1]) })
	}
	for _, q := range [][2]uint64{{0, 1}, {1, 10}, {1, 2}, {1, 1}, {3, 2}, {5, 1}, {7, 3}, {1 << 40, 1 << 40}} {
		// reference: math.Exp of an exact rational (relative error 1e-16, far below the
		// test's resolution)
		p := math.Exp(-float64(q[0]) / float64(q[1]))
		check("bernoulliExp", p, func() bool { b, _ := BernoulliExp(src, q[0], q[1]); return b })
	}
	if _, err := BernoulliExp(src, 1, 0); err == nil {
		t.Error("BernoulliExp(1, 0) accepted")
	}
}

// TestUniformExact: r.uniform(n) against the uniform distribution on [0, n), χ² at frp.
func TestUniformExact(t *testing.T) {
	r := bitReader{src: Seeded(2)}
	const k = 7
	counts := make([]int, k)
	for range draws(70000, 7000) {
		counts[r.uniform(k)]++
	}
	p := make([]float64, k)
	for i := range p {
		p[i] = 1.0 / k
	}
	chiSquare(t, "uniform(7)", counts, p, frp)
}

// laplacePMF returns P(Z = z) = (1−q)/(1+q) q^|z| with q = e^(−rate), computed with
// float64 from the closed form (relative error ~1e-15; the sampler uses no floating point).
func laplacePMF(rate float64, z int64) float64 {
	q := math.Exp(-rate)
	return (1 - q) / (1 + q) * math.Pow(q, math.Abs(float64(z)))
}

// TestDiscreteLaplace: χ² of the sampled values against the exact probabilities, with
// the tails pooled into two bins (probabilities by the closed form P(Z ≥ m) =
// q^m/(1+q)). False-rejection probability frp per rate.
func TestDiscreteLaplace(t *testing.T) {
	src := Seeded(3)
	for _, rate := range []float64{0.1, 0.5, 1, 2.5} {
		d, err := NewDiscreteLaplace(rate)
		if err != nil {
			t.Fatal(err)
		}
		if d.Rate() != rate {
			t.Errorf("rate %v became %v (exact multiples of 2^-63 must stay)", rate, d.Rate())
		}
		n := draws(200000, 20000)
		q := math.Exp(-rate)
		// bins: (−∞, −m], −m+1 … m−1, [m, ∞) with m chosen so the tail has ≥ 0.5%.
		m := int64(math.Floor(math.Log(0.005*(1+q)) / math.Log(q)))
		if m < 1 {
			m = 1
		}
		counts := make([]int, 2*m+1)
		p := make([]float64, 2*m+1)
		tail := math.Pow(q, float64(m)) / (1 + q)
		p[0], p[2*m] = tail, tail
		for z := -m + 1; z <= m-1; z++ {
			p[z+m] = laplacePMF(rate, z)
		}
		for range n {
			z := d.Sample(src)
			i := min(max(z, -m), m) + m
			counts[i]++
		}
		chiSquare(t, "DiscreteLaplace", counts, p, frp/4)
	}
}

// TestDiscreteGaussian: χ² against P(z) ∝ e^(−z²/2σ²), the normaliser summed over
// |z| ≤ 40σ (the rest is below e^(−800)), tails beyond ±2.5σ pooled.
func TestDiscreteGaussian(t *testing.T) {
	src := Seeded(4)
	for _, sigma := range []uint64{1, 3, 10} {
		g, err := NewDiscreteGaussian(sigma)
		if err != nil {
			t.Fatal(err)
		}
		s := float64(sigma)
		w := func(z int64) float64 { return math.Exp(-float64(z*z) / (2 * s * s)) }
		norm := 0.0
		for z := -40 * int64(sigma); z <= 40*int64(sigma); z++ {
			norm += w(z)
		}
		m := int64(math.Ceil(2.5 * s))
		p := make([]float64, 2*m+1)
		for z := -m + 1; z <= m-1; z++ {
			p[z+m] = w(z) / norm
		}
		for z := m; z <= 40*int64(sigma); z++ {
			p[2*m] += w(z) / norm
		}
		p[0] = p[2*m]
		counts := make([]int, 2*m+1)
		for range draws(200000, 20000) {
			z := g.Sample(src)
			counts[min(max(z, -m), m)+m]++
		}
		chiSquare(t, "DiscreteGaussian", counts, p, frp/3)
	}
}

// TestDiscreteLaplaceRounding: rates are rounded down to multiples of 2^−63, never up.
func TestDiscreteLaplaceRounding(t *testing.T) {
	for _, rate := range []float64{MinRate, 1e-9, 0.1, 1, math.Pi, MaxRate} {
		d, err := NewDiscreteLaplace(rate)
		if err != nil {
			t.Fatal(err)
		}
		exact := new(big.Rat).SetFrac(new(big.Int).SetUint64(d.num), new(big.Int).SetUint64(d.den))
		want := new(big.Rat).SetFloat64(rate)
		if exact.Cmp(want) > 0 {
			t.Errorf("rate %v rounded up to %v", rate, exact)
		}
		diff := new(big.Rat).Sub(want, exact)
		if f, _ := diff.Float64(); f > 0x1p-63 {
			t.Errorf("rate %v rounded down by %v > 2^-63", rate, f)
		}
	}
	for _, bad := range []float64{0, MinRate / 2, MaxRate * 2, math.NaN(), math.Inf(1), -1} {
		var pe *dpkit.ParamError
		if _, err := NewDiscreteLaplace(bad); !errors.As(err, &pe) || pe.Name != "rate" {
			t.Errorf("NewDiscreteLaplace(%v) = %v", bad, err)
		}
	}
	for _, bad := range []uint64{0, MaxSigma + 1} {
		if _, err := NewDiscreteGaussian(bad); err == nil {
			t.Errorf("NewDiscreteGaussian(%v) accepted", bad)
		}
	}
}

// TestExpInvExpansion: the exact binary expansion of e^(−1) against math.Exp(−1)
// (correctly rounded to 53 bits: the first 52 bits must agree) and against itself
// computed to a different length (the prefix must not change).
func TestExpInvExpansion(t *testing.T) {
	w := expInvExpansion(2)
	f := math.Exp(-1) * 0x1p64 // e^(−1)·2^64 as a float64 (53 significant bits)
	if d := math.Abs(float64(w[0]) - f); d > 0x1p12 {
		t.Errorf("first word %#x differs from e^-1·2^64 = %v by %v", w[0], f, d)
	}
	long := expInvExpansion(6)
	if long[0] != w[0] || long[1] != w[1] || expInvWord(5) != long[5] || expInvWord(0) != w[0] {
		t.Error("expansion prefix changes with its length")
	}
}

// TestBernoulliFloat: exact Bernoulli(p) for float64 p, including tiny p whose
// expansion starts with many zeros (5.73 standard deviations: 1e-8 per case).
func TestBernoulliFloat(t *testing.T) {
	src := Seeded(11)
	n := draws(200000, 20000)
	for _, p := range []float64{0, 1, 0.5, 0.1, 1.0 / 3, 0.999, 1e-3, 0x1p-70} {
		c := 0
		for range n {
			if b, _ := Bernoulli(src, p); b {
				c++
			}
		}
		sd := math.Sqrt(float64(n) * p * (1 - p))
		if math.Abs(float64(c)-float64(n)*p) > 5.73*sd+1e-9 {
			t.Errorf("Bernoulli(%v): %d of %d", p, c, n)
		}
		if g, _ := BernoulliExpFloat(src, p); p == 0 && !g {
			t.Error("BernoulliExpFloat(0) returned false")
		}
	}
	for _, bad := range []float64{-0.1, 1.1, math.NaN()} {
		if _, err := Bernoulli(src, bad); err == nil {
			t.Errorf("Bernoulli(%v) accepted", bad)
		}
	}
	num, den, _ := Dyadic(0.1)
	if float64(num)/float64(den) > 0.1 || 0.1-float64(num)/float64(den) > 0x1p-63 {
		t.Errorf("Dyadic(0.1) = %d/%d", num, den)
	}
}

// TestDiscreteLaplaceScale: χ² against P(z) ∝ e^(−|z|/t) (closed form, tails pooled as
// in TestDiscreteLaplace), false-rejection probability frp/2 per scale; and saturation
// at ±2^62 for a scale of 2^62 (never beyond, both signs seen).
func TestDiscreteLaplaceScale(t *testing.T) {
	src := Seeded(31)
	for _, sc := range []uint64{1, 7} {
		rate := 1 / float64(sc)
		q := math.Exp(-rate)
		m := max(int64(math.Floor(math.Log(0.005*(1+q))/math.Log(q))), 1)
		counts := make([]int, 2*m+1)
		p := make([]float64, 2*m+1)
		tail := math.Pow(q, float64(m)) / (1 + q)
		p[0], p[2*m] = tail, tail
		for z := -m + 1; z <= m-1; z++ {
			p[z+m] = laplacePMF(rate, z)
		}
		for range draws(200000, 20000) {
			z := DiscreteLaplaceScale(src, sc)
			counts[min(max(z, -m), m)+m]++
		}
		chiSquare(t, "DiscreteLaplaceScale", counts, p, frp/2)
	}
	neg, pos := false, false
	for range 2000 {
		z := DiscreteLaplaceScale(src, 1<<62)
		if z > 1<<62 || z < -(1<<62) {
			t.Fatalf("draw %d beyond ±2^62", z)
		}
		neg, pos = neg || z < 0, pos || z > 0
	}
	if !neg || !pos {
		t.Error("saturated draws are one-sided")
	}
}
