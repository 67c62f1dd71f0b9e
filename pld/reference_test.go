package pld

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
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
