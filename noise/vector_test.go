package noise

import (
	"math"
	"testing"
)

// dgPMF returns the pmf of N_ℤ(0, S²) on [−L, L], L = 40S (the mass beyond is below
// e^(−800)), normalised by direct summation.
func dgPMF(S int64) (p []float64, L int64) {
	L = 40 * S
	p = make([]float64, 2*L+1)
	s, z := float64(S), 0.0
	for y := -L; y <= L; y++ {
		p[y+L] = math.Exp(-float64(y*y) / (2 * s * s))
		z += p[y+L]
	}
	for i := range p {
		p[i] /= z
	}
	return p, L
}

// TestRenyiDiscreteGaussian checks the theorem the vector bound rests on (CKS 2020: the
// Rényi divergence of N_ℤ(0,S²) from its integer shift by μ is ≤ αμ²/(2S²)) by direct
// summation of D_α = ln Σ p(y)^α p(y−μ)^(1−α) / (α−1) (relative accuracy ~1e-13, tolerance
// 1e-9 relative).
func TestRenyiDiscreteGaussian(t *testing.T) {
	for _, S := range []int64{1, 2, 5} {
		p, L := dgPMF(S)
		for _, mu := range []int64{1, 2, 3, 7} {
			for _, a := range []float64{1.5, 2, 5, 20} {
				// ln p(y) = −y²/2S² − ln Z; the summand a·ln p(y) + (1−a)·ln p(y−μ) peaks
				// near y = (1−a)μ, so the sum runs over |y| ≤ 40S + aμ, in log space.
				s2 := 2 * float64(S*S)
				lnZ := 0.0
				for y := -L; y <= L; y++ {
					lnZ += math.Exp(-float64(y*y) / s2)
				}
				lnZ = math.Log(lnZ)
				R := L + int64(a)*mu + mu
				peak := math.Inf(-1)
				terms := make([]float64, 0, 2*R+1)
				for y := -R; y <= R; y++ {
					e := -(a*float64(y*y)+(1-a)*float64((y-mu)*(y-mu)))/s2 - lnZ
					terms = append(terms, e)
					peak = max(peak, e)
				}
				sum := 0.0
				for _, e := range terms {
					sum += math.Exp(e - peak)
				}
				_ = p
				d := (peak + math.Log(sum)) / (a - 1)
				bound := a * float64(mu*mu) / (2 * float64(S*S))
				if d > bound*(1+1e-9) {
					t.Errorf("S=%d μ=%d α=%v: D_α = %v > αμ²/2S² = %v", S, mu, a, d, bound)
				}
				// For S ≥ 2 the discrete Gaussian's Poisson-summation terms are below
				// e^(−2π²S²) < 1e-30: the bound is attained (the check is not vacuous).
				if S >= 2 && d < bound*(1-1e-9) {
					t.Errorf("S=%d μ=%d α=%v: D_α = %v, expected ≈ %v", S, mu, a, d, bound)
				}
			}
		}
	}
}

// TestDeltaBoundL2: the vector bound (CDP conversion with ρ = ‖v‖²/2S²) is never below
// the exact δ(ε) of the 2-D discrete Gaussian against its shift by an integer vector v,
// computed by direct summation over the grid |y_i| ≤ 40S (definition of the hockey-stick
// divergence, relative accuracy ~1e-12).
func TestDeltaBoundL2(t *testing.T) {
	for _, S := range []int64{2, 5} {
		p, L := dgPMF(S)
		pr := func(y int64) float64 {
			if y < -L || y > L {
				return 0
			}
			return p[y+L]
		}
		for _, v := range [][2]int64{{1, 1}, {2, 1}, {3, 4}, {1, 0}} {
			for _, eps := range []float64{0.2, 1, 3} {
				exact := 0.0
				for a := -L; a <= L; a++ {
					for b := -L; b <= L; b++ {
						p0 := pr(a) * pr(b)
						p1 := pr(a-v[0]) * pr(b-v[1])
						exact += math.Max(0, p0-math.Exp(eps)*p1)
					}
				}
				norm := math.Sqrt(float64(v[0]*v[0] + v[1]*v[1]))
				bound := cdpDelta(rhoUp(norm, float64(S)), eps)
				if bound < exact*(1+1e-9) {
					t.Errorf("S=%d v=%v ε=%v: bound %.6g below exact %.6g", S, v, eps, bound, exact)
				}
				if exact > 1e-3 && bound > 20*exact {
					t.Errorf("S=%d v=%v ε=%v: bound %.6g useless against exact %.6g", S, v, eps, bound, exact)
				}
			}
		}
	}
}

// TestNormBound: Pr[‖Y‖₂ ≥ w] ≤ β for the returned w, computed exactly for d = 2, 3 by
// convolving the pmf of Y_i² (direct summation), and w is within 60% of the exact
// (1−β) quantile (the bound is not vacuous).
func TestNormBound(t *testing.T) {
	for _, S := range []int64{2, 4} {
		p, L := dgPMF(S)
		sq := map[int64]float64{} // distribution of Y²
		for y := -L; y <= L; y++ {
			sq[y*y] += p[y+L]
		}
		for _, d := range []int{2, 3} {
			dist := map[int64]float64{0: 1}
			for range d {
				next := map[int64]float64{}
				for a, pa := range dist {
					for b, pb := range sq {
						if pa*pb > 1e-300 {
							next[a+b] += pa * pb
						}
					}
				}
				dist = next
			}
			for _, beta := range []float64{0.1, 0.01, 1e-4} {
				w := normBound(float64(S), d, beta)
				tail := func(r float64) float64 {
					s := 0.0
					for v, pv := range dist {
						if float64(v) >= r*r {
							s += pv
						}
					}
					return s
				}
				if tl := tail(w); tl > beta*(1+1e-9) {
					t.Errorf("S=%d d=%d β=%v: Pr[‖Y‖ ≥ %v] = %v", S, d, beta, w, tl)
				}
				if tl := tail(w / 1.6); tl <= beta {
					t.Errorf("S=%d d=%d β=%v: bound %v loose (tail at w/1.6 is %v)", S, d, beta, w, tl)
				}
			}
		}
	}
}

// TestSnapL2Sensitivity: random neighbours at ℓ2 distance ≤ Δ snap to integer vectors at
// ℓ2 distance ≤ GridL2Sensitivity (checked in float64 on integers < 2^26: exact).
func TestSnapL2Sensitivity(t *testing.T) {
	s, err := NewSecureGaussianL2(1, 2, 5)
	if err != nil {
		t.Fatal(err)
	}
	if s.Dims() != 5 || s.GridL2Sensitivity() < math.Ldexp(1, -s.k)+math.Sqrt(5) {
		t.Fatalf("dims %d, D₂ %v", s.Dims(), s.GridL2Sensitivity())
	}
	src := Seeded(77)
	const k = -3 // a coarse grid makes rounding matter; the bound scales the same way
	for range 20000 {
		x, y := make([]float64, 5), make([]float64, 5)
		norm := 0.0
		for i := range x {
			x[i] = (Float64(src) - 0.5) * 100
			y[i] = Float64(src) - 0.5
			norm += y[i] * y[i]
		}
		r := Float64(src) * 2 / math.Sqrt(norm) // ‖shift‖ = Δ·U, Δ = 2
		d2 := 0.0
		for i := range x {
			v := float64(snap(x[i]+r*y[i], k) - snap(x[i], k))
			d2 += v * v
		}
		if bound := 2*math.Ldexp(1, -k) + math.Sqrt(5); math.Sqrt(d2) > bound {
			t.Fatalf("snapped distance %v > Δ/g + √d = %v", math.Sqrt(d2), bound)
		}
	}
	if _, err := NewSecureGaussianL2(1, 1, 0); err == nil {
		t.Error("dims 0 accepted")
	}
}
