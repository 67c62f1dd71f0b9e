package multiparty

import (
	"encoding/json"
	"math"
	"os"
	"strconv"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/region"
)

// TestThesisFig41 reproduces the thesis's Fig. 4.1: the error region of one party's
// randomized response (eq. 4.8, this package's Protocol) is R(ε, δ). For each (ε, δ) of
// testdata/gen_reference.py ("fig41": the lower-left boundary of the pair's error region
// from its output distributions, 40 digits), the region of the protocol's own
// probabilities (region.Pair.Region) and region.Boundary's closed form
// (0, 1 − δ), (v, v), (1 − δ, 0) with v = (1 − δ)/(1 + e^ε) both match the reference
// vertices (1e-15 absolute), the pair and the canonical (ε, δ) pair dominate each other
// (equal regions: KOV Thm 2.4/2.5), and the pair's only breakpoint is (ε, δ).
func TestThesisFig41(t *testing.T) {
	data, err := os.ReadFile("testdata/reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Fig41 []struct {
			Eps, Delta string
			Vertices   [][2]string
		}
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Fig41) != 5 {
		t.Fatalf("%d Fig. 4.1 cases", len(file.Fig41))
	}
	num := func(s string) float64 {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range file.Fig41 {
		b := dpkit.Budget{Epsilon: num(c.Eps), Delta: num(c.Delta)}
		pr, err := NewProtocol([]dpkit.Budget{b})
		if err != nil {
			t.Fatal(err)
		}
		p0, p1 := make([]float64, 4), make([]float64, 4)
		for s := range 4 {
			p0[s], p1[s] = pr.Prob(0, s, 0), pr.Prob(0, s, 1)
		}
		pair, err := region.NewPair(p0, p1)
		if err != nil {
			t.Fatal(err)
		}
		bound, err := region.Boundary(b)
		if err != nil {
			t.Fatal(err)
		}
		for name, got := range map[string][]region.Point{"protocol": pair.Region(), "Boundary": bound} {
			if len(got) != len(c.Vertices) {
				t.Errorf("%v %s: vertices %v, reference %v", b, name, got, c.Vertices)
				continue
			}
			for i, v := range c.Vertices {
				if math.Abs(got[i].MD-num(v[0])) > 1e-15 || math.Abs(got[i].FA-num(v[1])) > 1e-15 {
					t.Errorf("%v %s: vertex %d = %v, reference %v", b, name, i, got[i], v)
				}
			}
		}
		canon, err := region.Canonical(b)
		if err != nil {
			t.Fatal(err)
		}
		if !region.Dominates(pair, canon) || !region.Dominates(canon, pair) {
			t.Errorf("%v: the regions of randomized response and R(ε, δ) differ", b)
		}
		if bp := pair.Breakpoints(); len(bp) != 1 || math.Abs(bp[0].Epsilon-b.Epsilon) > 1e-12 || math.Abs(bp[0].Delta-b.Delta) > 1e-15 {
			t.Errorf("%v: breakpoints %v", b, bp)
		}
	}
}
