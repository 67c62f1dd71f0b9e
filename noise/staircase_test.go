package noise

import (
	"math"
	"math/big"
	"testing"
)

// TestStaircaseDistribution: χ² of the integer staircase noise against its exact
// probabilities, binned by (period, step): P(|Z| in period j, low step) ∝ b^j r and
// (high step) ∝ b^(j+1) (M − r), with "−0" removed; the tails beyond 3 periods pooled.
// False-rejection probability frp/2 per case.
func TestStaircaseDistribution(t *testing.T) {
	src := Seeded(9)
	for _, c := range [][2]float64{{1, 0.3}, {2.5, StaircaseGammaL2(2.5)}} {
		eps, gamma := c[0], c[1]
		s, err := NewStaircase(eps, 1, gamma)
		if err != nil {
			t.Fatal(err)
		}
		m, r := float64(s.m), float64(s.r)
		b := math.Exp(-s.Epsilon())
		// Weights of the one-sided magnitude n ≥ 0 by (period j, step); the total mass
		// is 2W − P(0) with W = Σ_j b^j (r + b(M − r)) = (r + b(M−r))/(1−b).
		w := (r + b*(m-r)) / (1 - b)
		total := 2*w - 1 // the point 0 (weight 1) is counted once
		const periods = 3
		var p []float64
		tail := 1.0
		for j := range periods {
			bj := math.Pow(b, float64(j))
			low, high := bj*r, bj*b*(m-r)
			for step, v := range []float64{low, high} {
				neg := v
				if j == 0 && step == 0 {
					neg-- // z = 0 is counted on the positive side
				}
				p = append(p, neg/total, v/total)
				tail -= (neg + v) / total
			}
		}
		p = append(p, tail)
		counts := make([]int, len(p))
		for range draws(200000, 20000) {
			z := s.sample(src)
			n := uint64(z)
			if z < 0 {
				n = uint64(-z)
			}
			switch {
			case n/s.m >= periods:
				counts[len(p)-1]++
			default:
				i := 4 * int(n/s.m)
				if n%s.m >= s.r {
					i += 2
				}
				if z >= 0 {
					i++
				}
				counts[i]++
			}
		}
		chiSquare(t, "Staircase", counts, p, frp/2)
	}
}

// staircaseMomentRef sums the per-period integrals of the staircase density (the
// definition, eq. (2.8) with d = 1) in big.Float for 4000 periods:
// E|X|^p = 2a Σ_k [e^(−kε) ∫_{kΔ}^{(k+γ)Δ} x^p dx + e^(−(k+1)ε) ∫_{(k+γ)Δ}^{(k+1)Δ} x^p dx].
func staircaseMomentRef(eps, gamma float64, p int) float64 {
	prec := uint(200)
	f := func(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }
	pow := func(x *big.Float, n int) *big.Float {
		r := f(1)
		for range n {
			r.Mul(r, x)
		}
		return r
	}
	b := math.Exp(-eps)
	sum := f(0)
	bk := f(1)
	for k := range 4000 {
		kk, kg, k1 := f(float64(k)), f(float64(k)+gamma), f(float64(k+1))
		lowI := new(big.Float).Sub(pow(kg, p+1), pow(kk, p+1))
		highI := new(big.Float).Sub(pow(k1, p+1), pow(kg, p+1))
		term := new(big.Float).Add(lowI, highI.Mul(highI, f(b)))
		sum.Add(sum, term.Mul(term, bk))
		bk.Mul(bk, f(b))
	}
	a := (1 - b) / (2 * (b + (1-b)*gamma))
	v, _ := sum.Float64()
	return 2 * a * v / float64(p+1)
}

// TestStaircaseMoments: the closed forms against the summed definition (tolerance 1e-12
// relative; the sum is truncated after 4000 periods, a relative e^(−4000ε) ≤ e^(−400)),
// and the optimal γ's against a golden-section minimisation of the closed forms.
func TestStaircaseMoments(t *testing.T) {
	for _, eps := range []float64{0.1, 0.5, 1, 3, 8} {
		for _, gamma := range []float64{0, 0.2, 0.5, 1} {
			for _, p := range []int{1, 2} {
				got, want := StaircaseMoment(eps, 1, gamma, p), staircaseMomentRef(eps, gamma, p)
				if math.Abs(got-want) > 1e-12*want {
					t.Errorf("E|X|^%d(ε=%v, γ=%v) = %.15g, summed %.15g", p, eps, gamma, got, want)
				}
			}
		}
		for p, gammaStar := range map[int]float64{1: StaircaseGammaL1(eps), 2: StaircaseGammaL2(eps)} {
			lo, hi := 0.0, 1.0
			for range 200 {
				a, b := lo+(hi-lo)*0.382, lo+(hi-lo)*0.618
				if StaircaseMoment(eps, 1, a, p) < StaircaseMoment(eps, 1, b, p) {
					hi = b
				} else {
					lo = a
				}
			}
			if math.Abs(gammaStar-(lo+hi)/2) > 1e-6 {
				t.Errorf("ε=%v p=%d: γ* = %v, numerical minimum at %v", eps, p, gammaStar, (lo+hi)/2)
			}
		}
	}
	// Laplace comparison (thesis Cor 2.3.2 in d = 1: staircase ≤ Laplace cost 1/ε for
	// E|X| and 2/ε² for the variance, with Δ = 1).
	for _, eps := range []float64{0.1, 1, 5} {
		if v := StaircaseMoment(eps, 1, StaircaseGammaL1(eps), 1); v > 1/eps {
			t.Errorf("ε=%v: staircase E|X| %v above Laplace %v", eps, v, 1/eps)
		}
		if v := StaircaseMoment(eps, 1, StaircaseGammaL2(eps), 2); v > 2/(eps*eps) {
			t.Errorf("ε=%v: staircase variance %v above Laplace %v", eps, v, 2/(eps*eps))
		}
	}
}

// TestHeavyTail: the sampler against the Beta-function CDF with the DKW bound (frp/2
// per γ), and the CDF against direct numerical integration of the density (composite
// Simpson on t = z/(1+z), 20000 panels; tolerance 1e-9).
func TestHeavyTail(t *testing.T) {
	src := Seeded(10)
	for _, gamma := range []float64{1.5, 4} {
		h, err := NewHeavyTail(gamma)
		if err != nil {
			t.Fatal(err)
		}
		xs := make([]float64, draws(100000, 10000))
		for i := range xs {
			xs[i] = h.Sample(src)
		}
		dkw(t, "HeavyTail", xs, func(x float64) float64 {
			if x < 0 {
				return 0.5 * (1 - h.AbsCDF(-x))
			}
			return 0.5 + 0.5*h.AbsCDF(x)
		}, frp/2)
		// ∫_0^z dx/(1+x^γ) / ((π/γ)/sin(π/γ)) by Simpson in x = u/(1−u) (smooth on [0, 1)).
		norm := (math.Pi / gamma) / math.Sin(math.Pi/gamma)
		for _, z := range []float64{0.3, 1, 2.5, 10} {
			umax := z / (1 + z)
			const n = 20000
			hstep := umax / n
			s := 0.0
			for i := 0; i <= n; i++ {
				u := float64(i) * hstep
				x := u / (1 - u)
				v := 1 / (1 + math.Pow(x, gamma)) / ((1 - u) * (1 - u))
				switch {
				case i == 0 || i == n:
					s += v
				case i%2 == 1:
					s += 4 * v
				default:
					s += 2 * v
				}
			}
			want := s * hstep / 3 / norm
			if got := h.AbsCDF(z); math.Abs(got-want) > 1e-9 {
				t.Errorf("γ=%v AbsCDF(%v) = %.12g, Simpson %.12g", gamma, z, got, want)
			}
			if q := h.AbsQuantile(h.AbsCDF(z)); math.Abs(q-z) > 1e-9*z {
				t.Errorf("γ=%v AbsQuantile(AbsCDF(%v)) = %v", gamma, z, q)
			}
		}
	}
	if h, _ := NewHeavyTail(4); math.Abs(h.Variance()-math.Sin(math.Pi/4)/math.Sin(3*math.Pi/4)) > 0 || h.Variance() != 1 {
		// sin(π/4)/sin(3π/4) = 1 exactly in real arithmetic
		if math.Abs(h.Variance()-1) > 1e-15 {
			t.Errorf("Variance(γ=4) = %v, want 1", h.Variance())
		}
	}
	if _, err := NewHeavyTail(1); err == nil {
		t.Error("NewHeavyTail(1) accepted")
	}
}

// TestStaircaseNarrowStep: a central step much narrower than the period at large ε
// (γ = 1e-6, ε = 12: r ≈ 4295 of M ≈ 2^32, P(central) ≈ 0.14), where the earlier
// sampler needed ≈ 1/(γ + b) ≈ 1.6e5 rounds a draw. χ² over (central low half, central
// high half, outer positive, outer negative) against P(central) = (2r−1)/(2r−1 + 2M/(e^ε−1));
// false-rejection probability frp.
func TestStaircaseNarrowStep(t *testing.T) {
	s, err := NewStaircase(12, 1, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	m, r := float64(s.m), float64(s.r)
	outer := 2 * m / math.Expm1(s.Epsilon())
	total := 2*r - 1 + outer
	half := uint64(s.r / 2) // |n| < half: 2·half − 1 points
	p := []float64{(2*float64(half) - 1) / total, (2*r - 2*float64(half)) / total, outer / 2 / total, outer / 2 / total}
	counts := make([]int, 4)
	src := Seeded(12)
	for range draws(100000, 20000) {
		z := s.sample(src)
		n := uint64(max(z, -z))
		switch {
		case n < half:
			counts[0]++
		case n < s.r:
			counts[1]++
		case z > 0:
			counts[2]++
		default:
			counts[3]++
		}
	}
	chiSquare(t, "Staircase γ=1e-6", counts, p, frp)
}

// TestStaircaseLargeEpsilon is the regression test of the hang at ε = 70 (issue: γM < ½
// made the central step empty and the old rejection loop never accepted): draws return
// and lie in the central step, since P(|Z| ≥ r) < 2M/(e^ε − 1) < 2.5e-10 per draw; for the
// ℓ1-optimal γ from ε = 45 and for γ = 0, r = 1 (the point 0 alone).
func TestStaircaseLargeEpsilon(t *testing.T) {
	for _, eps := range []float64{45, 66, 70, 700, MaxRate} {
		for _, gamma := range []float64{StaircaseGammaL1(eps), StaircaseGammaL2(eps), 0} {
			s, err := NewStaircase(eps, 1, gamma)
			if err != nil {
				t.Fatal(err)
			}
			if gamma < 1/(2*float64(s.m)) && s.r != 1 {
				t.Errorf("ε = %g, γ = %g: r = %d, want 1 (γM < ½)", eps, gamma, s.r)
			}
			src := Seeded(uint64(eps))
			for range 1000 {
				if z := s.sample(src); max(z, -z) >= int64(s.r) {
					t.Fatalf("ε = %g, γ = %g: draw %d outside the central step (r = %d)", eps, gamma, z, s.r)
				}
			}
		}
	}
}

// TestExpm1Bounds: the certified bounds bracket e^x − 1 (mpmath 1.3.0 at 50 digits:
// expm1(1) = 1.7182818284590452353602874713526624977572470937,
// expm1(2^−12) = 0.00024417042974785493700523392413577375751962311976071,
// expm1(100) = 26881171418161354484126255515800135873611117.773742) with a relative
// width below 2^−(prec+16), and agree with math.Expm1 (error < 1 ulp) to 4e-16 elsewhere.
func TestExpm1Bounds(t *testing.T) {
	refs := []struct {
		num, den uint64
		want     string
	}{
		{1, 1, "1.7182818284590452353602874713526624977572470937"},
		{1, 1 << 12, "0.00024417042974785493700523392413577375751962311976071"},
		{100, 1, "26881171418161354484126255515800135873611117.773742"},
	}
	for _, c := range refs {
		want, _, _ := big.ParseFloat(c.want, 10, 200, big.ToNearestEven)
		lo, hi := expm1Bounds(c.num, c.den, 150)
		if lo.Cmp(hi) > 0 {
			t.Fatalf("x = %d/%d: lo > hi", c.num, c.den)
		}
		// the 50-digit reference is within 1e-49 relative of the truth: widen by that
		slack := new(big.Float).Mul(want, big.NewFloat(1e-48))
		wlo, whi := new(big.Float).Sub(want, slack), new(big.Float).Add(want, slack)
		if lo.Cmp(whi) > 0 || hi.Cmp(wlo) < 0 {
			t.Errorf("x = %d/%d: [%s, %s] misses %s", c.num, c.den, lo.Text('g', 50), hi.Text('g', 50), c.want)
		}
		width := new(big.Float).Quo(new(big.Float).Sub(hi, lo), lo)
		if f, _ := width.Float64(); f > math.Ldexp(1, -150-16) {
			t.Errorf("x = %d/%d: relative width %g", c.num, c.den, f)
		}
	}
	for _, x := range []float64{0x1p-40, 0.37, 3, 45.5, 700} {
		num, den, _ := Dyadic(x)
		lo, hi := expm1Bounds(num, den, 64)
		l, _ := lo.Float64()
		h, _ := hi.Float64()
		if want := math.Expm1(x); math.Abs(l/want-1) > 4e-16 || math.Abs(h/want-1) > 4e-16 {
			t.Errorf("x = %g: [%g, %g], math.Expm1 %g", x, l, h, want)
		}
	}
	if lo, hi := expm1Bounds(0, 1, 64); lo.Sign() != 0 || hi.Sign() != 0 {
		t.Errorf("x = 0: [%v, %v], want 0", lo, hi)
	}
}

// TestTailOddsExpansion: the words of the expansion of p = a/(a + c/u) agree with the
// float64 value of p (53 bits), and a longer prefix computed at a higher precision
// starts with the same words.
func TestTailOddsExpansion(t *testing.T) {
	for _, c := range []struct {
		eps  float64
		a, c int64
	}{{1, 3, 5}, {12, 8589, 8589934592}, {0x1p-12, 1, 1 << 33}} {
		num, den, _ := Dyadic(c.eps)
		odds := tailOdds{num: num, den: den, a: big.NewInt(c.a), c: []*big.Int{big.NewInt(c.c)}}
		e := newExpansion(odds.bounds)
		u := math.Expm1(c.eps)
		want := float64(c.a) / (float64(c.a) + float64(c.c)/u)
		got := math.Ldexp(float64(e.word(0)), -64) + math.Ldexp(float64(e.word(1)), -128)
		if math.Abs(got/want-1) > 1e-15 {
			t.Errorf("ε = %g: expansion %g, want %g", c.eps, got, want)
		}
		long := expansionWords(odds.bounds, 6)
		for i := range 6 {
			if e.word(i) != long[i] {
				t.Errorf("ε = %g: word %d differs", c.eps, i)
			}
		}
	}
}
