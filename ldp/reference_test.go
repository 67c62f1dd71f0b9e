package ldp

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"
)

type ldpRef struct {
	Name       string    `json:"name"`
	K          int       `json:"k"`
	Eps        float64   `json:"eps"`
	Delta      float64   `json:"delta"`
	Utility    string    `json:"utility"`
	P0         []float64 `json:"p0"`
	P1         []float64 `json:"p1"`
	Prior      []float64 `json:"prior"`
	Optimum    string    `json:"optimum"`
	Binary     string    `json:"binary"`
	RR         string    `json:"rr"`
	Geometric  string    `json:"geometric"`
	Quaternary string    `json:"quaternary"`
}

func refUtility(t *testing.T, c ldpRef) Utility {
	t.Helper()
	var u Utility
	var err error
	switch c.Utility {
	case "kl":
		u, err = NewKL(c.P0, c.P1)
	case "tv":
		u, err = NewTV(c.P0, c.P1)
	case "mi":
		u, err = NewMI(c.Prior)
	default:
		u, err = NewFDivergence(c.Utility, c.P0, c.P1)
	}
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestReference: the optimum of the staircase LP, the binary mechanism, randomized
// response, the truncated geometric baseline and the quaternary mechanism against
// testdata/gen_reference.py (50 digits, from the thesis's definitions: the LP solved by
// enumerating its bases, the geometric baseline folded from the untruncated two-sided
// geometric). Relative tolerance 1e-12 for the closed forms, 1e-9 for the LP (gonum's
// simplex tolerance).
func TestReference(t *testing.T) {
	data, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Cases []ldpRef }
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) < 9 {
		t.Fatalf("%d cases", len(f.Cases))
	}
	near := func(name string, got float64, want string, tol float64) {
		t.Helper()
		w, err := strconv.ParseFloat(want, 64)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-w) > tol*math.Abs(w) {
			t.Errorf("%s: %.17g, reference %s", name, got, want)
		}
	}
	for _, c := range f.Cases {
		u := refUtility(t, c)
		opt, err := Optimal(u, c.Eps)
		if err != nil {
			t.Fatal(err)
		}
		near(c.Name+" optimum", opt.Utility, c.Optimum, 1e-9)
		bin, err := Binary(u, c.Eps)
		if err != nil {
			t.Fatal(err)
		}
		near(c.Name+" binary", bin.Utility, c.Binary, 1e-12)
		rr, _ := RandomizedResponse(c.K, c.Eps)
		v, _ := Value(u, rr)
		near(c.Name+" rr", v, c.RR, 1e-12)
		geo, err := Geometric(c.K, c.Eps)
		if err != nil {
			t.Fatal(err)
		}
		v, _ = Value(u, geo)
		near(c.Name+" geometric", v, c.Geometric, 1e-12)
		if c.Delta > 0 {
			q, _ := Quaternary(c.Eps, c.Delta)
			v, _ = Value(u, q)
			near(c.Name+" quaternary", v, c.Quaternary, 1e-12)
		}
	}
}

// TestGeometric: the rows are distributions, the matrix is ε-LDP (its ε within 1e-12 of
// the one asked for, reached between the end rows), k = 2 is binary randomized response,
// and larger ε keeps more of the diagonal.
func TestGeometric(t *testing.T) {
	for _, k := range []int{2, 3, 7, 40} {
		for _, eps := range []float64{0, 0.3, 2, 50} {
			q, err := Geometric(k, eps)
			if err != nil {
				t.Fatal(err)
			}
			if err := q.Validate(); err != nil {
				t.Fatalf("k=%d ε=%g: %v", k, eps, err)
			}
			got, err := q.Epsilon()
			if err != nil || math.Abs(got-eps) > 1e-12*math.Max(1, eps) {
				t.Errorf("k=%d ε=%g: matrix ε %g (%v)", k, eps, got, err)
			}
		}
	}
	q, _ := Geometric(2, 1)
	rr, _ := RandomizedResponse(2, 1)
	for x := range 2 {
		for y := range 2 {
			if math.Abs(q[x][y]-rr[x][y]) > 1e-15 {
				t.Errorf("k=2: Q(%d|%d) = %g, binary RR %g", y, x, q[x][y], rr[x][y])
			}
		}
	}
	if _, err := Geometric(1, 1); err == nil {
		t.Error("k = 1 accepted")
	}
	if _, err := Geometric(3, math.NaN()); err == nil {
		t.Error("NaN ε accepted")
	}
}

// TestFDivergence: hellinger and chi2 are 0 for equal hypotheses, grow under a less
// private (larger ε) randomized response (data processing), and refuse bad input.
func TestFDivergence(t *testing.T) {
	p0, p1 := []float64{0.5, 0.3, 0.2}, []float64{0.2, 0.3, 0.5}
	for _, name := range FDivergenceNames {
		u, err := NewFDivergence(name, p0, p1)
		if err != nil {
			t.Fatal(err)
		}
		same, _ := NewFDivergence(name, p0, p0)
		prev := -1.0
		for _, eps := range []float64{0, 0.5, 2, 10} {
			rr, _ := RandomizedResponse(3, eps)
			v, _ := Value(u, rr)
			if v < prev {
				t.Errorf("%s: %g at ε=%g below %g at a smaller ε", name, v, eps, prev)
			}
			prev = v
			if z, _ := Value(same, rr); z != 0 {
				t.Errorf("%s: %g for equal hypotheses", name, z)
			}
		}
	}
	if _, err := NewFDivergence("renyi", p0, p1); err == nil {
		t.Error("unknown name accepted")
	}
	if _, err := NewFDivergence("chi2", p0, []float64{0.5, 0.5, 0}); err == nil {
		t.Error("chi2 with a zero in p1 accepted")
	}
}
