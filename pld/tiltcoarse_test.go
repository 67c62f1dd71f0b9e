package pld

import (
	"math"
	"strconv"
	"testing"
)

// fineRelease is a release whose loss has atoms at k/64, k = −3 … 12 (a smooth bump
// around 2/64), as a lattice through 0 and as an enumeration, for the coarsening tests.
func fineRelease() (*Lattice, enum) {
	const hf = 1.0 / 64
	l := &Lattice{H: hf, Offset: -3}
	var loss, mass []float64
	sum := 0.0
	for k := -3; k <= 12; k++ {
		sum += math.Exp(-float64((k-2)*(k-2)) / 8)
	}
	for k := -3; k <= 12; k++ {
		w := math.Exp(-float64((k-2)*(k-2))/8) / sum
		l.Mass = append(l.Mass, w)
		loss, mass = append(loss, float64(k)*hf), append(mass, w)
	}
	return l, enumOf(loss, mass, 0)
}

// Coarsening tilted lattices keeps the bracket: a release with atoms on 1/64 composed
// 64 times by repeated squaring, each square coarsened to twice the spacing (1/64 to 1,
// the last far coarser than the 64-fold loss's standard deviation of 0.25) and, by
// powerTiltedTo, 100 times ending on 1/32, holds the exact δ of the enumerated
// composition (exact sums of dyadic losses) from the bulk (ε = 3.1, δ ≈ 0.12) to the
// tail (ε = 6.5, δ ≈ 6.1e-29), for λ = 0, the saddle point's λ and twice it (any λ ≥ 0
// gives valid bounds). At the saddle, powerTiltedTo's width is second order in λ·h.
func TestCoarsenTiltedAgainstEnumeration(t *testing.T) {
	l, release := fineRelease()
	exact64, exact100 := release.power(64), release.power(100)
	check := func(name string, eps, lambda float64, up, lo tilted, want float64) (width float64) {
		t.Helper()
		u, d := up.delta(eps, true), lo.delta(eps, false)
		if !(u >= want*(1-1e-9)) || !(d <= want*(1+1e-9)) {
			t.Errorf("%s, ε = %g, λ = %.4g: [%.10g, %.10g] does not hold the exact %.10g", name, eps, lambda, d, u, want)
		}
		return (u - d) / u
	}
	for _, eps := range []float64{3.1, 4, 5, 6.5} {
		saddle := saddleNewton([]tiltPart{{l, 100}}, eps, nil)
		for _, f := range []float64{0, 1, 2} {
			lambda := f * saddle
			// 64-fold, every square coarsened by two.
			var sq [2]tilted
			for b, upper := range []bool{true, false} {
				s := tilt(l, lambda, upper)
				for range 6 {
					s = composeTilted(s, s, upper, 0)
					s = coarsenTilted(s, 2*s.l.H, upper, nil)
				}
				if s.l.H != 1 {
					t.Fatalf("spacing %g after six coarsenings, want 1", s.l.H)
				}
				sq[b] = s
			}
			if eps <= 5 {
				check("64-fold, coarsened every square", eps*0.64, lambda, sq[0], sq[1], exact64.delta(eps*0.64))
			}
			// 100-fold by powerTiltedTo, from 1/64 to 1/8.
			up := powerTiltedTo(tilt(l, lambda, true), 100, true, trimEta(100), 1.0/32, nil)
			lo := powerTiltedTo(tilt(l, lambda, false), 100, false, trimEta(100), 1.0/32, nil)
			if up.l.H != 1.0/32 || lo.l.H != 1.0/32 {
				t.Fatalf("powerTiltedTo ended on %g and %g, want 0.125", up.l.H, lo.l.H)
			}
			want := exact100.delta(eps)
			w := check("100-fold, powerTiltedTo", eps, lambda, up, lo, want)
			t.Logf("ε = %g, λ = %.4g: exact %.6g, width %.3g", eps, lambda, want, w)
			// Second order in λH at the saddle: 0.0138, 0.049 and 0.137 at λH = 0.28, 0.60
			// and 1.08 (ε = 4, 5, 6.5).
			if lh := lambda / 32; f == 1 && w > 0.005+0.2*lh*lh {
				t.Errorf("ε = %g, at the saddle λ = %.4g: width %.3g, want ≤ %.3g", eps, lambda, w, 0.005+0.2*lh*lh)
			}
		}
	}
}

// coarsenTilted on one lattice moves δ(ε) only in its bound's direction, at every ε (the
// spread raises it, merging and mixing lowers it) for spacing ratios 2 to 16, and the
// lower bound keeps the tilted mass within a factor e^(λH) (nothing is invented).
func TestCoarsenTiltedOneStep(t *testing.T) {
	l, _ := fineRelease()
	for _, lambda := range []float64{0, 3, 40} {
		fineUp, fineLo := tilt(l, lambda, true), tilt(l, lambda, false)
		for _, r := range []float64{2, 4, 16} {
			H := r * l.H
			up := coarsenTilted(fineUp, H, true, nil)
			lo := coarsenTilted(fineLo, H, false, nil)
			for eps := -0.1; eps < 0.2; eps += 1.0 / 256 {
				if fu, cu := fineUp.delta(eps, true), up.delta(eps, true); cu < fu*(1-1e-15) && fu > 1e-300 {
					t.Errorf("λ = %g, ratio %g, ε = %g: coarsened upper %.12g below the fine %.12g", lambda, r, eps, cu, fu)
				}
				if fl, cl := fineLo.delta(eps, false), lo.delta(eps, false); cl > fl*(1+1e-15) {
					t.Errorf("λ = %g, ratio %g, ε = %g: coarsened lower %.12g above the fine %.12g", lambda, r, eps, cl, fl)
				}
			}
			if total(lo.l.Mass) > total(fineLo.l.Mass)*math.Exp(lambda*H) {
				t.Errorf("λ = %g, ratio %g: the lower coarsening holds more tilted mass than it was given", lambda, r)
			}
		}
	}
}

// Heavy counts far in the tail (tiltcoarse.go), against testdata/tail_delta_heavy.json
// (gen_tail_delta.py heavy: Bromwich inversion of the exact moment generating function,
// no lattice): subsampled Gaussians (σ = 5, 10, 8; q = 0.01, 0.01, 0.02) of 10^6, 10^6
// and 10^5 releases at ε = 40 (δ ≈ 1.73e-55) and 50 (δ ≈ 1.40e-87). Discretised on the
// plain lattice's spacing, one release's loss (standard deviation about 2e-3) was below
// the spacing and the bracket stayed [0, 1.2e-16] by default and at any tolerance; each
// release now starts fine and the powers coarsen. Compose by default holds each within a
// width of 0.1 with delta_lower > 0 ([1.69e-55, 1.76e-55] at ε = 40), and at tolerance
// 0.05 within that.
func TestHeavyCountTailDelta(t *testing.T) {
	for _, c := range loadTailDelta(t, "testdata/tail_delta_heavy.json").Cases {
		var items []Item
		for _, m := range c.Mechanisms {
			items = append(items, m.item())
		}
		want, _ := strconv.ParseFloat(c.Want, 64)
		comp, err := Compose(items, &Options{Epsilon: c.Eps})
		if err != nil {
			t.Fatal(err)
		}
		up, lo, _ := comp.Delta(c.Eps)
		t.Logf("%s: default [%.6g, %.6g], width %.3g", c.Name, lo, up, (up-lo)/up)
		if !(lo > 0) || up < want*(1-tailDeltaTol) || lo > want*(1+tailDeltaTol) || !((up-lo)/up <= 0.1) {
			t.Errorf("%s: default [%.6g, %.6g], width %.3g (want ≤ 0.1); reference %.6g", c.Name, lo, up, (up-lo)/up, want)
		}
		if testing.Short() || c.Eps != 40 { // one case at a tolerance: 5-10 s
			continue
		}
		comp = composeHolds(t, c.Name, items, c.Eps, c.Want, 0.05, tailDeltaTol)
		up, lo, _ = comp.Delta(c.Eps)
		t.Logf("%s: tolerance 0.05 [%.6g, %.6g]", c.Name, lo, up)
	}
}

// releaseSpacings starts an item finer than h only when its release is narrow next to h,
// shares the finest spacing among the items of one count, and leaves h to a single
// release and to an item whose loss is atoms only.
func TestReleaseSpacings(t *testing.T) {
	sg := func(sigma float64, n int64) Item {
		return Item{PoissonSubsampled{Base: Gaussian{Sigma: sigma, Sensitivity: 1}, Rate: 0.01}, n}
	}
	h := 0.0025
	hs := releaseSpacings([]Item{sg(5, 1e6), sg(20, 1e6), sg(5, 1e5), sg(5, 1), {EpsilonDelta{Epsilon: 0.5}, 1000}}, h)
	for i, s := range hs {
		if r := h / s; r != math.Exp2(math.Round(math.Log2(r))) || r < 1 {
			t.Errorf("item %d: spacing %g is not h/2^j", i, s)
		}
	}
	if !(hs[0] < h && hs[0] == hs[1] && hs[1] <= releaseSpacing(sg(20, 1e6), h)) {
		t.Errorf("items of one count: spacings %g, %g (own %g, %g), want the finer shared", hs[0], hs[1], releaseSpacing(sg(5, 1e6), h), releaseSpacing(sg(20, 1e6), h))
	}
	if hs[2] != releaseSpacing(sg(5, 1e5), h) || hs[3] != h || hs[4] != h {
		t.Errorf("spacings %v: want the own one for the third item, h for a single release and for atoms", hs)
	}
	if s := strconv.FormatFloat(hs[0], 'g', -1, 64); hs[0] > h/64 {
		t.Errorf("σ = 5, q = 0.01 (standard deviation of one loss about 2e-3): spacing %s, want ≤ h/64", s)
	}
}

// discretizeFine (fine over the bulk, the far tails on h) brackets the same curve as
// discretize on the fine spacing throughout: for one release of a subsampled Gaussian
// (σ = 5, q = 0.01, both directions, the add direction's long tail below) and of
// Laplace (scale 1: atoms at the support's ends ±1, which a bulk ending there must keep),
// each one's upper δ(ε) is at least the other's lower from ε = −3 to 3, where δ falls
// from 1 to 1e-300, and within the bulk (δ above 1e-25) the two brackets agree within
// 1e-6; the total masses agree within 1e-12; the subsampled Gaussian's needs fifteen
// times fewer cells (3.8e3 against 7.5e4).
func TestDiscretizeFine(t *testing.T) {
	sg := Item{PoissonSubsampled{Base: Gaussian{Sigma: 5, Sensitivity: 1}, Rate: 0.01}, 1000000}
	const h = 0.0025
	hs := h / 64
	specs := append(sg.Mechanism.specs(), Laplace{Scale: 1, Sensitivity: 1}.specs()...)
	for d, s := range specs {
		upP, loP := discretizeFine(s, hs, h)
		upF, loF := discretize(s, hs, 1e-300)
		if n, nf := countNonzero(upP.Mass), countNonzero(upF.Mass); d < 2 && n*15 > nf {
			t.Errorf("direction %d: %d cells where the fine lattice has %d", d, n, nf)
		}
		for _, l := range [][2]*Lattice{{upP, upF}, {loP, loF}} {
			if a, b := total(l[0].Mass)+l[0].InfMass, total(l[1].Mass)+l[1].InfMass; math.Abs(a-b) > 1e-12 {
				t.Errorf("spec %d: total mass %.15g, fine %.15g", d, a, b)
			}
		}
		uP, lP, uF, lF := upP.Discrete(true), loP.Discrete(false), upF.Discrete(true), loF.Discrete(false)
		for eps := -3.0; eps <= 3; eps += 1.0 / 64 {
			a, b, c, e := uP.Delta(eps), lP.Delta(eps), uF.Delta(eps), lF.Delta(eps)
			if a < e*(1-1e-12) || c < b*(1-1e-12) {
				t.Errorf("spec %d, ε = %g: brackets [%g, %g] and [%g, %g] do not meet", d, eps, b, a, e, c)
			}
			if c > 1e-25 && (math.Abs(a-c) > 1e-6*c || math.Abs(b-e) > 1e-6*c) {
				t.Errorf("spec %d, ε = %g: [%g, %g] against the fine [%g, %g]", d, eps, b, a, e, c)
			}
		}
	}
}
