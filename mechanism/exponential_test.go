package mechanism

import (
	"errors"
	"math"
	"math/big"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/noise"
	"gonum.org/v1/gonum/stat/distuv"
	"pgregory.net/rapid"
)

// refExponents recomputes, independently of exponents() and only with math/big.Rat
// arithmetic, the exponents γ̃_r = ⌊2^63·λ(q_max − q_r)⌋/2^63 with q_r = ⌊u_r/h + ½⌋ of
// the released distribution (the definition in the doc comment of Exponential).
func refExponents(h, lambda float64, u []float64) []*big.Rat {
	hr := new(big.Rat).SetFloat64(h)
	q := make([]*big.Int, len(u))
	var qmax *big.Int
	for i, x := range u {
		r := new(big.Rat).SetFloat64(x)
		r.Quo(r, hr)
		r.Add(r, big.NewRat(1, 2))
		fl := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean division: floor for denom > 0
		q[i] = fl
		if qmax == nil || fl.Cmp(qmax) > 0 {
			qmax = fl
		}
	}
	two63 := new(big.Int).Lsh(big.NewInt(1), 63)
	out := make([]*big.Rat, len(u))
	for i := range u {
		g := new(big.Rat).SetInt(new(big.Int).Sub(qmax, q[i]))
		g.Mul(g, new(big.Rat).SetFloat64(lambda))
		g.Mul(g, new(big.Rat).SetInt(two63))
		fl := new(big.Int).Div(g.Num(), g.Denom())
		out[i] = new(big.Rat).SetFrac(fl, two63)
	}
	return out
}

// logProbs returns ln P(r) for P(r) ∝ exp(−γ̃_r); the γ̃ are exact rationals and the
// best has γ̃ = 0, so ln Z = ln Σ exp(−γ̃_s) ∈ [0, ln n] is evaluated in float64 to
// ~1e-15 absolute (terms below e^(−745) underflow to 0, an error below 1e-300).
// Differences of γ̃ between neighbours are taken exactly (see logRatio).
func logZ(g []*big.Rat) float64 {
	z := 0.0
	for _, x := range g {
		f, _ := x.Float64()
		z += math.Exp(-f)
	}
	return math.Log(z)
}

// maxLogRatio returns max_r ln P(r)/P'(r) over both orders, with the exponent
// differences computed exactly.
func maxLogRatio(g, g2 []*big.Rat) float64 {
	lz, lz2 := logZ(g), logZ(g2)
	worst := math.Inf(-1)
	for r := range g {
		d, _ := new(big.Rat).Sub(g2[r], g[r]).Float64() // ln P(r) − ln P'(r) = γ̃'_r − γ̃_r + ln Z' − ln Z
		worst = max(worst, d+lz2-lz, -d+lz-lz2)
	}
	return worst
}

// TestExponentialExponentsExact: the exponents used by the sampler equal the exact
// rational recomputation (bit for bit, tolerance 0) for small, large (1e12, 1e17) and
// extreme (±1e300) utilities.
func TestExponentialExponentsExact(t *testing.T) {
	cases := []struct {
		eps, sens float64
		mono      bool
		u         []float64
	}{
		{1, 1, false, []float64{0, 1, 2, 3, 5}},
		{0.3, 0.7, true, []float64{-2.25, 1.0 / 3, 17, 17.000001}},
		{1, 1, false, []float64{1e12, 1e12 - 1, 1e12 - 3.5, -1e12, 0}},
		{2, 1, false, []float64{1e17, 9, 8, 1e17 - 16}},
		{0.01, 1e-5, false, []float64{1e300, -1e300, 5e-324, 0}},
		{7, 1e10, true, []float64{3e15, -2e20, 1}},
	}
	for _, c := range cases {
		m, err := NewExponential(ExponentialOptions{Epsilon: c.eps, Sensitivity: c.sens, Monotonic: c.mono})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := m.exponents(c.u)
		if err != nil {
			t.Fatal(err)
		}
		ref := refExponents(m.UtilityGranularity(), m.Lambda(), c.u)
		for i := range ex {
			got := new(big.Rat).SetFrac(new(big.Int).Add(new(big.Int).Lsh(ex[i].whole, 63), new(big.Int).SetUint64(ex[i].frac)), new(big.Int).Lsh(big.NewInt(1), 63))
			if got.Cmp(ref[i]) != 0 {
				t.Errorf("ε=%v Δ=%v u=%v: γ̃[%d] = %v, exact %v", c.eps, c.sens, c.u, i, got.FloatString(20), ref[i].FloatString(20))
			}
		}
	}
}

// TestExponentialCertifiedEpsilon (property test): for random ε, Δ and monotonicity,
// c·λ·D + 2^−62 ≤ ε holds in exact rationals, ExactEpsilon is ≥ that value and ≤ ε,
// D·h ≥ Δ (so D is a valid grid sensitivity), D ≤ Δ/h + 1, and λ is tight: ExactEpsilon
// ≥ ε(1 − 2^−20).
func TestExponentialCertifiedEpsilon(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		eps := math.Exp(rapid.Float64Range(math.Log(MinExponentialEpsilon), math.Log(1e4)).Draw(rt, "lnEps"))
		sens := math.Exp(rapid.Float64Range(-600, 600).Draw(rt, "lnSens"))
		mono := rapid.Bool().Draw(rt, "mono")
		m, err := NewExponential(ExponentialOptions{Epsilon: eps, Sensitivity: sens, Monotonic: mono})
		if err != nil {
			rt.Fatal(err)
		}
		c := int64(2)
		if mono {
			c = 1
		}
		loss := new(big.Rat).SetFloat64(m.Lambda())
		loss.Mul(loss, new(big.Rat).SetInt(new(big.Int).Mul(big.NewInt(c), new(big.Int).SetUint64(m.GridSensitivity()))))
		loss.Add(loss, new(big.Rat).SetFloat64(0x1p-62))
		if loss.Cmp(new(big.Rat).SetFloat64(eps)) > 0 {
			rt.Fatalf("c·λ·D + 2^-62 = %v > ε = %v", loss.FloatString(25), eps)
		}
		ee := m.ExactEpsilon()
		if new(big.Rat).SetFloat64(ee).Cmp(loss) < 0 || ee > eps || ee < eps*(1-0x1p-20) {
			rt.Fatalf("ExactEpsilon %v: loss %v, ε %v", ee, loss.FloatString(25), eps)
		}
		dh := new(big.Rat).SetFloat64(m.UtilityGranularity())
		dh.Mul(dh, new(big.Rat).SetInt(new(big.Int).SetUint64(m.GridSensitivity())))
		if dh.Cmp(new(big.Rat).SetFloat64(sens)) < 0 {
			rt.Fatalf("D·h < Δ")
		}
		if float64(m.GridSensitivity()) > sens/m.UtilityGranularity()+1 {
			rt.Fatalf("D = %d > Δ/h + 1", m.GridSensitivity())
		}
	})
}

// TestExponentialNeighbourRatio: for neighbouring utility vectors (every coordinate
// moved by at most Δ, in every sign pattern, and the monotone patterns for Monotonic),
// the exact released distributions satisfy max_r ln P(r)/P'(r) ≤ ExactEpsilon + 1e-12
// (the 1e-12 covers the float64 evaluation of ln Z, ~1e-15), including utilities of
// size 1e12 and 1e17. In the cases marked tight (one low candidate against dominant
// ones) the worst pattern reaches within 1e-6 of ε, so the check is not vacuous. The exponents computed the old way, in float64 as ε(u_max − u_r)/(2Δ),
// exceed ε on the 1e17 case: that is the privacy bug this test guards against.
func TestExponentialNeighbourRatio(t *testing.T) {
	for _, c := range []struct {
		eps, sens float64
		mono      bool
		u         []float64
		tight     bool // a neighbour reaches within 1e-6 of ε
	}{
		{1, 1, false, []float64{0, 1, 2, 3}, false},
		{1, 1, false, []float64{0, 40, 40}, true},
		{0.5, 2, false, []float64{1e12, 1e12 - 1, 1e12 - 3.5, -1e12}, false},
		{0.5, 2, false, []float64{1e12 - 200, 1e12, 1e12}, true},
		{1, 1, false, []float64{1e17, 9, 0}, false},
		{1, 1, true, []float64{5, 1e12, 7.25}, false},
		{3, 0.1, true, []float64{0.05, 30, 30}, true},
	} {
		m, err := NewExponential(ExponentialOptions{Epsilon: c.eps, Sensitivity: c.sens, Monotonic: c.mono})
		if err != nil {
			t.Fatal(err)
		}
		h, lam := m.UtilityGranularity(), m.Lambda()
		g := refExponents(h, lam, c.u)
		n := len(c.u)
		worst := math.Inf(-1)
		// every sign pattern of ±Δ (and 0) per coordinate: 3^n neighbours
		pat := make([]int, n)
		for {
			v := make([]float64, n)
			up, down := false, false
			for i, p := range pat {
				v[i] = c.u[i] + float64(p-1)*c.sens
				up = up || p == 2
				down = down || p == 0
			}
			if !c.mono || !(up && down) {
				worst = max(worst, maxLogRatio(g, refExponents(h, lam, v)))
			}
			i := 0
			for i < n && pat[i] == 2 {
				pat[i] = 0
				i++
			}
			if i == n {
				break
			}
			pat[i]++
		}
		if worst > m.ExactEpsilon()+1e-12 {
			t.Errorf("ε=%v Δ=%v u=%v: max log-ratio %.15g > ExactEpsilon %.15g", c.eps, c.sens, c.u, worst, m.ExactEpsilon())
		}
		if c.tight && worst < c.eps-1e-6 {
			t.Errorf("ε=%v Δ=%v u=%v: max log-ratio %.15g far below ε: worst case not reached", c.eps, c.sens, c.u, worst)
		}
	}
	// The old float64 exponents on u = (1e17, 9, 0) → (1e17, 8, 0): fl(1e17 − 9) and
	// fl(1e17 − 8) are 16 apart, so the ratio of the middle candidate's weight is
	// e^(16·ε/2) = e^8 instead of at most e^ε.
	f := 0.5
	old := func(u []float64) []*big.Rat {
		out := make([]*big.Rat, len(u))
		for i, x := range u {
			out[i] = new(big.Rat).SetFloat64(f * (u[0] - x))
		}
		return out
	}
	if r := maxLogRatio(old([]float64{1e17, 9, 0}), old([]float64{1e17, 8, 0})); r < 7 {
		t.Errorf("float64 exponents: log-ratio %v, expected ≈ 8 (the leak)", r)
	}
}

// TestExponentialLargeUtilities: χ² of Select against Probabilities for utilities near
// 1e12 and 1e17 (the big-integer path), false-rejection probability 1e-7 per case.
func TestExponentialLargeUtilities(t *testing.T) {
	for i, u := range [][]float64{{1e12, 1e12 - 1, 1e12 - 3, -1e12}, {1e17, 1e17 - 16, 1e17 - 32, 1e17 - 48}} {
		m, _ := NewExponential(ExponentialOptions{Epsilon: 1, Sensitivity: 8})
		p, err := m.Probabilities(u)
		if err != nil {
			t.Fatal(err)
		}
		src := noise.Seeded(uint64(40 + i))
		n := draws(100000, 20000)
		counts := make([]float64, len(u))
		for range n {
			r, err := m.Select(u, src)
			if err != nil {
				t.Fatal(err)
			}
			counts[r]++
		}
		stat, df := 0.0, -1
		for r := range u {
			e := float64(n) * p[r]
			if e == 0 {
				if counts[r] != 0 {
					t.Errorf("candidate %d of probability 0 selected", r)
				}
				continue
			}
			stat += (counts[r] - e) * (counts[r] - e) / e
			df++
		}
		if crit := (distuv.ChiSquared{K: float64(df)}).Quantile(1 - 1e-7); stat > crit {
			t.Errorf("u=%v: χ² = %v > %v (p = %v, counts %v)", u, stat, crit, p, counts)
		}
	}
}

func TestExponentialInvalid(t *testing.T) {
	for _, o := range []ExponentialOptions{{Epsilon: 1e-13, Sensitivity: 1}, {Epsilon: math.NaN(), Sensitivity: 1}, {Epsilon: 1, Sensitivity: 1e-310}, {Epsilon: 1, Sensitivity: math.Inf(1)}} {
		var pe *dpkit.ParamError
		if _, err := NewExponential(o); !errors.As(err, &pe) {
			t.Errorf("NewExponential(%+v) = %v, want ParamError", o, err)
		}
	}
	m, _ := NewExponential(ExponentialOptions{Epsilon: 1, Sensitivity: 1})
	for _, u := range [][]float64{nil, {1, math.NaN()}, {math.Inf(-1)}} {
		if _, err := m.Select(u, noise.Seeded(1)); err == nil {
			t.Errorf("Select(%v) accepted", u)
		}
	}
}
