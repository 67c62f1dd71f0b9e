package pld

import (
	"math"
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// exactCanonical returns the exact loss distribution of composing the canonical (ε, δ)
// pairs of es (KOV eq. 17/18), enumerated pair by pair (enum); the pair masses are
// computed here independently of EpsilonDelta.specs.
func exactCanonical(es, ds []float64) enum {
	var acc enum
	for i, e := range es {
		hi := (1 - ds[i]) * math.Exp(e) / (1 + math.Exp(e))
		lo := (1 - ds[i]) / (1 + math.Exp(e))
		d := enumOf([]float64{-e, e}, []float64{lo, hi}, ds[i])
		if i == 0 {
			acc = d
		} else {
			acc = acc.compose(d)
		}
	}
	return acc
}

// Blocks (exact enumeration binned into cells, then spread / merged-and-mixed onto the
// lattice) must bracket the exact composition at every ε, for any spacing; Compose, which
// adds lattice convolution and refinement, too.
func TestBlocksBracketExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(2, 14).Draw(t, "n")
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
		exact := exactCanonical(es, ds)
		h := rapid.Float64Range(1e-4, 0.2).Draw(t, "h")
		bl := blocks(items)
		if len(bl) != 1 {
			t.Fatalf("%d releases of two atoms make %d blocks, want 1", n, len(bl))
		}
		p := bl[0].Mechanism.(blockMechanism).pld(h, nil)
		c, err := Compose(items, &Options{Tolerance: rapid.Float64Range(1e-4, 0.1).Draw(t, "tol")})
		if err != nil {
			t.Fatal(err)
		}
		total := 0.0
		for _, e := range es {
			total += e
		}
		for _, eps := range []float64{0, h, 0.37 * total, 0.5 * total, 0.9 * total} {
			want := exact.delta(eps)
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
	// The adaptive default reaches at least its first lattice's tolerance.
	if w := c.Width(1e-6); w > firstTolerance {
		t.Errorf("width %g > %g", w, firstTolerance)
	}
}

// gaussHockey is δ(ε') of μ-GDP at any real ε' (the integral E[(1 − e^(ε'−L))₊] for
// L ~ N(μ²/2, μ²), Balle & Wang 2018 Thm 8), from math.Erfc.
func gaussHockey(mu, e float64) float64 {
	phi := func(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }
	return phi(-e/mu+mu/2) - math.Exp(e)*phi(-e/mu-mu/2)
}

// A comb (a repeated (ε, 0) pair self-composed on its own lattice) is composed with a
// smooth partner before it is put on the common lattice: a block when there is one, a
// share of the Gaussian otherwise. Both paths must bracket the exact curve, enumerated
// here: the binomial (binomialEnum) times the block's sums, and Σ_j p_j·δ_G(ε − l_j)
// over the two binomials' atoms for the Gaussian.
func TestCombPartnersBracketExact(t *testing.T) {
	comb := binomialEnum(0.01, 5000)
	// Comb + block of 12 distinct ε.
	items := []Item{{EpsilonDelta{Epsilon: 0.01}, 5000}}
	var es, ds []float64
	for i := range 12 {
		e := 0.02 + 0.003*float64(i)
		items = append(items, Item{EpsilonDelta{Epsilon: e}, 1})
		es, ds = append(es, e), append(ds, 0)
	}
	exact := comb.compose(exactCanonical(es, ds))
	c, err := Compose(items, &Options{Tolerance: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	for _, eps := range []float64{0.3, 1, 2, 3.5} {
		want := exact.delta(eps)
		if up, lo, _ := c.Delta(eps); up < want*(1-1e-9) || lo > want*(1+1e-9) {
			t.Errorf("comb+block, ε=%g: [%.15g, %.15g] misses exact %.15g", eps, lo, up, want)
		}
	}
	if w := c.Width(1e-6); w > 1e-4 {
		t.Errorf("comb+block: width %g > 1e-4", w)
	}

	// Comb + Gaussian μ = 0.5 (σ = 2), no block: the Gaussian is shared.
	c, err = Compose([]Item{{EpsilonDelta{Epsilon: 0.01}, 5000}, {EpsilonDelta{Epsilon: 0.013}, 7000}, {Gaussian{Sigma: 2, Sensitivity: 1}, 1}}, &Options{Tolerance: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	both := comb.compose(binomialEnum(0.013, 7000))
	for _, eps := range []float64{0.5, 1.5, 3} {
		want := 0.0
		for l, m := range both.atoms {
			want += m * gaussHockey(0.5, eps-l)
		}
		if up, lo, _ := c.Delta(eps); up < want*(1-1e-9) || lo > want*(1+1e-9) {
			t.Errorf("combs+Gaussian, ε=%g: [%.15g, %.15g] misses exact %.15g", eps, lo, up, want)
		}
	}
	if w := c.Width(1e-6); w > 1e-4 {
		t.Errorf("combs+Gaussian: width %g > 1e-4", w)
	}
}

// Few-atom mechanisms on multiples of one unit (0.01, 0.02, 0.05) compose on a lattice
// aligned with it, with no re-discretisation: the bracket is exact up to rounding, at
// tolerance 1e-9, against the 50-digit values of testdata/reference.json ("commensurate").
func TestCommensurateExact(t *testing.T) {
	var ref refCase
	for _, c := range loadPLDReference(t) {
		if c.Name == "commensurate" {
			ref = c
		}
	}
	c, err := Compose(ref.items(), &Options{Tolerance: 1e-9})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range ref.Targets {
		if tg.Kind != "delta_at_eps" {
			continue
		}
		want, _ := strconv.ParseFloat(tg.Want, 64)
		up, lo, _ := c.Delta(tg.Eps)
		if up < want*(1-1e-11) || lo > want*(1+1e-11) || (up-lo) > 1e-9*want {
			t.Errorf("ε=%g: [%.15g, %.15g] vs exact %.15g", tg.Eps, lo, up, want)
		}
	}
}
