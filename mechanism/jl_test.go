package mechanism

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/compose"
	"github.com/dpkit/dpkit/noise"
)

// TestJLCutParameters: r = ⌈8 ln(2/ν)/η²⌉ (KOV Lemma 1: 2952 at η = 0.1, ν = 0.05),
// δ0 = δ/(2r), w = 4 ln(2/δ0)/ε0; the r rows compose to at most (ε, δ) (compose's certified
// curve), ε0 is within 1e-9 of the largest such value, and it is at least KOV's closed-form
// choice ε/√(4r ln(e + 2ε/δ)) from Thm 3.4.
func TestJLCutParameters(t *testing.T) {
	for _, c := range []JLCutOptions{{1, 1e-6, 0.1, 0.05}, {50, 0.1, 0.5, 0.1}, {4, 1e-9, 0.2, 0.01}} {
		m, err := NewJLCut(c)
		if err != nil {
			t.Fatal(err)
		}
		r := math.Ceil(8 * math.Log(2/c.Nu) / (c.Eta * c.Eta))
		if float64(m.Rows()) != r {
			t.Errorf("%+v: r = %d, want %g", c, m.Rows(), r)
		}
		if m.RowDelta() != c.Delta/(2*r) {
			t.Errorf("%+v: δ0 = %g", c, m.RowDelta())
		}
		if w := 4 * math.Log(2/m.RowDelta()) / m.RowEpsilon(); m.Weight() < w || m.Weight() > w*(1+1e-11) {
			t.Errorf("%+v: w = %g, want %g", c, m.Weight(), w)
		}
		got, err := compose.Epsilon([]compose.Mech{{Epsilon: m.RowEpsilon(), Delta: m.RowDelta(), Count: m.Rows()}}, c.Delta, nil)
		if err != nil || got.Epsilon > c.Epsilon {
			t.Errorf("%+v: r rows compose to ε = %v (%v)", c, got.Epsilon, err)
		}
		more, _ := compose.Epsilon([]compose.Mech{{Epsilon: m.RowEpsilon() * (1 + 1e-9), Delta: m.RowDelta(), Count: m.Rows()}}, c.Delta, nil)
		if more.Epsilon <= c.Epsilon {
			t.Errorf("%+v: ε0·(1 + 1e-9) still meets the budget (%v)", c, more.Epsilon)
		}
		if kov := c.Epsilon / math.Sqrt(4*r*math.Log(math.E+2*c.Epsilon/c.Delta)); c.Epsilon <= 1 && m.RowEpsilon() < kov {
			t.Errorf("%+v: ε0 = %g below KOV's closed form %g", c, m.RowEpsilon(), kov)
		}
		if c.Epsilon == 1 && (m.Rows() != 2952 || math.Abs(m.RowEpsilon()/0.0042183-1) > 1e-4 || math.Abs(m.Weight()/21991.7-1) > 1e-4) {
			t.Errorf("docs/mechanisms.md quotes r = 2952, ε0 = 0.0042183, w ≈ 2.2·10^4; got %d, %g, %g", m.Rows(), m.RowEpsilon(), m.Weight())
		}
		items := m.PLDItems()
		if len(items) != 1 || items[0].Count != m.Rows() {
			t.Errorf("%+v: PLD items %v", c, items)
		}
	}
}

// TestJLCutRelease: on random graphs (ε = 50, δ = 0.1, η = 0.5, ν = 0.1: r = 96,
// w ≈ 35.8) of n = 40 nodes (w < n < 2w) and n = 80 (n ≥ 2w) the cut estimate is
// unbiased — the mean of 100 releases is within 6 standard errors of the true cut
// (false-rejection probability < 1e-8, normal approximation) — and the interval
// (1 ± η)·cut ± τ holds in at least 1 − ν − 0.1 of the releases (binomial tail below 1e-3).
// At n = 80, τ is at most Lemma 1's 2|S|ηw; at n = 40 Lemma 1's τ falls short of its
// promise (with this seed it holds in 78 of 100 releases, not ≥ 90), which is why
// AdditiveError keeps the factor (n − |S|)/(n − w) (docs/errata.md, KOV item 14).
func TestJLCutRelease(t *testing.T) {
	m, err := NewJLCut(JLCutOptions{Epsilon: 50, Delta: 0.1, Eta: 0.5, Nu: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{40, 80} {
		if n == 80 && testing.Short() {
			continue // about 6 s: 3·10^7 Gaussian draws
		}
		rng := rand.New(rand.NewPCG(3, uint64(n)))
		weights := make([][]float64, n)
		for i := range weights {
			weights[i] = make([]float64, n)
		}
		for i := range n {
			for j := i + 1; j < n; j++ {
				if rng.Float64() < 0.3 {
					v := rng.Float64()
					weights[i][j], weights[j][i] = v, v
				}
			}
		}
		inS := make([]bool, n)
		size := 0
		for i := 0; i < n; i += 3 {
			inS[i] = true
			size++
		}
		truth := 0.0
		for i := range n {
			for j := range n {
				if inS[i] && !inS[j] {
					truth += weights[i][j]
				}
			}
		}
		tau := m.AdditiveError(size, n)
		if lemma := 2 * float64(size) * 0.5 * m.Weight(); n >= 2*int(math.Ceil(m.Weight())) && tau > lemma {
			t.Errorf("n=%d: τ = %g above Lemma 1's %g although n ≥ 2w", n, tau, lemma)
		}
		src := noise.Seeded(uint64(n))
		const runs = 100
		sum, sum2, inside, insideLemma := 0.0, 0.0, 0, 0
		lemma := 2 * float64(size) * 0.5 * m.Weight()
		for range runs {
			sk, err := m.Release(weights, src)
			if err != nil {
				t.Fatal(err)
			}
			v, _ := sk.Cut(inS)
			sum += v
			sum2 += v * v
			if v >= (1-0.5)*truth-tau && v <= (1+0.5)*truth+tau {
				inside++
			}
			if v >= (1-0.5)*truth-lemma && v <= (1+0.5)*truth+lemma {
				insideLemma++
			}
		}
		mean := sum / runs
		se := math.Sqrt((sum2/runs - mean*mean) / runs)
		if math.Abs(mean-truth) > 6*se {
			t.Errorf("n=%d: mean cut %g, true %g (standard error %g)", n, mean, truth, se)
		}
		if float64(inside) < (1-0.1-0.1)*runs {
			t.Errorf("n=%d: the interval held in %d of %d releases", n, inside, runs)
		}
		if n == 40 && float64(insideLemma) >= 0.9*runs {
			t.Errorf("n=40: Lemma 1's τ held in %d of %d releases; docs/errata.md (KOV item 14) says it falls short here (78 with this seed)", insideLemma, runs)
		}
	}
}

// TestJLCutErrors: bad options (for both JL mechanisms, which share their validation)
// and graphs are refused by name.
func TestJLCutErrors(t *testing.T) {
	for _, c := range []struct {
		o    JLCutOptions
		name string
	}{
		{JLCutOptions{0, 0.1, 0.1, 0.1}, "epsilon"}, {JLCutOptions{1, 0, 0.1, 0.1}, "delta"},
		{JLCutOptions{1, 1, 0.1, 0.1}, "delta"}, {JLCutOptions{1, 0.1, 0, 0.1}, "eta"},
		{JLCutOptions{1, 0.1, 1, 0.1}, "eta"}, {JLCutOptions{1, 0.1, 0.1, math.NaN()}, "nu"},
		{JLCutOptions{1, 0.1, 0.1, 1}, "nu"}, {JLCutOptions{1, 0.1, 1e-7, 0.1}, "eta"},
	} {
		_, err := NewJLCut(c.o)
		_, errV := NewJLVariance(JLVarianceOptions(c.o))
		for _, e := range []error{err, errV} {
			var pe *dpkit.ParamError
			if !errors.As(e, &pe) || pe.Name != c.name || pe.Pkg != "mechanism" {
				t.Errorf("%+v: %v, want an error naming %s", c.o, e, c.name)
			}
		}
	}
	m, _ := NewJLCut(JLCutOptions{Epsilon: 1, Delta: 1e-6, Eta: 0.1, Nu: 0.05})
	if _, err := m.Release([][]float64{{0, 1}, {1, 0}}, nil); err == nil {
		t.Error("a 2-node graph with w ≈ 10^4 was accepted")
	}
	big, _ := NewJLCut(JLCutOptions{Epsilon: 50, Delta: 0.1, Eta: 0.5, Nu: 0.1})
	if _, err := big.Release([][]float64{{0, 2, 0}, {2, 0, 0}, {0, 0, 0}}, nil); err == nil {
		t.Error("a weight of 2 was accepted")
	}
}

// FuzzJLCut: any options either give a named error or a mechanism whose rows pass
// checkJLRows and whose weight is positive.
func FuzzJLCut(f *testing.F) {
	f.Add(1.0, 1e-6, 0.1, 0.05)
	f.Add(50.0, 0.1, 0.5, 0.1)
	f.Add(1e-9, 0.5, 0.99, 0.99)
	f.Add(1e300, 1e-300, 0.001, 1e-300)
	f.Fuzz(func(t *testing.T, eps, delta, eta, nu float64) {
		m, err := NewJLCut(JLCutOptions{Epsilon: eps, Delta: delta, Eta: eta, Nu: nu})
		if checkJLRows(t, eps, delta, eta, nu, m, err) && !(m.Weight() > 0) {
			t.Fatalf("(%g, %g, %g, %g): w = %g", eps, delta, eta, nu, m.Weight())
		}
	})
}

// checkJLRows is the fuzz targets' check of a JL mechanism built from (ε, δ, η, ν): err
// is a ParamError or infeasible (then it returns false), or r = ⌈8 ln(2/ν)/η²⌉ and the
// rows compose within the budget by compose's certified exact composition, an
// independent path from the bisection that chose ε0.
func checkJLRows(t *testing.T, eps, delta, eta, nu float64, m interface {
	Rows() int64
	RowEpsilon() float64
	RowDelta() float64
}, err error) bool {
	t.Helper()
	if err != nil {
		var pe *dpkit.ParamError
		if !errors.As(err, &pe) && !errors.Is(err, dpkit.ErrInfeasible) {
			t.Fatalf("(%g, %g, %g, %g): %v is neither a ParamError nor infeasible", eps, delta, eta, nu, err)
		}
		return false
	}
	if r := math.Ceil(8 * math.Log(2/nu) / (eta * eta)); float64(m.Rows()) != r {
		t.Fatalf("(%g, %g, %g, %g): r = %d, want %g", eps, delta, eta, nu, m.Rows(), r)
	}
	got, err := compose.Epsilon([]compose.Mech{{Epsilon: m.RowEpsilon(), Delta: m.RowDelta(), Count: m.Rows()}}, delta, nil)
	if err != nil || got.Epsilon > eps {
		t.Fatalf("(%g, %g, %g, %g): rows compose to ε = %v (%v)", eps, delta, eta, nu, got.Epsilon, err)
	}
	return true
}
