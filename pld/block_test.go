package pld

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// exactCanonical returns the exact loss distribution of composing the canonical (ε, δ)
// pairs of es (KOV eq. 17/18), enumerated by Product without pruning; the pair masses
// are computed here independently of EpsilonDelta.specs.
func exactCanonical(t *rapid.T, es, ds []float64) *Discrete {
	var acc *Discrete
	for i, e := range es {
		hi := (1 - ds[i]) * math.Exp(e) / (1 + math.Exp(e))
		lo := (1 - ds[i]) / (1 + math.Exp(e))
		d, err := NewDiscrete([]float64{-e, e}, []float64{lo, hi}, ds[i])
		if err != nil {
			t.Fatal(err)
		}
		if acc == nil {
			acc = d
		} else {
			acc = Product(acc, d, 0, true)
		}
	}
	return acc
}

// Blocks (exact enumeration binned into cells, then spread / merged-and-mixed onto the
// lattice) must bracket the exact composition at every ε, for any spacing; Compose, which
// adds lattice convolution and refinement, too.
func TestBlocksBracketExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 14).Draw(t, "n")
		es := make([]float64, n)
		ds := make([]float64, n)
		var items []Item
		for i := range es {
			es[i] = rapid.Float64Range(1e-3, 1.5).Draw(t, "eps")
			if rapid.Bool().Draw(t, "withDelta") {
				ds[i] = rapid.Float64Range(0, 1e-3).Draw(t, "delta")
			}
			items = append(items, Item{EpsilonDelta{Epsilon: es[i], Delta: ds[i]}, 1})
		}
		exact := exactCanonical(t, es, ds)
		h := rapid.Float64Range(1e-4, 0.2).Draw(t, "h")
		bl := blocks(items)
		if len(bl) != 1 {
			t.Fatalf("%d releases of two atoms make %d blocks, want 1", n, len(bl))
		}
		p := bl[0].Mechanism.(blockMechanism).pld(h)
		c, err := Compose(items, &Options{Tolerance: rapid.Float64Range(1e-4, 0.1).Draw(t, "tol")})
		if err != nil {
			t.Fatal(err)
		}
		total := 0.0
		for _, e := range es {
			total += e
		}
		for _, eps := range []float64{0, h, 0.37 * total, 0.5 * total, 0.9 * total} {
			want := exact.Delta(eps)
			slack := 1e-12*want + 1e-300
			up, lo := p.Delta(eps)
			if up < want-slack || lo > want+slack {
				t.Fatalf("block at h=%g, ε=%g: [%.17g, %.17g] misses exact %.17g", h, eps, lo, up, want)
			}
			up, lo, _ = c.Delta(eps)
			if up < want-slack || lo > want+slack {
				t.Fatalf("Compose, ε=%g: [%.17g, %.17g] misses exact %.17g", eps, lo, up, want)
			}
		}
	})
}

// 10^4 distinct ε are dealt into blocks that each span the range of ε (not runs of
// neighbours), and the bracket meets the default tolerance at the first lattice.
func TestBlocksDealt(t *testing.T) {
	var items []Item
	for i := range 10000 {
		items = append(items, Item{EpsilonDelta{Epsilon: 0.005 + 0.015*float64(i)/10000}, 1})
	}
	bl := blocks(items)
	for _, it := range bl[:3] {
		b := it.Mechanism.(blockMechanism)
		lo, hi := math.Inf(1), 0.0
		for _, r := range b.rel {
			lo, hi = math.Min(lo, r.lossHi), math.Max(hi, r.lossHi)
		}
		if hi-lo < 0.01 {
			t.Errorf("block of ε in [%g, %g]: want ε across [0.005, 0.02]", lo, hi)
		}
	}
	if testing.Short() {
		return
	}
	c, err := Compose(items, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w := c.Width(1e-6); w > DefaultTolerance {
		t.Errorf("width %g > %g", w, DefaultTolerance)
	}
}
