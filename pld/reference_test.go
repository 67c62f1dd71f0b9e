package pld

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"testing"
)

// refMech is a mechanism of testdata/reference.json (see testdata/README.md).
type refMech struct {
	Kind        string  `json:"kind"`
	Epsilon     float64 `json:"epsilon"`
	Delta       float64 `json:"delta"`
	Sigma       float64 `json:"sigma"`
	Scale       float64 `json:"scale"`
	Sensitivity float64 `json:"sensitivity"`
	Rate        float64 `json:"rate"`
	Categories  int     `json:"categories"`
	Count       int64   `json:"count"`
}

// refCase is a workload of testdata/reference.json with its targets: values computed
// at 50 digits by testdata/gen_reference.py from closed forms and enumerations that share
// no code with this package.
type refCase struct {
	refMech
	Name    string    `json:"name"`
	Mechs   []refMech `json:"mechs"`
	Targets []struct {
		Kind  string  `json:"kind"`
		Eps   float64 `json:"eps"`
		Delta float64 `json:"delta"`
		Want  string  `json:"want"`
	} `json:"targets"`
}

func (m refMech) item() Item {
	n := max(m.Count, 1)
	switch m.Kind {
	case "gaussian":
		return Item{Gaussian{Sigma: m.Sigma, Sensitivity: m.Sensitivity}, n}
	case "rr":
		return Item{RandomizedResponse{Epsilon: m.Epsilon, K: m.Categories}, n}
	case "eps_delta":
		return Item{EpsilonDelta{Epsilon: m.Epsilon, Delta: m.Delta}, n}
	case "subsampled_rr":
		return Item{PoissonSubsampled{Base: RandomizedResponse{Epsilon: m.Epsilon, K: 2}, Rate: m.Rate}, n}
	case "subsampled_gaussian":
		return Item{PoissonSubsampled{Base: Gaussian{Sigma: m.Sigma, Sensitivity: m.Sensitivity}, Rate: m.Rate}, n}
	case "subsampled_laplace":
		return Item{PoissonSubsampled{Base: Laplace{Scale: m.Scale, Sensitivity: m.Sensitivity}, Rate: m.Rate}, n}
	case "laplace":
		return Item{Laplace{Scale: m.Scale, Sensitivity: m.Sensitivity}, n}
	}
	panic("unknown kind " + m.Kind)
}

func (c refCase) items() []Item {
	if c.Kind != "workload" {
		return []Item{c.refMech.item()}
	}
	var items []Item
	for _, m := range c.Mechs {
		items = append(items, m.item())
	}
	return items
}

func loadPLDReference(t *testing.T) []refCase {
	t.Helper()
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Cases []refCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r.Cases
}

// Tolerances against the 50-digit reference: a certified bracket holds the reference
// (up to refSlack, the rounding of the reference and of the target to float64), and an
// ε bracket is at most refWidth wide relative to its upper end.
const (
	refSlack = 1e-14
	refWidth = 1e-3
)

// TestReference checks Compose against testdata/reference.json: every case of
// issue 24 that once came out 0, +Inf, NaN or a panic (e^ε past 709, subsampled losses
// past it, a single Gaussian at δ = 1e-18) among them.
func TestReference(t *testing.T) {
	for _, c := range loadPLDReference(t) {
		for _, tg := range c.Targets {
			name := fmt.Sprintf("%s/%s_%g", c.Name, tg.Kind, tg.Eps+tg.Delta)
			t.Run(name, func(t *testing.T) {
				want, err := strconv.ParseFloat(tg.Want, 64)
				if err != nil {
					t.Fatal(err)
				}
				switch tg.Kind {
				case "eps_at_delta":
					comp, err := Compose(c.items(), &Options{Delta: tg.Delta, Tolerance: refWidth})
					if err != nil {
						t.Fatal(err)
					}
					up, lo, err := comp.Epsilon(tg.Delta)
					if err != nil {
						t.Fatal(err)
					}
					checkRefBracket(t, "ε", up, lo, want)
					if up > 0 && (up-lo)/up > refWidth {
						t.Errorf("ε bracket [%.17g, %.17g]: relative width %.3g > %g", lo, up, (up-lo)/up, refWidth)
					}
				case "delta_at_eps":
					comp, err := Compose(c.items(), &Options{Epsilon: tg.Eps, Tolerance: refWidth})
					if err != nil {
						t.Fatal(err)
					}
					up, lo, err := comp.Delta(tg.Eps)
					if err != nil {
						t.Fatal(err)
					}
					checkRefBracket(t, "δ", up, lo, want)
				}
			})
		}
	}
}

func checkRefBracket(t *testing.T, what string, up, lo, want float64) {
	t.Helper()
	if math.IsNaN(up) || math.IsNaN(lo) || math.IsInf(up, 0) {
		t.Fatalf("%s bracket [%g, %g]: not finite", what, lo, up)
	}
	if up < want*(1-refSlack) {
		t.Errorf("UNSOUND: %s upper %.17g below the reference %.17g", what, up, want)
	}
	if lo > want*(1+refSlack)+1e-300 {
		t.Errorf("%s lower %.17g above the reference %.17g", what, lo, want)
	}
}

// enum is a finite loss distribution for test references — atoms (loss → P-mass) and the
// mass at +∞ — composed by enumerating every pair and evaluated term by term: code that
// shares nothing with Product, CanonicalComposition or Discrete.Delta, which the
// references of the package's own tests must not be (issue 18).
type enum struct {
	atoms map[float64]float64
	inf   float64
}

// enumOf returns the distribution of atoms at losses with P-masses, and inf at +∞.
func enumOf(loss, mass []float64, inf float64) enum {
	e := enum{atoms: map[float64]float64{}, inf: inf}
	for i, l := range loss {
		e.atoms[l] += mass[i]
	}
	return e
}

// compose returns the distribution of the sum of independent losses (KOV's product of
// pairs): masses multiply, and +∞ absorbs: inf = a.inf·(b.inf + b.fin) + a.fin·b.inf.
func (a enum) compose(b enum) enum {
	out := enum{atoms: map[float64]float64{}}
	var finA, finB float64
	for la, ma := range a.atoms {
		finA += ma
		for lb, mb := range b.atoms {
			out.atoms[la+lb] += ma * mb
		}
	}
	for _, mb := range b.atoms {
		finB += mb
	}
	out.inf = a.inf*(b.inf+finB) + finA*b.inf
	return out
}

// power returns the k-fold composition.
func (a enum) power(k int) enum {
	out := a
	for range k - 1 {
		out = out.compose(a)
	}
	return out
}

// delta returns inf + Σ_{l > ε} m·(1 − e^(ε − l)), the terms added smallest first.
func (a enum) delta(eps float64) float64 {
	var terms []float64
	for l, m := range a.atoms {
		if l > eps {
			terms = append(terms, m*-math.Expm1(eps-l))
		}
	}
	sort.Float64s(terms)
	s := 0.0
	for _, t := range terms {
		s += t
	}
	return s + a.inf
}

// binomialEnum returns the k-fold composition of the canonical (ε, 0) pair, conditioned
// on no δ-event, with masses from the binomial formula by math.Lgamma (relative error
// about k·1e-16: test tolerances allow 1e-9); atoms below 1e-30 of the total are left out.
func binomialEnum(eps float64, k int) enum {
	e := enum{atoms: map[float64]float64{}}
	lp, lq := -math.Log1p(math.Exp(-eps)), -math.Log1p(math.Exp(eps))
	lk, _ := math.Lgamma(float64(k + 1))
	for m := 0; m <= k; m++ {
		lm, _ := math.Lgamma(float64(m + 1))
		ln, _ := math.Lgamma(float64(k - m + 1))
		if w := math.Exp(lk - lm - ln + float64(m)*lp + float64(k-m)*lq); w > 1e-30 {
			e.atoms[float64(2*m-k)*eps] += w
		}
	}
	return e
}
