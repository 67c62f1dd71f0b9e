package mechanism

import (
	"math"
	"testing"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/pld"
)

// A mechanism's PLD must not promise more than its Guarantee: the single-release curve at
// the guaranteed ε is at most the guaranteed δ (to rounding).
func TestPLDWithinGuarantee(t *testing.T) {
	lap, err := NewLaplace(LaplaceOptions{Sensitivity: 1, Epsilon: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	geo, err := NewGeometric(GeometricOptions{Sensitivity: 2, Epsilon: 0.7})
	if err != nil {
		t.Fatal(err)
	}
	rr, err := NewRandomizedResponse(RandomizedResponseOptions{Categories: 4, Epsilon: 1})
	if err != nil {
		t.Fatal(err)
	}
	type withPLD interface {
		PLD() (pld.Mechanism, error)
	}
	for name, m := range map[string]withPLD{"laplace": lap, "geometric": geo, "rr": rr} {
		pm, err := m.PLD()
		if err != nil {
			t.Fatal(err)
		}
		c, err := pld.Compose([]pld.Item{{Mechanism: pm, Count: 1}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		g := m.(interface{ Guarantee() dpkit.Budget }).Guarantee()
		up, _, _ := c.Delta(g.Epsilon * (1 + 1e-9))
		if up > g.Delta+1e-9 {
			t.Errorf("%s: δ(%g) = %g by its PLD, above its guarantee %v", name, g.Epsilon, up, g)
		}
		// And the PLD is not trivially loose: some loss reaches ε within 1%.
		if up, _, _ := c.Delta(g.Epsilon * 0.99); up <= 0 && !math.IsNaN(up) {
			t.Errorf("%s: δ(0.99ε) = %g: PLD looser than the guarantee", name, up)
		}
	}
}
