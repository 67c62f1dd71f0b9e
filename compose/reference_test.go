package compose

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/dpkit/dpkit"
)

// reference is testdata/reference.json: values of the exact composition computed
// independently at 60 significant digits with mpmath by testdata/gen_reference.py
// (see testdata/README.md).
type reference struct {
	Cases []struct {
		Name       string       `json:"name"`
		Kind       string       `json:"kind"`
		Mechs      []Mech       `json:"mechs"`
		Eps        float64      `json:"eps"`
		Delta      float64      `json:"delta"`
		K          int64        `json:"k"`
		QueryDelta float64      `json:"query_delta"`
		Query      dpkit.Budget `json:"query"`
		Total      dpkit.Budget `json:"total"`
		Want       string       `json:"want"`
	} `json:"cases"`
}

func loadReference(t *testing.T) reference {
	t.Helper()
	b, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var r reference
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// Tolerances against the 60-digit reference. Exact results: never below the reference
// (beyond the float64 rounding of the reference itself, ulpSlack), and above it by at
// most exactRelTol relative plus exactAbsTol absolute (losses are rounded outward by an
// ulp, which moves δ by up to 4.4e-16·ε̃ when ε̃ sits within an ulp of an atom).
// Bracketed results: lower ≤ reference ≤ upper, and width ≤ the tolerance asked for.
const (
	exactRelTol = 1e-9
	exactAbsTol = 1e-15
	ulpSlack    = 1e-15
)

func TestReference(t *testing.T) {
	ref := loadReference(t)
	for _, c := range ref.Cases {
		t.Run(c.Name, func(t *testing.T) {
			want, err := strconv.ParseFloat(c.Want, 64)
			if err != nil {
				t.Fatal(err)
			}
			opts := &Options{Tolerance: 1e-3}
			switch c.Kind {
			case "eps_at_delta":
				if testing.Short() && totalCount(c.Mechs) > 1e8 {
					t.Skip("large k in -short")
				}
				r, err := Epsilon(c.Mechs, c.Delta, opts)
				if err != nil && c.Name == "edge_floor_k3_e1_d0.5_eps_at_delta0.875" && errors.Is(err, dpkit.ErrInfeasible) {
					// The target is the exact floor 0.875, which the floor rounded up
					// (Floor) exceeds: infeasible is the safe answer (testdata/README.md).
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				checkBracket(t, r, r.Epsilon, want, opts.Tolerance)
			case "delta_at_eps":
				if testing.Short() && totalCount(c.Mechs) > 1e8 {
					t.Skip("large k in -short")
				}
				r, err := Delta(c.Mechs, c.Eps, opts)
				if err != nil {
					t.Fatal(err)
				}
				checkBracket(t, r, r.Delta, want, opts.Tolerance)
			case "max_eps_per_query":
				got, err := MaxEpsilonPerQuery(c.K, c.QueryDelta, c.Total)
				if err != nil {
					t.Fatal(err)
				}
				if got > want*(1+ulpSlack) || got < want*(1-exactRelTol) {
					t.Errorf("max ε0 = %.17g, reference %.17g: must be ≤ and within %g", got, want, exactRelTol)
				}
			case "max_queries":
				got, err := MaxQueries(c.Query, c.Total)
				if err != nil {
					t.Fatal(err)
				}
				if float64(got) != want {
					t.Errorf("max queries = %d, reference %v", got, want)
				}
			default:
				t.Fatalf("unknown kind %q", c.Kind)
			}
		})
	}
}

func checkBracket(t *testing.T, r Result, got, want, tol float64) {
	t.Helper()
	if got < want*(1-ulpSlack) {
		t.Errorf("UNSOUND: reported %.17g below the exact %.17g", got, want)
	}
	if r.Lower > want*(1+ulpSlack) {
		t.Errorf("lower %.17g above the exact %.17g", r.Lower, want)
	}
	if r.Exact {
		if got-want > exactRelTol*want+exactAbsTol {
			t.Errorf("exact result %.17g exceeds the reference %.17g by %.3g relative (> %g)", got, want, (got-want)/want, exactRelTol)
		}
		return
	}
	if got > 0 && (got-r.Lower)/got > tol {
		t.Errorf("bracket [%.17g, %.17g] wider than the tolerance %g", r.Lower, got, tol)
	}
}

func totalCount(ms []Mech) float64 {
	s := 0.0
	for _, m := range ms {
		s += float64(m.Count)
	}
	return s
}

func TestErrataItem1(t *testing.T) {
	// docs/errata.md item 1: 30 × (1, 1e-3) at total δ = 0.06: the grid of Thm 3.3 gives
	// 22, the exact optimum is 21.7096 (reference: 21.70961262452821249…).
	r, err := Epsilon([]Mech{{Epsilon: 1, Delta: 1e-3, Count: 30}}, 0.06, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Exact || math.Abs(r.Epsilon-21.7096126245282125)/21.7096 > 1e-12 {
		t.Fatalf("got %+v", r)
	}
}
