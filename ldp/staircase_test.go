package ldp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"pgregory.net/rapid"
)

// vertexOptimum solves LP (3.12) by enumerating every basis: every set of k columns of
// S^(k) (all 2^k patterns, unscaled, from StaircasePattern), solving S_B θ_B = 1 by
// Gaussian elimination with partial pivoting, and keeping the best feasible (θ_B ≥ 0)
// vertex. Independent of gonum's simplex method and of the column scaling in Optimal.
func vertexOptimum(t *testing.T, u Utility, eps float64) float64 {
	k := u.Inputs()
	n := 1 << k
	cols := make([][]float64, n)
	mu := make([]float64, n)
	for j := range n {
		s, err := StaircasePattern(k, eps, j)
		if err != nil {
			t.Fatal(err)
		}
		cols[j], mu[j] = s, u.Column(s)
	}
	best := math.Inf(-1)
	idx := make([]int, k)
	var rec func(pos, start int)
	rec = func(pos, start int) {
		if pos == k {
			if theta, ok := solveBasis(cols, idx); ok {
				v := 0.0
				for i, j := range idx {
					v += theta[i] * mu[j]
				}
				best = max(best, v)
			}
			return
		}
		for j := start; j <= n-(k-pos); j++ {
			idx[pos] = j
			rec(pos+1, j+1)
		}
	}
	rec(0, 0)
	return best
}

// solveBasis solves Σ_i θ_i cols[idx[i]] = 1 and reports whether the basis is
// non-singular and feasible (θ ≥ −1e-12).
func solveBasis(cols [][]float64, idx []int) ([]float64, bool) {
	k := len(idx)
	a := make([][]float64, k)
	for r := range k {
		a[r] = make([]float64, k+1)
		for c, j := range idx {
			a[r][c] = cols[j][r]
		}
		a[r][k] = 1
	}
	for c := range k {
		p := c
		for r := c + 1; r < k; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-9 {
			return nil, false
		}
		a[c], a[p] = a[p], a[c]
		for r := range k {
			if r != c {
				f := a[r][c] / a[c][c]
				for cc := c; cc <= k; cc++ {
					a[r][cc] -= f * a[c][cc]
				}
			}
		}
	}
	theta := make([]float64, k)
	for i := range k {
		theta[i] = a[i][k] / a[i][i]
		if theta[i] < -1e-12 {
			return nil, false
		}
	}
	return theta, true
}

func TestOptimalMatchesVertexEnumeration(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	cases := 0
	for k := 2; k <= 5; k++ {
		reps := 4
		if k == 5 {
			reps = 1
			if testing.Short() {
				continue
			}
		}
		for range reps {
			p0, p1 := randDist(r, k), randDist(r, k)
			kl, _ := NewKL(p0, p1)
			mi, _ := NewMI(p0)
			tv, _ := NewTV(p0, p1)
			for _, u := range []Utility{kl, mi, tv} {
				for _, eps := range []float64{0.3, 1.5, 4} {
					res, err := Optimal(u, eps)
					if err != nil {
						t.Fatal(err)
					}
					want := vertexOptimum(t, u, eps)
					if d := math.Abs(res.Utility - want); d > 1e-9*want+1e-14 {
						t.Errorf("%s k=%d ε=%g: Optimal = %.15g (%s), vertex enumeration = %.15g",
							u.Name(), k, eps, res.Utility, res.Mechanism, want)
					}
					if res.Matrix.Outputs() > k {
						t.Errorf("%s k=%d ε=%g: %d outputs, Thm 3.3.2(a) says at most k", u.Name(), k, eps, res.Matrix.Outputs())
					}
					if res.Epsilon > eps*(1+1e-12) {
						t.Errorf("%s k=%d ε=%g: matrix ε = %v", u.Name(), k, eps, res.Epsilon)
					}
					cases++
				}
			}
		}
	}
	t.Logf("%d cases", cases)
}

// Thm 3.4.2 with Cor 3.4.7: the largest total variation of ε-LDP marginals is
// tanh(ε/2)·‖P0 − P1‖_TV (= (e^ε−1)/(e^ε+1)·TV), attained by the binary mechanism.
func TestOptimalTotalVariationClosedForm(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for range 30 {
		k := 2 + r.IntN(9)
		p0, p1 := randDist(r, k), randDist(r, k)
		tvIn, _ := TotalVariation(p0, p1)
		u, _ := NewTV(p0, p1)
		eps := 5 * r.Float64()
		res, err := Optimal(u, eps)
		if err != nil {
			t.Fatal(err)
		}
		checkRel(t, "max TV", res.Utility, math.Tanh(eps/2)*tvIn, 1e-9)
		if res.Mechanism != MechanismBinary {
			t.Errorf("TV optimum labelled %q, want binary (Thm 3.4.2)", res.Mechanism)
		}
	}
}

// Orderings that hold for every P0, P1, ε (rapid property test):
//   - OPT ≥ binary, OPT ≥ RR (both are feasible);
//   - binary ≥ OPT / (2(e^ε+1)²) (Thm 3.4.3);
//   - D(M0‖M1) + D(M1‖M0) ≤ 4(e^ε−1)² ‖P0−P1‖²_TV for the optimal Q (Duchi–Jordan–
//     Wainwright Thm 1, cited in thesis §3.1.4);
//   - OPT ≤ D(P0‖P1) (data processing) and OPT is non-decreasing in ε.
func TestOptimalKLProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.IntRange(2, 7).Draw(rt, "k")
		w0 := rapid.SliceOfN(rapid.Float64Range(0.01, 1), k, k).Draw(rt, "w0")
		w1 := rapid.SliceOfN(rapid.Float64Range(0.01, 1), k, k).Draw(rt, "w1")
		eps := rapid.Float64Range(0.01, 6).Draw(rt, "eps")
		p0, p1 := normalize(w0), normalize(w1)
		u, err := NewKL(p0, p1)
		if err != nil {
			rt.Fatal(err)
		}
		opt, err := Optimal(u, eps)
		if err != nil {
			rt.Fatal(err)
		}
		bin, _ := Binary(u, eps)
		rr, _ := RandomizedResponse(k, eps)
		vrr, _ := Value(u, rr)
		slack := 1e-9*opt.Utility + 1e-14
		if bin.Utility > opt.Utility+slack || vrr > opt.Utility+slack {
			rt.Fatalf("OPT %v below binary %v or RR %v", opt.Utility, bin.Utility, vrr)
		}
		e := math.Exp(eps)
		if bin.Utility < opt.Utility/(2*(e+1)*(e+1))-slack {
			rt.Fatalf("binary %v below OPT/(2(e^ε+1)²) = %v", bin.Utility, opt.Utility/(2*(e+1)*(e+1)))
		}
		m0, _ := opt.Matrix.Marginal(p0)
		m1, _ := opt.Matrix.Marginal(p1)
		d01, _ := KLDivergence(m0, m1)
		d10, _ := KLDivergence(m1, m0)
		tv, _ := TotalVariation(p0, p1)
		if d01+d10 > 4*(e-1)*(e-1)*tv*tv*(1+1e-9)+1e-14 {
			rt.Fatalf("symmetrized KL %v above Duchi et al. bound %v", d01+d10, 4*(e-1)*(e-1)*tv*tv)
		}
		dIn, _ := KLDivergence(p0, p1)
		if opt.Utility > dIn*(1+1e-9)+1e-14 {
			rt.Fatalf("OPT %v above D(P0‖P1) = %v", opt.Utility, dIn)
		}
		more, err := Optimal(u, eps*1.3)
		if err != nil {
			rt.Fatal(err)
		}
		if more.Utility < opt.Utility-slack {
			rt.Fatalf("OPT decreased from %v to %v when ε grew", opt.Utility, more.Utility)
		}
	})
}

// Thm 3.5.2: for ε ≤ 1 the binary mechanism is within a factor 1+e^ε of the optimal
// mutual information.
func TestBinaryMIApproximation(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		k := rapid.IntRange(2, 7).Draw(rt, "k")
		w := rapid.SliceOfN(rapid.Float64Range(0.01, 1), k, k).Draw(rt, "w")
		eps := rapid.Float64Range(0.01, 1).Draw(rt, "eps")
		u, _ := NewMI(normalize(w))
		opt, err := Optimal(u, eps)
		if err != nil {
			rt.Fatal(err)
		}
		bin, _ := Binary(u, eps)
		if bin.Utility < opt.Utility/(1+math.Exp(eps))*(1-1e-9) {
			rt.Fatalf("binary %v below OPT/(1+e^ε) = %v", bin.Utility, opt.Utility/(1+math.Exp(eps)))
		}
	})
}

func TestOptimalEpsilonZero(t *testing.T) {
	u, _ := NewKL([]float64{0.5, 0.5}, []float64{0.2, 0.8})
	res, err := Optimal(u, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Utility != 0 || res.Epsilon != 0 {
		t.Errorf("ε = 0: utility %v, ε %v, want 0, 0", res.Utility, res.Epsilon)
	}
}

// The LP scales to k = MaxOptimalInputs (16383 variables).
func TestOptimalLargeK(t *testing.T) {
	if testing.Short() {
		t.Skip("k = 14 LP under -short")
	}
	r := rand.New(rand.NewPCG(11, 12))
	k := MaxOptimalInputs
	u, _ := NewKL(randDist(r, k), randDist(r, k))
	res, err := Optimal(u, 2)
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := Binary(u, 2)
	if res.Utility < bin.Utility*(1-1e-9) || !res.Matrix.IsLDP(2) {
		t.Errorf("k=14: OPT %v < binary %v or not LDP", res.Utility, bin.Utility)
	}
}

func normalize(w []float64) []float64 {
	s := 0.0
	for _, v := range w {
		s += v
	}
	p := make([]float64, len(w))
	for i, v := range w {
		p[i] = v / s
	}
	return p
}

func BenchmarkOptimal(b *testing.B) {
	for _, k := range []int{6, 10, 12, 14} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, uint64(k)))
			u, _ := NewKL(randDist(r, k), randDist(r, k))
			for b.Loop() {
				if _, err := Optimal(u, 2); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
