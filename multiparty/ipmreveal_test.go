package multiparty

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpkit/dpkit/internal/testenv"
)

// revealGame's products against the definition: on a random input set R, with parties
// at δ = 0, 0 < δ < 1 and δ = 1 mixed, diag(s) P v, Pᵀ diag(s) u, (P∘P)ᵀ u and the
// Newton matrix diag(s) P E Pᵀ diag(s) are summed entry by entry from kronGame.entry
// over the free transcripts (found through fullIndex, which must be one-to-one);
// every input's free transcripts have probability 1 − tail. 1e-13 relative.
func TestRevealGameProducts(t *testing.T) {
	r := rand.New(rand.NewPCG(71, 72))
	for _, delta := range [][]float64{{0.1, 0, 0.3, 1, 0.05}, {0.01, 0.01, 0.02, 0.01, 0.03, 0}} {
		k := len(delta)
		eps := make([]float64, k)
		for i := range eps {
			eps[i] = 0.3 + 1.5*r.Float64()
		}
		pr := mustProtocol(t, eps, delta)
		tab, _ := randomFunction(r, k, 2).table(k)
		kg := newKronGame(pr, tab, 2)
		var inputs []int
		for x := range kg.nx {
			if r.IntN(3) > 0 {
				inputs = append(inputs, x)
			}
		}
		g := newRevealGame(kg, pr, inputs)
		ts := make([]int, g.nt)
		seen := make([]bool, kg.nt)
		dup := 0
		g.fullIndex(func(j, tr int) {
			if seen[tr] {
				dup++
			}
			seen[tr], ts[j] = true, tr
		})
		if dup > 0 {
			t.Errorf("δ=%v: %d transcripts appear twice", delta, dup)
		}
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-13*(1+math.Abs(b)) }
		for x := range kg.nx {
			mass := 0.0
			for _, tr := range ts {
				mass += kg.entry(x, tr)
			}
			if !near(mass, 1-g.tail) {
				t.Errorf("δ=%v, input %d: free transcripts have probability %v, 1 − tail = %v", delta, x, mass, 1-g.tail)
			}
		}
		v, e := make([]float64, g.nt), make([]float64, g.nt)
		for j := range v {
			v[j], e[j] = r.NormFloat64(), r.Float64()
		}
		u := make([]float64, len(inputs))
		for i := range u {
			u[i] = r.NormFloat64()
		}
		av := make([]float64, len(inputs))
		g.mulA(v, av)
		atu, sq := make([]float64, g.nt), make([]float64, g.nt)
		g.mulT(u, atu, true, false)
		g.mulT(u, sq, false, true)
		n := len(inputs)
		m := make([]float64, n*n)
		g.formM(e, m, n)
		for a, x := range inputs {
			want := 0.0
			for j, tr := range ts {
				want += g.s[a] * kg.entry(x, tr) * v[j]
			}
			if !near(av[a], want) {
				t.Errorf("δ=%v: (A v)[%d] = %v, definition %v", delta, x, av[a], want)
			}
			for b := a; b < n; b++ {
				want := 0.0
				for j, tr := range ts {
					want += e[j] * kg.entry(x, tr) * kg.entry(inputs[b], tr)
				}
				if want *= g.s[a] * g.s[b]; !near(m[a*n+b], want) {
					t.Errorf("δ=%v: M[%d][%d] = %v, definition %v", delta, a, b, m[a*n+b], want)
				}
			}
		}
		for j, tr := range ts {
			want, want2 := 0.0, 0.0
			for a, x := range inputs {
				p := kg.entry(x, tr)
				want += p * g.s[a] * u[a]
				want2 += p * p * u[a]
			}
			if !near(atu[j], want) || !near(sq[j], want2) {
				t.Errorf("δ=%v, transcript %d: (Aᵀu, (P∘P)ᵀu) = (%v, %v), definition (%v, %v)", delta, tr, atu[j], sq[j], want, want2)
			}
		}
	}
}

// The restricted interior point stage (ipmReveal, the path of two-output programs with
// 4^k transcripts and more than 2^10 inputs) from the uniform prior, on protocols with
// 0 < δ_i < 1 and one party at δ = 0, against the direct simplex method on the whole
// program: the certified intervals must overlap and be narrower than 5e-6 (measured
// 2e-9 to 1.1e-6: the stage stops where Mehrotra's iterates stall, it has no
// crossover); the rule and prior are re-evaluated by enumerating every transcript
// (1e-12 absolute).
// Majority and random tables, k = 3–6 (k ≤ 5 under -short).
func TestRevealAgainstDirect(t *testing.T) {
	forDeltaGames(t, rand.New(rand.NewPCG(73, 74)), 0.01, func(k int, name string, g *kronGame) certificate {
		cert, accBuf, scBuf := uniformCertificate(g)
		ipmReveal(g, &cert, accBuf, scBuf)
		finalize(g, &cert, accBuf, scBuf)
		direct := solveGame(g, nil, nil)
		t.Logf("k=%d %s: gap %.3g", k, name, cert.upper-cert.lower)
		if cert.upper-cert.lower > 5e-6 || cert.lower > direct.upper+1e-12 || direct.lower > cert.upper+1e-12 {
			t.Errorf("k=%d %s: restricted interior point [%.13g, %.13g], direct [%.13g, %.13g]",
				k, name, cert.lower, cert.upper, direct.lower, direct.upper)
		}
		return cert
	})
}

// End to end: the majority of 11 parties with unequal budgets (ε_i = 0.5 + 0.1 i) and
// δ_i = 0.01 (4^11 transcripts, 2^11 inputs: the restricted interior point stage).
// Measured gap 1.1e-6 (2026-11-22); asserted ≤ 2e-6. The certificate is the package's
// own evaluation (Kronecker products, checked against enumeration above). About 30 s:
// it runs in the long step (scripts/test --long, DPKIT_LONG=1).
func TestWorstCaseMajority11WithDelta(t *testing.T) {
	testenv.Long(t)
	k := 11
	eps, delta := make([]float64, k), make([]float64, k)
	for i := range eps {
		eps[i], delta[i] = 0.5+0.1*float64(i), 0.01
	}
	pr := mustProtocol(t, eps, delta)
	wc, err := WorstCaseAccuracy(pr, Majority(k))
	if err != nil {
		t.Fatal(err)
	}
	if wc.Gap() > 2e-6 || !(wc.Accuracy > 0.5) {
		t.Errorf("[%.12g, %.12g], gap %.3g", wc.Accuracy, wc.UpperBound, wc.Gap())
	}
	// The prior is a distribution on the inputs.
	s := 0.0
	for _, p := range wc.Prior {
		s += p
	}
	if math.Abs(s-1) > 1e-12 || slices.Min(wc.Prior) < 0 {
		t.Errorf("prior sums to %v, least entry %v", s, slices.Min(wc.Prior))
	}
}
