package region

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpkit/dpkit"
	"pgregory.net/rapid"
)

// Property tests (pgregory.net/rapid). The generators favour what breaks numerical code:
// zero probabilities (point masses, disjoint supports), small integer weights (exact
// ties between likelihood ratios) and arbitrary floats.

// genProb draws a probability vector of length n.
func genProb(t *rapid.T, n int, label string) []float64 {
	w := rapid.SliceOfN(rapid.OneOf(
		rapid.Just(0.0),
		rapid.SampledFrom([]float64{1, 2, 3, 4}),
		rapid.Float64Range(0, 1),
	), n, n).Draw(t, label)
	var s float64
	for _, x := range w {
		s += x
	}
	if s == 0 {
		w[rapid.IntRange(0, n-1).Draw(t, label+"-one")] = 1
		s = 1
	}
	for i := range w {
		w[i] /= s
	}
	return w
}

func genPair(t *rapid.T) *Pair {
	n := rapid.IntRange(1, 6).Draw(t, "n")
	return mustPair(t, genProb(t, n, "p0"), genProb(t, n, "p1"))
}

// genBudget draws ε in [0, 8] and δ in [0, 1], with the end points of δ often.
func genBudget(t *rapid.T, label string) dpkit.Budget {
	return dpkit.Budget{
		Epsilon: rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(0, 8)).Draw(t, label+".epsilon"),
		Delta:   rapid.OneOf(rapid.Just(0.0), rapid.Just(1.0), rapid.Float64Range(0, 1)).Draw(t, label+".delta"),
	}
}

func TestPropDominatesReflexive(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPair(t)
		if !Dominates(p, p) {
			t.Fatalf("%v does not dominate itself", p)
		}
	})
}

// KOV Thm 2.4: applying a stochastic map K (rows: distributions over m outputs, some of
// them deterministic, which merges outcomes) gives a pair that is dominated.
func TestPropPostProcessingIsDominated(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPair(t)
		n, m := len(p.P0), rapid.IntRange(1, 5).Draw(t, "m")
		q0, q1 := make([]float64, m), make([]float64, m)
		for i := range n {
			row := genProb(t, m, "row")
			for j := range m {
				for _, a := range []float64{p.P0[i], p.P1[i]} {
					if a != 0 && row[j] != 0 && a*row[j] < 0x1p-1022 {
						// The product underflowed: an outcome can lose its last bits or
						// become a point mass, and the stored pair is no longer a
						// post-processing of p.
						t.Skip("underflow")
					}
				}
				q0[j] += p.P0[i] * row[j]
				q1[j] += p.P1[i] * row[j]
			}
		}
		post := mustPair(t, q0, q1)
		if !Dominates(p, post) {
			t.Fatalf("%v does not dominate its post-processing %v", p, post)
		}
	})
}

// KOV §6.1 with Thm 2.5: if a pair is (ε, δ)-DP, the canonical pair of (ε, δ) dominates it.
func TestPropCanonicalDominatesPrivatePairs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPair(t)
		delta := rapid.OneOf(rapid.Just(0.0), rapid.Just(1e-6), rapid.Float64Range(0, 1)).Draw(t, "delta")
		eps, err := p.Epsilon(delta)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsInf(eps, 1) || eps > 700 {
			t.Skip("no canonical pair to compare with")
		}
		c := mustCanonical(t, dpkit.Budget{Epsilon: eps, Delta: delta})
		if !Dominates(c, p) {
			t.Fatalf("Canonical(%g, %g) does not dominate %v", eps, delta, p)
		}
	})
}

// d_ε is non-increasing in ε. The slack is relative 1e-12 plus 4·2^-53: one unit in the
// last place of e^ε can move each term by that much of its P0(x).
func TestPropHockeyStickNonIncreasing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPair(t)
		e1 := rapid.Float64Range(-10, 40).Draw(t, "e1")
		e2 := e1 + rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(0, 1e-12), rapid.Float64Range(0, 10)).Draw(t, "step")
		for _, f := range []func(float64) float64{p.HockeyStick, p.HockeyStickReverse} {
			d1, d2 := f(e1), f(e2)
			if d2 > d1*(1+1e-12)+0x1p-51 {
				t.Fatalf("%v: d(%g) = %g < d(%g) = %g", p, e1, d1, e2, d2)
			}
			if d1 < 0 || d1 > 1+1e-9 {
				t.Fatalf("%v: d(%g) = %g outside [0, 1]", p, e1, d1)
			}
		}
	})
}

// ∩ R(ε_j, δ_j) = conv(R(P0, P1) ∪ R(P1, P0)) (Remark 6.1 generalised).
func TestPropBreakpointsDescribeRegion(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPair(t)
		seed := rapid.Uint64().Draw(t, "seed")
		describesHull(t, p, rand.New(rand.NewPCG(seed, 0)))
	})
}

// Epsilon inverts the curve: at ε(δ) both divergences are at most δ, and slightly below
// ε(δ) they are not clearly below δ (the slack allows for a flat curve).
func TestPropEpsilonInverts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPair(t)
		delta := rapid.OneOf(rapid.Just(0.0), rapid.Float64Range(0, 1)).Draw(t, "delta")
		eps, err := p.Epsilon(delta)
		if err != nil {
			t.Fatal(err)
		}
		curve := func(e float64) float64 { return max(p.HockeyStick(e), p.HockeyStickReverse(e)) }
		if math.IsInf(eps, 1) {
			if curve(math.Inf(1)) <= delta {
				t.Fatalf("%v: Epsilon(%g) = +Inf but d_∞ = %g", p, delta, curve(math.Inf(1)))
			}
			return
		}
		if d := curve(eps); d > delta*(1+1e-12)+1e-15 {
			t.Fatalf("%v: Epsilon(%g) = %g but d there is %g", p, delta, eps, d)
		}
		if eps > 0 {
			below := max(0, eps-1e-9*max(1, eps))
			if d := curve(below); d < delta-1e-9 {
				t.Fatalf("%v: Epsilon(%g) = %g is not minimal: d(%g) = %g", p, delta, eps, below, d)
			}
		}
	})
}

// Each breakpoint is a guarantee of the pair: δ_j is the curve at ε_j, and Epsilon(δ_j) ≤ ε_j.
func TestPropBreakpointsAreGuarantees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPair(t)
		curve := func(e float64) float64 { return min(max(p.HockeyStick(e), p.HockeyStickReverse(e)), 1) }
		for _, b := range p.Breakpoints() {
			if err := b.Validate(); err != nil {
				t.Fatalf("%v: breakpoint %v: %v", p, b, err)
			}
			d := curve(b.Epsilon)
			if math.Abs(d-b.Delta) > 1e-12*d+1e-15 {
				t.Fatalf("%v: breakpoint %v but d at ε_j is %g", p, b, d)
			}
			// Epsilon(δ_j) ≤ ε_j, up to its upward rounding margin; that margin grows
			// where the curve is flat, so a larger overshoot is allowed only when it
			// does not show in δ.
			eps, err := p.Epsilon(b.Delta)
			if err != nil {
				t.Fatal(err)
			}
			if eps > b.Epsilon+1e-9*max(1, b.Epsilon) && curve(b.Epsilon)-curve(eps) > 1e-9*b.Delta+1e-15 {
				t.Fatalf("%v: breakpoint %v but Epsilon(δ_j) = %g", p, b, eps)
			}
		}
	})
}

// Exchanging P0 and P1 exchanges the two divergences and mirrors the region about
// md = fa; the symmetric descriptions (Breakpoints, Epsilon) do not change.
func TestPropSwap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPair(t)
		s := swapped(t, p)
		e := rapid.Float64Range(0, 10).Draw(t, "eps")
		if a, b := p.HockeyStick(e), s.HockeyStickReverse(e); a != b {
			t.Fatalf("%v: d(P0‖P1) = %g, swapped d(P1‖P0) = %g", p, a, b)
		}
		r, rs := p.Region(), s.Region()
		if len(r) != len(rs) {
			t.Fatalf("%v: Region %v, swapped %v", p, r, rs)
		}
		for i, v := range r {
			w := rs[len(rs)-1-i]
			if math.Abs(v.MD-w.FA) > 1e-15 || math.Abs(v.FA-w.MD) > 1e-15 {
				t.Fatalf("%v: Region %v is not the mirror of %v", p, r, rs)
			}
		}
		bp, bs := p.Breakpoints(), s.Breakpoints()
		if len(bp) != len(bs) {
			t.Fatalf("%v: Breakpoints %v, swapped %v", p, bp, bs)
		}
		for i := range bp {
			if math.Abs(bp[i].Epsilon-bs[i].Epsilon) > 1e-12*max(1, bp[i].Epsilon) || math.Abs(bp[i].Delta-bs[i].Delta) > 1e-12 {
				t.Fatalf("%v: Breakpoints %v, swapped %v", p, bp, bs)
			}
		}
	})
}

// Region is a convex chain from the MD = 0 axis to the FA = 0 axis, and Polygon is a
// convex counter-clockwise polygon symmetric through (½, ½) that contains it.
func TestPropRegionShape(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := genPair(t)
		r := p.Region()
		if r[0].MD != 0 || r[len(r)-1].FA != 0 {
			t.Fatalf("%v: Region %v does not run from axis to axis", p, r)
		}
		for i := 1; i < len(r); i++ {
			if r[i].MD < r[i-1].MD || r[i].FA > r[i-1].FA {
				t.Fatalf("%v: Region %v is not monotone", p, r)
			}
			if i+1 < len(r) {
				a, b, c := r[i-1], r[i], r[i+1]
				ux, uy, vx, vy := b.MD-a.MD, b.FA-a.FA, c.MD-b.MD, c.FA-b.FA
				if cross := ux*vy - uy*vx; cross < -0x1p-51*(math.Hypot(ux, uy)+math.Hypot(vx, vy)) {
					t.Fatalf("%v: Region %v turns right at %v", p, r, b)
				}
			}
		}
		poly := p.Polygon()
		for _, v := range poly {
			found := false
			for _, w := range poly {
				found = found || (math.Abs(w.MD-(1-v.MD)) <= 1e-15 && math.Abs(w.FA-(1-v.FA)) <= 1e-15)
			}
			if !found {
				t.Fatalf("%v: Polygon %v lacks the reflection of %v", p, poly, v)
			}
		}
		// Convex and counter-clockwise: every turn is to the left, up to the rounding of
		// coordinates in [0, 1] (2^-53 each), which tilts short edges.
		for i := range poly {
			if len(poly) < 3 {
				break
			}
			a, b, c := poly[i], poly[(i+1)%len(poly)], poly[(i+2)%len(poly)]
			ux, uy, vx, vy := b.MD-a.MD, b.FA-a.FA, c.MD-b.MD, c.FA-b.FA
			if cross := ux*vy - uy*vx; cross < -0x1p-51*(math.Hypot(ux, uy)+math.Hypot(vx, vy)) {
				t.Fatalf("%v: Polygon %v turns right at %v (cross %g)", p, poly, b, cross)
			}
		}
		// The lower-left chain of Polygon contains Region.
		for _, v := range r {
			if !slices.Contains(poly, v) {
				t.Fatalf("%v: Region vertex %v is not a vertex of Polygon %v", p, v, poly)
			}
		}
	})
}

// Remark A.1(a) against the geometry: Implies(from, to) iff the vertices of
// Boundary(from) lie in R(to). Cases within 1e-9 of the threshold are skipped.
func TestPropImpliesMatchesContains(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		from, to := genBudget(t, "from"), genBudget(t, "to")
		need, err := ImpliedDelta(from, to.Epsilon)
		if err != nil {
			t.Fatal(err)
		}
		gap := to.Delta - need
		if math.Abs(gap) < 1e-9 {
			t.Skip("too close to call")
		}
		implies, err := Implies(from, to)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := Boundary(from)
		if err != nil {
			t.Fatal(err)
		}
		all := true
		for _, v := range vs {
			in, err := Contains(to, v.MD, v.FA)
			if err != nil {
				t.Fatal(err)
			}
			all = all && in
		}
		if implies != (gap > 0) || all != implies {
			t.Fatalf("Implies(%v, %v) = %v, gap %g, vertices %v inside: %v", from, to, implies, gap, vs, all)
		}
		tv, err := TotalVariation(from)
		if d0, _ := ImpliedDelta(from, 0); err != nil || math.Abs(tv-d0) > 1e-15 {
			t.Fatalf("TotalVariation(%v) = %g, ImpliedDelta(·, 0) = %g", from, tv, d0)
		}
	})
}

// Dominance of canonical pairs is Implies (Cor 2.3 with §6.1).
func TestPropDominatesCanonicalIsImplies(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := genBudget(t, "a"), genBudget(t, "b")
		need, _ := ImpliedDelta(b, a.Epsilon)
		if math.Abs(a.Delta-need) < 1e-9 {
			t.Skip("too close to call")
		}
		want, _ := Implies(b, a)
		if got := Dominates(mustCanonical(t, a), mustCanonical(t, b)); got != want {
			t.Fatalf("Dominates(Canonical(%v), Canonical(%v)) = %v, Implies = %v", a, b, got, want)
		}
	})
}

// Symmetric pairs (Remark 6.1's assumption): one breakpoint description, both directions equal.
func TestPropSymmetricPairs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(t, "n")
		p0 := genProb(t, n, "p0")
		p1 := make([]float64, n)
		for i := range p0 {
			p1[n-1-i] = p0[i]
		}
		p := mustPair(t, p0, p1)
		e := rapid.Float64Range(0, 10).Draw(t, "eps")
		if a, b := p.HockeyStick(e), p.HockeyStickReverse(e); math.Abs(a-b) > 1e-15 {
			t.Fatalf("%v: d(P0‖P1) = %g ≠ d(P1‖P0) = %g", p, a, b)
		}
		if !Dominates(p, swapped(t, p)) || !Dominates(swapped(t, p), p) {
			t.Fatalf("%v: the swapped pair should have the same region", p)
		}
	})
}

// FuzzPair feeds arbitrary numbers to NewPair and, after taking absolute values and
// normalising, to every method: no panics, errors only as *dpkit.ParamError, outputs in
// range, Dominates reflexive and Epsilon consistent with the divergences. The seed corpus
// runs under plain go test.
func FuzzPair(f *testing.F) {
	f.Add(0.75, 0.25, 0.0, 0.25, 0.75, 0.0, 1.0, 0.1)
	f.Add(0.6, 0.4, 0.0, 0.3, 0.5, 0.2, 0.3, 0.2)
	f.Add(1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 800.0, 0.0)
	f.Add(0.5, 0.5, 0.0, 1e-320, 1-1e-320, 0.0, 710.0, 1e-300)
	f.Add(0.5, 0.5, 1e-300, 1.0, 1e-300, 0.0, 709.5, 0.5)
	f.Add(math.NaN(), 0.5, 0.5, 0.5, 0.5, 0.0, math.Inf(1), -1.0)
	f.Fuzz(func(t *testing.T, a0, a1, a2, b0, b1, b2, eps, delta float64) {
		if _, err := NewPair([]float64{a0, a1, a2}, []float64{b0, b1, b2}); err != nil {
			wantParamErrorAny(t, err)
		}
		p0, p1 := normalise(a0, a1, a2), normalise(b0, b1, b2)
		if p0 == nil || p1 == nil {
			return
		}
		p, err := NewPair(p0, p1)
		if err != nil {
			t.Fatalf("normalised (%v, %v): %v", p0, p1, err)
		}
		for _, d := range []float64{p.HockeyStick(eps), p.HockeyStickReverse(eps)} {
			if !math.IsNaN(eps) && (d < 0 || d > 1+1e-9) {
				t.Fatalf("%v: d(%g) = %g", p, eps, d)
			}
		}
		if len(p.Region()) == 0 || len(p.Polygon()) == 0 {
			t.Fatalf("%v: empty Region or Polygon", p)
		}
		for _, b := range p.Breakpoints() {
			if err := b.Validate(); err != nil {
				t.Fatalf("%v: breakpoint %v: %v", p, b, err)
			}
		}
		e, err := p.Epsilon(delta)
		if (err == nil) != (delta >= 0 && delta <= 1) {
			t.Fatalf("%v: Epsilon(%g) = %g, %v", p, delta, e, err)
		}
		if err == nil && !math.IsInf(e, 1) {
			if d := max(p.HockeyStick(e), p.HockeyStickReverse(e)); !(e >= 0) || d > delta*(1+1e-12)+1e-15 {
				t.Fatalf("%v: Epsilon(%g) = %g where d = %g", p, delta, e, d)
			}
		}
		if !Dominates(p, p) {
			t.Fatalf("%v: not reflexive", p)
		}
	})
}

// normalise returns |x|/Σ|x|, or nil if that is not a probability vector.
func normalise(xs ...float64) []float64 {
	var s float64
	for _, x := range xs {
		s += math.Abs(x)
	}
	if !(s > 0) || math.IsInf(s, 0) {
		return nil
	}
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = math.Abs(x) / s
	}
	return out
}

func wantParamErrorAny(t *testing.T, err error) {
	t.Helper()
	var pe *dpkit.ParamError
	if !errors.As(err, &pe) {
		t.Fatalf("want a *dpkit.ParamError, got %v", err)
	}
}
